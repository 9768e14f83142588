package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/auth"
	"github.com/collegematch/matching/internal/testutil"
)

// Each start of matchctl demo logs in as a fresh student: /session holds a
// development token whose subject is the session's student, valid for --ttl.
func TestDemoServesATokenForAFreshStudent(t *testing.T) {
	secret := randomHex(t, 32)
	env := map[string]string{"AUTH_HS256_SECRET": secret, "LOG_LEVEL": "warn"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	verifier, err := auth.NewVerifier(ctx, auth.VerifierOptions{HS256Secret: []byte(secret), Log: testutil.Logger(t)})
	require.NoError(t, err)

	var students []string
	for range 2 {
		runCtx, stop := context.WithCancel(ctx)
		base := startDemoWith(t, runCtx, env, "--api", "http://127.0.0.1:1", "--ttl", "2h")
		resp, err := http.Get(base + "/session")
		require.NoError(t, err)
		var sess struct {
			StudentID string    `json:"student_id"`
			Token     string    `json:"token"`
			ExpiresAt time.Time `json:"expires_at"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&sess))
		resp.Body.Close()

		claims, err := verifier.Verify(ctx, sess.Token)
		require.NoError(t, err)
		assert.Equal(t, sess.StudentID, claims.Subject)
		assert.Empty(t, claims.Scopes, "a student token, not a service token")
		assert.WithinDuration(t, time.Now().Add(2*time.Hour), claims.ExpiresAt, time.Minute)
		assert.WithinDuration(t, claims.ExpiresAt, sess.ExpiresAt, time.Second)
		students = append(students, sess.StudentID)
		stop()
	}
	assert.NotEqual(t, students[0], students[1], "each start is a new student")
}

func TestDemoRefusesBadSettings(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		env    map[string]string
		args   []string
		code   int
		stderr string
	}{
		{"a non-loopback address", map[string]string{"AUTH_HS256_SECRET": randomHex(t, 32)},
			[]string{"--addr", "0.0.0.0:8081"}, 2, "must be a loopback address"},
		{"an address without a port", map[string]string{"AUTH_HS256_SECRET": randomHex(t, 32)},
			[]string{"--addr", "127.0.0.1"}, 2, "is not host:port"},
		{"an API URL that is not http", map[string]string{"AUTH_HS256_SECRET": randomHex(t, 32)},
			[]string{"--api", "ftp://127.0.0.1:8080"}, 2, "--api must be an http(s) URL"},
		{"a zero ttl", map[string]string{"AUTH_HS256_SECRET": randomHex(t, 32)},
			[]string{"--ttl", "0s"}, 2, "--ttl must be positive"},
		{"no development secret", map[string]string{}, nil, 1, "AUTH_HS256_SECRET is not set"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(ctx, append([]string{"demo"}, c.args...), func(k string) string { return c.env[k] }, &out, &errOut)
			assert.Equal(t, c.code, code)
			assert.Contains(t, errOut.String(), c.stderr)
			assert.Empty(t, out.String(), "nothing served")
		})
	}
}

func TestAPIURLForHTTPAddr(t *testing.T) {
	for addr, want := range map[string]string{
		":8080":           "http://127.0.0.1:8080",
		"0.0.0.0:9000":    "http://127.0.0.1:9000",
		"[::]:9000":       "http://127.0.0.1:9000",
		"127.0.0.1:18601": "http://127.0.0.1:18601",
		"[::1]:8080":      "http://[::1]:8080",
		"api.internal:80": "http://api.internal:80",
	} {
		assert.Equal(t, want, apiURLFor(addr), addr)
	}
}

// startDemoWith runs `matchctl demo --addr 127.0.0.1:0 args...` until ctx
// ends or the test does, and returns its URL.
func startDemoWith(t *testing.T, ctx context.Context, env map[string]string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	out, w := io.Pipe()
	var errOut testutil.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"demo", "--addr", "127.0.0.1:0"}, args...),
			func(k string) string { return env[k] }, w, &errOut)
		_ = w.Close()
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			assert.Equal(t, 0, code, "matchctl demo: %s", errOut.String())
		case <-time.After(10 * time.Second):
			t.Error("matchctl demo did not stop within 10 s")
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "matchctl demo: %s", errOut.String())
	go func() { _, _ = io.Copy(io.Discard, out) }()
	_, rest, ok := strings.Cut(line, "Demo page: ")
	require.True(t, ok, "matchctl demo printed %q", line)
	page, _, _ := strings.Cut(rest, " ")
	return strings.TrimSuffix(page, "/")
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}
