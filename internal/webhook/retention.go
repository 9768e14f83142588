package webhook

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/collegematch/matching/internal/periodic"
)

// RetentionStore is what the retention loop deletes with (*store.Store).
type RetentionStore interface {
	// DeleteFinalWebhookDeliveries deletes up to limit deliveries that
	// ended more than olderThan ago, with their attempts.
	DeleteFinalWebhookDeliveries(ctx context.Context, olderThan time.Duration, limit int) (deliveries, attempts int, err error)
}

// MinDeliveryRetention is the shortest time an ended delivery is kept: a
// webhook task of the delivery that is still queued (a duplicate, a retry
// of the 25.5 h schedule) must find the delivery's row, or it would
// attempt the event again.
const MinDeliveryRetention = 48 * time.Hour

// RetentionConfig tunes the retention loop; zero fields take the defaults.
type RetentionConfig struct {
	// Deliveries is how long an ended delivery (succeeded, parked,
	// disabled) and its attempts are kept (WEBHOOK_RETENTION); default 720
	// h, at least MinDeliveryRetention.
	Deliveries time.Duration
	Interval   time.Duration // between passes; default 10 min
	BatchSize  int           // deliveries per deleting statement; default 500
}

func (c RetentionConfig) withDefaults() RetentionConfig {
	if c.Deliveries <= 0 {
		c.Deliveries = 720 * time.Hour
	}
	c.Deliveries = max(c.Deliveries, MinDeliveryRetention)
	if c.Interval <= 0 {
		c.Interval = 10 * time.Minute
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 500
	}
	return c
}

// Retention deletes what the service no longer needs, in bounded batches:
// webhook deliveries (with their attempts) once Deliveries has passed since
// they ended. The events they referred to then go with the outbox's own
// retention (the relay's Prune: published rows after 7 days once no
// delivery that may still be sent refers to them). One replica runs each
// pass (the retention lease), so N replicas do not scan N times.
type Retention struct {
	log   *slog.Logger
	store RetentionStore
	job   *periodic.Runner
	cfg   RetentionConfig
	m     retentionMetrics
}

type retentionMetrics struct {
	deliveries, attempts prometheus.Counter
	passes               *prometheus.CounterVec
}

// NewRetention builds the loop; its collectors are registered on reg.
func NewRetention(log *slog.Logger, store RetentionStore, lease periodic.Lease, reg prometheus.Registerer, cfg RetentionConfig) *Retention {
	if log == nil || store == nil || lease == nil || reg == nil {
		panic("webhook.NewRetention: nil dependency")
	}
	m := retentionMetrics{
		deliveries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matching_webhook_deliveries_deleted_total",
			Help: "Ended webhook deliveries (succeeded, parked, disabled) deleted once WEBHOOK_RETENTION had passed.",
		}),
		attempts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matching_webhook_attempts_deleted_total",
			Help: "Webhook attempts deleted with their deliveries.",
		}),
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matching_retention_passes_total",
			Help: "Retention passes, by result (ok, skipped: another replica leads, error).",
		}, []string{"result"}),
	}
	for _, r := range []string{"ok", "skipped", "error"} {
		m.passes.WithLabelValues(r)
	}
	reg.MustRegister(m.deliveries, m.attempts, m.passes)
	cfg = cfg.withDefaults()
	return &Retention{log: log, store: store, cfg: cfg, m: m,
		job: periodic.New(periodic.Config{Name: "retention", Interval: cfg.Interval, Lease: lease, Log: log})}
}

// Run passes at once and then every Interval until ctx ends.
func (r *Retention) Run(ctx context.Context) {
	r.job.Run(ctx, func(ctx context.Context) error {
		deliveries, err := r.Pass(ctx)
		if err == nil && deliveries > 0 {
			r.log.InfoContext(ctx, "ended webhook deliveries deleted", "deliveries", deliveries,
				"retention", r.cfg.Deliveries.String())
		}
		return err
	})
}

// Pass runs one pass when this replica holds the lease: it deletes ended
// deliveries past the retention, BatchSize per statement, until a
// statement finds fewer, and returns how many deliveries it deleted.
func (r *Retention) Pass(ctx context.Context) (deliveries int, err error) {
	lead, err := r.job.Do(ctx, func(ctx context.Context) (err error) {
		deliveries, err = r.pass(ctx)
		return err
	})
	switch {
	case ctx.Err() != nil:
		// Stopped: not a pass.
	case !lead && err == nil:
		r.m.passes.WithLabelValues("skipped").Inc()
	case err != nil:
		r.m.passes.WithLabelValues("error").Inc()
	default:
		r.m.passes.WithLabelValues("ok").Inc()
	}
	return deliveries, err
}

func (r *Retention) pass(ctx context.Context) (deliveries int, err error) {
	for ctx.Err() == nil {
		d, a, err := r.store.DeleteFinalWebhookDeliveries(ctx, r.cfg.Deliveries, r.cfg.BatchSize)
		deliveries += d
		r.m.deliveries.Add(float64(d))
		r.m.attempts.Add(float64(a))
		if err != nil {
			return deliveries, err
		}
		if d < r.cfg.BatchSize {
			return deliveries, nil
		}
	}
	return deliveries, ctx.Err()
}
