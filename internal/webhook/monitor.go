package webhook

import (
	"context"
	"log/slog"
	"time"

	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/periodic"
	"github.com/collegematch/matching/internal/tasks"
)

// MonitorConfig tunes the monitor; zero fields take the defaults.
type MonitorConfig struct {
	Interval time.Duration // between backlog measurements, default 10 s
	Overdue  time.Duration // a pending delivery this late is queued again, default 1 min
	Batch    int           // deliveries looked at per page, default 500
	Pages    int           // pages per pass at most, default 20 (10,000 deliveries)
}

// Monitor measures the delivery backlog and repairs deliveries whose
// task was lost (a Redis restart without persistence): a pending delivery
// whose next attempt is overdue is queued again under its task id, which
// the queue refuses while the task still exists, so it is harmless when
// the task is merely late.
//
// A pass pages through the overdue deliveries in id order, up to Pages
// pages, and the next pass goes on after the last one it saw (starting over
// once it reaches the end), so a lost task behind a backlog of merely late
// ones is found within a pass or a few.
//
// One replica at a time runs the passes (the webhook-monitor lease); the
// others export a backlog of 0, so the fleet's max is the holder's.
type Monitor struct {
	log   *slog.Logger
	store Store
	q     Queue
	m     *Metrics
	cfg   MonitorConfig
	job   *periodic.Runner
	after int64 // the last delivery id the previous pass looked at; 0: from the start
}

// NewMonitor builds a monitor; lease may be nil (every replica runs the
// passes), every other argument is required.
func NewMonitor(log *slog.Logger, store Store, q Queue, lease periodic.Lease, m *Metrics, cfg MonitorConfig) *Monitor {
	if log == nil || store == nil || q == nil || m == nil {
		panic("webhook.NewMonitor: nil dependency")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 10 * time.Second
	}
	if cfg.Overdue <= 0 {
		cfg.Overdue = time.Minute
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 500
	}
	if cfg.Pages <= 0 {
		cfg.Pages = 20
	}
	return &Monitor{log: log, store: store, q: q, m: m, cfg: cfg,
		job: periodic.New(periodic.Config{Name: "webhook-monitor", Interval: cfg.Interval, Lease: lease, Log: log})}
}

// Run measures and repairs at once and then every Interval until ctx ends.
func (w *Monitor) Run(ctx context.Context) {
	w.job.Run(ctx, func(ctx context.Context) error {
		w.Pass(ctx)
		return nil // Pass logs what fails
	})
}

// Pass, when this replica holds the lease, measures the backlog once and
// looks at up to Pages pages of Batch overdue deliveries, going on from
// where the previous pass stopped, and re-queues those whose task is gone;
// it returns how many tasks it queued again. Passes must not run
// concurrently. While Redis does not answer (the lease cannot be read, and
// nothing can be queued) it measures the backlog only, so that the backlog
// shows while Redis is away.
func (w *Monitor) Pass(ctx context.Context) int {
	requeued := 0
	ran, err := w.job.Do(ctx, func(ctx context.Context) error {
		requeued = w.pass(ctx)
		return nil
	})
	switch {
	case !ran && err != nil:
		w.measure(ctx)
	case !ran:
		w.m.Backlog.Set(0)
		w.m.OldestPendingAge.Set(0)
	}
	return requeued
}

// measure sets the backlog gauges; false when the backlog could not be read.
func (w *Monitor) measure(ctx context.Context) bool {
	n, oldest, err := w.store.WebhookBacklog(ctx)
	if err != nil {
		if ctx.Err() == nil {
			w.log.WarnContext(ctx, "webhook backlog not measured", "err", err)
		}
		return false
	}
	w.m.Backlog.Set(float64(n))
	age := 0.0
	if n > 0 && !oldest.IsZero() {
		age = max(time.Since(oldest).Seconds(), 0)
	}
	w.m.OldestPendingAge.Set(age)
	return true
}

func (w *Monitor) pass(ctx context.Context) int {
	if !w.measure(ctx) {
		return 0
	}
	requeued := 0
	for range w.cfg.Pages {
		n, more := w.page(ctx)
		requeued += n
		if !more {
			break
		}
	}
	if requeued > 0 {
		w.m.Requeued.Add(float64(requeued))
		w.log.WarnContext(ctx, "overdue webhook deliveries queued again", "requeued", requeued)
	}
	return requeued
}

// page looks at the next Batch overdue deliveries after w.after and queues
// again those whose task is gone. more is true when the page was full and
// every delivery on it was looked at: the next page may hold more.
func (w *Monitor) page(ctx context.Context) (requeued int, more bool) {
	stale, err := w.store.StaleWebhookDeliveries(ctx, w.cfg.Overdue, w.after, w.cfg.Batch)
	if err != nil {
		return 0, false
	}
	if len(stale) > 0 {
		jobs := make([]handover.Job, len(stale))
		for i, s := range stale {
			jobs[i] = tasks.WebhookJob(s.OutboxID, s.Endpoint, s.Replays, nil)
		}
		n, err := w.q.Queue(ctx, jobs...)
		if err != nil {
			return 0, false // Redis is down: the next pass goes on from where this one started
		}
		requeued = n
	}
	if len(stale) < w.cfg.Batch {
		w.after = 0 // the end: from the start next time
		return requeued, false
	}
	w.after = stale[len(stale)-1].ID
	return requeued, true
}
