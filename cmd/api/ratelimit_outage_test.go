package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
	"github.com/collegematch/matching/internal/tools/faultproxy"
)

// startOutageAPI runs the API as cmd/api runs it, with a catalogue, env
// added to its configuration, reaching Redis at redisURL; it returns the
// API's fault API helper (its proxy unused) and its log.
func startOutageAPI(t *testing.T, redisURL string, env map[string]string) (*faultAPI, *testutil.Buffer) {
	t.Helper()
	dbURL := testutil.NewDBURL(t)
	ctx := context.Background()
	pool, err := store.Open(ctx, dbURL)
	require.NoError(t, err)
	schools := catalog.Generate(200, 11)
	_, err = store.New(pool).UpsertSchools(ctx, schools)
	require.NoError(t, err)
	pool.Close()
	full := map[string]string{
		"DATABASE_URL":      dbURL,
		"REDIS_URL":         redisURL,
		"HTTP_ADDR":         "127.0.0.1:0",
		"OPS_ADDR":          "127.0.0.1:0",
		"AUTH_HS256_SECRET": secret,
	}
	for k, v := range env {
		full[k] = v
	}
	runCtx, cancel := context.WithCancel(ctx)
	ready := make(chan [2]string, 1)
	done := make(chan error, 1)
	logs := &testutil.Buffer{}
	go func() { done <- run(runCtx, func(k string) string { return full[k] }, logs, ready) }()
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
		return &faultAPI{base: "http://" + addrs[0], ops: "http://" + addrs[1], direct: dbURL, schools: schools}, logs
	case err := <-done:
		t.Fatalf("run returned early: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("api did not start")
	}
	return nil, nil
}

// push sends n counted swipes in one sync push and returns how many were
// accepted and how many rejected as rate_limited.
func (f *faultAPI) push(t *testing.T, student string, n int) (accepted, limited int) {
	t.Helper()
	changes := make([]map[string]any, n)
	for i := range changes {
		changes[i] = map[string]any{"id": uuid.NewString(), "type": "swipe", "school_id": f.schools[i%len(f.schools)].ID,
			"direction": "left", "occurred_at": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano)}
	}
	a := f.call(t, student, "POST", "/m/sync/push", map[string]any{"student_id": student, "changes": changes})
	require.Equal(t, http.StatusOK, a.code, "%v", a)
	var body struct {
		Accepted []string `json:"accepted"`
		Rejected []struct {
			Error string `json:"error"`
		} `json:"rejected"`
	}
	require.NoError(t, json.Unmarshal(a.body, &body))
	for _, r := range body.Rejected {
		if r.Error == "rate_limited" {
			limited++
		}
	}
	if limited > 0 {
		assert.NotEmpty(t, a.retryAfter, "%v", a)
	}
	return len(body.Accepted), limited
}

// Redis goes away under a running API: limits do not vanish. The replica
// counts each student's allowances in memory at the same rates, so a token
// that floods sync pushes gets through its allowance once more at most
// (what Redis had counted is not known to the replica), not without limit;
// the metrics and the log say so.
func TestRedisOutageKeepsTheAllowances(t *testing.T) {
	testutil.NewRedis(t, testutil.RedisDBCmdAPI) // flushed before and after
	redisURL, proxy := faultproxy.ForURL(t, testutil.RedisURLFor(t, testutil.RedisDBCmdAPI))
	f, logs := startOutageAPI(t, redisURL, map[string]string{"RATE_LIMIT_SWIPES": "10/min"})
	student := f.onboard(t)

	accepted, limited := f.push(t, student, 30)
	assert.Equal(t, 10, accepted, "Redis counts: the allowance")
	assert.Equal(t, 20, limited)

	require.NoError(t, proxy.Close(), "Redis goes away")
	total := accepted
	for range 5 {
		accepted, _ = f.push(t, student, 30)
		total += accepted
	}
	a := f.swipe(t, student, 77)
	require.Equal(t, http.StatusTooManyRequests, a.code, "%v", a)
	assert.NotEmpty(t, a.retryAfter)
	assert.LessOrEqual(t, total, 2*10+2, "at most about twice the allowance across the outage")
	assert.GreaterOrEqual(t, total, 2*10, "the replica's own allowance is there to spend")

	families := scrape(t, f.ops)
	assert.Positive(t, counter(families, "matching_rate_limit_fallback_total", map[string]string{"group": "swipes", "decision": "refused"}))
	assert.Positive(t, counter(families, "matching_rate_limit_errors_total", map[string]string{"group": "swipes", "outcome": "fallback"}))
	assert.LessOrEqual(t, counter(families, "matching_rate_limit_errors_total", map[string]string{"group": "swipes", "outcome": "allowed"}), 0.0,
		"nothing passed uncounted")
	assert.Equal(t, 1, strings.Count(logs.String(), "rate limiter cannot reach Redis"), "logged once for the outage")
}

// RATE_LIMIT_FAIL_CLOSED=1: while Redis cannot count, requests are 503
// with Retry-After, nothing recorded.
func TestRedisOutageFailClosed(t *testing.T) {
	f, _ := startOutageAPI(t, "redis://127.0.0.1:1/0", map[string]string{"RATE_LIMIT_FAIL_CLOSED": "1"})
	student := uuid.NewString()
	for range 3 {
		requireUnavailable(t, f.swipe(t, student, 1))
	}
	res, err := http.Get(f.ops + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	assert.Contains(t, string(b), `matching_rate_limit_errors_total{group="swipes",outcome="denied"} 3`)
	assert.NotContains(t, string(b), `matching_rate_limit_fallback_total{`)
}
