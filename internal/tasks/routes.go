package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hibiken/asynq"
)

// LearnRoute makes an event about a student produce that student's
// student:learn task. Wire it for a topic together with the student:learn
// handler, never before: a task nobody handles is retried and then archived.
//
// An event whose payload says "learn_batched": true produces none: another
// row written in the same transaction (a sync push's sync.pushed row) asks
// for the learning of all of them at once.
func LearnRoute(row OutboxRow) ([]Job, error) {
	if row.StudentID == "" {
		return nil, errors.New("event has no student id")
	}
	if len(row.Payload) > 0 {
		var p struct {
			LearnBatched bool `json:"learn_batched"`
		}
		if err := json.Unmarshal(row.Payload, &p); err == nil && p.LearnBatched {
			return nil, nil
		}
	}
	t, err := NewStudentLearnTask(row.StudentID, row.ID)
	if err != nil {
		return nil, err
	}
	return []Job{{ID: OutboxTaskID(row.ID, TypeStudentLearn), Task: t}}, nil
}

// Enqueuer is the part of *asynq.Client the outbox needs.
type Enqueuer interface {
	EnqueueContext(ctx context.Context, task *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error)
}

// Enqueue queues job under its id. A job whose id the queue already holds
// (pending, running, retrying, or completed within Retention) was handed
// over before: that is success, reported as duplicate.
func Enqueue(ctx context.Context, q Enqueuer, job Job) (duplicate bool, err error) {
	_, err = q.EnqueueContext(ctx, job.Task, asynq.TaskID(job.ID))
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, asynq.ErrTaskIDConflict):
		return true, nil
	default:
		return false, fmt.Errorf("enqueue %s: %w", job.ID, err)
	}
}

// ErrNotQueued marks a HandOver error from the queue itself (Redis is
// failing), as opposed to routing or the database.
var ErrNotQueued = errors.New("task not queued")

// HandOver is a writer's hand-over of its committed outbox rows, right
// after its commit: it routes them, writes their webhook deliveries in one
// call (Router.Record) and queues their jobs, row by row in order. It
// returns the rows whose jobs are all queued, for the writer to mark
// published. It stops at the first job the queue refuses (err then wraps
// ErrNotQueued) or when ctx ends first. Rows it cannot route, rows a relay
// is handing over at this moment, and every row when the deliveries cannot
// be written, are left unmarked: the relay hands them over, under the same
// task ids.
func HandOver(ctx context.Context, q Enqueuer, r *Router, rows []OutboxRow) (handed []int64, err error) {
	type routed struct {
		id   int64
		jobs []Job
	}
	var (
		todo     []routed
		all      []Job
		routeErr error
	)
	for _, row := range rows {
		jobs, err := r.Route(row)
		if err != nil {
			routeErr = errors.Join(routeErr, err)
			continue
		}
		todo = append(todo, routed{row.ID, jobs})
		all = append(all, jobs...)
	}
	skipped, err := r.Record(ctx, all)
	if err != nil {
		return nil, errors.Join(routeErr, err)
	}
	for _, row := range todo {
		if skipped[row.id] {
			continue
		}
		for _, j := range row.jobs {
			if ctx.Err() != nil {
				// The time ran out before the queue was asked (a slow
				// database): not the queue's failure.
				return handed, errors.Join(routeErr, fmt.Errorf("outbox row %d: %w", row.id, ctx.Err()))
			}
			if _, err := Enqueue(ctx, q, j); err != nil {
				return handed, errors.Join(routeErr, fmt.Errorf("outbox row %d: %w: %w", row.id, ErrNotQueued, err))
			}
		}
		handed = append(handed, row.id)
	}
	return handed, routeErr
}
