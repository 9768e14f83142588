package tasks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// OutboxSource is what the relay needs from the database (store.Store,
// through a thin adapter in cmd/worker).
type OutboxSource interface {
	// RelayOutbox claims up to limit unpublished rows in id order, rows no
	// other relay holds, passes them to hand and marks published the ids
	// hand returns, in the claiming transaction. If hand fails, the ids it
	// returned are still marked and its error comes back unchanged; any
	// other error means nothing was marked.
	RelayOutbox(ctx context.Context, limit int, hand func(ctx context.Context, rows []OutboxRow) ([]int64, error)) (claimed int, err error)
	// OutboxBacklog counts the unpublished rows and dates the oldest.
	OutboxBacklog(ctx context.Context) (count int, oldest time.Time, err error)
}

// RelayConfig tunes the relay; zero fields take the defaults.
type RelayConfig struct {
	Interval       time.Duration // between passes of Run; default 1 s
	BatchSize      int           // rows per claiming transaction; default 100
	MaxBatches     int           // batches per pass before the backlog is measured again; default 50
	EnqueueTimeout time.Duration // per task; default 3 s
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
// Concurrent relays, in one worker or in several replicas, take disjoint
// batches. Within a batch rows go in id order; across replicas order is not
// global, which the consumers do not need (a student:learn task folds
// whatever is new, webhooks carry their own timestamps).
type Relay struct {
	log    *slog.Logger
	src    OutboxSource
	q      Enqueuer
	router *Router
	m      *RelayMetrics
	cfg    RelayConfig
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
func (r *Relay) Run(ctx context.Context) {
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

// Drain hands over unpublished rows batch by batch until none is left, a
// batch fails or MaxBatches were done, then measures the backlog. handed
// counts the rows marked published (unroutable ones included).
func (r *Relay) Drain(ctx context.Context) (handed int, err error) {
	defer r.measureBacklog(ctx)
	for range r.cfg.MaxBatches {
		n, claimed, err := r.batch(ctx)
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
	unknownTopic
	invalid
)

// batch claims one batch and hands its rows over in id order, stopping at
// the first row whose tasks cannot all be enqueued (Redis is likely down;
// that row and the ones after it stay for the next pass).
func (r *Relay) batch(ctx context.Context) (handed, claimed int, err error) {
	var (
		enqErr error
		done   []OutboxRow
		result []outcome
	)
	claimed, err = r.src.RelayOutbox(ctx, r.cfg.BatchSize, func(ctx context.Context, rows []OutboxRow) ([]int64, error) {
		ids := make([]int64, 0, len(rows))
		for _, row := range rows {
			o, err := r.handOver(ctx, row)
			if err != nil {
				enqErr = err
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
	committed := err == nil || (enqErr != nil && err == enqErr)
	if committed {
		for i, row := range done {
			switch result[i] {
			case relayed:
				r.m.Relayed.WithLabelValues(row.Topic).Inc()
			case unknownTopic:
				r.m.Unroutable.WithLabelValues("unknown_topic").Inc()
			case invalid:
				r.m.Unroutable.WithLabelValues("invalid").Inc()
			}
		}
		handed = len(done)
	}
	if err != nil && ctx.Err() == nil {
		stage := "store"
		if enqErr != nil {
			stage = "enqueue"
		}
		r.m.Errors.WithLabelValues(stage).Inc()
	}
	return handed, claimed, err
}

// handOver enqueues every job row produces. A row no route serves, or one
// whose route fails, can never produce tasks: it is logged, counted and
// marked, so it never blocks the rows behind it.
func (r *Relay) handOver(ctx context.Context, row OutboxRow) (outcome, error) {
	jobs, err := r.router.Route(row)
	switch {
	case errors.Is(err, ErrUnknownTopic):
		r.log.WarnContext(ctx, "outbox row has an unknown topic; marked published without tasks",
			"outbox_id", row.ID, "topic", row.Topic)
		return unknownTopic, nil
	case err != nil:
		r.log.ErrorContext(ctx, "outbox row cannot produce its tasks; marked published without tasks",
			"outbox_id", row.ID, "topic", row.Topic, "err", err)
		return invalid, nil
	}
	for _, j := range jobs {
		ectx, cancel := context.WithTimeout(ctx, r.cfg.EnqueueTimeout)
		dup, err := Enqueue(ectx, r.q, j)
		cancel()
		if err != nil {
			return 0, fmt.Errorf("outbox row %d: %w", row.ID, err)
		}
		res := "enqueued"
		if dup {
			res = "duplicate"
		}
		r.m.Tasks.WithLabelValues(j.Task.Type(), res).Inc()
	}
	return relayed, nil
}

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
