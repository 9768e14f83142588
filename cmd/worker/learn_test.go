package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/active"
	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/command"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/testutil"
)

// writeSide is the API's write side over db and rdb, as cmd/api wires it.
type writeSide struct {
	swipes   *command.Swipes
	feedback *command.Feedback
	sync     *command.Sync
}

func newWriteSide(t testing.TB, db *store.Store, rdb redis.UniversalClient, log *slog.Logger) writeSide {
	t.Helper()
	holder := active.NewHolder(db, log, nil, time.Hour)
	require.NoError(t, holder.Load(context.Background()))
	queuer := handover.NewQueuer()
	trips := cache.NewSwipeTrips(cache.NewFeeds(rdb, 5*time.Minute), queuer)
	return writeSide{
		swipes: command.NewSwipes(command.SwipesConfig{Store: db, Batch: db, Redis: trips, Catalogs: holder, Log: log}),
		feedback: command.NewFeedback(command.FeedbackConfig{Store: db, Redis: trips, Queue: handover.NewClient(rdb, queuer),
			Catalogs: holder, Log: log}),
		sync: command.NewSync(command.SyncConfig{Store: db, Redis: trips, Catalogs: holder, Log: log}),
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

// While Redis is down the API records swipes and feedback but cannot mark
// their students for learning; once a worker runs with Redis, its learn
// sweep finds them in PostgreSQL and marks them in their learn drains, the
// drains fold everything once, and its relay publishes every swipe's event
// once.
func TestRedisOutageThenTheSweepLearnsEverythingOnce(t *testing.T) {
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
	require.Equal(t, 12, unpublished, "one event per counted swipe")

	w := startWith(t, map[string]string{
		"DATABASE_URL": dbURL,
		"REDIS_URL":    testutil.RedisURLFor(t, testutil.RedisDBCmdWorker),
		"OPS_ADDR":     "127.0.0.1:0",
	}, options{sweep: tasks.LearnSweepConfig{Interval: 200 * time.Millisecond, Grace: 100 * time.Millisecond}})
	base := "http://" + w.ops

	feeds := cache.NewFeeds(rdb, time.Minute)
	for _, s := range students {
		require.Eventually(t, func() bool {
			var stored []byte
			var folded int64
			err := pool.QueryRow(ctx, `SELECT model_bin, last_feedback_id FROM learning_state WHERE student_id = $1`, s).
				Scan(&stored, &folded)
			if err != nil {
				return false
			}
			m, err := match.DecodeModel(stored)
			return err == nil && m.Swipes() == 4 && folded > 0
		}, 20*time.Second, 50*time.Millisecond, "every swipe and the feedback folded")
		var version int64
		require.NoError(t, pool.QueryRow(ctx, `SELECT version FROM students WHERE id = $1`, s).Scan(&version))
		require.Eventually(t, func() bool {
			h, err := feeds.Header(ctx, s)
			return err == nil && h.StudentVersion == version && h.TotalSwipes == 4
		}, 10*time.Second, 50*time.Millisecond, "the feed rebuilt from the current state")
	}
	require.Eventually(t, func() bool {
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE published_at IS NULL`).Scan(&unpublished))
		return unpublished == 0
	}, 10*time.Second, 50*time.Millisecond)
	assert.Equal(t, `matching_outbox_relayed_total{topic="swipe.recorded"} 12`,
		metricLine(t, base, `matching_outbox_relayed_total{topic="swipe.recorded"}`))
	assert.Equal(t, `matching_learn_events_total{kind="swipe"} 12`, metricLine(t, base, `matching_learn_events_total{kind="swipe"}`),
		"each swipe folded once")
	assert.Equal(t, `matching_learn_events_total{kind="feedback"} 3`, metricLine(t, base, `matching_learn_events_total{kind="feedback"}`))
	assert.NotEqual(t, `matching_learn_requeued_total 0`, metricLine(t, base, `matching_learn_requeued_total`))
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
			if err != nil || f.StudentVersion < version || f.LearnedVersion < version {
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
	require.Eventually(t, func() bool {
		return metricLine(t, "http://"+w.ops, `matching_outbox_relayed_total{topic="swipe.recorded"}`) ==
			`matching_outbox_relayed_total{topic="swipe.recorded"} 3`
	}, 5*time.Second, 20*time.Millisecond, "the relay publishes each swipe's event")
	assert.Equal(t, `matching_learn_requeued_total 0`, metricLine(t, "http://"+w.ops, `matching_learn_requeued_total`),
		"the writes marked every student themselves")
	w.stop(t, 10*time.Second)
}
