package handover_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/testutil"
)

// The jobs queued here are asynq's tasks: its Inspector reads them with
// every option, and its server runs them. An asynq upgrade that changes how
// tasks are stored fails this test.
func TestQueuedJobsAreAsynqTasks(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBHandover)
	ctx := context.Background()
	q := handover.NewQueuer()
	jobs := []handover.Job{
		{ID: "learn:1", Type: "test:run", Payload: []byte(`{"n":1}`), Queue: "critical", MaxRetry: 10,
			Timeout: 30 * time.Second, Retention: time.Hour},
		{ID: "learn:2", Type: "test:run", Payload: []byte(`{"n":2}`), Queue: "critical"},
	}
	var cmds []*redis.Cmd
	require.NoError(t, handover.Exec(ctx, rdb, nil, func(pipe redis.Pipeliner) error {
		cmds = cmds[:0]                                  // fill runs again when Redis had to load the scripts
		pipe.Set(ctx, "other-command", "x", time.Minute) // the pipeline carries other commands too
		for _, j := range jobs {
			c, err := q.Queue(ctx, pipe, j)
			if err != nil {
				return err
			}
			cmds = append(cmds, c)
		}
		return nil
	}))
	for _, c := range cmds {
		queued, err := handover.Queued(c)
		require.NoError(t, err)
		assert.True(t, queued)
	}

	in := asynq.NewInspectorFromRedisClient(rdb)
	info, err := in.GetTaskInfo("critical", "learn:1")
	require.NoError(t, err)
	assert.Equal(t, "test:run", info.Type)
	assert.Equal(t, []byte(`{"n":1}`), info.Payload)
	assert.Equal(t, asynq.TaskStatePending, info.State)
	assert.Equal(t, 10, info.MaxRetry)
	assert.Equal(t, 30*time.Second, info.Timeout)
	assert.Equal(t, time.Hour, info.Retention)
	queues, err := in.Queues()
	require.NoError(t, err)
	assert.Contains(t, queues, "critical")

	// The same id again is refused, as asynq's client refuses it.
	require.NoError(t, handover.Exec(ctx, rdb, nil, func(pipe redis.Pipeliner) error {
		c, err := q.Queue(ctx, pipe, jobs[0])
		cmds = []*redis.Cmd{c}
		return err
	}))
	queued, err := handover.Queued(cmds[0])
	require.NoError(t, err)
	assert.False(t, queued)
	_, err = asynq.NewClientFromRedisClient(rdb).Enqueue(asynq.NewTask("test:run", nil), asynq.TaskID("learn:1"),
		asynq.Queue("critical"))
	assert.ErrorIs(t, err, asynq.ErrTaskIDConflict)

	// A real server runs both, with their payloads.
	var mu sync.Mutex
	seen := map[string]string{}
	srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{Concurrency: 2, Queues: map[string]int{"critical": 1},
		TaskCheckInterval: 20 * time.Millisecond, LogLevel: asynq.FatalLevel})
	mux := asynq.NewServeMux()
	mux.HandleFunc("test:run", func(ctx context.Context, task *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		mu.Lock()
		seen[id] = string(task.Payload())
		mu.Unlock()
		return nil
	})
	require.NoError(t, srv.Start(mux))
	defer srv.Shutdown()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == 2
	}, 10*time.Second, 20*time.Millisecond)
	assert.Equal(t, map[string]string{"learn:1": `{"n":1}`, "learn:2": `{"n":2}`}, seen)
}

// A job with ProcessAt waits in the scheduled set until then, as asynq's
// own ProcessAt, and a server runs it once due.
func TestScheduledJobsWaitTheirTime(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBHandover)
	ctx := context.Background()
	c := handover.NewClient(rdb, handover.NewQueuer())
	at := time.Now().Add(2 * time.Second)
	job := handover.Job{ID: "hook:1", Type: "test:run", Payload: []byte(`{"n":1}`), Queue: "webhooks", MaxRetry: 3, ProcessAt: at}
	n, err := c.Queue(ctx, job)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	n, err = c.Queue(ctx, job)
	require.NoError(t, err)
	assert.Zero(t, n, "the same id again is refused")

	in := asynq.NewInspectorFromRedisClient(rdb)
	info, err := in.GetTaskInfo("webhooks", "hook:1")
	require.NoError(t, err)
	assert.Equal(t, asynq.TaskStateScheduled, info.State)
	assert.Equal(t, at.Unix(), info.NextProcessAt.Unix())
	assert.Equal(t, 3, info.MaxRetry)

	ran := make(chan time.Time, 1)
	srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{Concurrency: 1, Queues: map[string]int{"webhooks": 1},
		TaskCheckInterval: 20 * time.Millisecond, DelayedTaskCheckInterval: 100 * time.Millisecond, LogLevel: asynq.FatalLevel})
	mux := asynq.NewServeMux()
	mux.HandleFunc("test:run", func(context.Context, *asynq.Task) error { ran <- time.Now(); return nil })
	require.NoError(t, srv.Start(mux))
	defer srv.Shutdown()
	select {
	case when := <-ran:
		assert.False(t, when.Before(at.Truncate(time.Second)), "not before its time (asynq keeps whole seconds)")
	case <-time.After(10 * time.Second):
		t.Fatal("the scheduled task never ran")
	}
}

// After a Redis restart its script cache is empty: Exec loads the scripts
// and runs the pipeline again.
func TestExecLoadsScriptsRedisForgot(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBHandover)
	ctx := context.Background()
	require.NoError(t, rdb.ScriptFlush(ctx).Err())
	q := handover.NewQueuer()
	var c *redis.Cmd
	require.NoError(t, handover.Exec(ctx, rdb, nil, func(pipe redis.Pipeliner) error {
		var err error
		c, err = q.Queue(ctx, pipe, handover.Job{ID: "a", Type: "test:run", Queue: "low"})
		return err
	}))
	queued, err := handover.Queued(c)
	require.NoError(t, err)
	assert.True(t, queued)
}

// Hold keeps the lock with the replica that renews it in time; another
// replica gets it only once the holder releases it or lets it expire.
func TestLeaderHold(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBHandover)
	ctx := context.Background()
	a, b := handover.NewLeader(rdb, "a"), handover.NewLeader(rdb, "b")
	const ttl = 300 * time.Millisecond

	held, err := a.Hold(ctx, "exporter", ttl)
	require.NoError(t, err)
	assert.True(t, held, "nobody held it")
	for range 3 { // a renews within ttl, past several ttls: b never gets it
		time.Sleep(ttl / 2)
		held, err = a.Hold(ctx, "exporter", ttl)
		require.NoError(t, err)
		assert.True(t, held, "the holder renews")
		held, err = b.Hold(ctx, "exporter", ttl)
		require.NoError(t, err)
		assert.False(t, held, "another replica waits")
	}
	pttl, err := rdb.PTTL(ctx, "lead:exporter").Result()
	require.NoError(t, err)
	assert.Greater(t, pttl, time.Duration(0), "the lock expires on its own")

	require.NoError(t, b.Release(ctx, "exporter"), "releasing a lock held by another is a no-op")
	assert.Equal(t, "a", rdb.Get(ctx, "lead:exporter").Val())
	require.NoError(t, a.Release(ctx, "exporter"))
	held, err = b.Hold(ctx, "exporter", ttl)
	require.NoError(t, err)
	assert.True(t, held, "released: the next replica takes it at once")

	time.Sleep(ttl + 100*time.Millisecond) // b stops renewing
	held, err = a.Hold(ctx, "exporter", ttl)
	require.NoError(t, err)
	assert.True(t, held, "expired: another replica takes it")
}
