package loadtest

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The swipe scenario's closed loops can be driven by wrk instead of this
// package's Go client (Config.Generator "wrk"): the same students, decks,
// bodies, clients and rounds, the same B3 and the same CPU, statement and
// Redis sampling around each round, but a load generator written
// independently of the one the figures are otherwise measured with, and in
// C: a cross-check that a ratio is the servers' and not the generator's.

//go:embed swipe.lua
var swipeLua []byte

// wrkThreads is wrk's thread count: one per core of the development
// machine, as `wrk -t2` in docs/benchmarks.md.
const wrkThreads = 2

// wrkSwipes runs one closed-loop round of swipes with wrk against base
// (token: the Authorization bearer, "" for none), from the decks the
// students' compact pages dealt, and takes the cards it swiped off them.
func (r *runner) wrkSwipes(ctx context.Context, base, token string) (*Result, error) {
	bin, err := exec.LookPath("wrk")
	if err != nil {
		return nil, errors.New("the wrk generator needs wrk on PATH (apt-get install wrk)")
	}
	dir, err := os.MkdirTemp("", "loadtest-wrk-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	script, decks := filepath.Join(dir, "swipe.lua"), filepath.Join(dir, "decks")
	if err := os.WriteFile(script, swipeLua, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(decks, r.decksFile(), 0o600); err != nil {
		return nil, err
	}
	secs := max(1, int(r.c.Duration.Round(time.Second)/time.Second))
	cmd := exec.CommandContext(ctx, bin, "-t", strconv.Itoa(wrkThreads), "-c", strconv.Itoa(max(r.c.Clients, wrkThreads)),
		"-d", strconv.Itoa(secs)+"s", "--timeout", "30s", "-s", script, base, "--", decks, strconv.Itoa(wrkThreads), token)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("wrk: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	res, taken, err := parseWrk(out)
	if err != nil {
		return nil, err
	}
	r.takeCards(taken)
	return res, nil
}

// decksFile is swipe.lua's DECKS: every student's deck, then every school.
func (r *runner) decksFile() []byte {
	var b bytes.Buffer
	r.mu.Lock()
	for _, s := range r.students {
		b.WriteString(s)
		for _, card := range r.decks[s] {
			b.WriteByte(' ')
			b.WriteString(card)
		}
		b.WriteByte('\n')
	}
	r.mu.Unlock()
	for _, s := range r.schools {
		b.WriteString("school ")
		b.WriteString(s)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// takeCards takes the cards wrk swiped off the top of the decks.
func (r *runner) takeCards(taken map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for s, n := range taken {
		deck := r.decks[s]
		r.decks[s] = deck[min(n, len(deck)):]
	}
}

// parseWrk reads what swipe.lua's done() wrote: the round as a Result
// (wrk counts answers above 399 together: they are NotOK; its latencies
// are a thousand quantiles, which Quantile reads as samples) and the cards
// taken per student.
func parseWrk(out []byte) (*Result, map[string]int, error) {
	res := &Result{Kind: "POST /swipe", Statuses: map[int]int{}}
	taken := map[string]int{}
	var seen bool
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "wrk-result":
			v := map[string]int64{}
			for _, kv := range f[1:] {
				k, n, ok := strings.Cut(kv, "=")
				x, err := strconv.ParseInt(n, 10, 64)
				if !ok || err != nil {
					return nil, nil, fmt.Errorf("wrk: unreadable result %q", sc.Text())
				}
				v[k] = x
			}
			requests, notOK := int(v["requests"]), int(v["status_errors"])
			res.Statuses[200] = requests - notOK // wrk counts 2xx and 3xx together; a swipe answers no 3xx
			res.NotOK = notOK
			res.Errors = int(v["socket_errors"])
			res.Sent = requests + res.Errors
			res.Elapsed = time.Duration(v["duration_us"]) * time.Microsecond
			seen = true
		case "wrk-latency-us":
			for _, s := range f[1:] {
				us, err := strconv.ParseInt(s, 10, 64)
				if err != nil {
					return nil, nil, fmt.Errorf("wrk: unreadable latency %q", s)
				}
				res.Latencies = append(res.Latencies, time.Duration(us)*time.Microsecond)
			}
		case "wrk-taken":
			if len(f) == 3 {
				if n, err := strconv.Atoi(f[2]); err == nil {
					taken[f[1]] += n
				}
			}
		}
	}
	if !seen {
		return nil, nil, fmt.Errorf("wrk wrote no result: %s", strings.TrimSpace(string(out)))
	}
	return res, taken, nil
}
