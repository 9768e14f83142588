package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/metrics"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/testutil"
)

// docs/metrics.md lists every metric the worker registers, as run
// registers them, with its type and labels, and none that it does not.
func TestMetricsDocumented(t *testing.T) {
	testutil.NewRedis(t, testutil.RedisDBCmdWorker)
	regs := make(chan *metrics.Registry, 1)
	w := startWith(t, map[string]string{
		"DATABASE_URL": testutil.NewDBURL(t),
		"REDIS_URL":    testutil.RedisURLFor(t, testutil.RedisDBCmdWorker),
		"OPS_ADDR":     "127.0.0.1:0",
	}, options{
		registered:   func(r *metrics.Registry) { regs <- r },
		queueMetrics: tasks.QueueMetricsConfig{Interval: 50 * time.Millisecond},
	})
	reg := <-regs
	// The queue metrics are typed by what they export: wait for this, the
	// only replica, to take the lease and read the queues.
	require.Eventually(t, func() bool {
		_, body := get(t, "http://"+w.ops+"/metrics")
		return strings.Contains(body, `matching_queue_size{queue="critical"} 0`) &&
			strings.Contains(body, "matching_queue_metrics_leader 1")
	}, 10*time.Second, 50*time.Millisecond)
	testutil.CheckMetricsDoc(t, "worker", reg)
}
