package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/auth"
	"github.com/collegematch/matching/internal/command"
	"github.com/collegematch/matching/internal/config"
	"github.com/collegematch/matching/internal/httpapi"
	"github.com/collegematch/matching/internal/metrics"
	"github.com/collegematch/matching/internal/ratelimit"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
)

var testSecret = []byte("test-secret-test-secret-test-secret-0123")

// testAPI is a real router over a fresh database and this package's Redis DB.
type testAPI struct {
	URL      string
	Store    *store.Store
	Redis    *redis.Client
	Registry *prometheus.Registry
}

type apiOption func(*httpapi.Deps)

func newTestAPI(t *testing.T, opts ...apiOption) *testAPI {
	t.Helper()
	pool := testutil.NewDB(t)
	rdb := testutil.NewRedis(t, testutil.RedisDBHTTPAPI)
	db := store.New(pool)
	verifier, err := auth.NewVerifier(context.Background(), auth.VerifierOptions{HS256Secret: testSecret})
	require.NoError(t, err)
	limits, err := config.Load(func(string) string { return "" }, config.RoleCLI)
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	d := httpapi.Deps{
		Log:        testutil.Logger(t),
		Metrics:    metrics.NewHTTP(reg),
		Verifier:   verifier,
		Limiter:    ratelimit.New(rdb, limits.RateLimits),
		RateLimits: limits.RateLimits,
		Onboarding: command.NewOnboarding(db),
		Health: []httpapi.HealthCheck{
			{Name: "postgres", Check: db.Ping},
			{Name: "redis", Check: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }},
		},
		Version: "test",
	}
	for _, o := range opts {
		o(&d)
	}
	srv := httptest.NewServer(httpapi.NewServer(d))
	t.Cleanup(srv.Close)
	return &testAPI{URL: srv.URL, Store: db, Redis: rdb, Registry: reg}
}

// token mints a student token for sub (a new UUID when empty).
func token(t *testing.T, sub string, service bool) string {
	t.Helper()
	if sub == "" {
		sub = uuid.NewString()
	}
	tok, err := auth.MintHS256(testSecret, auth.MintOptions{Subject: sub, Service: service, TTL: time.Hour})
	require.NoError(t, err)
	return tok
}

// result is a decoded response.
type result struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

// errorCode returns error.code of an error body.
func (r result) errorCode() string {
	e, _ := r.Body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// errorFields returns error.details.fields of an error body.
func (r result) errorFields() map[string]any {
	e, _ := r.Body["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	f, _ := d["fields"].(map[string]any)
	return f
}

// do sends body (a string is sent as is, anything else as JSON) with the token.
func (a *testAPI) do(t *testing.T, method, path, tok string, body any) result {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, a.URL+path, rd)
	require.NoError(t, err)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	out := result{Status: res.StatusCode, Header: res.Header, Raw: raw}
	if len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, &out.Body), "body is JSON: %s", raw)
	}
	return out
}
