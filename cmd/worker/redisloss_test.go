package main

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/testutil"
)

// Redis loses its data under a running worker while the API goes on
// queueing learn tasks (through its own queuer, which registered the queue
// before the loss): the worker's /metrics shows the backlog at its queue
// metrics' next read, not an empty queue. The learn queue is paused here
// so the backlog stays.
func TestQueueBacklogShowsAfterRedisLostItsData(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBCmdWorker)
	w := startWith(t, map[string]string{
		"DATABASE_URL": testutil.NewDBURL(t),
		"REDIS_URL":    testutil.RedisURLFor(t, testutil.RedisDBCmdWorker),
		"OPS_ADDR":     "127.0.0.1:0",
	}, options{queueMetrics: tasks.QueueMetricsConfig{Interval: 200 * time.Millisecond}})
	base := "http://" + w.ops
	ctx := context.Background()
	api := handover.NewClient(rdb, handover.NewQueuer()) // the API's queuer
	learn := func(n int) {
		t.Helper()
		jobs := make([]handover.Job, n)
		for i := range jobs {
			jobs[i] = tasks.LearnJob(uuid.NewString(), 1, 0)
		}
		_, err := api.Queue(ctx, jobs...)
		require.NoError(t, err)
	}
	learn(1)
	require.Eventually(t, func() bool {
		return metricLine(t, base, `matching_queue_size{queue="critical"}`) == `matching_queue_size{queue="critical"} 0`
	}, 10*time.Second, 50*time.Millisecond, "the worker runs the task")

	require.NoError(t, rdb.FlushDB(ctx).Err(), "Redis loses its data")
	require.NoError(t, asynq.NewInspectorFromRedisClient(rdb).PauseQueue(tasks.QueueCritical))
	learn(25)
	require.Eventually(t, func() bool {
		return metricLine(t, base, `matching_queue_size{queue="critical"}`) == `matching_queue_size{queue="critical"} 25`
	}, 5*time.Second, 50*time.Millisecond, "the backlog shows at the next read: %s",
		metricLine(t, base, `matching_queue_size{queue="critical"}`))
	assert.NotEqual(t, `matching_queue_latency_seconds{queue="critical"} 0`,
		metricLine(t, base, `matching_queue_latency_seconds{queue="critical"}`), "and its age, for the latency alert")
	assert.Contains(t, w.logs.String(), "queue was missing from asynq's list of queues while it held tasks")
	w.stop(t, 10*time.Second)
}
