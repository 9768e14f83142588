package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
)

// The statement mode follows what answers: pgx's default straight to
// PostgreSQL, cache_describe through PgBouncer (transaction pooling), and
// whatever DATABASE_URL names when it names one.
func TestChooseStatementMode(t *testing.T) {
	direct := testutil.NewDBURL(t) // created before PgBouncer, so dropped after it stops
	pgb, err := testutil.StartPgBouncer(context.Background(), 2)
	testutil.SkipOrFail(t, err)
	t.Cleanup(func() { assert.NoError(t, pgb.Stop()) })
	ctx := context.Background()

	for _, tc := range []struct {
		name   string
		url    string
		mode   pgx.QueryExecMode
		pooler bool
		named  bool
	}{
		{"direct", direct, pgx.QueryExecModeCacheStatement, false, false},
		{"pgbouncer", pgb.PlainDatabaseURL(direct), pgx.QueryExecModeCacheDescribe, true, false},
		{"named", pgb.PlainDatabaseURL(direct) + "&default_query_exec_mode=exec", pgx.QueryExecModeExec, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := pgxpool.ParseConfig(tc.url)
			require.NoError(t, err)
			m, err := store.ChooseStatementMode(ctx, cfg)
			require.NoError(t, err)
			assert.Equal(t, store.StatementMode{Mode: tc.mode, Pooler: tc.pooler, Named: tc.named}, m)
			assert.Equal(t, tc.mode, cfg.ConnConfig.DefaultQueryExecMode)
			assert.NotEmpty(t, m.Reason())
		})
	}
}

// Through PgBouncer in transaction pooling mode, with a URL that names no
// statement mode, OpenWith (as the API and the worker open their pools)
// works: many connections run the same statements at once, each
// transaction on whichever server connection PgBouncer gives it. The log
// says which mode was chosen.
func TestOpenWithThroughPgBouncerNamingNoMode(t *testing.T) {
	direct := testutil.NewDBURL(t)
	pgb, err := testutil.StartPgBouncer(context.Background(), 2)
	testutil.SkipOrFail(t, err)
	t.Cleanup(func() { assert.NoError(t, pgb.Stop()) })
	ctx := context.Background()

	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	pool, err := store.OpenWith(ctx, pgb.PlainDatabaseURL(direct), store.APISettings(2, log))
	require.NoError(t, err)
	defer pool.Close()

	// Each worker stops at its first error.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for i := range 10 {
				var n int
				if err := pool.QueryRow(wctx, "SELECT count(*) FROM schools WHERE id::text <> $1", "x").Scan(&n); err != nil {
					errs <- err
					return
				}
				err := pgx.BeginFunc(wctx, pool, func(tx pgx.Tx) error {
					_, err := tx.Exec(wctx, "SELECT $1::int + 1", i)
					return err
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	var chosen map[string]any
	for l := range strings.SplitSeq(logs.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(l), &rec) == nil && rec["msg"] == "database statement mode" {
			chosen = rec
		}
	}
	require.NotNil(t, chosen, "the log says which statement mode:\n%s", logs.String())
	assert.Equal(t, "cache_describe", chosen["default_query_exec_mode"])
	assert.Equal(t, true, chosen["pooler"])
}
