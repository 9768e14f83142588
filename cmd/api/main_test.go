package main

import (
	"context"
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

const secret = "api-test-secret-api-test-secret-0123456789"

func TestRunServesAndShutsDown(t *testing.T) {
	env := map[string]string{
		"DATABASE_URL":      testutil.NewDBURL(t),
		"REDIS_URL":         testutil.RedisURLFor(t, testutil.RedisDBCmdAPI),
		"HTTP_ADDR":         "127.0.0.1:0",
		"OPS_ADDR":          "127.0.0.1:0",
		"AUTH_HS256_SECRET": secret,
	}
	testutil.NewRedis(t, testutil.RedisDBCmdAPI) // flushed before and after
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan [2]string, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, func(k string) string { return env[k] }, io.Discard, ready) }()

	var addrs [2]string
	select {
	case addrs = <-ready:
	case err := <-done:
		t.Fatalf("run returned early: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("api did not start")
	}
	public, opsAddr := "http://"+addrs[0], "http://"+addrs[1]

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
	code, body := get(opsAddr+"/livez", "")
	assert.Equal(t, 200, code)
	assert.Equal(t, "ok\n", body)
	code, body = get(opsAddr+"/readyz", "")
	assert.Equal(t, 200, code, body)
	assert.JSONEq(t, `{"status":"ready","dependencies":{"postgres":"ok","redis":"ok"}}`, body)

	tok, err := auth.MintHS256([]byte(secret), auth.MintOptions{Subject: uuid.NewString(), TTL: time.Minute})
	require.NoError(t, err)
	code, body = get(public+"/health", tok)
	assert.Equal(t, 200, code, body)
	assert.Contains(t, body, `"status":"ok"`)
	code, _ = get(public+"/health", "")
	assert.Equal(t, 401, code)

	code, body = get(opsAddr+"/metrics", "")
	assert.Equal(t, 200, code)
	assert.Contains(t, body, `matching_http_requests_total{code="200",method="GET",route="/health"}`)
	assert.Contains(t, body, "go_goroutines")
	code, _ = get(opsAddr+"/debug/pprof/", "")
	assert.Equal(t, 404, code, "pprof is off unless PPROF=1")
	code, _ = get(public+"/metrics", tok)
	assert.Equal(t, 404, code, "metrics are on the ops port only")

	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(25 * time.Second):
		t.Fatal("api did not shut down")
	}
}

func TestRunRefusesBadConfig(t *testing.T) {
	cases := map[string]struct {
		env  map[string]string
		want string
	}{
		"no auth":       {map[string]string{}, "AUTH_JWKS_URL"},
		"short secret":  {map[string]string{"AUTH_HS256_SECRET": "short"}, "AUTH_HS256_SECRET"},
		"bad ttl":       {map[string]string{"AUTH_HS256_SECRET": secret, "FEED_CACHE_TTL": "soon"}, "FEED_CACHE_TTL"},
		"bad rate":      {map[string]string{"AUTH_HS256_SECRET": secret, "RATE_LIMIT_SWIPES": "lots"}, "RATE_LIMIT_SWIPES"},
		"bad db url":    {map[string]string{"AUTH_HS256_SECRET": secret, "DATABASE_URL": "mysql://x"}, "DATABASE_URL"},
		"bad log level": {map[string]string{"AUTH_HS256_SECRET": secret, "LOG_LEVEL": "loud"}, "LOG_LEVEL"},
		"bad fail flag": {map[string]string{"AUTH_HS256_SECRET": secret, "RATE_LIMIT_FAIL_CLOSED": "yes"}, "RATE_LIMIT_FAIL_CLOSED"},
		"bad cors":      {map[string]string{"AUTH_HS256_SECRET": secret, "CORS_ALLOWED_ORIGINS": "not a url"}, "CORS_ALLOWED_ORIGINS"},
		"secret beside jwks": {map[string]string{"AUTH_HS256_SECRET": secret, "AUTH_JWKS_URL": "https://id.example.com/jwks.json",
			"AUTH_ISSUER": "https://id.example.com/", "AUTH_AUDIENCE": "matching"}, "AUTH_HS256_SECRET: the development secret must not be set together with AUTH_JWKS_URL"},
		"plain http jwks": {map[string]string{"AUTH_JWKS_URL": "http://id.example.com/jwks.json",
			"AUTH_ISSUER": "https://id.example.com/", "AUTH_AUDIENCE": "matching"}, "AUTH_JWKS_URL: must be https"},
		"jwks without audience": {map[string]string{"AUTH_JWKS_URL": "https://id.example.com/jwks.json",
			"AUTH_ISSUER": "https://id.example.com/"}, "AUTH_AUDIENCE: must be set with AUTH_JWKS_URL"},
		"postgres down": {map[string]string{"AUTH_HS256_SECRET": secret, "DATABASE_URL": "postgres://postgres@127.0.0.1:1/x?sslmode=disable&connect_timeout=2"}, "postgres"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := run(context.Background(), func(k string) string { return tc.env[k] }, io.Discard, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.False(t, strings.Contains(err.Error(), "\n\n"))
		})
	}
}
