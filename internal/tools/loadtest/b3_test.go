package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/testutil"
)

// TestMain lets this test binary stand in for matchctl loadtest
// --serve-b3: B3's own process in TestB3RunsInAProcessOfItsOwn.
func TestMain(m *testing.M) {
	if os.Getenv("LOADTEST_TEST_SERVE_B3") == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		err := ServeB3(ctx, "127.0.0.1:0", os.Getenv("DATABASE_URL"), os.Stdout, slog.New(slog.NewTextHandler(os.Stderr, nil)))
		stop()
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// b3DB is a migrated database with one student who has swiped twice,
// and B3's tables made from it.
func b3DB(t *testing.T) (*pgxpool.Pool, string, string) {
	t.Helper()
	ctx := context.Background()
	url := testutil.NewDBURL(t)
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	student := uuid.NewString()
	_, err = pool.Exec(ctx, `INSERT INTO students (id, swipe_count) VALUES ($1, 2)`, student)
	require.NoError(t, err)
	for i := range 2 {
		_, err = pool.Exec(ctx, `INSERT INTO swipes (student_id, school_id, direction, counted, client_id, swipe_count)
			VALUES ($1, $2, 'right', true, $3, $4)`, student, uuid.NewString(), uuid.NewString(), i+1)
		require.NoError(t, err)
	}
	require.NoError(t, SetupB3(ctx, pool))
	require.NoError(t, AnalyzeB3(ctx, pool))
	return pool, url, student
}

// B3 writes to tables of the service's shape: the same columns, indexes,
// constraints (keys pointing at the copies) and triggers, the same rows to
// begin with, and sequences of their own.
func TestB3TablesHaveTheServiceShape(t *testing.T) {
	ctx := context.Background()
	pool, _, _ := b3DB(t)
	for _, tb := range b3Tables {
		for _, q := range []string{
			// columns, types, nullability, defaults (sequences named apart)
			`SELECT coalesce(string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull ||
				' ' || coalesce(regexp_replace(pg_get_expr(d.adbin, d.adrelid), 'nextval\(''[a-z_0-9]+''', 'nextval(SEQ'), ''), ', ' ORDER BY a.attnum), '')
			FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
			WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped`,
			// indexes: unique or not, method, columns, predicate
			`SELECT coalesce(string_agg(i.indisunique || ' ' || i.indisprimary || ' ' || split_part(pg_get_indexdef(i.indexrelid), ' USING ', 2), '; '
				ORDER BY split_part(pg_get_indexdef(i.indexrelid), ' USING ', 2)), '')
			FROM pg_index i WHERE i.indrelid = $1::regclass`,
			// constraints, keys pointing at the copies
			`SELECT coalesce(string_agg(c.contype::text || ' ' || replace(pg_get_constraintdef(c.oid), 'loadtest_b3_', ''), '; '
				ORDER BY c.contype, replace(pg_get_constraintdef(c.oid), 'loadtest_b3_', '')), '')
			FROM pg_constraint c WHERE c.conrelid = $1::regclass`,
			// triggers: when they fire and what they run
			`SELECT coalesce(string_agg(t.tgtype || ' ' || t.tgfoid::regproc::text, '; ' ORDER BY t.tgtype, t.tgfoid::regproc::text), '')
			FROM pg_trigger t WHERE t.tgrelid = $1::regclass AND NOT t.tgisinternal`,
		} {
			var src, dst *string
			require.NoError(t, pool.QueryRow(ctx, q, tb.src).Scan(&src), q)
			require.NoError(t, pool.QueryRow(ctx, q, tb.dst).Scan(&dst), q)
			require.NotNil(t, src, q)
			require.NotNil(t, dst, q)
			assert.Equal(t, *src, *dst, "%s and %s: %s", tb.src, tb.dst, q)
		}
		var src, dst int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM `+tb.src).Scan(&src))
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM `+tb.dst).Scan(&dst))
		assert.Equal(t, src, dst, "%s's rows are copied", tb.src)
	}
	var fkTarget string
	require.NoError(t, pool.QueryRow(ctx, `SELECT confrelid::regclass::text FROM pg_constraint
		WHERE conrelid = 'loadtest_b3_swipes'::regclass AND contype = 'f'`).Scan(&fkTarget))
	assert.Equal(t, "loadtest_b3_students", fkTarget)
	var triggers int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_trigger WHERE tgrelid = 'loadtest_b3_swipes'::regclass AND NOT tgisinternal`).Scan(&triggers))
	assert.Equal(t, 1, triggers, "the change_seq stamp")

	// Made again from scratch, and dropped with everything of theirs.
	require.NoError(t, SetupB3(ctx, pool))
	require.NoError(t, DropB3(ctx, pool))
	var left int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE relname LIKE 'loadtest_b3_%'`).Scan(&left))
	assert.Zero(t, left)
}

// B3's one statement stores the swipe with its idempotency key, bumps the
// student's count and version and writes the outbox row, once; the
// service's tables are not touched.
func TestB3WritesTheSwipeOnce(t *testing.T) {
	ctx := context.Background()
	pool, _, student := b3DB(t)
	srv := httptest.NewServer(NewB3Handler(pool))
	defer srv.Close()
	post := func(body any) (int, map[string]any) {
		b, _ := json.Marshal(body)
		resp, err := http.Post(srv.URL+"/swipe", "application/json", bytes.NewReader(b))
		require.NoError(t, err)
		defer resp.Body.Close()
		var out map[string]any
		raw, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(raw, &out)
		return resp.StatusCode, out
	}
	school, swipeID := uuid.NewString(), uuid.NewString()
	swipe := map[string]any{"student_id": student, "school_id": school, "direction": "right", "swipe_id": swipeID, "time_spent": 1.5}
	status, out := post(swipe)
	require.Equal(t, http.StatusOK, status, out)
	assert.EqualValues(t, 3, out["swipe_count"])
	assert.EqualValues(t, 2, out["version"])

	status, out = post(swipe)
	require.Equal(t, http.StatusOK, status, "a retry")
	assert.Nil(t, out["id"], "stores nothing")

	var count, version, swipes, events int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT swipe_count, version FROM loadtest_b3_students WHERE id = $1`, student).Scan(&count, &version))
	assert.EqualValues(t, 3, count)
	assert.EqualValues(t, 2, version)
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM loadtest_b3_swipes WHERE client_id = $1`, swipeID).Scan(&swipes))
	assert.EqualValues(t, 1, swipes)
	var payload map[string]any
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) OVER (), payload FROM loadtest_b3_outbox WHERE student_id = $1`, student).Scan(&events, &payload))
	assert.EqualValues(t, 1, events)
	assert.Equal(t, school, payload["school_id"])
	assert.Equal(t, "right", payload["direction"])

	require.NoError(t, pool.QueryRow(ctx, `SELECT swipe_count FROM students WHERE id = $1`, student).Scan(&count))
	assert.EqualValues(t, 2, count, "the service's student is not touched")
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM swipes`).Scan(&swipes))
	assert.EqualValues(t, 2, swipes)

	status, _ = post(map[string]any{"student_id": uuid.NewString(), "school_id": school, "direction": "left", "swipe_id": uuid.NewString()})
	assert.Equal(t, http.StatusNotFound, status, "an unknown student")
	resp, err := http.Post(srv.URL+"/swipe", "application/json", strings.NewReader("{"))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

// B3 runs in a process of its own (this test binary standing in for
// matchctl), connects as B3 (its backends are told apart) and ends when
// stopped.
func TestB3RunsInAProcessOfItsOwn(t *testing.T) {
	ctx := context.Background()
	pool, url, student := b3DB(t)
	t.Setenv("LOADTEST_TEST_SERVE_B3", "1")
	p, err := startB3(ctx, []string{os.Args[0], "-test.run=^$"}, url)
	require.NoError(t, err)
	defer p.Stop()
	assert.NotEqual(t, os.Getpid(), p.PID)

	c := NewClient(p.URL, "", 4, 0)
	body, _ := json.Marshal(map[string]any{"student_id": student, "school_id": uuid.NewString(), "direction": "left", "swipe_id": uuid.NewString()})
	status, resp := c.Do(ctx, Request{Method: http.MethodPost, Path: "/swipe", Body: body})
	require.Equal(t, http.StatusOK, status, string(resp))

	procs := postgresCPU(ctx, pool)
	var b3 int
	for _, pr := range procs {
		if pr.part == pgB3 {
			b3++
		}
	}
	assert.Positive(t, b3, "B3's backends are B3's")
	assert.NotNil(t, procStat(p.PID), "its CPU is read from /proc")

	p.Stop()
	status, _ = c.Do(ctx, Request{Method: http.MethodPost, Path: "/swipe", Body: body})
	assert.Zero(t, status, "nothing listens once it is stopped")
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()`,
		b3AppName).Scan(&n))
	assert.Zero(t, n, "its connections are closed")
}
