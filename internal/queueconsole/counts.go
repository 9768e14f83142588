// Package queueconsole is the worker's queue console: a small page over
// asynq's Inspector, served on the ops port under /queues, that shows each
// of the service's queues with its tasks by state, the tasks of one state
// with their payloads and stored errors redacted, and the work that waits
// outside asynq (outbox rows not yet handed over). It is read-only unless
// OPS_ADMIN_TOKEN is set; with it, an archived task can be run again or
// deleted by a request that carries the token. `matchctl queues` prints
// the same counts (Read).
//
// asynqmon, asynq's own console, is not used: its last release (v0.7.2)
// pins asynq v0.24.1 while the service runs v0.26.0, and it shows payloads
// and stored errors as they are, with student ids and endpoint URLs in
// them.
package queueconsole

import (
	"context"
	"slices"
	"time"

	"github.com/hibiken/asynq"
)

// States are the task states the console lists, in the order it shows them.
var States = []string{"pending", "active", "scheduled", "retry", "archived"}

// Counts is one queue's tasks by state, as asynq keeps them.
type Counts struct {
	Queue     string `json:"queue"`
	Pending   int    `json:"pending"`
	Active    int    `json:"active"`
	Scheduled int    `json:"scheduled"`
	Retry     int    `json:"retry"`
	Archived  int    `json:"archived"`
	Completed int    `json:"completed"`
	// Latency is how long the oldest pending task has waited.
	Latency time.Duration `json:"latency_ns"`
	Paused  bool          `json:"paused"`
}

// Outside is work that waits outside asynq: Count items, the oldest since
// Oldest (zero when none).
type Outside struct {
	Name   string    `json:"name"`
	Count  int       `json:"count"`
	Oldest time.Time `json:"oldest,omitzero"`
}

// OutsideFunc reads the work that waits outside asynq.
type OutsideFunc func(ctx context.Context) ([]Outside, error)

// Read returns the counts of queues, in their order. A queue asynq does
// not list yet (no task was ever queued there, or Redis lost its data)
// has no tasks: it reads as zeros.
func Read(insp *asynq.Inspector, queues []string) ([]Counts, error) {
	known, err := insp.Queues()
	if err != nil {
		return nil, err
	}
	out := make([]Counts, 0, len(queues))
	for _, q := range queues {
		if !slices.Contains(known, q) {
			out = append(out, Counts{Queue: q})
			continue
		}
		info, err := insp.GetQueueInfo(q)
		if err != nil {
			return nil, err
		}
		out = append(out, Counts{Queue: q, Pending: info.Pending, Active: info.Active, Scheduled: info.Scheduled,
			Retry: info.Retry, Archived: info.Archived, Completed: info.Completed, Latency: info.Latency, Paused: info.Paused})
	}
	return out, nil
}

// Of returns the count of state.
func (c Counts) Of(state string) int {
	switch state {
	case "pending":
		return c.Pending
	case "active":
		return c.Active
	case "scheduled":
		return c.Scheduled
	case "retry":
		return c.Retry
	case "archived":
		return c.Archived
	}
	return 0
}

// OutboxName names the outbox's unpublished rows among the work outside
// asynq.
const OutboxName = "outbox (events not yet handed to asynq)"

// OutboxBacklog reads the outbox's unpublished rows through backlog
// (store.Store.OutboxBacklog).
func OutboxBacklog(backlog func(context.Context) (int, time.Time, error)) OutsideFunc {
	return func(ctx context.Context) ([]Outside, error) {
		n, oldest, err := backlog(ctx)
		if err != nil {
			return nil, err
		}
		return []Outside{{Name: OutboxName, Count: n, Oldest: oldest}}, nil
	}
}

// LearnMarksName names the students marked in the learn drains among the
// work outside asynq.
const LearnMarksName = "learn drains (students with swipes not yet folded)"

// LearnMarks reads the students pending in the learn drains through count
// (tasks.LearnPending).
func LearnMarks(count func(context.Context) (int, error)) OutsideFunc {
	return func(ctx context.Context) ([]Outside, error) {
		n, err := count(ctx)
		if err != nil {
			return nil, err
		}
		return []Outside{{Name: LearnMarksName, Count: n}}, nil
	}
}

// Outsides reads each of fs in turn, in order.
func Outsides(fs ...OutsideFunc) OutsideFunc {
	return func(ctx context.Context) ([]Outside, error) {
		var out []Outside
		for _, f := range fs {
			o, err := f(ctx)
			if err != nil {
				return nil, err
			}
			out = append(out, o...)
		}
		return out, nil
	}
}
