package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/auth"
	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
)

// pgBouncer starts PgBouncer in transaction pooling mode with two server
// connections per database (far fewer than the API's pool, so every
// transaction may run on another server connection than the last), and
// stops it when the test ends.
func pgBouncer(t *testing.T) *testutil.Script {
	t.Helper()
	pgb, err := testutil.StartPgBouncer(context.Background(), 2)
	testutil.SkipOrFail(t, err)
	t.Cleanup(func() { assert.NoError(t, pgb.Stop()) })
	return pgb
}

// The API works through PgBouncer in transaction pooling mode with the
// DATABASE_URL an operator would write for PostgreSQL, naming no statement
// mode: it chooses cache_describe itself and logs so.
// students onboard, read their feeds, swipe, give feedback, swipe through
// the continuous feed and sync, eight at a time, and every answer is a
// success. The catalogue is loaded through it too.
func TestRunThroughPgBouncer(t *testing.T) {
	direct := testutil.NewDBURL(t) // created before PgBouncer, so dropped after it stops
	pgb := pgBouncer(t)
	dbURL := pgb.PlainDatabaseURL(direct)
	ctx := context.Background()

	pool, err := store.Open(ctx, pgb.DatabaseURL(direct))
	require.NoError(t, err)
	schools := catalog.Generate(300, 3)
	_, err = store.New(pool).UpsertSchools(ctx, schools)
	require.NoError(t, err, "a batch in a transaction, through PgBouncer")
	pool.Close()

	env := map[string]string{
		"DATABASE_URL":      dbURL,
		"REDIS_URL":         testutil.RedisURLFor(t, testutil.RedisDBCmdAPI),
		"HTTP_ADDR":         "127.0.0.1:0",
		"OPS_ADDR":          "127.0.0.1:0",
		"AUTH_HS256_SECRET": secret,
	}
	testutil.NewRedis(t, testutil.RedisDBCmdAPI) // flushed before and after
	runCtx, cancel := context.WithCancel(ctx)
	ready := make(chan [2]string, 1)
	done := make(chan error, 1)
	logs := &syncBuffer{}
	go func() { done <- run(runCtx, func(k string) string { return env[k] }, logs, ready) }()
	var addrs [2]string
	select {
	case addrs = <-ready:
	case err := <-done:
		t.Fatalf("run returned early: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("api did not start")
	}
	base := "http://" + addrs[0]

	const students = 8
	var wg sync.WaitGroup
	errs := make(chan error, students)
	for i := range students {
		wg.Go(func() {
			if err := studentSession(base, schools[i*20:i*20+20]); err != nil {
				errs <- fmt.Errorf("student %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// The answers came through transaction pooling: PgBouncer says so.
	admin, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/pgbouncer?sslmode=disable&default_query_exec_mode=simple_protocol", pgb.Port))
	require.NoError(t, err)
	defer admin.Close(ctx)
	var mode string
	rows, err := admin.Query(ctx, "SHOW CONFIG")
	require.NoError(t, err)
	for rows.Next() {
		vals, err := rows.Values()
		require.NoError(t, err)
		if vals[0] == "pool_mode" {
			mode = fmt.Sprint(vals[1])
		}
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, "transaction", mode)

	// The API said which statement mode it chose.
	var chosen map[string]any
	for l := range strings.SplitSeq(logs.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(l), &rec) == nil && rec["msg"] == "database statement mode" {
			chosen = rec
		}
	}
	require.NotNil(t, chosen, "the API logs its statement mode:\n%s", logs.String())
	assert.Equal(t, "cache_describe", chosen["default_query_exec_mode"])
	assert.Equal(t, true, chosen["pooler"])

	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(25 * time.Second):
		t.Fatal("api did not shut down")
	}
}

// studentSession is one student's first minutes, through the public API:
// each request must succeed.
func studentSession(base string, schools []domain.School) error {
	id := uuid.NewString()
	tok, err := auth.MintHS256([]byte(secret), auth.MintOptions{Subject: id, TTL: time.Hour})
	if err != nil {
		return err
	}
	call := func(method, path string, body any) (map[string]any, error) {
		var r io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			r = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, base+path, r)
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		if res.StatusCode >= 300 {
			return nil, fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, raw)
		}
		var out map[string]any
		_ = json.Unmarshal(raw, &out)
		return out, nil
	}
	at := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	steps := []struct {
		method, path string
		body         any
	}{
		{"POST", "/v2/onboarding/minimal", map[string]any{"name": "Ada", "email": "ada@example.com", "graduation_year": "2027",
			"gpa": 3.7, "test_scores": map[string]any{"sat": 1350}, "home": map[string]any{"lat": 39.95, "lon": -75.16},
			"state": "PA", "max_distance_miles": 500, "budget": 30000}},
		{"GET", "/v2/onboarding/category-schools", nil},
		{"POST", "/v2/onboarding/category-swipe", map[string]any{"student_id": id, "category_id": "liberal-arts", "direction": "right"}},
		{"POST", "/recommendations", map[string]any{"student_id": id}},
		{"GET", "/m/recommendations/" + id, nil},
		{"GET", "/match/" + id + "/" + schools[0].ID, nil},
		{"POST", "/swipe", map[string]any{"student_id": id, "school_id": schools[1].ID, "direction": "right"}},
		{"POST", "/swipe", map[string]any{"student_id": id, "school_id": schools[2].ID, "direction": "left", "swipe_id": uuid.NewString()}},
		{"POST", "/feedback", map[string]any{"student_id": id, "school_id": schools[2].ID, "reason": "too_expensive"}},
		{"POST", "/continuous-feed", map[string]any{"student_id": id, "limit": 5, "swipes": []any{
			map[string]any{"school_id": schools[3].ID, "direction": "right", "swipe_id": uuid.NewString()}}}},
		{"POST", "/m/sync/push", map[string]any{"student_id": id, "changes": []any{
			map[string]any{"id": uuid.NewString(), "type": "swipe", "school_id": schools[4].ID, "direction": "left", "occurred_at": at},
			map[string]any{"id": uuid.NewString(), "type": "feedback", "school_id": schools[4].ID, "reason": "wrong_location", "occurred_at": at},
		}}},
		{"POST", "/m/sync/pull", map[string]any{"student_id": id}},
		{"POST", "/m/batch/schools", map[string]any{"school_ids": []string{schools[5].ID, schools[6].ID}}},
		{"POST", "/v2/recommendations", map[string]any{"student_id": id, "limit": 10}},
	}
	for _, s := range steps {
		out, err := call(s.method, s.path, s.body)
		if err != nil {
			return err
		}
		if s.path == "/m/sync/push" {
			if acc, _ := out["accepted"].([]any); len(acc) != 2 {
				return fmt.Errorf("sync push accepted %v: %v", out["accepted"], out)
			}
		}
		if s.path == "/m/sync/pull" {
			if sw, _ := out["swipes"].([]any); len(sw) != 4 {
				return fmt.Errorf("sync pull returned %d swipes, want the 4 recorded: %v", len(sw), out)
			}
		}
	}
	return nil
}

// pgx's default statement mode (named prepared statements, cached per
// connection) does not survive transaction pooling on the PgBouncer Debian
// ships (1.18, before PgBouncer kept prepared statements in transaction
// mode): a statement prepared on one server connection is missing on the
// next, or already there. This is why DATABASE_URL names
// default_query_exec_mode=cache_describe when it points at a PgBouncer.
func TestPgBouncerNeedsAStatementMode(t *testing.T) {
	direct := testutil.NewDBURL(t)
	pgb := pgBouncer(t)
	ctx := context.Background()
	failures := func(mode string) int {
		url := strings.Replace(pgb.DatabaseURL(direct), "default_query_exec_mode=cache_describe", "default_query_exec_mode="+mode, 1)
		pool, err := pgxpool.New(ctx, url+"&pool_max_conns=8")
		require.NoError(t, err)
		defer pool.Close()
		var (
			wg sync.WaitGroup
			mu sync.Mutex
			n  int
		)
		for range 8 {
			wg.Go(func() {
				for i := range 50 {
					var v int
					err := pool.QueryRow(ctx, `SELECT count(*) FROM schools WHERE name <> $1`, fmt.Sprint(i)).Scan(&v)
					if err == nil {
						err = pool.QueryRow(ctx, `SELECT $1::int + 1`, i).Scan(&v)
					}
					var pgErr *pgconn.PgError
					if errors.As(err, &pgErr) && (pgErr.Code == "26000" || pgErr.Code == "42P05") {
						mu.Lock()
						n++
						mu.Unlock()
					} else if err != nil {
						t.Errorf("%s: %v", mode, err)
					}
				}
			})
		}
		wg.Wait()
		return n
	}
	assert.Positive(t, failures("cache_statement"), "prepared statements break under transaction pooling")
	assert.Zero(t, failures("cache_describe"))
}

// syncBuffer is a bytes.Buffer the API's logger may write while the test
// reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
