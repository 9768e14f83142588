package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/testutil"
)

// wire counts what crosses the wire to PostgreSQL (a pgx tracer: each
// statement sent alone is a round trip, a batch is one round trip for all
// its statements) and to Redis (a go-redis hook: a command or a pipeline is
// one round trip).
type wire struct {
	pgTrips, pgStatements, redisTrips, redisCommands atomic.Int64
}

func (w *wire) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	w.pgTrips.Add(1)
	w.pgStatements.Add(1)
	return ctx
}

func (w *wire) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (w *wire) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	w.pgTrips.Add(1)
	return ctx
}

func (w *wire) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	w.pgStatements.Add(1)
}

func (w *wire) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (w *wire) DialHook(next redis.DialHook) redis.DialHook { return next }

func (w *wire) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		w.redisTrips.Add(1)
		w.redisCommands.Add(1)
		return next(ctx, cmd)
	}
}

func (w *wire) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		w.redisTrips.Add(1)
		w.redisCommands.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// cost is what one request of a kind sent over the wire and allocated, on
// average over the requests measured.
type cost struct {
	pgTrips, pgStatements, redisTrips, redisCommands, allocs float64
}

func (c cost) String() string {
	return fmt.Sprintf("%.2f | %.2f | %.2f | %.2f | %.0f", c.pgTrips, c.pgStatements, c.redisTrips, c.redisCommands, c.allocs)
}

// measure serves n requests made by req (after two that warm the
// connections' prepared statements and Redis's script cache up), each
// after prepare (not counted), and returns their mean cost. The
// allocations are the whole process's while the router serves the request
// (the request itself is made before), so they include whatever else runs
// meanwhile: read them as an approximation.
func (w *wire) measure(t *testing.T, h http.Handler, n int, prepare func(), req func() *http.Request, want int) cost {
	t.Helper()
	for range 2 {
		prepare()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req())
		require.Equal(t, want, rec.Code, "%s", rec.Body)
	}
	var c cost
	var before, after runtime.MemStats
	for range n {
		prepare()
		r, rec := req(), httptest.NewRecorder()
		p0, s0, r0, k0 := w.pgTrips.Load(), w.pgStatements.Load(), w.redisTrips.Load(), w.redisCommands.Load()
		runtime.ReadMemStats(&before)
		h.ServeHTTP(rec, r)
		runtime.ReadMemStats(&after)
		require.Equal(t, want, rec.Code, "%s", rec.Body)
		c.pgTrips += float64(w.pgTrips.Load() - p0)
		c.pgStatements += float64(w.pgStatements.Load() - s0)
		c.redisTrips += float64(w.redisTrips.Load() - r0)
		c.redisCommands += float64(w.redisCommands.Load() - k0)
		c.allocs += float64(after.Mallocs - before.Mallocs)
	}
	c.pgTrips, c.pgStatements, c.redisTrips, c.redisCommands, c.allocs = c.pgTrips/float64(n),
		c.pgStatements/float64(n), c.redisTrips/float64(n), c.redisCommands/float64(n), c.allocs/float64(n)
	return c
}

// What each request path sends to PostgreSQL and Redis, counted on the
// wire through the real router over the real servers: the budgets of the
// design (architecture.md, decisions.md "Load, limits and failure") hold,
// and the whole table is logged (go test ./internal/httpapi -run
// TestWhatEachRequestSends -v; docs/benchmarks.md keeps a copy).
func TestWhatEachRequestSends(t *testing.T) {
	ctx := context.Background()
	w := &wire{}
	cfg, err := pgxpool.ParseConfig(testutil.NewDBURL(t))
	require.NoError(t, err)
	cfg.ConnConfig.Tracer = w
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	rdb := testutil.NewRedis(t, testutil.RedisDBHTTPAPI)
	rdb.AddHook(w)
	api := newTestAPIOn(t, pool, rdb, withRates(rdb, unlimited()))
	schools := api.seedSchools(t, 6500)
	student, tok := api.newStudent(t, completeProfile())
	require.Equal(t, http.StatusOK, api.do(t, "GET", "/m/recommendations/"+student, tok, nil).Status)
	etag := api.do(t, "GET", "/m/recommendations/"+student, tok, nil).Header.Get("ETag")

	request := func(method, path string, body any, headers ...string) func() *http.Request {
		return func() *http.Request {
			var rd *bytes.Reader
			if body != nil {
				var b any = body
				if f, ok := body.(func() any); ok {
					b = f()
				}
				buf, err := json.Marshal(b)
				require.NoError(t, err)
				rd = bytes.NewReader(buf)
			}
			var req *http.Request
			if rd != nil {
				req = httptest.NewRequest(method, path, rd)
				req.Header.Set("Content-Type", "application/json")
			} else {
				req = httptest.NewRequest(method, path, nil)
			}
			req.Header.Set("Authorization", "Bearer "+tok)
			for i := 0; i+1 < len(headers); i += 2 {
				req.Header.Set(headers[i], headers[i+1])
			}
			return req
		}
	}
	next := 100
	school := func() string { next++; return schools[next].ID }
	nothing := func() {}
	dropFeed := func() { require.NoError(t, rdb.Del(ctx, cache.FeedKey(student)).Err()) }
	// Each swipe on a school further down the feed leaves a tombstone for
	// the next read to build: a cached read is measured on a feed built
	// again first.
	warmFeed := func() {
		require.Equal(t, http.StatusOK, api.do(t, "GET", "/m/recommendations/"+student, tok, nil).Status)
		etag = api.do(t, "GET", "/m/recommendations/"+student, tok, nil).Header.Get("ETag")
	}
	cursor := ""
	paths := []struct {
		name    string
		prepare func()
		req     func() *http.Request
		status  int
		budget  *cost // exact, where the design fixes it
	}{
		{"cached `GET /m/recommendations/{id}`", warmFeed, request("GET", "/m/recommendations/"+student, nil),
			http.StatusOK, &cost{pgTrips: 0, pgStatements: 0, redisTrips: 1}},
		{"cached `GET /m/recommendations/{id}`, `If-None-Match` (304)", warmFeed, func() *http.Request {
			return request("GET", "/m/recommendations/"+student, nil, "If-None-Match", etag)()
		}, http.StatusNotModified, &cost{pgTrips: 0, pgStatements: 0, redisTrips: 1}},
		{"cached `POST /recommendations` (20 items)", warmFeed,
			request("POST", "/recommendations", map[string]any{"student_id": student}), http.StatusOK,
			&cost{pgTrips: 0, pgStatements: 0, redisTrips: 1}},
		{"`GET /m/recommendations/{id}`, no stored feed (built and stored)", dropFeed,
			request("GET", "/m/recommendations/"+student, nil), http.StatusOK, nil},
		{"`POST /swipe`", warmFeed, request("POST", "/swipe", func() any {
			return map[string]any{"student_id": student, "school_id": school(), "direction": "right"}
		}), http.StatusOK, &cost{pgTrips: 1, pgStatements: 1, redisTrips: 2}},
		{"`POST /feedback`", nothing, request("POST", "/feedback", func() any {
			return map[string]any{"student_id": student, "school_id": school(), "reason": "too_expensive"}
		}), http.StatusOK, &cost{pgTrips: 1, pgStatements: 1}},
		{"`POST /continuous-feed`, one swipe carried", nothing, request("POST", "/continuous-feed", func() any {
			return map[string]any{"student_id": student, "limit": 5,
				"swipes": []any{map[string]any{"school_id": school(), "direction": "left"}}}
		}), http.StatusOK, nil},
		{"`POST /m/sync/push`, one swipe", nothing, request("POST", "/m/sync/push", func() any {
			return map[string]any{"student_id": student, "changes": []any{map[string]any{"id": uuid.NewString(),
				"type": "swipe", "school_id": school(), "direction": "right",
				"occurred_at": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano)}}}
		}), http.StatusOK, nil},
		{"`POST /m/sync/pull`, first pull", nothing,
			request("POST", "/m/sync/pull", map[string]any{"student_id": student}), http.StatusOK,
			&cost{pgTrips: 2, pgStatements: 4, redisTrips: 2}},
		{"`POST /m/sync/pull`, nothing new since the cursor", func() {
			res := api.do(t, "POST", "/m/sync/pull", tok, map[string]any{"student_id": student})
			require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
			cursor, _ = res.Body["cursor"].(string)
		}, func() *http.Request {
			return request("POST", "/m/sync/pull", map[string]any{"student_id": student, "cursor": cursor})()
		}, http.StatusOK, &cost{pgTrips: 2, pgStatements: 4, redisTrips: 2}},
		{"`GET /match/{student_id}/{school_id}`", nothing,
			request("GET", "/match/"+student+"/"+schools[5].ID, nil), http.StatusOK, nil},
		{"`POST /m/batch/schools` (5 schools)", nothing, request("POST", "/m/batch/schools", map[string]any{
			"school_ids": []string{schools[1].ID, schools[2].ID, schools[3].ID, schools[4].ID, schools[5].ID}}),
			http.StatusOK, nil},
	}
	var table strings.Builder
	table.WriteString("| request | PostgreSQL round trips | statements | Redis round trips | Redis commands | allocations (approx.) |\n" +
		"|---|---:|---:|---:|---:|---:|\n")
	for _, p := range paths {
		c := w.measure(t, api.Handler, 10, p.prepare, p.req, p.status)
		fmt.Fprintf(&table, "| %s | %s |\n", p.name, c)
		if b := p.budget; b != nil {
			assert.Equal(t, b.pgTrips, c.pgTrips, "%s: PostgreSQL round trips", p.name)
			assert.Equal(t, b.pgStatements, c.pgStatements, "%s: statements", p.name)
			if b.redisTrips > 0 {
				assert.Equal(t, b.redisTrips, c.redisTrips, "%s: Redis round trips", p.name)
			}
		}
	}
	t.Logf("\n%s", table.String())
}
