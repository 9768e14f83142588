package tasks_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/tasks"
	tu "github.com/collegematch/matching/internal/testutil"
)

// queueReplica is one worker replica's queue metrics on its own registry.
type queueReplica struct {
	reg *prometheus.Registry
	m   *tasks.QueueMetrics
}

func newQueueReplica(t *testing.T, rdb redis.UniversalClient, id string) queueReplica {
	reg := prometheus.NewRegistry()
	in := asynq.NewInspectorFromRedisClient(rdb)
	m := tasks.NewQueueMetrics(tu.Logger(t), in, handover.NewClient(rdb, handover.NewQueuer()), handover.NewLeader(rdb, id), tasks.Queues(), reg,
		tasks.QueueMetricsConfig{Interval: 50 * time.Millisecond, TTL: 400 * time.Millisecond})
	return queueReplica{reg: reg, m: m}
}

// series counts the matching_queue_* samples (the leader gauge aside) a
// replica exports.
func (r queueReplica) series(t *testing.T) int {
	fams, err := r.reg.Gather()
	require.NoError(t, err)
	n := 0
	for _, f := range fams {
		if strings.HasPrefix(f.GetName(), "matching_queue_") && f.GetName() != "matching_queue_metrics_leader" &&
			f.GetName() != "matching_queue_metrics_errors_total" {
			n += len(f.GetMetric())
		}
	}
	return n
}

func TestQueueMetricsExportedOnceForTheFleet(t *testing.T) {
	rdb := tu.NewRedis(t, tu.RedisDBTasks)
	ctx := context.Background()

	// Work in the queues: two tasks processed by a real asynq server (one
	// fails for good and is archived), one pending, one scheduled.
	client := asynq.NewClientFromRedisClient(rdb)
	srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{
		Concurrency: 2, Queues: map[string]int{tasks.QueueLow: 1}, TaskCheckInterval: 20 * time.Millisecond,
		LogLevel: asynq.FatalLevel,
	})
	mux := asynq.NewServeMux()
	mux.HandleFunc("test:ok", func(context.Context, *asynq.Task) error { return nil })
	mux.HandleFunc("test:fail", func(context.Context, *asynq.Task) error { return errors.New("no") })
	require.NoError(t, srv.Start(mux))
	_, err := client.Enqueue(asynq.NewTask("test:ok", nil), asynq.Queue(tasks.QueueLow))
	require.NoError(t, err)
	_, err = client.Enqueue(asynq.NewTask("test:fail", nil), asynq.Queue(tasks.QueueLow), asynq.MaxRetry(0))
	require.NoError(t, err)
	in := asynq.NewInspectorFromRedisClient(rdb)
	require.Eventually(t, func() bool {
		info, err := in.GetQueueInfo(tasks.QueueLow)
		return err == nil && info.ProcessedTotal == 2 && info.Archived == 1
	}, 10*time.Second, 20*time.Millisecond)
	srv.Shutdown()
	_, err = client.Enqueue(asynq.NewTask("test:ok", nil), asynq.Queue(tasks.QueueCritical))
	require.NoError(t, err)
	_, err = client.Enqueue(asynq.NewTask("test:ok", nil), asynq.Queue(tasks.QueueCritical), asynq.ProcessIn(time.Hour))
	require.NoError(t, err)
	time.Sleep(20 * time.Millisecond) // the pending task ages

	a, b := newQueueReplica(t, rdb, "a"), newQueueReplica(t, rdb, "b")
	assert.True(t, a.m.Pass(ctx), "the first replica takes the lease")
	assert.False(t, b.m.Pass(ctx), "the second waits")
	assert.True(t, a.m.Pass(ctx), "the holder keeps it")
	assert.Equal(t, 1.0, gaugeValue(t, a.reg, "matching_queue_metrics_leader"))
	assert.Equal(t, 0.0, gaugeValue(t, b.reg, "matching_queue_metrics_leader"))
	assert.Zero(t, b.series(t), "only the lease holder exports the queues")

	// Four queues, each: seven states, size, latency, processed, failed,
	// paused, memory.
	assert.Equal(t, 4*13, a.series(t))
	require.NoError(t, testutil.GatherAndCompare(a.reg, strings.NewReader(`
# HELP matching_queue_processed_total Tasks of the queue the whole fleet has processed, succeeded or failed (asynq's count, kept in Redis); exported by one replica.
# TYPE matching_queue_processed_total counter
matching_queue_processed_total{queue="critical"} 0
matching_queue_processed_total{queue="default"} 0
matching_queue_processed_total{queue="low"} 2
matching_queue_processed_total{queue="webhooks"} 0
# HELP matching_queue_failed_total Task runs of the queue that failed, fleet-wide (asynq's count, kept in Redis); exported by one replica.
# TYPE matching_queue_failed_total counter
matching_queue_failed_total{queue="critical"} 0
matching_queue_failed_total{queue="default"} 0
matching_queue_failed_total{queue="low"} 1
matching_queue_failed_total{queue="webhooks"} 0
# HELP matching_queue_size Tasks in the queue in any state; exported by one replica for the fleet.
# TYPE matching_queue_size gauge
matching_queue_size{queue="critical"} 2
matching_queue_size{queue="default"} 0
matching_queue_size{queue="low"} 1
matching_queue_size{queue="webhooks"} 0
`), "matching_queue_processed_total", "matching_queue_failed_total", "matching_queue_size"))
	fams, err := a.reg.Gather()
	require.NoError(t, err)
	tasksByState := map[string]float64{}
	for _, f := range fams {
		switch f.GetName() {
		case "matching_queue_tasks":
			for _, m := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				tasksByState[labels["queue"]+"/"+labels["state"]] = m.GetGauge().GetValue()
			}
		case "matching_queue_latency_seconds":
			for _, m := range f.GetMetric() {
				if m.GetLabel()[0].GetValue() == tasks.QueueCritical {
					assert.Greater(t, m.GetGauge().GetValue(), 0.0, "a pending task is waiting")
					assert.Less(t, m.GetGauge().GetValue(), 60.0)
				}
			}
		}
	}
	assert.Equal(t, 1.0, tasksByState["critical/pending"])
	assert.Equal(t, 1.0, tasksByState["critical/scheduled"])
	assert.Equal(t, 1.0, tasksByState["low/archived"])
	assert.Equal(t, 0.0, tasksByState["webhooks/pending"])

	// The holder stops (and releases the lease): the other replica takes over
	// at its next read, and the stopped one exports nothing.
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); a.m.Run(runCtx) }()
	time.Sleep(100 * time.Millisecond)
	stop()
	<-done
	assert.Zero(t, a.series(t))
	assert.Equal(t, 0.0, gaugeValue(t, a.reg, "matching_queue_metrics_leader"))
	assert.True(t, b.m.Pass(ctx), "released: the next replica takes over")
	assert.Equal(t, 4*13, b.series(t))
}

// A replica that cannot reach Redis exports no queue numbers (a stale
// backlog would mislead an autoscaler) and counts the failure.
func TestQueueMetricsWithoutRedis(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	r := newQueueReplica(t, rdb, "a")
	assert.False(t, r.m.Pass(context.Background()))
	assert.Zero(t, r.series(t))
	assert.Equal(t, 0.0, gaugeValue(t, r.reg, "matching_queue_metrics_leader"))
	assert.Equal(t, 1.0, gaugeValue(t, r.reg, "matching_queue_metrics_errors_total"))
}

// Redis loses its data (a restart without persistence) while the API and
// worker keep queueing: asynq's client and the handover queuer registered
// each queue once per process, so asynq's list of queues stays empty. The
// exporter reads the service's own queues, registers them again and shows
// the backlog at its next read; asynq's Inspector lists them again too.
func TestQueueMetricsShowTheBacklogAfterRedisLostItsData(t *testing.T) {
	rdb := tu.NewRedis(t, tu.RedisDBTasks)
	ctx := context.Background()
	queue := handover.NewClient(rdb, handover.NewQueuer()) // one process's queuer, as the API's
	client := asynq.NewClientFromRedisClient(rdb)
	t.Cleanup(func() { _ = client.Close() })
	learn := func(n int) {
		t.Helper()
		jobs := make([]handover.Job, n)
		for i := range jobs {
			jobs[i] = tasks.LearnJob(uuid.NewString(), 1, 0)
		}
		queued, err := queue.Queue(ctx, jobs...)
		require.NoError(t, err)
		require.Equal(t, n, queued)
	}
	learn(2)
	_, err := client.Enqueue(asynq.NewTask("test:ok", nil), asynq.Queue(tasks.QueueLow))
	require.NoError(t, err)

	require.NoError(t, rdb.FlushDB(ctx).Err(), "Redis loses its data")
	learn(3)
	_, err = client.Enqueue(asynq.NewTask("test:ok", nil), asynq.Queue(tasks.QueueLow))
	require.NoError(t, err)
	known, err := asynq.NewInspectorFromRedisClient(rdb).Queues()
	require.NoError(t, err)
	require.Empty(t, known, "neither the queuer nor asynq's client registers a queue twice")
	time.Sleep(20 * time.Millisecond) // the pending tasks age

	r := newQueueReplica(t, rdb, "a")
	require.True(t, r.m.Pass(ctx))
	require.NoError(t, testutil.GatherAndCompare(r.reg, strings.NewReader(`
# HELP matching_queue_size Tasks in the queue in any state; exported by one replica for the fleet.
# TYPE matching_queue_size gauge
matching_queue_size{queue="critical"} 3
matching_queue_size{queue="default"} 0
matching_queue_size{queue="low"} 1
matching_queue_size{queue="webhooks"} 0
`), "matching_queue_size"))
	fams, err := r.reg.Gather()
	require.NoError(t, err)
	latency := map[string]float64{}
	for _, f := range fams {
		if f.GetName() == "matching_queue_latency_seconds" {
			for _, m := range f.GetMetric() {
				latency[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
			}
		}
	}
	assert.Greater(t, latency[tasks.QueueCritical], 0.0, "the oldest pending learn task's age, for the latency alert")
	assert.Greater(t, latency[tasks.QueueLow], 0.0)
	known, err = asynq.NewInspectorFromRedisClient(rdb).Queues()
	require.NoError(t, err)
	assert.ElementsMatch(t, tasks.Queues(), known, "registered again for asynq's own tools")
}

// gaugeValue reads the one sample of an unlabelled gauge or counter.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range fams {
		if f.GetName() == name {
			require.Len(t, f.GetMetric(), 1)
			if c := f.GetMetric()[0].GetCounter(); c != nil {
				return c.GetValue()
			}
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("%s not exported", name)
	return 0
}
