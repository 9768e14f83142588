package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/command"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/offline"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/testutil"
	"github.com/collegematch/matching/internal/wire"
)

// writeSide is the API's write side over db and rdb, as cmd/api wires it.
type writeSide struct {
	swipes   *command.Swipes
	feedback *command.Feedback
	sync     *offline.Service
}

func newWriteSide(t testing.TB, db *store.Store, rdb redis.UniversalClient, log *slog.Logger, subs ...tasks.WebhookSubscription) writeSide {
	t.Helper()
	return newWriteSideWith(t, db, rdb, log, wire.Webhooks{Store: db}, subs...)
}

// newWriteSideWith is newWriteSide with the webhook delivery ledger given.
func newWriteSideWith(t testing.TB, db *store.Store, rdb redis.UniversalClient, log *slog.Logger, ledger tasks.DeliveryLedger,
	subs ...tasks.WebhookSubscription) writeSide {
	t.Helper()
	holder := query.NewCatalogHolder(db, log, nil, time.Hour)
	require.NoError(t, holder.Load(context.Background()))
	q := asynq.NewClientFromRedisClient(rdb)
	t.Cleanup(func() { _ = q.Close() })
	router := tasks.NewRouter()
	tasks.AddLearnRoutes(router)
	tasks.AddWebhookRoutes(router, subs, ledger)
	feeds := cache.NewFeeds(rdb, 5*time.Minute)
	queries := query.New(query.Config{Students: wire.Students{Store: db}, Feeds: feeds, Catalogs: holder, Log: log,
		Metrics: query.NewMetrics(prometheus.NewRegistry())})
	return writeSide{
		sync: offline.New(offline.Config{Store: db, Feeds: queries, Versions: feeds, Catalogs: wire.Catalogs{CatalogHolder: holder},
			Queue: q, Router: router, Log: log}),
		swipes: command.NewSwipes(command.SwipesConfig{Store: wire.WriteStore{Store: db}, Probes: cache.NewProbes(rdb, 5*time.Minute),
			Feeds: cache.NewFeeds(rdb, 5*time.Minute), Catalogs: wire.Catalogs{CatalogHolder: holder}, Queue: q, Router: router, Log: log}),
		feedback: command.NewFeedback(command.FeedbackConfig{Store: wire.WriteStore{Store: db}, Catalogs: wire.Catalogs{CatalogHolder: holder},
			Queue: q, Router: router, Log: log}),
	}
}

// seedWorld stores n generated schools and k students with complete
// profiles, and returns the schools and the student ids.
func seedWorld(t testing.TB, db *store.Store, n, k int) ([]domain.School, []string) {
	t.Helper()
	ctx := context.Background()
	schools := catalog.Generate(n, 5)
	_, err := db.UpsertSchools(ctx, schools)
	require.NoError(t, err)
	ids := make([]string, k)
	for i := range ids {
		sat, lat, lon, budget, dist := 1200+i%300, 39.95-float64(i%7), -75.16+float64(i%11), 25000, 400
		st, _, err := db.SaveStudent(ctx, domain.Student{ID: uuid.NewString(), Name: "Student", Email: "s@example.com",
			GraduationYear: "2027", SAT: &sat, HomeLat: &lat, HomeLon: &lon, State: "PA", Budget: &budget,
			MaxDistanceMiles: &dist})
		require.NoError(t, err)
		ids[i] = st.ID
	}
	return schools, ids
}

// unreachable is a Redis client whose every call fails at once.
func unreachable(t testing.TB) redis.UniversalClient {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func metricLine(t *testing.T, base, prefix string) string {
	t.Helper()
	_, m := get(t, base+"/metrics")
	for _, l := range strings.Split(m, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// While Redis is down the API records swipes and feedback but cannot queue
// their tasks; once a worker runs with Redis, its relay hands every event
// over exactly once, the learner folds everything and every feed is rebuilt.
func TestRedisOutageThenRelayLearnsEverythingOnce(t *testing.T) {
	dbURL := testutil.NewDBURL(t)
	pool, err := store.Open(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	db := store.New(pool)
	schools, students := seedWorld(t, db, 400, 3)
	rdb := testutil.NewRedis(t, testutil.RedisDBCmdWorker)

	down := newWriteSide(t, db, unreachable(t), testutil.Logger(t))
	ctx := context.Background()
	for i, s := range students {
		for k := range 4 {
			res, err := down.swipes.Record(ctx, command.SwipeInput{StudentID: s, SchoolID: schools[i*20+k].ID,
				Direction: "right", ClientID: uuid.NewString()})
			require.NoError(t, err)
			assert.Equal(t, k+1, res.SwipeCount)
		}
		_, err := down.feedback.Record(ctx, command.FeedbackInput{StudentID: s, SchoolID: schools[0].ID, Reason: "too_selective"})
		require.NoError(t, err)
	}
	var unpublished int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE published_at IS NULL`).Scan(&unpublished))
	require.Equal(t, 15, unpublished)

	w := start(t, map[string]string{
		"DATABASE_URL": dbURL,
		"REDIS_URL":    testutil.RedisURLFor(t, testutil.RedisDBCmdWorker),
		"OPS_ADDR":     "127.0.0.1:0",
	})
	base := "http://" + w.ops
	require.Eventually(t, func() bool {
		return metricLine(t, base, `matching_tasks_processed_total{result="ok",type="student:learn"}`) ==
			`matching_tasks_processed_total{result="ok",type="student:learn"} 15`
	}, 20*time.Second, 50*time.Millisecond, "one task per event")

	feeds := cache.NewFeeds(rdb, time.Minute)
	for _, s := range students {
		var (
			folded, version int64
			swipes          int
		)
		require.NoError(t, pool.QueryRow(ctx, `
SELECT (ls.model->>'swipes')::int, ls.last_feedback_id, s.version
FROM students s JOIN learning_state ls ON ls.student_id = s.id WHERE s.id = $1`, s).Scan(&swipes, &folded, &version))
		assert.Equal(t, 4, swipes, "every swipe folded once")
		assert.Positive(t, folded, "the feedback folded")
		h, err := feeds.Header(ctx, s)
		require.NoError(t, err, "the feed is rebuilt")
		assert.Equal(t, version, h.StudentVersion, "from the current state")
		assert.Equal(t, 4, h.TotalSwipes)
	}
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE published_at IS NULL`).Scan(&unpublished))
	assert.Zero(t, unpublished)

	// Exactly once: each row's task ran under its own id, and later relay
	// passes hand nothing over again.
	insp := asynq.NewInspectorFromRedisClient(rdb)
	done, err := insp.ListCompletedTasks(tasks.QueueCritical, asynq.PageSize(100))
	require.NoError(t, err)
	ids := map[string]bool{}
	for _, d := range done {
		if d.Type == tasks.TypeStudentLearn {
			ids[d.ID] = true
		}
	}
	assert.Len(t, ids, 15)
	time.Sleep(1500 * time.Millisecond)
	assert.Equal(t, `matching_outbox_relayed_total{topic="swipe.recorded"} 12`,
		metricLine(t, base, `matching_outbox_relayed_total{topic="swipe.recorded"}`))
	assert.Equal(t, `matching_outbox_relayed_total{topic="feedback.recorded"} 3`,
		metricLine(t, base, `matching_outbox_relayed_total{topic="feedback.recorded"}`))
	assert.Equal(t, `matching_tasks_processed_total{result="ok",type="student:learn"} 15`,
		metricLine(t, base, `matching_tasks_processed_total{result="ok",type="student:learn"}`))
	assert.Contains(t, metricLine(t, base, "matching_feed_lag_seconds_count"), "matching_feed_lag_seconds_count 12")
	w.stop(t, 10*time.Second)
}

// With Redis up, the API's fast path queues the task and the worker
// rebuilds the feed; the relay has nothing to do.
func TestSwipeReachesTheFeedThroughTheWorker(t *testing.T) {
	dbURL := testutil.NewDBURL(t)
	pool, err := store.Open(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	db := store.New(pool)
	schools, students := seedWorld(t, db, 400, 1)
	rdb := testutil.NewRedis(t, testutil.RedisDBCmdWorker)
	w := start(t, map[string]string{
		"DATABASE_URL": dbURL,
		"REDIS_URL":    testutil.RedisURLFor(t, testutil.RedisDBCmdWorker),
		"OPS_ADDR":     "127.0.0.1:0",
	})
	up := newWriteSide(t, db, rdb, testutil.Logger(t))
	feeds := cache.NewFeeds(rdb, time.Minute)
	ctx := context.Background()
	s := students[0]
	for k := range 3 {
		_, err := up.swipes.Record(ctx, command.SwipeInput{StudentID: s, SchoolID: schools[k].ID, Direction: "left"})
		require.NoError(t, err)
		var version int64
		require.NoError(t, pool.QueryRow(ctx, `SELECT version FROM students WHERE id = $1`, s).Scan(&version))
		require.Eventually(t, func() bool {
			f, err := feeds.Feed(ctx, s)
			if err != nil || f.StudentVersion <= version {
				return false
			}
			for _, it := range f.Range(0, f.Len()) {
				if it.SchoolID.String() == schools[k].ID {
					return false
				}
			}
			return f.TotalSwipes == k+1
		}, 10*time.Second, 10*time.Millisecond, "swipe %d learned and its feed rebuilt", k)
	}
	line := metricLine(t, "http://"+w.ops, `matching_outbox_relayed_total{topic="swipe.recorded"}`)
	assert.True(t, line == "" || strings.HasSuffix(line, " 0"), "the fast path queued every task: %s", line)
	w.stop(t, 10*time.Second)
}
