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

	"github.com/collegematch/matching/internal/auth"
	"github.com/collegematch/matching/internal/testutil"
)

// An API that starts while Redis is down is ready (it serves what it can):
// the outage shows in /health, in /readyz's body, in the metrics and in
// the log, not by failing the readiness probe, which would take every
// replica out of rotation at once.
func TestRunReadyWhileRedisIsDown(t *testing.T) {
	env := map[string]string{
		"DATABASE_URL":      testutil.NewDBURL(t),
		"REDIS_URL":         "redis://127.0.0.1:1/0",
		"HTTP_ADDR":         "127.0.0.1:0",
		"OPS_ADDR":          "127.0.0.1:0",
		"AUTH_HS256_SECRET": secret,
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan [2]string, 1)
	done := make(chan error, 1)
	var logs testutil.Buffer
	go func() { done <- run(ctx, func(k string) string { return env[k] }, &logs, ready) }()
	var addrs [2]string
	select {
	case addrs = <-ready:
	case err := <-done:
		t.Fatalf("run returned early: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("api did not start")
	}
	get := func(url, tok string) (int, string) {
		req, _ := http.NewRequest("GET", url, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}

	code, body := get("http://"+addrs[1]+"/readyz", "")
	require.Equal(t, http.StatusOK, code, body)
	var readyz struct {
		Status       string
		Dependencies map[string]string
	}
	require.NoError(t, json.Unmarshal([]byte(body), &readyz))
	assert.Equal(t, "ready", readyz.Status)
	assert.Equal(t, "ok", readyz.Dependencies["postgres"])
	assert.True(t, strings.HasPrefix(readyz.Dependencies["redis"], "down: "), readyz.Dependencies["redis"])

	tok, err := auth.MintHS256([]byte(secret), auth.MintOptions{Subject: uuid.NewString(), TTL: time.Minute})
	require.NoError(t, err)
	code, body = get("http://"+addrs[0]+"/health", tok)
	assert.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `"status":"degraded"`)
	assert.Contains(t, body, `"postgres":"ok"`)

	_, m := get("http://"+addrs[1]+"/metrics", "")
	assert.Contains(t, m, `matching_dependency_up{dependency="postgres"} 1`)
	assert.Contains(t, m, `matching_dependency_up{dependency="redis"} 0`)
	assert.True(t, logLine(logs.String(), `"msg":"dependency is down"`, `"dependency":"redis"`), "the outage is logged")
	assert.True(t, logLine(logs.String(), `"msg":"redis"`, `"topology":"single 127.0.0.1:1 (no node answered at start-up`))

	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(25 * time.Second):
		t.Fatal("api did not shut down")
	}
}

// logLine reports whether one line of logs contains every part.
func logLine(logs string, parts ...string) bool {
	for _, line := range strings.Split(logs, "\n") {
		found := true
		for _, p := range parts {
			found = found && strings.Contains(line, p)
		}
		if found {
			return true
		}
	}
	return false
}
