package tasks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// OutboxSource is what the relay needs from the database (store.Store,
// through a thin adapter in cmd/worker).
type OutboxSource interface {
	// RelayOutbox claims up to limit unpublished rows of topics in id order,
	// rows no other relay holds, passes them to hand with a ledger that
	// writes in the claiming transaction, and marks published the ids hand
	// returns, in that transaction. With no topics it claims nothing. If
	// hand fails, the ids it returned are still marked and its error comes
	// back unchanged; any other error means nothing was marked (and nothing
	// recorded).
	RelayOutbox(ctx context.Context, topics []string, limit int,
		hand func(ctx context.Context, rows []OutboxRow, ledger DeliveryLedger) ([]int64, error)) (claimed int, err error)
	// OutboxBacklog counts the unpublished rows, dates the oldest, and
	// counts by topic those whose topic is not in routed.
	OutboxBacklog(ctx context.Context, routed []string) (count int, oldest time.Time, unrouted map[string]int, err error)
	// DeletePublishedOutbox deletes up to limit rows published more than
	// olderThan ago that no webhook delivery references, oldest first.
	DeletePublishedOutbox(ctx context.Context, olderThan time.Duration, limit int) (deleted int, err error)
}

// minRetention is the shortest time a published row is kept. A
// webhook:deliver task reads its event's row on every attempt, and its
// retries span about 25.5 h; deleting the row earlier would lose the event
// for good.
const minRetention = 48 * time.Hour

// RelayConfig tunes the relay; zero fields take the defaults.
type RelayConfig struct {
	Interval       time.Duration // between passes of Run; default 1 s
	BatchSize      int           // rows per claiming transaction; default 100
	MaxBatches     int           // batches per pass before the backlog is measured again; default 50
	EnqueueTimeout time.Duration // per task; default 3 s

	Retention      time.Duration // how long published rows are kept; default 7 days, at least 48 h
	PruneInterval  time.Duration // between deletions of expired rows by Run; default 10 min
	PruneBatchSize int           // rows per deleting statement; default 1000
}

func (c RelayConfig) withDefaults() RelayConfig {
	if c.Interval <= 0 {
		c.Interval = time.Second
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 100
	}
	if c.MaxBatches <= 0 {
		c.MaxBatches = 50
	}
	if c.EnqueueTimeout <= 0 {
		c.EnqueueTimeout = 3 * time.Second
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

// Relay hands outbox rows to the task queue: the repair path behind the
// API's enqueue-after-commit, which covers a Redis outage and a crash
// between commit and enqueue. A row stays unpublished until every task it
// produces is in the queue, so nothing is lost while Redis is down; tasks
// are enqueued under ids derived from the row, so a row handed over twice
// (by the API and the relay, or after a crash before the row was marked)
// is still queued once.
//
// A relay claims only rows of the topics its router serves. In a rolling
// deploy a new build may write (or route) a topic an older worker does not
// know; the older worker leaves those rows alone, unpublished, and a worker
// that routes the topic hands them over, however late. Meanwhile they show
// in matching_outbox_unrouted_backlog, and a warning is logged whenever the
// set of such topics changes. A row whose route fails is different: it can
// never produce tasks in any build (a malformed payload), so it is logged,
// counted and marked, and never blocks the rows behind it.
//
// Concurrent relays, in one worker or in several replicas, take disjoint
// batches. Within a batch rows go in id order; across replicas order is not
// global, which the consumers do not need (a student:learn task folds
// whatever is new, webhooks carry their own timestamps).
//
// Run also deletes published rows once Retention has passed (see Prune).
type Relay struct {
	log    *slog.Logger
	src    OutboxSource
	q      Enqueuer
	router *Router
	m      *RelayMetrics
	cfg    RelayConfig

	mu       sync.Mutex // guards unrouted: Run and the outbox:relay task may measure at once
	unrouted string     // the unrouted topics last measured, joined, to log changes only
}

// NewRelay builds a relay; every argument is required.
func NewRelay(log *slog.Logger, src OutboxSource, q Enqueuer, router *Router, m *RelayMetrics, cfg RelayConfig) *Relay {
	if log == nil || src == nil || q == nil || router == nil || m == nil {
		panic("tasks.NewRelay: nil dependency")
	}
	return &Relay{log: log, src: src, q: q, router: router, m: m, cfg: cfg.withDefaults()}
}

// Run drains the outbox at once and then every Interval until ctx ends.
//
// A ticker in each worker drives the relay, not an asynq.Scheduler periodic
// task: the relay exists for the times Redis is unavailable, and a periodic
// task lives in Redis, so it would stop (and the backlog gauge go stale)
// exactly then; the ticker keeps measuring and resumes handing over the
// moment Redis answers. It also costs the queue nothing (no task per
// replica per second, no worker slot taken by the relay), and its latency
// does not depend on how busy the critical queue is. The outbox:relay task
// remains for an on-demand pass.
//
// Beside the relay loop, Run prunes expired rows at once and then every
// PruneInterval, in a goroutine of its own so that a long deletion never
// delays a hand-over. Run returns once both have stopped.
func (r *Relay) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { r.runPrune(ctx) })

	tick := time.NewTicker(r.cfg.Interval)
	defer tick.Stop()
	var failing error // log changes of state only: an outage would otherwise log every second
	for {
		n, err := r.Drain(ctx)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil && failing == nil:
			r.log.ErrorContext(ctx, "outbox relay failing; rows stay unpublished and are retried", "err", err)
		case err == nil && failing != nil:
			r.log.InfoContext(ctx, "outbox relay recovered", "handed_over", n)
		case n > 0:
			r.log.DebugContext(ctx, "outbox rows handed over", "handed_over", n)
		}
		failing = err
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Drain hands over unpublished rows of the routed topics batch by batch
// until none is left, a batch fails or MaxBatches were done, then measures
// the backlog. handed counts the rows marked published (invalid ones
// included). With no routed topic nothing is claimed, and the database is
// only asked for the backlog.
func (r *Relay) Drain(ctx context.Context) (handed int, err error) {
	topics := r.router.Topics()
	defer r.measureBacklog(ctx, topics)
	if len(topics) == 0 {
		return 0, nil
	}
	for range r.cfg.MaxBatches {
		n, claimed, err := r.batch(ctx, topics)
		handed += n
		if err != nil || claimed < r.cfg.BatchSize {
			return handed, err
		}
	}
	return handed, nil
}

type outcome uint8

const (
	relayed outcome = iota
	invalid
	skipped
)

// batch claims one batch of rows of topics, routes them, writes the
// webhook deliveries they produce (one statement for the batch, in the
// claiming transaction), and hands
// the rows over in id order, stopping at the first row whose tasks cannot
// all be enqueued (Redis is likely down; that row and the ones after it
// stay for the next pass).
func (r *Relay) batch(ctx context.Context, topics []string) (handed, claimed int, err error) {
	var (
		handErr error
		stage   string
		done    []OutboxRow
		result  []outcome
	)
	claimed, err = r.src.RelayOutbox(ctx, topics, r.cfg.BatchSize, func(ctx context.Context, rows []OutboxRow, ledger DeliveryLedger) ([]int64, error) {
		routed := make([]routedRow, len(rows))
		var all []Job
		for i, row := range rows {
			routed[i] = r.route(ctx, row)
			all = append(all, routed[i].jobs...)
		}
		// In the claiming transaction: the deliveries commit with the
		// rows' marks, or roll back with the claim. (On another connection
		// the write would skip these rows as held by a relay.)
		notWritten, err := RecordDeliveries(ctx, ledger, all)
		if err == nil && len(notWritten) > 0 {
			err = fmt.Errorf("webhook deliveries of %d claimed outbox rows not written", len(notWritten))
		}
		if err != nil {
			handErr, stage = err, "record"
			return nil, err
		}
		ids := make([]int64, 0, len(rows))
		for i, row := range rows {
			o := routed[i].outcome
			if o == skipped {
				continue
			}
			if err := r.enqueue(ctx, row, routed[i].jobs); err != nil {
				handErr, stage = err, "enqueue"
				return ids, err
			}
			ids = append(ids, row.ID)
			done = append(done, row)
			result = append(result, o)
		}
		return ids, nil
	})
	// The source returns hand's error itself when it marked what hand
	// returned, and anything else when it marked nothing: compare identity.
	committed := err == nil || (handErr != nil && err == handErr)
	if committed {
		for i, row := range done {
			switch result[i] {
			case relayed:
				r.m.Relayed.WithLabelValues(row.Topic).Inc()
			case invalid:
				r.m.Unroutable.WithLabelValues("invalid").Inc()
			}
		}
		handed = len(done)
	}
	if err != nil && ctx.Err() == nil {
		if handErr == nil || err != handErr {
			stage = "store"
		}
		r.m.Errors.WithLabelValues(stage).Inc()
	}
	return handed, claimed, err
}

// routedRow is a claimed row's jobs and what becomes of it.
type routedRow struct {
	jobs    []Job
	outcome outcome
}

// route returns the jobs row produces. A row whose route fails can never
// produce tasks: it is logged, counted and marked (invalid), so it never
// blocks the rows behind it. A row no route serves is left unpublished
// (skipped); the claim asks only for routed topics, so that happens only if
// the router changed after the claim.
func (r *Relay) route(ctx context.Context, row OutboxRow) routedRow {
	jobs, err := r.router.Route(row)
	switch {
	case errors.Is(err, ErrUnknownTopic):
		r.log.ErrorContext(ctx, "outbox row claimed for a topic without a route; left unpublished",
			"outbox_id", row.ID, "topic", row.Topic)
		return routedRow{outcome: skipped}
	case err != nil:
		r.log.ErrorContext(ctx, "outbox row cannot produce its tasks; marked published without tasks",
			"outbox_id", row.ID, "topic", row.Topic, "err", err)
		return routedRow{outcome: invalid}
	}
	return routedRow{jobs: jobs, outcome: relayed}
}

// enqueue queues every job of row.
func (r *Relay) enqueue(ctx context.Context, row OutboxRow, jobs []Job) error {
	for _, j := range jobs {
		ectx, cancel := context.WithTimeout(ctx, r.cfg.EnqueueTimeout)
		dup, err := Enqueue(ectx, r.q, j)
		cancel()
		if err != nil {
			return fmt.Errorf("outbox row %d: %w", row.ID, err)
		}
		res := "enqueued"
		if dup {
			res = "duplicate"
		}
		r.m.Tasks.WithLabelValues(j.Task.Type(), res).Inc()
	}
	return nil
}

// measureBacklog sets the backlog gauges: all unpublished rows, whatever
// their topic, and those of topics this relay has no route for. It logs a
// warning when the set of unrouted topics changes to a non-empty one (not
// on every pass: a deploy that leaves such rows for minutes would log every
// second), and a notice when the last of them is gone.
func (r *Relay) measureBacklog(ctx context.Context, routed []string) {
	if ctx.Err() != nil {
		return
	}
	n, oldest, unrouted, err := r.src.OutboxBacklog(ctx, routed)
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

	total := 0
	for _, c := range unrouted {
		total += c
	}
	r.m.UnroutedBacklog.Set(float64(total))
	topics := slices.Sorted(maps.Keys(unrouted))
	key := strings.Join(topics, "\x00")
	r.mu.Lock()
	changed := key != r.unrouted
	r.unrouted = key
	r.mu.Unlock()
	switch {
	case !changed:
	case total > 0:
		r.log.WarnContext(ctx, "outbox rows of topics this worker has no route for; left unpublished for a worker that routes them",
			"unrouted", unrouted, "routed_topics", routed)
	default:
		r.log.InfoContext(ctx, "no outbox rows of unrouted topics left")
	}
}

// runPrune calls Prune at once and then every PruneInterval until ctx ends.
func (r *Relay) runPrune(ctx context.Context) {
	tick := time.NewTicker(r.cfg.PruneInterval)
	defer tick.Stop()
	for {
		n, err := r.Prune(ctx)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil:
			r.log.ErrorContext(ctx, "outbox retention failed; expired rows are kept until the next pass",
				"deleted", n, "err", err)
		case n > 0:
			r.log.InfoContext(ctx, "expired outbox rows deleted", "deleted", n, "retention", r.cfg.Retention.String())
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Prune deletes the rows published more than Retention ago that no webhook
// delivery references, PruneBatchSize rows per statement, until a statement
// finds fewer than that. Without it the outbox would grow by every event
// ever written. Several replicas may prune at once: each statement skips
// the rows another holds.
func (r *Relay) Prune(ctx context.Context) (deleted int, err error) {
	for ctx.Err() == nil {
		n, err := r.src.DeletePublishedOutbox(ctx, r.cfg.Retention, r.cfg.PruneBatchSize)
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
