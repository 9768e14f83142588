package tasks

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/periodic"
)

// RecoveryConfig tunes the recovery of abandoned tasks; zero fields take
// the defaults.
type RecoveryConfig struct {
	Interval time.Duration // between passes; default 5 s
	// Grace is how long after its lease ended a task is recovered: room for
	// the heartbeat at which its worker notices the lease is gone and
	// cancels the handler (up to 5 s) and for the clocks of the workers
	// apart. Default 15 s.
	Grace time.Duration
	Batch int // tasks per queue per pass at most; default 1,000
}

func (c RecoveryConfig) withDefaults() RecoveryConfig {
	if c.Interval <= 0 {
		c.Interval = 5 * time.Second
	}
	if c.Grace <= 0 {
		c.Grace = 15 * time.Second
	}
	if c.Batch <= 0 {
		c.Batch = 1000
	}
	return c
}

// Recovery puts back in their queue the tasks left active by a worker that
// no longer runs them (handover.RecoverExpired: a worker that died, or one
// that lost the write ending a task when Redis failed), once their lease
// has been over for Grace: after a Redis blip, a webhook attempt or a learn
// drain whose end Redis did not record runs again 45-50 s after it ended
// (its lease, renewed while it ran, lasts 30 s more) instead of asynq's one
// to two minutes. One replica at a time runs the passes (the
// queue-recovery lease).
type Recovery struct {
	log       *slog.Logger
	rdb       redis.UniversalClient
	queues    []string
	cfg       RecoveryConfig
	job       *periodic.Runner
	recovered *prometheus.CounterVec
}

// NewRecovery builds the recovery of queues' abandoned tasks and registers
// its counter on reg.
func NewRecovery(log *slog.Logger, rdb redis.UniversalClient, lease periodic.Lease, queues []string,
	reg prometheus.Registerer, cfg RecoveryConfig) *Recovery {
	if log == nil || rdb == nil || lease == nil || reg == nil {
		panic("tasks.NewRecovery: nil dependency")
	}
	cfg = cfg.withDefaults()
	r := &Recovery{log: log, rdb: rdb, queues: queues, cfg: cfg,
		job: periodic.New(periodic.Config{Name: "queue-recovery", Interval: cfg.Interval, Lease: lease, Log: log}),
		recovered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matching_queue_recovered_total",
			Help: "Tasks found active after their lease ended (their worker died or lost them in a Redis failure), queued again or, retries used up, archived.",
		}, []string{"queue", "outcome"}),
	}
	reg.MustRegister(r.recovered)
	return r
}

// Run recovers at once and then every Interval until ctx ends.
func (r *Recovery) Run(ctx context.Context) {
	r.job.Run(ctx, func(ctx context.Context) error {
		_, _, err := r.Pass(ctx)
		return err
	})
}

// Pass, when this replica holds the queue-recovery lease (ran), recovers
// every queue's tasks whose lease ended Grace ago or more, and reports how
// many it queued again.
func (r *Recovery) Pass(ctx context.Context) (ran bool, requeued int, err error) {
	ran, err = r.job.Do(ctx, func(ctx context.Context) error {
		requeued, err = r.pass(ctx)
		return err
	})
	return ran, requeued, err
}

func (r *Recovery) pass(ctx context.Context) (int, error) {
	cutoff := time.Now().Add(-r.cfg.Grace)
	total := 0
	for _, q := range r.queues {
		got, err := handover.RecoverExpired(ctx, r.rdb, q, cutoff, r.cfg.Batch)
		if err != nil {
			return total, err
		}
		total += got.Requeued
		if got.Requeued+got.Archived == 0 {
			continue
		}
		r.recovered.WithLabelValues(q, "requeued").Add(float64(got.Requeued))
		r.recovered.WithLabelValues(q, "archived").Add(float64(got.Archived))
		r.log.WarnContext(ctx, "tasks abandoned by their worker recovered", "queue", q,
			"requeued", got.Requeued, "archived", got.Archived)
	}
	return total, nil
}
