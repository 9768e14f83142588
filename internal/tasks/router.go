package tasks

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/hibiken/asynq"
)

// OutboxRow is one outbox event as the router and the relay see it.
type OutboxRow struct {
	ID        int64
	Topic     string
	StudentID string // "" when the event concerns no student
	Payload   []byte // JSON
	CreatedAt time.Time
}

// Job is one task an outbox row produces, with the id it is enqueued under
// (OutboxTaskID), which makes handing the row over again harmless.
type Job struct {
	ID   string
	Task *asynq.Task
	// Delivery is set on webhook:deliver jobs: the delivery row Router.Record
	// writes before the task may be queued.
	Delivery *WebhookDeliveryKey
}

// RouteFunc turns an outbox row into the jobs it must produce. It must be
// pure: an error means this row can never produce its jobs (a malformed
// payload), not that it might later.
type RouteFunc func(row OutboxRow) ([]Job, error)

// Router maps outbox topics to the tasks their rows produce. Several routes
// may serve one topic (a swipe feeds the learner and every webhook endpoint
// subscribed to it); a row produces the jobs of all of them, in the order
// the routes were added. The API's fast path and the worker's relay use the
// same router, so both derive the same task ids.
//
// Routes are added while wiring, before the router is used; Route and
// Record are then safe for concurrent use.
type Router struct {
	routes map[string][]RouteFunc
	ledger DeliveryLedger // set by AddWebhookRoutes
}

// DeliveryLedger writes webhook delivery rows to the source of truth.
type DeliveryLedger interface {
	// RecordWebhookDeliveries writes a pending delivery, due now, for each
	// key that has none yet (idempotent). skipped lists the events it wrote
	// nothing for because a relay is handing them over right now (or they
	// are gone): the caller leaves them to the relay.
	RecordWebhookDeliveries(ctx context.Context, keys []WebhookDeliveryKey) (skipped []int64, err error)
}

// Record writes the delivery rows of the webhook jobs among jobs, in one
// call. Every hand-over (the API after its commit, the relay, sync push)
// calls it before it queues the jobs: a delivery is then in PostgreSQL
// before its task is in Redis, and a task Redis loses is queued again from
// its row (WebhookMonitor). Jobs without a delivery need nothing. skipped
// holds the outbox rows a relay is handing over at this moment: the caller
// must queue none of their jobs, nor mark them (the relay does both).
func (r *Router) Record(ctx context.Context, jobs []Job) (skipped map[int64]bool, err error) {
	return RecordDeliveries(ctx, r.ledger, jobs)
}

// LedgerFunc is a function that serves as a DeliveryLedger.
type LedgerFunc func(ctx context.Context, keys []WebhookDeliveryKey) ([]int64, error)

// RecordWebhookDeliveries implements DeliveryLedger.
func (f LedgerFunc) RecordWebhookDeliveries(ctx context.Context, keys []WebhookDeliveryKey) ([]int64, error) {
	return f(ctx, keys)
}

// RecordDeliveries writes the delivery rows of the webhook jobs among jobs
// to ledger, in one call, as Router.Record does with the router's own.
func RecordDeliveries(ctx context.Context, ledger DeliveryLedger, jobs []Job) (skipped map[int64]bool, err error) {
	var keys []WebhookDeliveryKey
	for _, j := range jobs {
		if j.Delivery != nil {
			keys = append(keys, *j.Delivery)
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	if ledger == nil {
		return nil, errors.New("tasks: webhook jobs routed without a delivery ledger")
	}
	ids, err := ledger.RecordWebhookDeliveries(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("record %d webhook deliveries: %w", len(keys), err)
	}
	for _, id := range ids {
		if skipped == nil {
			skipped = map[int64]bool{}
		}
		skipped[id] = true
	}
	return skipped, nil
}

// NewRouter returns a router with no routes.
func NewRouter() *Router {
	return &Router{routes: map[string][]RouteFunc{}}
}

// Add makes rows of topic produce fn's jobs too.
func (r *Router) Add(topic string, fn RouteFunc) {
	if topic == "" || fn == nil {
		panic("tasks.Router.Add: empty topic or nil route")
	}
	r.routes[topic] = append(r.routes[topic], fn)
}

// Topics lists the topics that have routes, sorted. The relay claims only
// rows of these topics.
func (r *Router) Topics() []string {
	return slices.Sorted(maps.Keys(r.routes))
}

// ErrUnknownTopic is returned by Route for a topic no route serves.
var ErrUnknownTopic = errors.New("no route for outbox topic")

// Route returns the jobs row produces: ErrUnknownTopic when no route serves
// its topic, or the first route's error.
func (r *Router) Route(row OutboxRow) ([]Job, error) {
	fns, ok := r.routes[row.Topic]
	if !ok {
		return nil, fmt.Errorf("outbox row %d: %w %q", row.ID, ErrUnknownTopic, row.Topic)
	}
	var jobs []Job
	for _, fn := range fns {
		js, err := fn(row)
		if err != nil {
			return nil, fmt.Errorf("outbox row %d (%s): %w", row.ID, row.Topic, err)
		}
		for _, j := range js {
			if j.ID == "" || j.Task == nil {
				return nil, fmt.Errorf("outbox row %d (%s): a route produced a job without id or task", row.ID, row.Topic)
			}
		}
		jobs = append(jobs, js...)
	}
	return jobs, nil
}
