package tasks

import (
	"context"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
)

// TaskMetrics count the tasks the worker processes.
type TaskMetrics struct {
	Processed *prometheus.CounterVec   // by type and result (ok, error)
	Duration  *prometheus.HistogramVec // by type
}

// NewTaskMetrics creates the worker's task collectors and registers them on reg.
func NewTaskMetrics(reg prometheus.Registerer) *TaskMetrics {
	m := &TaskMetrics{
		Processed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matching_tasks_processed_total", Help: "Tasks the worker ran, by type and result (ok, error).",
		}, []string{"type", "result"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "matching_task_duration_seconds", Help: "Time the worker spent on one task, by type.",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"type"}),
	}
	reg.MustRegister(m.Processed, m.Duration)
	return m
}

// Middleware counts and times every task the mux runs.
func (m *TaskMetrics) Middleware(next asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		start := time.Now()
		err := next.ProcessTask(ctx, t)
		m.Duration.WithLabelValues(t.Type()).Observe(time.Since(start).Seconds())
		result := "ok"
		if err != nil {
			result = "error"
		}
		m.Processed.WithLabelValues(t.Type(), result).Inc()
		return err
	})
}
