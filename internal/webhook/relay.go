package webhook

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/periodic"
	"github.com/collegematch/matching/internal/tasks"
)

// OutboxSource is what the relay needs from the database (*store.Store,
// through an adapter in cmd/worker).
type OutboxSource interface {
	// RelayOutbox claims up to limit unpublished rows of topics, marks them
	// published and writes their webhook deliveries to subs (leased for
	// lease to their first attempt), in one transaction that commits when
	// hand returns nil and rolls back otherwise.
	RelayOutbox(ctx context.Context, topics []string, subs []domain.Subscription, lease time.Duration, limit int,
		hand func(ctx context.Context, events []domain.RelayedEvent) error) (claimed int, err error)
	// OutboxBacklog counts the unpublished rows and dates the oldest.
	OutboxBacklog(ctx context.Context) (count int, oldest time.Time, err error)
	// DeletePublishedOutbox deletes up to limit rows published more than
	// olderThan ago that no pending webhook delivery needs, oldest first.
	DeletePublishedOutbox(ctx context.Context, olderThan time.Duration, limit int, after time.Time) (deleted int, last time.Time, err error)
}

// Queue hands jobs to the worker fleet in one round trip (handover.Client).
type Queue interface {
	Queue(ctx context.Context, jobs ...handover.Job) (queued int, err error)
}

// minRetention is the shortest time a published row is kept: a webhook
// task reads its event's row on a retry, and retries span about 25.5 h.
const minRetention = 48 * time.Hour

// RelayConfig tunes the relay; zero fields take the defaults.
type RelayConfig struct {
	Interval   time.Duration // between passes of Run; default 250 ms
	BatchSize  int           // rows per claiming transaction; default 500
	MaxBatches int           // batches per pass before the backlog is measured again; default 20
	Timeout    time.Duration // to queue one batch's tasks; default 3 s
	// FirstLease is how long a new delivery is leased to the task that
	// makes its first attempt, which then needs no claim (tasks.FirstAttempt),
	// when first attempts start on time; default 30 s. A task that starts
	// later claims its attempt, and a task Redis lost is queued again by
	// the monitor once the lease ended. While first attempts start late
	// (the webhook queue is behind), the lease grows by twice their
	// lateness, up to MaxFirstLease (default 10 min; see firstLease).
	FirstLease    time.Duration
	MaxFirstLease time.Duration

	Retention      time.Duration // how long published rows are kept; default 7 days, at least 48 h
	PruneInterval  time.Duration // between deletions of expired rows by Run; default 10 min
	PruneBatchSize int           // rows per deleting statement; default 1000
}

func (c RelayConfig) withDefaults() RelayConfig {
	if c.Interval <= 0 {
		c.Interval = 250 * time.Millisecond
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 500
	}
	if c.MaxBatches <= 0 {
		c.MaxBatches = 20
	}
	if c.Timeout <= 0 {
		c.Timeout = 3 * time.Second
	}
	if c.FirstLease <= 0 {
		c.FirstLease = 30 * time.Second
	}
	if c.MaxFirstLease <= 0 {
		c.MaxFirstLease = 10 * time.Minute
	}
	if c.Retention <= 0 {
		c.Retention = 7 * 24 * time.Hour
	}
	c.Retention = max(c.Retention, minRetention)
	if c.PruneInterval <= 0 {
		c.PruneInterval = 10 * time.Minute
	}
	if c.PruneBatchSize <= 0 {
		c.PruneBatchSize = 1000
	}
	return c
}

// RelayTopics are the outbox topics this build publishes.
func RelayTopics() []string { return []string{tasks.TopicSwipeRecorded} }

// Relay publishes the outbox: it claims the rows the write side wrote with
// its facts in batches, writes each event's webhook deliveries, one per
// subscribed endpoint, and queues their first attempts, all in one
// transaction and one Redis round trip per batch. A row is marked published
// in the transaction that wrote its deliveries, and the transaction commits
// only once their tasks are queued: a batch whose tasks cannot be queued
// (Redis down) rolls back and is claimed again on the next pass, so nothing
// is lost while Redis is away, and a delivery's row exists before its task.
// A task Redis loses later is found again from its row (Monitor).
//
// Concurrent relays, in one worker or in several replicas, take disjoint
// batches (SKIP LOCKED). Within a batch rows go in id order; across
// replicas order is not global, which subscribers do not need (each event
// carries its own timestamp). Run also deletes published rows once
// Retention has passed (Prune).
type Relay struct {
	log  *slog.Logger
	src  OutboxSource
	q    Queue
	subs []domain.Subscription
	m    *RelayMetrics
	cfg  RelayConfig
	// lease sizes first attempts' leases; the webhook handler of the same
	// worker tells it how late they start (NewHandler).
	lease *firstLease
}

// NewRelay builds a relay that writes deliveries to subs; every other
// argument is required.
func NewRelay(log *slog.Logger, src OutboxSource, q Queue, subs []domain.Subscription, m *RelayMetrics, cfg RelayConfig) *Relay {
	if log == nil || src == nil || q == nil || m == nil {
		panic("webhook.NewRelay: nil dependency")
	}
	cfg = cfg.withDefaults()
	return &Relay{log: log, src: src, q: q, subs: slices.Clone(subs), m: m, cfg: cfg,
		lease: newFirstLease(cfg.FirstLease, cfg.MaxFirstLease)}
}

// Run drains the outbox at once and then every Interval until ctx ends;
// beside it, it prunes expired rows at once and then every PruneInterval.
// A ticker in each worker drives it rather than a periodic task: the relay
// exists for the times Redis is unavailable, when a task in Redis would
// stop too. Every replica relays (no lease): concurrent relays take
// disjoint batches.
func (r *Relay) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		periodic.New(periodic.Config{Name: "outbox retention", Interval: r.cfg.PruneInterval, Log: r.log}).
			Run(ctx, r.prunePass)
	})
	periodic.New(periodic.Config{Name: "outbox relay", Interval: r.cfg.Interval, Log: r.log}).
		Run(ctx, func(ctx context.Context) error {
			n, err := r.Drain(ctx)
			if err == nil && n > 0 {
				r.log.DebugContext(ctx, "outbox rows relayed", "relayed", n)
			}
			return err
		})
}

// Drain relays batch after batch until a batch comes back short, fails or
// MaxBatches were done, then measures the backlog; relayed counts the rows
// published.
func (r *Relay) Drain(ctx context.Context) (relayed int, err error) {
	defer r.measureBacklog(ctx)
	for range r.cfg.MaxBatches {
		n, err := r.batch(ctx)
		relayed += n
		if err != nil || n < r.cfg.BatchSize {
			return relayed, err
		}
	}
	return relayed, nil
}

// batch relays one batch: claims, writes deliveries, queues the first
// attempts, commits.
func (r *Relay) batch(ctx context.Context) (int, error) {
	var jobs []handover.Job
	lease := r.lease.next(time.Now())
	r.m.FirstLease.Set(lease.Seconds())
	claimed, err := r.src.RelayOutbox(ctx, RelayTopics(), r.subs, lease, r.cfg.BatchSize,
		func(ctx context.Context, events []domain.RelayedEvent) error {
			jobs = jobs[:0]
			for _, ev := range events {
				for _, d := range ev.Deliveries {
					if d.Disabled {
						continue
					}
					jobs = append(jobs, tasks.WebhookJob(ev.ID, d.Endpoint, 0, &tasks.FirstAttempt{DeliveryID: d.ID,
						LeasedUntil: d.LeasedUntil.UnixMilli(), LeasedFor: lease.Milliseconds(), Topic: ev.Topic, Payload: ev.Payload,
						CreatedAt: ev.CreatedAt}))
				}
			}
			qctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
			defer cancel()
			_, err := r.q.Queue(qctx, jobs...)
			return err
		})
	if err != nil {
		if ctx.Err() == nil {
			r.m.Errors.WithLabelValues("relay").Inc()
		}
		return 0, fmt.Errorf("relay the outbox: %w", err)
	}
	r.m.Relayed.WithLabelValues(tasks.TopicSwipeRecorded).Add(float64(claimed))
	r.m.Tasks.WithLabelValues(tasks.TypeWebhookDeliver, "enqueued").Add(float64(len(jobs)))
	return claimed, nil
}

// measureBacklog sets the backlog gauges.
func (r *Relay) measureBacklog(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	n, oldest, err := r.src.OutboxBacklog(ctx)
	if err != nil {
		r.m.Errors.WithLabelValues("backlog").Inc()
		return
	}
	r.m.Backlog.Set(float64(n))
	age := 0.0
	if n > 0 && !oldest.IsZero() {
		age = max(time.Since(oldest).Seconds(), 0)
	}
	r.m.OldestAge.Set(age)
}

// prunePass is one pass of the outbox's retention: Prune, logged.
func (r *Relay) prunePass(ctx context.Context) error {
	n, err := r.Prune(ctx)
	if err == nil && n > 0 {
		r.log.InfoContext(ctx, "expired outbox rows deleted", "deleted", n, "retention", r.cfg.Retention.String())
	}
	return err
}

// Prune deletes the rows published more than Retention ago that no pending
// webhook delivery needs, PruneBatchSize rows per statement, until a
// statement finds fewer than that. Several replicas may prune at once: each
// statement skips the rows another holds.
func (r *Relay) Prune(ctx context.Context) (deleted int, err error) {
	var after time.Time // where the last statement stopped: the rows before it are kept
	for ctx.Err() == nil {
		var n int
		n, after, err = r.src.DeletePublishedOutbox(ctx, r.cfg.Retention, r.cfg.PruneBatchSize, after)
		deleted += n
		r.m.Deleted.Add(float64(n))
		if err != nil {
			if ctx.Err() == nil {
				r.m.Errors.WithLabelValues("prune").Inc()
			}
			return deleted, err
		}
		if n < r.cfg.PruneBatchSize {
			return deleted, nil
		}
	}
	return deleted, ctx.Err()
}
