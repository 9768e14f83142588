package loadtest

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The closed loops of the swipe and reads scenarios can be driven by wrk
// instead of this package's Go client (Config.Generator "wrk"): the same
// students, decks, bodies, clients and rounds, the same baselines and the
// same CPU, statement and Redis sampling around each round, but a load
// generator written independently of the one the figures are otherwise
// measured with, and in C: a cross-check that a ratio is the servers' and
// not the generator's.

var (
	//go:embed wrkcommon.lua
	wrkCommonLua []byte
	//go:embed swipe.lua
	swipeLua []byte
	//go:embed reads.lua
	readsLua []byte
)

// wrkThreads is wrk's thread count: one per core of the development
// machine, as `wrk -t2` in docs/benchmarks.md.
const wrkThreads = 2

// wrkSwipes runs one closed-loop round of swipes with wrk against base
// (token: the Authorization bearer, "" for none), from the decks the
// students' compact pages dealt, and takes the cards it swiped off them.
func (r *runner) wrkSwipes(ctx context.Context, base, token string) (*Result, error) {
	res, taken, err := r.wrkRound(ctx, "POST /swipe", swipeLua, base, token, map[string][]byte{"decks": r.decksFile()},
		"@decks", strconv.Itoa(wrkThreads))
	if err != nil {
		return nil, err
	}
	r.takeCards(taken)
	return res, nil
}

// wrkReads runs one closed-loop round of reads of one kind ("compact",
// "page" or "bare", see reads.lua) with wrk against base.
func (r *runner) wrkReads(ctx context.Context, kind, base, token string) (*Result, error) {
	students := []byte(strings.Join(r.students, "\n") + "\n")
	res, _, err := r.wrkRound(ctx, kind, readsLua, base, token, map[string][]byte{"students": students}, kind, "@students")
	return res, err
}

// wrkRound runs wrk once, with script after wrkcommon.lua, wrkConns connections for
// wrkSeconds, against base; args go to the script's init, an "@name"
// argument as the path of files[name], written beside the script, and then
// the path of a file holding token, when there is one (a file: a command
// line is anyone's to read). It returns the round and the cards taken per
// student, when the script says.
func (r *runner) wrkRound(ctx context.Context, kind string, script []byte, base, token string, files map[string][]byte, args ...string) (*Result, map[string]int, error) {
	bin, err := exec.LookPath("wrk")
	if err != nil {
		return nil, nil, errors.New("the wrk generator needs wrk on PATH (scripts/wrk.sh installs it)")
	}
	dir, err := os.MkdirTemp("", "loadtest-wrk-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "script.lua")
	if err := os.WriteFile(path, slices.Concat(wrkCommonLua, script), 0o600); err != nil {
		return nil, nil, err
	}
	argv := []string{"-t", strconv.Itoa(wrkThreads), "-c", strconv.Itoa(r.wrkConns()),
		"-d", strconv.Itoa(r.wrkSeconds()) + "s", "--timeout", "30s", "-s", path, base, "--"}
	if token != "" {
		files = maps.Clone(files)
		files["token"] = []byte(token + "\n")
		args = append(args, "@token")
	}
	for _, a := range args {
		if name, ok := strings.CutPrefix(a, "@"); ok {
			a = filepath.Join(dir, name)
			if err := os.WriteFile(a, files[name], 0o600); err != nil {
				return nil, nil, err
			}
		}
		argv = append(argv, a)
	}
	cmd := exec.CommandContext(ctx, bin, argv...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("wrk: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	res, taken, err := parseWrk(out)
	if err != nil {
		return nil, nil, err
	}
	res.Kind = kind
	return res, taken, nil
}

// wrkConns is the connections wrk opens: the scenario's clients, shared
// evenly by its threads (it gives each clients/threads).
func (r *runner) wrkConns() int { return max(wrkThreads, r.c.Clients-r.c.Clients%wrkThreads) }

// wrkSeconds is a round's length for wrk, which counts whole seconds.
func (r *runner) wrkSeconds() int { return max(1, int(r.c.Duration.Round(time.Second)/time.Second)) }

// generatorNote says, above a scenario's table, what drove it when it was
// not the load test's own client ("" when it was).
func (r *runner) generatorNote() string {
	if r.c.Generator != "wrk" {
		return ""
	}
	return fmt.Sprintf("Both arms driven by wrk (`-t%d -c%d -d%ds`), not the load test's own client. Its p50 and p99 are "+
		"wrk's, corrected for coordinated omission (samples added between the mean and each slow one), so they are "+
		"not comparable with the Go client's; the rates are.\n\n", wrkThreads, r.wrkConns(), r.wrkSeconds())
}

// closedLoop runs one closed-loop round of kind's requests against c with
// the configured generator: next makes the Go client's requests, viaWrk
// runs wrk's round instead.
func (r *runner) closedLoop(ctx context.Context, c *Client, kind string, next func() Request,
	viaWrk func() (*Result, error)) (*Result, error) {
	if r.c.Generator == "wrk" {
		return viaWrk()
	}
	res := ClosedLoop(ctx, c, r.c.Clients, r.c.Duration, func(int) Request { return next() })[kind]
	if res == nil { // nothing answered in the round
		res = &Result{Kind: kind, Statuses: map[int]int{}}
	}
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
	res := &Result{Statuses: map[int]int{}}
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
			res.Statuses[200] = requests - notOK // wrk counts 2xx and 3xx together; none of these answers 3xx
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
