package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/auth"
	"github.com/collegematch/matching/internal/testutil"
)

// testutil.Buffer (readiness_test.go) collects what the API logs.

// startHostileAPI runs the API as cmd/api runs it (run, with its servers and
// timeouts) on a fresh database and returns its public and ops base URLs
// and its log.
func startHostileAPI(t *testing.T, extra map[string]string) (public, opsURL string, logs *testutil.Buffer) {
	t.Helper()
	env := map[string]string{
		"DATABASE_URL":      testutil.NewDBURL(t),
		"REDIS_URL":         testutil.RedisURLFor(t, testutil.RedisDBCmdAPI),
		"HTTP_ADDR":         "127.0.0.1:0",
		"OPS_ADDR":          "127.0.0.1:0",
		"AUTH_HS256_SECRET": secret,
	}
	for k, v := range extra {
		env[k] = v
	}
	testutil.NewRedis(t, testutil.RedisDBCmdAPI) // flushed before and after
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan [2]string, 1)
	done := make(chan error, 1)
	logs = &testutil.Buffer{}
	go func() { done <- run(ctx, func(k string) string { return env[k] }, logs, ready) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(25 * time.Second):
			t.Error("api did not shut down")
		}
	})
	select {
	case addrs := <-ready:
		return "http://" + addrs[0], "http://" + addrs[1], logs
	case err := <-done:
		t.Fatalf("run returned early: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("api did not start")
	}
	return "", "", nil
}

// metricSeries scrapes /metrics and returns its size and its series (one
// "name{labels}" per sample line).
func metricSeries(t *testing.T, opsURL string) (int, map[string]bool) {
	t.Helper()
	res, err := http.Get(opsURL + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	series := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), len(b)+1)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			series[line[:i]] = true
		}
	}
	require.NoError(t, sc.Err())
	return len(b), series
}

// tokenChars are the characters of an HTTP token (RFC 9110), which a
// method may be made of.
const tokenChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+-.^_`|~"

// madeUpMethods returns a source of random HTTP tokens: methods no
// standard knows, as a hostile client would send. Each is a random slice
// of one random text, so making thousands costs little.
func madeUpMethods(seed uint64) func(n int) string {
	r := rand.New(rand.NewPCG(seed, 7))
	text := make([]byte, 64<<10)
	for i := range text {
		text[i] = tokenChars[r.IntN(len(tokenChars))]
	}
	var mu sync.Mutex
	return func(n int) string {
		mu.Lock()
		defer mu.Unlock()
		n = min(n, len(text))
		off := r.IntN(len(text) - n + 1)
		return string(text[off : off+n])
	}
}

var standardMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "CONNECT", "OPTIONS", "TRACE", "OTHER"}

// Made-up methods (issue: 1,500 of 30 KB grew /metrics to 767 MB) are
// counted under OTHER: 3,000 of them, 64 bytes to 8 KiB long, with and
// without a token, on known and unknown paths, create no series, leave
// /metrics under 1 MiB, log nothing but the fixed label, and are not
// echoed back in full.
func TestMadeUpMethodsMintNoSeries(t *testing.T) {
	public, opsURL, logs := startHostileAPI(t, nil)
	tok, err := auth.MintHS256([]byte(secret), auth.MintOptions{Subject: uuid.NewString(), TTL: time.Hour})
	require.NoError(t, err)
	paths := []string{"/health", "/swipe", "/recommendations", "/m/recommendations/" + uuid.NewString(), "/no/such/path"}
	client := &http.Client{Timeout: 10 * time.Second}
	// send makes one request and says what is wrong with its answer ("" when nothing).
	send := func(method, path string, withToken bool) string {
		req, err := http.NewRequest(method, public+path, nil)
		if err != nil {
			return err.Error()
		}
		if withToken {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		res, err := client.Do(req)
		if err != nil {
			return err.Error()
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		short := method[:min(len(method), 16)] + " " + path
		switch {
		case err != nil:
			return short + ": " + err.Error()
		case res.StatusCode >= 500:
			return short + ": " + res.Status + " " + string(b)
		case len(b) >= 2048:
			return fmt.Sprintf("%s: a %d-byte answer echoes the method or path in full", short, len(b))
		case res.StatusCode < 400 || method == http.MethodHead:
			return ""
		}
		var body struct {
			Error struct {
				Code    string         `json:"code"`
				Message string         `json:"message"`
				Details map[string]any `json:"details"`
			} `json:"error"`
		}
		if json.Unmarshal(b, &body) != nil || body.Error.Code == "" || body.Error.Details == nil {
			return short + ": not the error body: " + string(b)
		}
		return ""
	}
	method := madeUpMethods(1)
	// Every route and status a made-up method can reach, once, so the
	// series they need exist before the count is taken.
	for _, p := range paths {
		for _, withToken := range []bool{false, true} {
			require.Empty(t, send(http.MethodGet, p, withToken))
			require.Empty(t, send(method(40), p, withToken))
		}
	}
	idleSize, before := metricSeries(t, opsURL)
	t.Logf("/metrics before: %d bytes, %d series", idleSize, len(before))

	const total, batch = 3000, 100
	var wg sync.WaitGroup
	for sent := 0; sent < total; sent += batch {
		work := make(chan int, batch)
		for i := range batch {
			work <- sent + i
		}
		close(work)
		for range 8 {
			wg.Go(func() {
				for i := range work {
					if problem := send(method(64+(i*7919)%(8<<10)), paths[i%len(paths)], i%2 == 0); problem != "" {
						t.Error(problem)
					}
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		size, after := metricSeries(t, opsURL)
		require.Less(t, size, 1<<20, "/metrics after %d made-up methods", sent+batch)
		for s := range after {
			require.True(t, before[s], "a made-up method created series %.200s", s)
		}
	}
	size, after := metricSeries(t, opsURL)
	t.Logf("/metrics after %d made-up methods: %d bytes, %d series", total, size, len(after))

	for _, line := range strings.Split(logs.String(), "\n") {
		if !strings.Contains(line, `"msg":"request"`) {
			continue
		}
		require.Less(t, len(line), 2048, "a request log line stays short: %.300s", line)
		var entry struct{ Method string }
		require.NoError(t, json.Unmarshal([]byte(line), &entry))
		require.True(t, slices.Contains(standardMethods, entry.Method), "logged method %.64q", entry.Method)
	}
}

// 300 connections trickling a request one byte a second (half still in
// their headers, half in a body they announced) leave everyone else's
// requests unaffected: every normal request in the meantime, each on a
// fresh connection, answers within a second.
func TestSlowClientsLeaveOthersUnaffected(t *testing.T) {
	public, _, _ := startHostileAPI(t, nil)
	student := uuid.NewString()
	tok, err := auth.MintHS256([]byte(secret), auth.MintOptions{Subject: student, TTL: time.Hour})
	require.NoError(t, err)
	host := strings.TrimPrefix(public, "http://")

	const slow = 300
	conns := make([]net.Conn, 0, slow)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	var prefixes []string
	for i := range slow {
		c, err := net.DialTimeout("tcp", host, 5*time.Second)
		require.NoError(t, err)
		conns = append(conns, c)
		if i%2 == 0 {
			prefixes = append(prefixes, "GET /health HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+tok+"\r\nX-Slow: ")
		} else {
			prefixes = append(prefixes, "POST /v2/onboarding/minimal HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+tok+
				"\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"name\":\"")
		}
		_, err = c.Write([]byte(prefixes[i]))
		require.NoError(t, err)
	}
	stop := make(chan struct{})
	trickled := make(chan struct{})
	go func() { // one byte a second on every slow connection
		defer close(trickled)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				for _, c := range conns {
					_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
					_, _ = c.Write([]byte("a"))
				}
			}
		}
	}()

	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	profile := `{"name":"Ada","email":"ada@example.com","graduation_year":"2027"}`
	var worst time.Duration
	n := 0
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); n++ {
		var req *http.Request
		if n%2 == 0 {
			req, _ = http.NewRequest(http.MethodGet, public+"/health", nil)
		} else {
			req, _ = http.NewRequest(http.MethodPost, public+"/v2/onboarding/minimal", strings.NewReader(profile))
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		start := time.Now()
		res, err := client.Do(req)
		require.NoError(t, err, "request %d", n)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		took := time.Since(start)
		worst = max(worst, took)
		require.Less(t, res.StatusCode, 300, "%s", b)
		require.Less(t, took, time.Second, "request %d took %s", n, took)
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	<-trickled
	t.Logf("%d normal requests beside %d trickling connections; slowest %s", n, slow, worst)
}
