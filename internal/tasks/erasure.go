package tasks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/collegematch/matching/internal/handover"
)

// StudentTasks names what an erased student's tasks were made from, so
// that their ids can be derived (LearnJob, WebhookJob) and the tasks
// deleted by id, without listing any queue.
type StudentTasks struct {
	StudentID string
	// Version is the student's last version: learn tasks are
	// "learn:<id>:v<n>" for n up to it.
	Version int64
	// FeedbackIDs are the ids of the student's feedback rows: learn tasks
	// "learn:<id>:f<n>".
	FeedbackIDs []int64
	// Deliveries are the webhook deliveries of the student's events:
	// webhook:deliver tasks WebhookTaskID(event, endpoint, 0..replays).
	Deliveries []StudentDelivery
}

// StudentDelivery is one webhook delivery of one of a student's events.
type StudentDelivery struct {
	OutboxID int64
	Endpoint string
	Replays  int
}

// MaxArchivedScan is how many archived tasks PurgeStudentTasks reads per
// queue at most. asynq keeps at most 10,000 archived tasks per queue (and
// none for more than 90 days), so this reads them all.
const MaxArchivedScan = 10000

// archivedPage is how many archived tasks one listing reads.
const archivedPage = 100

// PurgedTasks counts what PurgeStudentTasks did.
type PurgedTasks struct {
	// Deleted are the tasks deleted: pending, scheduled, retrying,
	// archived or completed.
	Deleted int
	// Running are the tasks a worker held when they were looked for: they
	// cannot be deleted, and their handlers drop them (a delivery whose
	// event is gone makes no attempt and leaves nothing queued; a learn
	// task for an unknown student folds nothing).
	Running int
	// ArchivedScanned is how many archived tasks were read looking for the
	// student's id.
	ArchivedScanned int
}

// PurgeStudentTasks deletes every queued task about an erased student, in
// whatever state it is:
//
//   - the student's mark in their shard's learn drain;
//   - by id: the learn tasks of each of the student's versions and
//     feedback rows, and the webhook:deliver tasks of each delivery of
//     their events (replays included), in the queues each type is queued
//     to, 500 deletions a round trip. The cost is one deletion per
//     version, feedback row and delivery; no queue is listed.
//   - by content: the archived tasks of every queue are read (at most
//     MaxArchivedScan per queue, which is what asynq keeps) and those
//     whose id, payload or last error holds the student's id are deleted:
//     archived tasks whose ids cannot be derived (a build's other types,
//     a payload that could not be decoded) hold nothing of the student
//     afterwards either.
//
// Running tasks are counted, not deleted (see PurgedTasks.Running).
func PurgeStudentTasks(ctx context.Context, rdb redis.UniversalClient, st StudentTasks) (PurgedTasks, error) {
	var out PurgedTasks
	id := strings.ToLower(st.StudentID)
	if id == "" {
		return out, fmt.Errorf("purge tasks: no student id")
	}
	// The student's mark in their shard's learn drain (the drain task
	// itself names only the shard).
	if err := ForgetLearnMarks(ctx, rdb, id); err != nil {
		return out, fmt.Errorf("purge tasks: %w", err)
	}
	learn := make([]string, 0, st.Version+1+int64(len(st.FeedbackIDs)))
	for v := int64(0); v <= st.Version; v++ {
		learn = append(learn, LearnJob(id, v, 0).ID)
	}
	for _, f := range st.FeedbackIDs {
		learn = append(learn, LearnJob(id, 0, f).ID)
	}
	var hooks []string
	for _, d := range st.Deliveries {
		for r := 0; r <= d.Replays; r++ {
			hooks = append(hooks, WebhookTaskID(d.OutboxID, d.Endpoint, r))
		}
	}
	for _, q := range []struct {
		queue string
		ids   []string
	}{
		{QueueCritical, learn},
		{QueueWebhooks, hooks},
		{QueueDefault, hooks}, // webhook:deliver tasks queued by older builds
	} {
		d, err := handover.Delete(ctx, rdb, q.queue, q.ids)
		out.Deleted += d.Deleted
		out.Running += d.Active
		if err != nil {
			return out, err
		}
	}

	insp := asynq.NewInspectorFromRedisClient(rdb)
	queues, err := insp.Queues()
	if err != nil {
		return out, fmt.Errorf("purge tasks: list queues: %w", err)
	}
	for _, q := range []string{QueueCritical, QueueDefault, QueueLow, QueueWebhooks} {
		if !slices.Contains(queues, q) {
			queues = append(queues, q)
		}
	}
	needle := []byte(id)
	for _, q := range queues {
		var found []string
		for page := 1; (page-1)*archivedPage < MaxArchivedScan; page++ {
			if err := ctx.Err(); err != nil {
				return out, err
			}
			list, err := insp.ListArchivedTasks(q, asynq.PageSize(archivedPage), asynq.Page(page))
			if err != nil {
				if errors.Is(err, asynq.ErrQueueNotFound) {
					break
				}
				return out, fmt.Errorf("purge tasks: list archived tasks of %s: %w", q, err)
			}
			out.ArchivedScanned += len(list)
			for _, t := range list {
				if strings.Contains(strings.ToLower(t.ID), id) || bytes.Contains(bytes.ToLower(t.Payload), needle) ||
					strings.Contains(strings.ToLower(t.LastErr), id) {
					found = append(found, t.ID)
				}
			}
			if len(list) < archivedPage {
				break
			}
		}
		d, err := handover.Delete(ctx, rdb, q, found)
		out.Deleted += d.Deleted
		out.Running += d.Active
		if err != nil {
			return out, err
		}
	}
	return out, nil
}
