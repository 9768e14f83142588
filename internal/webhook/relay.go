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

// OutboxSource is what the relay needs from the database (*store.Store).
type OutboxSource interface {
	// PublishOutbox claims up to limit unpublished rows of topics and marks
	// them published, and hands them to hand with the endpoints of
	// endpoints that are disabled (URL to reason) and a writer of their
	// deliveries (called once; ids[i] is 0 for a delivery that was there
	// already), in one transaction that commits when hand returns nil and
	// rolls back otherwise.
	PublishOutbox(ctx context.Context, topics, endpoints []string, limit int,
		hand func(ctx context.Context, events []domain.ClaimedEvent, disabled map[string]string,
			write func(ctx context.Context, ds []domain.DeliveryWrite) (ids []int64, err error)) error) (claimed int, err error)
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

	// Senders bounds the first attempts a relay that sends them
	// (SendFirstAttempts) has on the wire at once, EndpointSenders those to
	// one endpoint, so that one slow subscriber cannot take every sender;
	// defaults 50 and half of Senders.
	Senders, EndpointSenders int
	// ShutdownTimeout is how long the relay's attempts on the wire may go on
	// once Run's context has ended; those still on the wire then are cut
	// short, recorded as interrupted and handed to the queue (same
	// webhook-id), as a task's attempt is at shutdown. Default 20 s.
	ShutdownTimeout time.Duration
	// FirstWait is how long a batch waits for its first attempts before it
	// commits; default 1 s. The batch's transaction, and the lock on its
	// outbox rows, are held that long at most. A first attempt that has not
	// started by then goes to the webhook queue instead (a task, leased as
	// FirstLease says); one still on the wire is recorded once it ends.
	FirstWait time.Duration
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
	if c.Senders <= 0 {
		c.Senders = 50
	}
	if c.EndpointSenders <= 0 {
		c.EndpointSenders = max(1, c.Senders/2)
	}
	c.EndpointSenders = min(c.EndpointSenders, c.Senders)
	if c.FirstWait <= 0 {
		c.FirstWait = time.Second
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = 20 * time.Second
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
// its facts in batches and writes each event's webhook deliveries, one per
// subscribed endpoint, in one transaction per batch, with one statement to
// claim the rows and one to write the deliveries.
//
// A relay that sends first attempts (SendFirstAttempts) makes them itself
// while it holds the batch's rows, and writes each delivery once, in its
// state after the attempt, with the attempt: no first-attempt task, no
// claim, no second write. The rows are marked published in the
// transaction that records the attempts, so a worker that dies between
// sending and recording leaves them unpublished, and the next pass sends
// them again (same webhook-id): at least once, never lost. A retry is a
// webhook:deliver task scheduled for its time, as the handler schedules
// the later ones. A batch waits FirstWait at most for its attempts (a slow
// subscriber holds back neither the relay nor other subscribers' events):
// an attempt still on the wire then is recorded when it ends, its delivery
// leased to it meanwhile, and one that found no sender free (Senders,
// EndpointSenders) is handed to the webhook queue as a task. A subscriber
// whose senders are all held by attempts that outlived their batch is not
// waited for at all: its first attempts go to the queue at once.
//
// A relay that does not send hands every first attempt to the queue: the
// delivery is written leased to its task, which carries the event and so
// needs no read (tasks.FirstAttempt). Tasks are queued in one round trip
// before the batch commits, so a delivery's row is there for its task;
// a batch that made no attempt and whose tasks cannot be queued (Redis
// down) rolls back and is claimed again on the next pass, so nothing is
// lost while Redis is away. A batch that made attempts commits them
// whatever Redis says, and the monitor queues again the tasks Redis did
// not take once their lease is over (Monitor).
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
	urls []string // of subs
	m    *RelayMetrics
	cfg  RelayConfig
	// lease sizes first attempts' leases; the webhook handler of the same
	// worker tells it how late they start (NewHandler).
	lease *firstLease

	// hooks sends first attempts (SendFirstAttempts); nil: the queue makes
	// them.
	hooks   *webhooks
	senders *senders
	// sends is the context of the relay's attempts: it ends
	// ShutdownTimeout after Run's.
	sends     context.Context
	stopSends context.CancelFunc
	// late counts the first attempts still on the wire, or being recorded,
	// after their batch ended.
	late sync.WaitGroup
}

// NewRelay builds a relay that writes deliveries to subs; every other
// argument is required.
func NewRelay(log *slog.Logger, src OutboxSource, q Queue, subs []domain.Subscription, m *RelayMetrics, cfg RelayConfig) *Relay {
	if log == nil || src == nil || q == nil || m == nil {
		panic("webhook.NewRelay: nil dependency")
	}
	cfg = cfg.withDefaults()
	r := &Relay{log: log, src: src, q: q, subs: slices.Clone(subs), m: m, cfg: cfg,
		lease: newFirstLease(cfg.FirstLease, cfg.MaxFirstLease)}
	r.sends, r.stopSends = context.WithCancel(context.Background())
	for _, s := range subs {
		r.urls = append(r.urls, s.URL)
	}
	return r
}

// SendFirstAttempts makes the relay send new deliveries' first attempts
// itself, through h's delivery (its store, poster, metrics and retry
// schedule), as it moves outbox rows. It is called once, before the relay
// runs; h must have delivery's dependencies.
func (r *Relay) SendFirstAttempts(h *Handler) *Relay {
	if h == nil || h.hooks == nil {
		panic("webhook.Relay.SendFirstAttempts: a handler without delivery")
	}
	r.hooks = h.hooks
	r.senders = newSenders(r.cfg.Senders, r.cfg.EndpointSenders)
	return r
}

// Run drains the outbox at once and then every Interval until ctx ends;
// beside it, it prunes expired rows at once and then every PruneInterval.
// A ticker in each worker drives it rather than a periodic task: the relay
// exists for the times Redis is unavailable, when a task in Redis would
// stop too. Every replica relays (no lease): concurrent relays take
// disjoint batches.
func (r *Relay) Run(ctx context.Context) {
	// Attempts on the wire when ctx ends get ShutdownTimeout to end, and are
	// recorded before Run returns.
	defer func() {
		stop := time.AfterFunc(r.cfg.ShutdownTimeout, r.stopSends)
		r.late.Wait()
		stop.Stop()
	}()
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

// batch relays one batch: claims, makes or hands over the first attempts,
// writes the deliveries, commits.
func (r *Relay) batch(ctx context.Context) (int, error) {
	lease := r.lease.next(time.Now())
	r.m.FirstLease.Set(lease.Seconds())
	var b *relayBatch
	claimed, err := r.src.PublishOutbox(ctx, RelayTopics(), r.urls, r.cfg.BatchSize,
		func(ctx context.Context, events []domain.ClaimedEvent, disabled map[string]string,
			write func(context.Context, []domain.DeliveryWrite) ([]int64, error)) error {
			b = r.plan(events, disabled, lease)
			b.send(ctx)
			return b.write(ctx, write)
		})
	if b != nil {
		b.end(ctx, err == nil)
	}
	if err != nil {
		if ctx.Err() == nil {
			r.m.Errors.WithLabelValues("relay").Inc()
		}
		return 0, fmt.Errorf("relay the outbox: %w", err)
	}
	r.m.Relayed.WithLabelValues(tasks.TopicSwipeRecorded).Add(float64(claimed))
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
