package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/active"
	"github.com/collegematch/matching/internal/auth"
	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/command"
	"github.com/collegematch/matching/internal/config"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/httpapi"
	"github.com/collegematch/matching/internal/metrics"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/ratelimit"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
)

var testSecret = []byte("test-secret-test-secret-test-secret-0123")

// testAPI is a real router over a fresh database and this package's Redis DB.
type testAPI struct {
	URL      string
	Handler  http.Handler // the router, for in-process benchmarks
	Pool     *pgxpool.Pool
	Store    *store.Store
	Redis    redis.UniversalClient
	Registry *prometheus.Registry
	Catalog  *active.Holder
	Students *countingStudents // the read side's store, counting its calls
}

type apiOption func(*httpapi.Deps)

func newTestAPI(t testing.TB, opts ...apiOption) *testAPI {
	t.Helper()
	return newTestAPIOn(t, testutil.NewDB(t), testutil.NewRedis(t, testutil.RedisDBHTTPAPI), opts...)
}

// newTestAPIOn is a real router over pool and rdb, wired as cmd/api wires
// it; the catalogue is loaded once now (see seedSchools).
func newTestAPIOn(t testing.TB, pool *pgxpool.Pool, rdb redis.UniversalClient, opts ...apiOption) *testAPI {
	t.Helper()
	db := store.New(pool)
	log := testutil.Logger(t)
	verifier, err := auth.NewVerifier(context.Background(), auth.VerifierOptions{HS256Secret: testSecret})
	require.NoError(t, err)
	limits, err := config.Load(func(string) string { return "" }, config.RoleCLI)
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	qm := query.NewMetrics(reg)
	catalog := active.NewHolder(db, log, active.NewMetrics(reg), time.Hour)
	require.NoError(t, catalog.Load(context.Background()))
	students := &countingStudents{db: db}
	queries := query.New(query.Config{
		Students: students, Feeds: cache.NewFeeds(rdb, 5*time.Minute), Catalogs: catalog, Log: log, Metrics: qm,
		Probes: cache.NewProbes(rdb, 5*time.Minute),
	})
	w := newWriteSide(db, rdb, catalog, log, metrics.NewLearning(reg))
	d := httpapi.Deps{
		Log:            log,
		Metrics:        metrics.NewHTTP(reg),
		Verifier:       verifier,
		Limiter:        ratelimit.NewPipelined(rdb, limits.RateLimits),
		RateLimits:     limits.RateLimits,
		Onboarding:     command.NewOnboarding(db, command.WithFeedInvalidator(queries)),
		Queries:        queries,
		Categories:     queries,
		CategorySwipes: w.categories,
		Swipes:         w.swipes,
		Feedback:       w.feedback,
		Continuous: query.NewContinuous(query.ContinuousConfig{Queries: queries,
			Store:  cache.NewCooldowns(cache.NewFeeds(rdb, 5*time.Minute), 5*time.Minute),
			Probes: cache.NewProbes(rdb, 5*time.Minute)}),
		Carried:      w.swipes,
		SyncPush:     w.sync,
		SyncPull:     query.NewSync(queries, db, 0, 0),
		FeedCacheTTL: 5 * time.Minute,
		Health: []httpapi.HealthCheck{
			{Name: "postgres", Check: db.Ping},
			{Name: "redis", Check: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }},
		},
		Version: "test",
	}
	for _, o := range opts {
		o(&d)
	}
	h := httpapi.NewServer(d)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &testAPI{URL: srv.URL, Handler: h, Pool: pool, Store: db, Redis: rdb, Registry: reg, Catalog: catalog, Students: students}
}

// countingStudents is the read side's view of the store, counting calls so
// tests can tell a cached read (no call) from a rebuild.
type countingStudents struct {
	db    *store.Store
	calls atomic.Int64
}

func (c *countingStudents) LearnerState(ctx context.Context, id string) (domain.LearnerState, error) {
	c.calls.Add(1)
	return c.db.LearnerState(ctx, id)
}

func (c *countingStudents) StudentVersion(ctx context.Context, id string) (int64, error) {
	return c.db.StudentVersion(ctx, id)
}

// seedSchools stores n generated schools and reloads the catalogue.
func (a *testAPI) seedSchools(t testing.TB, n int) []domain.School {
	t.Helper()
	schools := catalog.Generate(n, 7)
	_, err := a.Store.UpsertSchools(context.Background(), schools)
	require.NoError(t, err)
	require.NoError(t, a.Catalog.Load(context.Background()))
	return schools
}

// token mints a student token for sub (a new UUID when empty).
func token(t testing.TB, sub string, service bool) string {
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
func (a *testAPI) do(t testing.TB, method, path, tok string, body any) result {
	t.Helper()
	return a.send(t, method, path, tok, nil, body)
}

// doHeaders is do with extra request headers (an empty value is not sent).
func (a *testAPI) doHeaders(t testing.TB, method, path, tok string, headers map[string]string, body ...any) result {
	t.Helper()
	var b any
	if len(body) > 0 {
		b = body[0]
	}
	return a.send(t, method, path, tok, headers, b)
}

func (a *testAPI) send(t testing.TB, method, path, tok string, headers map[string]string, body any) result {
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
	for k, v := range headers {
		if v != "" {
			req.Header.Set(k, v)
		}
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
