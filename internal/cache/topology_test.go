package cache_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/config"
	"github.com/collegematch/matching/internal/ratelimit"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/testutil"
)

// The servers of the topology tests are started once, by the project's
// scripts, when a test first needs them, and stopped when the package's
// tests end.
var (
	clusterOnce, sentinelOnce sync.Once
	cluster, sentinel         *testutil.Script
	clusterErr, sentinelErr   error
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, s := range []*testutil.Script{cluster, sentinel} {
		if s != nil {
			if err := s.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "stop:", err)
			}
		}
	}
	os.Exit(code)
}

func redisCluster(t *testing.T) *testutil.Script {
	t.Helper()
	clusterOnce.Do(func() { cluster, clusterErr = testutil.StartRedisCluster(context.Background()) })
	testutil.SkipOrFail(t, clusterErr)
	return cluster
}

func redisSentinel(t *testing.T) *testutil.Script {
	t.Helper()
	sentinelOnce.Do(func() { sentinel, sentinelErr = testutil.StartRedisSentinel(context.Background()) })
	testutil.SkipOrFail(t, sentinelErr)
	return sentinel
}

// open opens url as the binaries do, and checks the topology found.
func open(t *testing.T, url, kind string) redis.UniversalClient {
	t.Helper()
	rdb, topo, err := cache.Open(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rdb.Close() })
	assert.Equal(t, kind, topo.Kind, topo.String())
	require.NoError(t, cache.Ping(context.Background(), rdb))
	return rdb
}

// On a Redis Cluster of three masters, everything the service keeps in
// Redis works on the one client cache.Open builds: feeds, cooldowns,
// probes and rate limits (whose multi-key transactions, scripts and
// pipelines stay within a student's hash slot: a cross-slot one fails on a
// cluster), and asynq on every queue of the service.
func TestRedisCluster(t *testing.T) {
	c := redisCluster(t)
	rdb := open(t, c.URL, cache.Cluster)
	_, isCluster := rdb.(*redis.ClusterClient)
	require.True(t, isCluster)
	exerciseTopology(t, rdb)

	t.Run("one node names the cluster", func(t *testing.T) {
		one := fmt.Sprintf("redis://127.0.0.1:%d/0", c.Port+1)
		rdb := open(t, one, cache.Cluster)
		_, isCluster := rdb.(*redis.ClusterClient)
		assert.True(t, isCluster, "asked the node, which runs in cluster mode")
		_, _, err := cache.Open(context.Background(), fmt.Sprintf("redis://127.0.0.1:%d/3", c.Port))
		assert.ErrorContains(t, err, "database 0 only")
		_, _, err = cache.Open(context.Background(), c.URL[:strings.Index(c.URL, "?")]+"/2"+c.URL[strings.Index(c.URL, "?"):])
		assert.ErrorContains(t, err, "database 0 only")
	})

	t.Run("a student's keys share one slot", func(t *testing.T) {
		ctx := context.Background()
		id := uuid.NewString()
		keys := append(cache.StudentKeys(id), ratelimit.StudentKeys(id)...)
		slot, err := rdb.ClusterKeySlot(ctx, keys[0]).Result()
		require.NoError(t, err)
		for _, k := range keys {
			s, err := rdb.ClusterKeySlot(ctx, k).Result()
			require.NoError(t, err)
			assert.Equal(t, slot, s, k)
			require.NoError(t, rdb.Set(ctx, k, "x", time.Minute).Err())
		}
		// An erasure drops them in one command (matchctl students delete).
		n, err := rdb.Unlink(ctx, keys...).Result()
		require.NoError(t, err)
		assert.EqualValues(t, len(keys), n)
	})
}

// With Sentinel (one master, one replica, three sentinels) the same, and
// the client follows a failover: the replica becomes master and the
// service's reads, counts and tasks carry on.
func TestRedisSentinel(t *testing.T) {
	s := redisSentinel(t)
	rdb := open(t, s.URL, cache.Sentinel)
	exerciseTopology(t, rdb)

	if testing.Short() {
		t.Skip("the failover takes several seconds")
	}
	ctx := context.Background()
	// A replica in sync (after an earlier failover, the old master takes
	// up to about 10 s to rejoin as one).
	_, err := s.Run(ctx, "wait")
	require.NoError(t, err)
	before, err := s.Run(ctx, "master")
	require.NoError(t, err)
	feeds := cache.NewFeeds(rdb, ttl)
	student := uuid.NewString()
	_, err = feeds.Put(ctx, sampleFeed(student, 1, 1, 20))
	require.NoError(t, err)

	start := time.Now()
	after, err := s.Run(ctx, "failover")
	require.NoError(t, err)
	require.NotEqual(t, before, after)
	t.Logf("failover from %s to %s took %s", before, after, time.Since(start).Round(time.Millisecond))

	// The feed written before the failover was replicated; the client finds
	// the new master on its own.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got, err := feeds.Feed(ctx, student)
		if assert.NoError(c, err) {
			assert.Equal(c, 20, got.Len())
		}
	}, 15*time.Second, 100*time.Millisecond)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		stored, err := feeds.Put(ctx, sampleFeed(student, 2, 1, 30))
		assert.NoError(c, err, "writes reach the new master")
		assert.True(c, stored)
	}, 15*time.Second, 100*time.Millisecond)
	exerciseTopology(t, rdb)
}

// exerciseTopology runs the service's Redis code on rdb: a feed stored and
// read, a tombstone, cooldowns and recent swipes read in one transaction
// with the feed, probe memory, a rate limit counted until it refuses, a
// count pipelined with a read of the feed, and a task enqueued and run on
// every queue the worker serves.
func exerciseTopology(t *testing.T, rdb redis.UniversalClient) {
	t.Helper()
	ctx := context.Background()
	student := uuid.NewString()

	t.Run("feed", func(t *testing.T) {
		feeds := cache.NewFeeds(rdb, ttl)
		want := sampleFeed(student, 3, 7, 50)
		stored, err := feeds.Put(ctx, want)
		require.NoError(t, err)
		require.True(t, stored)
		got, err := feeds.Feed(ctx, student)
		require.NoError(t, err)
		assert.Equal(t, want.Items, got.Range(0, 50))
		c, err := feeds.ReadCompact(ctx, student, nil)
		require.NoError(t, err)
		assert.NotEmpty(t, c.Body)
		stored, err = feeds.Put(ctx, sampleFeed(student, 2, 7, 50))
		require.NoError(t, err)
		assert.False(t, stored, "an older build is refused")
		require.NoError(t, feeds.Invalidate(ctx, student, 4))
		_, err = feeds.Feed(ctx, student)
		assert.ErrorIs(t, err, cache.ErrNotBuilt)
		stored, err = feeds.Put(ctx, want)
		require.NoError(t, err)
		assert.False(t, stored, "the tombstone refuses a build from before it")
		stored, err = feeds.Put(ctx, sampleFeed(student, 4, 7, 50))
		require.NoError(t, err)
		assert.True(t, stored)
	})

	t.Run("cooldowns and probes", func(t *testing.T) {
		cools := cache.NewCooldowns(cache.NewFeeds(rdb, ttl), time.Minute)
		now := time.Now()
		shown, swiped := uuid.NewString(), uuid.NewString()
		require.NoError(t, cools.Show(ctx, student, now, []string{shown}))
		require.NoError(t, cools.RememberSwiped(ctx, student, now, swiped))
		st, err := cools.Read(ctx, student, now, []string{uuid.NewString()})
		require.NoError(t, err)
		assert.NoError(t, st.FeedErr, "the feed is read in the same transaction")
		assert.Contains(t, st.Shown, uuid.MustParse(shown))
		assert.Contains(t, st.Swiped, uuid.MustParse(swiped))
		assert.Len(t, st.Swiped, 2)

		probes := cache.NewProbes(rdb, ttl)
		require.NoError(t, probes.Remember(ctx, student, shown))
		was, err := probes.WasProbe(ctx, student, shown)
		require.NoError(t, err)
		assert.True(t, was)
	})

	t.Run("rate limit", func(t *testing.T) {
		small := config.Rate{N: 3, Period: time.Minute}
		lim := ratelimit.NewPipelined(rdb, config.RateLimits{Recommendations: small, Swipes: small, Batch: small, Default: small})
		for i := range 3 {
			d, err := lim.Allow(ctx, ratelimit.GroupSwipes, student)
			require.NoError(t, err)
			assert.True(t, d.Allowed, "request %d", i+1)
		}
		d, err := lim.Allow(ctx, ratelimit.GroupSwipes, student)
		require.NoError(t, err)
		assert.False(t, d.Allowed, "the fourth is over the allowance")
		assert.Positive(t, d.RetryAfter)

		read := cache.NewFeeds(rdb, ttl).CompactRead(student)
		d, _, err = lim.AllowFetch(ctx, ratelimit.GroupRecommendations, student, ratelimit.Fetch{Read: read})
		require.NoError(t, err)
		assert.True(t, d.Allowed)
		_, err = read.Result()
		require.NoError(t, err, "the compact feed is read in the pipeline that counts")
	})

	t.Run("tasks", func(t *testing.T) {
		queues := tasks.QueuePriorities()
		for q, p := range tasks.WebhookQueues() {
			queues[q] = p
		}
		taskType := "topology:" + uuid.NewString()[:8]
		var (
			mu  sync.Mutex
			ran = map[string]int{}
		)
		mux := asynq.NewServeMux()
		mux.HandleFunc(taskType, func(ctx context.Context, task *asynq.Task) error {
			mu.Lock()
			defer mu.Unlock()
			ran[string(task.Payload())]++
			return nil
		})
		queue := asynq.NewClientFromRedisClient(rdb)
		defer queue.Close()
		for q := range queues {
			// A task id and a uniqueness lock, as the service's tasks have.
			_, err := queue.EnqueueContext(ctx, asynq.NewTask(taskType, []byte(q)), asynq.Queue(q),
				asynq.TaskID(taskType+":"+q), asynq.Unique(time.Minute))
			require.NoError(t, err, q)
			_, err = queue.EnqueueContext(ctx, asynq.NewTask(taskType, []byte(q)), asynq.Queue(q), asynq.TaskID(taskType+":"+q))
			require.ErrorIs(t, err, asynq.ErrTaskIDConflict, q)
		}
		// The tasks are queued before a server takes them.
		srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{Concurrency: 4, Queues: queues,
			TaskCheckInterval: 50 * time.Millisecond, LogLevel: asynq.ErrorLevel})
		require.NoError(t, srv.Start(mux))
		defer srv.Shutdown()
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			mu.Lock()
			defer mu.Unlock()
			for q := range queues {
				assert.Equal(c, 1, ran[q], q)
			}
		}, 10*time.Second, 50*time.Millisecond)
	})
}
