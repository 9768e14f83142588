package tasks_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/active"
	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/testutil"
	"github.com/collegematch/matching/internal/tools/faultproxy"
)

// A PostgreSQL that stops answering does not hold a learn task: the task
// fails once the store's call bound passes (and is retried by the queue),
// its slot free again; once PostgreSQL answers, the same task folds the
// swipe.
func TestLearnTaskEndsWhenPostgresStopsAnswering(t *testing.T) {
	ctx := context.Background()
	proxied, proxy := faultproxy.ForURL(t, testutil.NewDBURL(t))

	lim := store.Limits{Call: 500 * time.Millisecond, Acquire: 300 * time.Millisecond}
	pool, err := store.OpenWith(ctx, proxied, store.Settings{ConnectTimeout: time.Second, Limits: lim})
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

	proxy.Blackhole(true)
	start := time.Now()
	err = e.learnErr(ctx, student)
	took := time.Since(start)
	require.Error(t, err)
	require.Equal(t, domain.KindUnavailable, domain.KindOf(err), "%v", err)
	require.Less(t, took, 4*lim.Call, "%v", err)

	proxy.Blackhole(false)
	require.Eventually(t, func() bool { return e.learnErr(ctx, student) == nil }, 10*time.Second, 100*time.Millisecond)
	require.Positive(t, e.state(t, student).lastSwipe, "the swipe folded")
}
