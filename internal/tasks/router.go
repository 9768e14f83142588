package tasks

import (
	"context"
	"errors"
	"fmt"

	"github.com/hibiken/asynq"
)

// Enqueuer is the part of *asynq.Client that queues one task at a time
// (the webhook monitor's repairs and operators' replays).
type Enqueuer interface {
	EnqueueContext(ctx context.Context, task *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error)
}

// Enqueue queues task under id. An id the queue already holds (pending,
// running, retrying, or completed within its retention) is success,
// reported as duplicate.
func Enqueue(ctx context.Context, q Enqueuer, id string, task *asynq.Task) (duplicate bool, err error) {
	_, err = q.EnqueueContext(ctx, task, asynq.TaskID(id))
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, asynq.ErrTaskIDConflict):
		return true, nil
	default:
		return false, fmt.Errorf("enqueue %s: %w", id, err)
	}
}
