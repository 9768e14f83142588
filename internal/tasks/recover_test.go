package tasks_test

import (
	"context"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/tasks"
	tu "github.com/collegematch/matching/internal/testutil"
)

// Two replicas run the recovery; the one holding the lease puts back the
// tasks of every queue whose lease ended Grace ago, counts them by queue,
// and leaves alone a task whose lease ended only just now.
func TestRecoveryPutsAbandonedTasksBackOnce(t *testing.T) {
	rdb := tu.NewRedis(t, tu.RedisDBTasks)
	ctx := context.Background()
	c := handover.NewClient(rdb, handover.NewQueuer())
	job := func(id, queue string) handover.Job {
		return handover.Job{ID: id, Type: "test:run", Queue: queue, MaxRetry: 3}
	}
	_, err := c.Queue(ctx, job("drain", tasks.QueueCritical), job("hook", tasks.QueueWebhooks), job("fresh", tasks.QueueWebhooks))
	require.NoError(t, err)
	now := time.Now()
	tu.AbandonTask(t, rdb, tasks.QueueCritical, "drain", now.Add(-time.Minute))
	tu.AbandonTask(t, rdb, tasks.QueueWebhooks, "hook", now.Add(-10*time.Second))
	tu.AbandonTask(t, rdb, tasks.QueueWebhooks, "fresh", now.Add(-time.Second))

	cfg := tasks.RecoveryConfig{Interval: time.Minute, Grace: 5 * time.Second}
	// The lease outlives a's first pass by far: b's pass finds it held.
	regA, regB := prometheus.NewRegistry(), prometheus.NewRegistry()
	a := tasks.NewRecovery(tu.Logger(t), rdb, handover.NewLeader(rdb, "a"), tasks.Queues(), regA, cfg)
	b := tasks.NewRecovery(tu.Logger(t), rdb, handover.NewLeader(rdb, "b"), tasks.Queues(), regB, cfg)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { a.Run(runCtx); close(done) }()
	t.Cleanup(func() { stop(); <-done })
	recovered := func(reg *prometheus.Registry) map[string]float64 {
		mf, err := reg.Gather()
		require.NoError(t, err)
		got := map[string]float64{}
		for _, f := range mf {
			for _, m := range f.GetMetric() {
				got[m.GetLabel()[1].GetValue()+"/"+m.GetLabel()[0].GetValue()] += m.GetCounter().GetValue()
			}
		}
		return got
	}
	require.Eventually(t, func() bool {
		got := recovered(regA)
		return got["critical/requeued"] == 1 && got["webhooks/requeued"] == 1
	}, 5*time.Second, 10*time.Millisecond)
	ran, n, err := b.Pass(ctx)
	require.NoError(t, err)
	assert.False(t, ran, "the other replica does not hold the lease")
	assert.Zero(t, n)

	in := asynq.NewInspectorFromRedisClient(rdb)
	for _, tc := range []struct{ queue, id string }{{tasks.QueueCritical, "drain"}, {tasks.QueueWebhooks, "hook"}} {
		info, err := in.GetTaskInfo(tc.queue, tc.id)
		require.NoError(t, err)
		assert.Equal(t, asynq.TaskStatePending, info.State, tc.id)
		assert.Equal(t, 1, info.Retried, tc.id)
	}
	info, err := in.GetTaskInfo(tasks.QueueWebhooks, "fresh")
	require.NoError(t, err)
	assert.Equal(t, asynq.TaskStateActive, info.State, "its lease ended a second ago: within the grace")
	assert.Equal(t, map[string]float64{"critical/requeued": 1, "critical/archived": 0, "webhooks/requeued": 1, "webhooks/archived": 0}, recovered(regA))
	assert.Empty(t, recovered(regB))
}
