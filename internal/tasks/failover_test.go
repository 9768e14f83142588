package tasks_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/active"
	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/testutil"
)

// A learn task whose write meets a server that refuses writes (its
// pooled connection turned read-only, as after a failover) fails as
// unavailable, to be retried by the queue (never SkipRetry), and stores
// nothing half-way; the connection is closed, so the task's next run, on
// a new connection, folds the swipe.
func TestLearnTaskRetriedWhenPostgresRefusesWrites(t *testing.T) {
	ctx := context.Background()
	lim := store.Limits{Call: 5 * time.Second, Acquire: 2 * time.Second}
	pool, err := store.OpenWith(ctx, testutil.NewDBURL(t)+"&pool_max_conns=1",
		store.Settings{ConnectTimeout: 2 * time.Second, Limits: lim})
	require.NoError(t, err)
	defer pool.Close()
	e := &learnEnv{db: store.NewLimited(pool, lim), rdb: testutil.NewRedis(t, testutil.RedisDBTasks), reg: prometheus.NewRegistry()}
	gen := catalog.Generate(50, 3)
	_, err = e.db.UpsertSchools(ctx, gen)
	require.NoError(t, err)
	log := testutil.Logger(t)
	e.catalog = active.NewHolder(e.db, log, active.NewMetrics(e.reg), time.Hour)
	require.NoError(t, e.catalog.Load(ctx))
	e.feeds = cache.NewFeeds(e.rdb, 5*time.Minute)
	e.queries = query.New(query.Config{Students: e.db, Feeds: e.feeds, Catalogs: e.catalog, Log: log,
		Metrics: query.NewMetrics(e.reg), Probes: cache.NewProbes(e.rdb, 5*time.Minute)})
	e.handler = tasks.NewHandler(tasks.Deps{Log: log, LearnDrains: tasks.NewLearnDrains(e.rdb), Learning: e.db, Feeds: e.queries,
		Catalogs: e.catalog, LearnMetrics: tasks.NewLearnMetrics(e.reg)})

	student := e.student(t)
	e.swipe(t, student, gen[0].ID, "right")
	var learned int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM learning_state WHERE student_id = $1 AND last_swipe_id > 0`,
		student).Scan(&learned))
	require.Zero(t, learned)

	// The pool's one connection now refuses writes.
	_, err = pool.Exec(ctx, `SET default_transaction_read_only = on`)
	require.NoError(t, err)
	err = e.learnErr(ctx, student)
	require.Error(t, err)
	assert.Equal(t, domain.KindUnavailable, domain.KindOf(err), "%v", err)
	assert.False(t, errors.Is(err, asynq.SkipRetry), "the queue retries it")
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM learning_state WHERE student_id = $1 AND last_swipe_id > 0`,
		student).Scan(&learned))
	require.Zero(t, learned, "nothing stored half-way")

	require.NoError(t, e.learnErr(ctx, student), "the retry runs on a new connection")
	assert.Positive(t, e.state(t, student).lastSwipe, "the swipe folded")
}
