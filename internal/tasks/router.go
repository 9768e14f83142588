package tasks

import (
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
// Routes are added while wiring, before the router is used; Route is then
// safe for concurrent use.
type Router struct {
	routes map[string][]RouteFunc
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
