package tasks

import (
	"context"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
)

// RelayMetrics are the outbox relay's collectors.
type RelayMetrics struct {
	Relayed         *prometheus.CounterVec // rows handed over, by topic
	Tasks           *prometheus.CounterVec // jobs handed to the queue, by type and result (enqueued, duplicate)
	Unroutable      *prometheus.CounterVec // rows marked without producing tasks, by reason (invalid)
	Errors          *prometheus.CounterVec // failed passes, by stage (store, enqueue, backlog, prune)
	Backlog         prometheus.Gauge       // rows not yet handed over, whatever their topic
	UnroutedBacklog prometheus.Gauge       // of those, rows of topics this worker has no route for
	OldestAge       prometheus.Gauge       // age of the oldest row not yet handed over, seconds
	Deleted         prometheus.Counter     // published rows deleted after the retention
}

// NewRelayMetrics creates the relay's collectors and registers them on reg.
func NewRelayMetrics(reg prometheus.Registerer) *RelayMetrics {
	m := &RelayMetrics{
		Relayed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matching_outbox_relayed_total", Help: "Outbox rows handed over to the task queue by the relay, by topic.",
		}, []string{"topic"}),
		Tasks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matching_outbox_tasks_total", Help: "Tasks the relay handed to the queue, by type and result (enqueued, or duplicate when the task id was already queued).",
		}, []string{"type", "result"}),
		Unroutable: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matching_outbox_unroutable_total", Help: "Outbox rows marked published without producing tasks, by reason (invalid: their route can never produce them).",
		}, []string{"reason"}),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matching_outbox_relay_errors_total", Help: "Relay passes that failed, by stage (store, enqueue, backlog, prune); their rows stay as they were and are retried.",
		}, []string{"stage"}),
		Backlog: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "matching_outbox_backlog", Help: "Outbox rows not yet handed over to the task queue, whatever their topic.",
		}),
		UnroutedBacklog: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "matching_outbox_unrouted_backlog", Help: "Outbox rows not yet handed over whose topic this worker has no route for; they wait for a worker that routes it.",
		}),
		OldestAge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "matching_outbox_oldest_unpublished_age_seconds", Help: "Age of the oldest outbox row not yet handed over (0 when none).",
		}),
		Deleted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matching_outbox_deleted_total", Help: "Published outbox rows deleted once their retention had passed.",
		}),
	}
	m.Unroutable.WithLabelValues("invalid")
	for _, c := range []string{"store", "enqueue", "backlog", "prune"} {
		m.Errors.WithLabelValues(c)
	}
	reg.MustRegister(m.Relayed, m.Tasks, m.Unroutable, m.Errors, m.Backlog, m.UnroutedBacklog, m.OldestAge, m.Deleted)
	return m
}

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
