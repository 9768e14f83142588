package handover_test

import (
	"context"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/testutil"
)

// A task left active after its lease ended goes back to the pending list,
// its run counted as failed as asynq's recoverer counts it, and a real
// server runs it again; one out of retries is archived; one whose lease
// is still running is left to its worker; a task with no message is
// removed so that its id can be queued again.
func TestRecoverExpiredPutsAbandonedTasksBack(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBHandover)
	ctx := context.Background()
	c := handover.NewClient(rdb, handover.NewQueuer())
	const queue = "webhooks"
	job := func(id string, maxRetry int) handover.Job {
		return handover.Job{ID: id, Type: "test:run", Payload: []byte(`{"id":"` + id + `"}`), Queue: queue, MaxRetry: maxRetry,
			Timeout: 30 * time.Second}
	}
	n, err := c.Queue(ctx, job("lost", 5), job("last", 0), job("running", 5), job("empty", 5), job("garbled", 5))
	require.NoError(t, err)
	require.Equal(t, 5, n)
	now := time.Now()
	testutil.AbandonTask(t, rdb, queue, "lost", now.Add(-10*time.Second))
	testutil.AbandonTask(t, rdb, queue, "last", now.Add(-10*time.Second))
	testutil.AbandonTask(t, rdb, queue, "running", now.Add(30*time.Second))
	testutil.AbandonTask(t, rdb, queue, "empty", now.Add(-10*time.Second))
	require.NoError(t, rdb.HDel(ctx, "asynq:{"+queue+"}:t:empty", "msg").Err())
	testutil.AbandonTask(t, rdb, queue, "garbled", now.Add(-10*time.Second))
	require.NoError(t, rdb.HSet(ctx, "asynq:{"+queue+"}:t:garbled", "msg", "\xff\xff\xff").Err())

	got, err := handover.RecoverExpired(ctx, rdb, queue, now.Add(-5*time.Second), 100)
	require.NoError(t, err)
	assert.Equal(t, handover.Recovered{Requeued: 1, Archived: 1}, got)

	in := asynq.NewInspectorFromRedisClient(rdb)
	info, err := in.GetTaskInfo(queue, "lost")
	require.NoError(t, err)
	assert.Equal(t, asynq.TaskStatePending, info.State)
	assert.Equal(t, 1, info.Retried)
	assert.Equal(t, 5, info.MaxRetry)
	assert.Contains(t, info.LastErr, "lease expired")
	assert.Equal(t, []byte(`{"id":"lost"}`), info.Payload, "the message is asynq's, with everything else it held")
	assert.Equal(t, 30*time.Second, info.Timeout)
	info, err = in.GetTaskInfo(queue, "last")
	require.NoError(t, err)
	assert.Equal(t, asynq.TaskStateArchived, info.State, "no retry left: archived, as asynq's recoverer does")
	assert.Zero(t, info.Retried, "archived with its count, as asynq archives")
	assert.Contains(t, info.LastErr, "lease expired")
	info, err = in.GetTaskInfo(queue, "running")
	require.NoError(t, err)
	assert.Equal(t, asynq.TaskStateActive, info.State, "a lease that has not ended is its worker's")
	for _, id := range []string{"empty", "garbled"} {
		_, err = in.GetTaskInfo(queue, id)
		assert.ErrorIs(t, err, asynq.ErrTaskNotFound, "%s: a task that cannot run is removed", id)
	}
	n, err = c.Queue(ctx, job("empty", 5))
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the id is free again")
	active, err := rdb.LRange(ctx, "asynq:{"+queue+"}:active", 0, -1).Result()
	require.NoError(t, err)
	assert.Equal(t, []string{"running"}, active)

	again, err := handover.RecoverExpired(ctx, rdb, queue, time.Now().Add(-5*time.Second), 100)
	require.NoError(t, err)
	assert.Zero(t, again, "nothing twice")

	runs := make(chan [2]any, 4)
	srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{Concurrency: 2, Queues: map[string]int{queue: 1},
		TaskCheckInterval: 20 * time.Millisecond, LogLevel: asynq.FatalLevel})
	mux := asynq.NewServeMux()
	mux.HandleFunc("test:run", func(ctx context.Context, _ *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		n, _ := asynq.GetRetryCount(ctx)
		runs <- [2]any{id, n}
		return nil
	})
	require.NoError(t, srv.Start(mux))
	defer srv.Shutdown()
	seen := map[any]any{}
	for len(seen) < 2 {
		select {
		case r := <-runs:
			seen[r[0]] = r[1]
		case <-time.After(10 * time.Second):
			t.Fatalf("recovered tasks not run: %v", seen)
		}
	}
	assert.Equal(t, map[any]any{"lost": 1, "empty": 0}, seen, "the recovered task runs as its second run")
}
