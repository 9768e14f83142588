package store_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
	"github.com/collegematch/matching/internal/tools/faultproxy"
)

func show(t *testing.T, pool *pgxpool.Pool, setting string) string {
	t.Helper()
	var v string
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT current_setting($1)", setting).Scan(&v))
	return v
}

// The API's settings size the pool and set the server-side timeouts on
// every connection; what DATABASE_URL says itself wins.
func TestOpenWithSettings(t *testing.T) {
	ctx := context.Background()
	dbURL := testutil.NewDBURL(t)

	pool, err := store.OpenWith(ctx, dbURL, store.APISettings(2, nil))
	require.NoError(t, err)
	assert.EqualValues(t, 16, pool.Config().MaxConns)
	assert.Equal(t, store.APIConnectTimeout, pool.Config().ConnConfig.ConnectTimeout)
	assert.Equal(t, "3s", show(t, pool, "statement_timeout"))
	assert.Equal(t, "2s", show(t, pool, "lock_timeout"))
	assert.Equal(t, "10s", show(t, pool, "idle_in_transaction_session_timeout"))
	pool.Close()

	pool, err = store.OpenWith(ctx, dbURL, store.WorkerSettings(70, nil))
	require.NoError(t, err)
	assert.EqualValues(t, 78, pool.Config().MaxConns, "a connection per task slot and the background loops")
	assert.Equal(t, "10s", show(t, pool, "statement_timeout"))
	pool.Close()

	pool, err = store.OpenWith(ctx, dbURL+"&pool_max_conns=3&statement_timeout=7s&connect_timeout=9", store.APISettings(2, nil))
	require.NoError(t, err)
	assert.EqualValues(t, 3, pool.Config().MaxConns)
	assert.Equal(t, 9*time.Second, pool.Config().ConnConfig.ConnectTimeout)
	assert.Equal(t, "7s", show(t, pool, "statement_timeout"))
	assert.Equal(t, "2s", show(t, pool, "lock_timeout"))
	pool.Close()

	// Commands keep the server's defaults.
	pool, err = store.Open(ctx, dbURL)
	require.NoError(t, err)
	assert.Equal(t, "0", show(t, pool, "statement_timeout"))
	pool.Close()
}

// requireUnavailable checks that err is the database being unavailable,
// reported within bound.
func requireUnavailable(t *testing.T, err error, took, bound time.Duration) {
	t.Helper()
	require.Error(t, err)
	assert.Equal(t, domain.KindUnavailable, domain.KindOf(err), "%v", err)
	assert.Less(t, took, bound, "%v", err)
}

func timed(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	return time.Since(start), err
}

// A PostgreSQL that stops answering (a black hole: nothing arrives,
// nothing is closed) ends each call at the call's bound as the database
// being unavailable: a statement on an open connection, a transaction, a
// call that needs a new connection. Once it answers again, so do calls.
func TestCallsEndWhenPostgresStopsAnswering(t *testing.T) {
	ctx := context.Background()
	proxied, proxy := faultproxy.ForURL(t, testutil.NewDBURL(t))

	lim := store.Limits{Call: 600 * time.Millisecond, Acquire: 300 * time.Millisecond}
	pool, err := store.OpenWith(ctx, proxied+"&pool_max_conns=2", store.Settings{ConnectTimeout: time.Second, Limits: lim})
	require.NoError(t, err)
	defer pool.Close()
	db := store.NewLimited(pool, lim)
	student := newStudent(t, db)
	_, err = db.LearnerState(ctx, student)
	require.NoError(t, err)

	proxy.Blackhole(true)
	took, err := timed(func() error { _, err := db.LearnerState(ctx, student); return err })
	requireUnavailable(t, err, took, 2*lim.Call)
	took, err = timed(func() error {
		_, _, err := db.UpdateStudent(ctx, student, func(cur domain.Student, _ bool) (domain.Student, error) { return cur, nil })
		return err
	})
	requireUnavailable(t, err, took, 2*lim.Call)
	took, err = timed(func() error { _, err := db.LearnHistory(ctx, student, 1<<40, 1<<40); return err })
	requireUnavailable(t, err, took, 2*lim.Call)

	proxy.Blackhole(false)
	require.Eventually(t, func() bool { _, err := db.LearnerState(ctx, student); return err == nil },
		10*time.Second, 50*time.Millisecond)
}

// With every pooled connection taken, a call waits at most the acquire
// bound and reports the database unavailable.
func TestPoolExhausted(t *testing.T) {
	ctx := context.Background()
	lim := store.Limits{Call: 2 * time.Second, Acquire: 200 * time.Millisecond}
	pool, err := store.OpenWith(ctx, testutil.NewDBURL(t)+"&pool_max_conns=1", store.Settings{Limits: lim})
	require.NoError(t, err)
	defer pool.Close()
	db := store.NewLimited(pool, lim)
	student := newStudent(t, db)

	held, err := pool.Acquire(ctx)
	require.NoError(t, err)
	took, err := timed(func() error { _, err := db.LearnerState(ctx, student); return err })
	requireUnavailable(t, err, took, time.Second)
	assert.Contains(t, err.Error(), "no database connection free")
	held.Release()
	_, err = db.LearnerState(ctx, student)
	require.NoError(t, err)
}

// A lock another transaction holds is waited for lock_timeout, then the
// call reports the database unavailable (and its connection stays
// usable); without a lock held the same call succeeds.
func TestLockTimeout(t *testing.T) {
	ctx := context.Background()
	dbURL := testutil.NewDBURL(t)
	pool, err := store.OpenWith(ctx, dbURL, store.Settings{LockTimeout: 300 * time.Millisecond})
	require.NoError(t, err)
	defer pool.Close()
	db := store.New(pool)
	student := newStudent(t, db)

	other, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer other.Close(ctx)
	tx, err := other.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 7))", student)
	require.NoError(t, err)
	update := func() error {
		_, _, err := db.UpdateStudent(ctx, student, func(cur domain.Student, _ bool) (domain.Student, error) { return cur, nil })
		return err
	}
	took, err := timed(update)
	requireUnavailable(t, err, took, 2*time.Second)
	assert.GreaterOrEqual(t, took, 300*time.Millisecond)
	require.NoError(t, tx.Rollback(ctx))
	require.NoError(t, update())

	// A swipe waits for the student's row the same way.
	tx, err = other.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "SELECT 1 FROM students WHERE id = $1 FOR UPDATE", student)
	require.NoError(t, err)
	schools := catalog.Generate(1, 5)
	_, err = db.UpsertSchools(ctx, schools)
	require.NoError(t, err)
	took, err = timed(func() error {
		_, err := db.RecordSwipe(ctx, domain.Swipe{StudentID: student, SchoolID: schools[0].ID, Direction: "right",
			Interaction: domain.InteractionSwipe})
		return err
	})
	requireUnavailable(t, err, took, 2*time.Second)
	require.NoError(t, tx.Rollback(ctx))
}

// PgBouncer (1.18) refuses start-up parameters it does not know: the pool
// connects without them, says so, and still works through it; the
// client-side limits still hold.
func TestOpenWithThroughPgBouncer(t *testing.T) {
	ctx := context.Background()
	direct := testutil.NewDBURL(t) // created first, so dropped after PgBouncer stops
	pgb, err := testutil.StartPgBouncer(ctx, 2)
	testutil.SkipOrFail(t, err)
	t.Cleanup(func() { assert.NoError(t, pgb.Stop()) })

	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	settings := store.APISettings(2, log)
	pool, err := store.OpenWith(ctx, pgb.DatabaseURL(direct), settings)
	require.NoError(t, err)
	defer pool.Close()
	assert.Contains(t, logs.String(), "refused the start-up parameters")
	assert.Contains(t, logs.String(), "statement_timeout")
	db := store.NewLimited(pool, settings.Limits)
	student := newStudent(t, db)
	_, err = db.LearnerState(ctx, student)
	require.NoError(t, err)
}
