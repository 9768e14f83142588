package store_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
	"github.com/collegematch/matching/migrations"
)

func TestMigrateCreatesDatabaseAndIsRepeatable(t *testing.T) {
	ctx := context.Background()
	url := testutil.NewDBURL(t)
	// Point at a database that does not exist yet, beside the test one.
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	missing := strings.Replace(url, "/"+cfg.Database+"?", "/"+cfg.Database+"_fresh?", 1)
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), testutil.AdminURL())
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+cfg.Database+"_fresh WITH (FORCE)")
			_ = c.Close(context.Background())
		}
	})
	log := testutil.Logger(t)
	require.NoError(t, store.Migrate(ctx, missing, log))
	require.NoError(t, store.Migrate(ctx, missing, log), "second run applies nothing and succeeds")

	pool, err := store.Open(ctx, missing)
	require.NoError(t, err)
	defer pool.Close()
	for _, table := range []string{"schools", "students", "swipes", "feedback", "category_preferences",
		"learning_state", "outbox", "webhook_deliveries", "webhook_attempts", "zip_centroids"} {
		var n int
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n), table)
		assert.Zero(t, n, table)
	}
}

// Migration 00006 makes the erasures done before it final: the erased
// students' swipes become anonymous statistics, and their feedback,
// category preferences, learned model, events and deliveries go; a live
// student's rows stay. Migration 00013 then deletes the erased row itself.
func TestMigrationMakesPastErasuresFinal(t *testing.T) {
	ctx := context.Background()
	_, db, provider := emptyDatabase(t, "_m6")
	_, err := provider.UpTo(ctx, 5)
	require.NoError(t, err)

	erased, live, school := uuid.NewString(), uuid.NewString(), uuid.NewString()
	for _, q := range []string{
		`INSERT INTO schools (id, name, state, region, source) VALUES ('` + school + `', 'S', 'OH', 'midwest', 'test')`,
		`INSERT INTO students (id, swipe_count, deleted_at) VALUES ('` + erased + `', 2, now())`,
		`INSERT INTO students (id, name, swipe_count) VALUES ('` + live + `', 'Live', 1)`,
	} {
		_, err := db.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	for _, id := range []string{erased, live} {
		for _, q := range []string{
			`INSERT INTO swipes (student_id, school_id, direction, counted, client_id, occurred_at)
			 VALUES ($1::uuid, '` + school + `', 'right', true, $1::text || '-c', '2026-03-04T23:30:00Z')`,
			`INSERT INTO feedback (student_id, school_id, reason) VALUES ($1, '` + school + `', 'too_expensive')`,
			`INSERT INTO category_preferences (student_id, category_id, direction) VALUES ($1, 'liberal-arts', 'right')`,
			`INSERT INTO learning_state (student_id, model, weights) VALUES ($1, '{}', '{}')`,
			// One event written without its student column, as an older build might have.
			`INSERT INTO outbox (topic, student_id, payload, published_at) VALUES ('swipe.recorded', NULL,
			 jsonb_build_object('student_id', $1::text), now())`,
		} {
			_, err := db.ExecContext(ctx, q, id)
			require.NoError(t, err, q)
		}
		_, err := db.ExecContext(ctx, `INSERT INTO webhook_deliveries (outbox_id, endpoint_url, webhook_id, event)
			SELECT id, 'https://a.example/h', 'msg_' || id, 'swipe.recorded' FROM outbox WHERE payload->>'student_id' = $1`, id)
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, `INSERT INTO webhook_attempts (delivery_id, attempt, latency_ms)
			SELECT d.id, 1, 5 FROM webhook_deliveries d JOIN outbox o ON o.id = d.outbox_id WHERE o.payload->>'student_id' = $1`, id)
		require.NoError(t, err)
	}

	_, err = provider.Up(ctx)
	require.NoError(t, err)
	count := func(q string, args ...any) int {
		var n int
		require.NoError(t, db.QueryRowContext(ctx, q, args...).Scan(&n), q)
		return n
	}
	for _, table := range []string{"swipes", "feedback", "category_preferences", "learning_state", "outbox"} {
		assert.Zero(t, count(`SELECT count(*) FROM `+table+` t WHERE strpos(t::text, $1) > 0`, erased), table)
		assert.Equal(t, 1, count(`SELECT count(*) FROM `+table+` t WHERE strpos(t::text, $1) > 0`, live), table)
	}
	assert.Equal(t, 1, count(`SELECT count(*) FROM outbox WHERE student_id = $1`, live), "the column is filled from the payload")
	assert.Equal(t, 1, count(`SELECT count(*) FROM webhook_deliveries`))
	assert.Equal(t, 1, count(`SELECT count(*) FROM webhook_attempts`))
	assert.Zero(t, count(`SELECT count(*) FROM students WHERE id = $1`, erased), "00013: the erased row goes too")
	assert.Equal(t, 1, count(`SELECT swipe_count FROM students WHERE id = $1`, live))
	assert.Equal(t, 1, count(`SELECT count(*) FROM anonymous_swipes WHERE school_id = $1 AND direction = 'right'
		AND counted AND occurred_on = '2026-03-04'`, school))

	// 00008: a model stored as JSON is read as it is until a save moves
	// the state to the binary form; back down, a binary model has no JSON
	// form and its state goes.
	var model string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT convert_from(`+store.StoredModelSQL+`, 'UTF8')
FROM learning_state WHERE student_id = $1`, live).Scan(&model))
	assert.Equal(t, "{}", model)
	_, err = db.ExecContext(ctx, `UPDATE learning_state SET model = NULL, model_bin = '\x4d01'::bytea WHERE student_id = $1`, live)
	require.NoError(t, err)
	_, err = provider.DownTo(ctx, 7)
	require.NoError(t, err)
	assert.Zero(t, count(`SELECT count(*) FROM learning_state`))

	// And back down again.
	_, err = provider.DownTo(ctx, 5)
	require.NoError(t, err)
}

// emptyDatabase creates a database with no migration applied, beside the
// test's own (named after it with suffix, dropped at the end), and returns
// its URL, a connection pool for goose and a goose provider over it.
func emptyDatabase(t *testing.T, suffix string) (string, *sql.DB, *goose.Provider) {
	t.Helper()
	ctx := context.Background()
	url := testutil.NewDBURL(t)
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	name := cfg.Database + suffix
	dbURL := strings.Replace(url, "/"+cfg.Database+"?", "/"+name+"?", 1)
	admin, err := pgx.Connect(ctx, testutil.AdminURL())
	require.NoError(t, err)
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, "CREATE DATABASE "+name)
	require.NoError(t, err)
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), testutil.AdminURL())
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			_ = c.Close(context.Background())
		}
	})
	db := stdlib.OpenDB(*mustConfig(t, dbURL))
	t.Cleanup(func() { _ = db.Close() })
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, goose.WithLogger(goose.NopLogger()))
	require.NoError(t, err)
	return dbURL, db, provider
}

// Migration 00011 drops the foreign keys to schools while swipes are
// being written: a swipe that arrives while the migration waits for a lock
// (here behind a transaction that wrote a swipe and has not committed)
// waits too, and both then go through; neither dies in a deadlock.
func TestMigrationDropsSchoolKeysUnderSwipes(t *testing.T) {
	ctx := context.Background()
	dbURL, _, provider := emptyDatabase(t, "_m11")
	_, err := provider.UpTo(ctx, 10)
	require.NoError(t, err)
	pool, err := store.Open(ctx, dbURL)
	require.NoError(t, err)
	defer pool.Close()
	db := store.New(pool)
	gen := catalog.Generate(2, 1)
	_, err = db.UpsertSchools(ctx, gen)
	require.NoError(t, err)
	student := newStudent(t, db)

	open, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = open.Rollback(ctx) }()
	_, err = open.Exec(ctx, `INSERT INTO swipes (student_id, school_id, direction, counted) VALUES ($1, $2, 'left', false)`,
		student, gen[0].ID)
	require.NoError(t, err)

	waiting := func(n int) func() bool {
		return func() bool {
			var w int
			err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE NOT granted
				AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&w)
			return err == nil && w >= n
		}
	}
	migrated := make(chan error, 1)
	go func() {
		_, err := provider.UpTo(ctx, 11)
		migrated <- err
	}()
	require.Eventually(t, waiting(1), 5*time.Second, 10*time.Millisecond, "the migration waits for the open transaction")
	swiped := make(chan error, 1)
	go func() {
		_, err := db.RecordSwipe(ctx, domain.Swipe{StudentID: student, SchoolID: gen[1].ID, Direction: "right",
			Interaction: domain.InteractionSwipe})
		swiped <- err
	}()
	require.Eventually(t, waiting(2), 5*time.Second, 10*time.Millisecond, "the swipe waits behind the migration")
	// Longer than deadlock_timeout (1 s): a deadlock would be found by now
	// if the two waited on each other already.
	time.Sleep(1200 * time.Millisecond)
	require.NoError(t, open.Commit(ctx))
	for name, ch := range map[string]chan error{"migration": migrated, "swipe": swiped} {
		select {
		case err := <-ch:
			assert.NoError(t, err, name)
		case <-time.After(10 * time.Second):
			t.Fatalf("the %s did not finish", name)
		}
	}
	var keys int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_constraint WHERE confrelid = 'schools'::regclass`).Scan(&keys))
	assert.Zero(t, keys)
}

func mustConfig(t *testing.T, url string) *pgx.ConnConfig {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	return cfg
}

// Migration 00012 scrubs the errors recorded before deliveries did: no
// endpoint's credentials or query string and no control character are
// left, and what the error said stays.
func TestMigrationScrubsRecordedWebhookErrors(t *testing.T) {
	ctx := context.Background()
	_, db, provider := emptyDatabase(t, "_m12")
	_, err := provider.UpTo(ctx, 11)
	require.NoError(t, err)

	const (
		refused  = `Post "http://hookuser:SECRET@127.0.0.1:4/hook?token=SECRET": dial tcp 127.0.0.1:4: connect: connection refused`
		answered = "HTTP 500: MARKER \x1b[31mboom\x01 see https://status.example.com/x?sig=SECRET#f"
	)
	_, err = db.ExecContext(ctx, `INSERT INTO outbox (topic, payload, published_at) VALUES ('swipe.recorded', '{}', now())`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO webhook_deliveries (outbox_id, endpoint_url, webhook_id, event, status, last_error)
		SELECT id, 'http://127.0.0.1:4/hook?token=SECRET', 'msg_1', 'swipe.recorded', 'parked', $1 FROM outbox`, refused)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO webhook_attempts (delivery_id, attempt, latency_ms, error)
		SELECT id, n, 5, CASE n WHEN 1 THEN $1 ELSE $2 END FROM webhook_deliveries, generate_series(1, 3) n`,
		refused, answered)
	require.NoError(t, err)

	_, err = provider.UpTo(ctx, 12)
	require.NoError(t, err)
	var last string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT last_error FROM webhook_deliveries`).Scan(&last))
	assert.Equal(t, `Post "http://127.0.0.1:4/hook": dial tcp 127.0.0.1:4: connect: connection refused`, last)
	rows, err := db.QueryContext(ctx, `SELECT error FROM webhook_attempts ORDER BY attempt`)
	require.NoError(t, err)
	var errs []string
	for rows.Next() {
		var e string
		require.NoError(t, rows.Scan(&e))
		errs = append(errs, e)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []string{last, `HTTP 500: MARKER \x1b[31mboom? see https://status.example.com/x`,
		`HTTP 500: MARKER \x1b[31mboom? see https://status.example.com/x`}, errs)
}
