// Package tasks is the asynq contract of the service and the worker's
// learning: queue names, task types, payloads (ids, never data: a handler
// re-reads the source of truth), one constructor per type that sets its
// default options, the student:learn handler, the learn sweep and
// Handler.Register. Webhook delivery (internal/webhook) queues and handles
// its task types under this contract.
//
// Adapters (store, cache) are injected by cmd/worker through the small
// interfaces declared here.
package tasks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/hibiken/asynq"

	"github.com/collegematch/matching/internal/handover"
)

// Queue hands jobs to the worker fleet in one round trip (handover.Client).
type Queue interface {
	Queue(ctx context.Context, jobs ...handover.Job) (queued int, err error)
}

// Queues, in the order the worker favours them (see QueuePriorities).
const (
	QueueCritical = "critical" // student:learn, outbox:relay: the feed must follow a swipe within 2 s
	QueueDefault  = "default"  // webhook:deliver tasks queued by older builds
	QueueLow      = "low"      // feed warming and other background work
	// QueueWebhooks holds webhook:deliver. The worker serves it with task
	// slots of its own (WebhookQueues), so that a burst of swipes, whose
	// student:learn tasks take the main slots, does not hold back the
	// first attempt (due within 5 s), and a slow subscriber (up to 10 s an
	// attempt) does not hold back learning.
	QueueWebhooks = "webhooks"
)

// QueuePriorities is the asynq.Config.Queues weighting of the worker's
// main task slots.
func QueuePriorities() map[string]int {
	return map[string]int{QueueCritical: 6, QueueDefault: 3, QueueLow: 1}
}

// WebhookQueues is the asynq.Config.Queues of the worker's webhook slots.
func WebhookQueues() map[string]int {
	return map[string]int{QueueWebhooks: 1}
}

// Task types, noun:verb.
const (
	TypeStudentLearn   = "student:learn"
	TypeWebhookDeliver = "webhook:deliver"
	TypeOutboxRelay    = "outbox:relay"
)

// Outbox topics: the events the write side records with its facts.
const (
	TopicSwipeRecorded = "swipe.recorded"
)

// OutboxTaskID is the id of the task of type taskType that outbox row
// outboxID produces, e.g. "outbox:42:student:learn". key tells apart several
// tasks of one type from one row (the webhook endpoint, see EndpointKey).
// Enqueued under this id, a row's task is queued once while it is in the
// queue, however often the row is handed over.
func OutboxTaskID(outboxID int64, taskType string, key ...string) string {
	id := "outbox:" + strconv.FormatInt(outboxID, 10) + ":" + taskType
	for _, k := range key {
		id += ":" + k
	}
	return id
}

// EndpointKey is a short, stable key for a webhook endpoint URL, for task ids.
func EndpointKey(endpointURL string) string {
	sum := sha256.Sum256([]byte(endpointURL))
	return hex.EncodeToString(sum[:8])
}

// WebhookTaskID is the task id of the delivery of outbox row outboxID to
// endpointURL: OutboxTaskID with the EndpointKey, and for the n-th replay
// by an operator a "replay-n" suffix, so a replay is not refused as a
// duplicate of the original task.
func WebhookTaskID(outboxID int64, endpointURL string, replay int) string {
	if replay > 0 {
		return OutboxTaskID(outboxID, TypeWebhookDeliver, EndpointKey(endpointURL), "replay-"+strconv.Itoa(replay))
	}
	return OutboxTaskID(outboxID, TypeWebhookDeliver, EndpointKey(endpointURL))
}

// StudentLearnPayload asks for a student's new swipes and feedback to be
// folded into the learned state and the feed to be rebuilt. Version is the
// student version the write that asked produced (0 when it produced none,
// as feedback): a learner whose stored feed already covers it has nothing
// to fold.
type StudentLearnPayload struct {
	StudentID string `json:"student_id"`
	Version   int64  `json:"version,omitempty"`
}

// LearnJob is the student:learn job of a write of student studentID: a
// swipe (or sync push) that moved their version to version, or a feedback
// reason (feedbackID; version 0, since feedback moves no version). Its id
// is derived from them, so handing the same write over twice queues it once
// while it is queued; it keeps no retention, since running it again folds
// nothing twice.
func LearnJob(studentID string, version, feedbackID int64) handover.Job {
	id := "learn:" + studentID + ":v" + strconv.FormatInt(version, 10)
	if feedbackID != 0 {
		id = "learn:" + studentID + ":f" + strconv.FormatInt(feedbackID, 10)
		version = 0
	}
	b, _ := json.Marshal(StudentLearnPayload{StudentID: studentID, Version: version}) // strings and numbers
	return handover.Job{ID: id, Type: TypeStudentLearn, Payload: b, Queue: QueueCritical, MaxRetry: 10,
		Timeout: 30 * time.Second}
}

// NewStudentLearnTask builds a student:learn task, for callers that run
// the handler without a queue.
func NewStudentLearnTask(studentID string, version int64) (*asynq.Task, error) {
	if studentID == "" {
		return nil, errors.New("tasks: student:learn needs a student id")
	}
	b, err := json.Marshal(StudentLearnPayload{StudentID: studentID, Version: version})
	if err != nil {
		return nil, err
	}
	return asynq.NewTask(TypeStudentLearn, b, asynq.Queue(QueueCritical), asynq.MaxRetry(10), asynq.Timeout(30*time.Second)), nil
}

// WebhookDeliverPayload names one event (its outbox row) and one configured
// endpoint (its URL); the secret is looked up when delivering. First is set
// on the task the relay queues with a new delivery: the attempt it makes is
// leased to it, and it carries the event, so the first attempt reads
// nothing.
type WebhookDeliverPayload struct {
	OutboxID int64         `json:"outbox_id"`
	Endpoint string        `json:"endpoint"`
	First    *FirstAttempt `json:"first,omitempty"`
}

// FirstAttempt is a new delivery's first attempt, as the relay hands it
// over: the delivery row, how long its lease lasts (Unix milliseconds, by
// the relaying worker's clock; an older build's relay used the
// database's), how long it was leased for (milliseconds; 0 from a build
// that did not say) and the event.
type FirstAttempt struct {
	DeliveryID  int64           `json:"delivery_id"`
	LeasedUntil int64           `json:"leased_until"`
	LeasedFor   int64           `json:"leased_for,omitempty"`
	Topic       string          `json:"topic"`
	Payload     json.RawMessage `json:"payload"`
	CreatedAt   time.Time       `json:"created_at"`
}

// webhookMaxRetry is the queue's retry limit for webhook:deliver: in effect
// none. The handler parks a delivery after the 9 attempts of the schedule,
// counted in its row (WebhookDelivery.Round), and the queue's own count
// also grows with runs that failed on the database or found the delivery
// not due; the queue must never archive a task whose delivery is still
// owed, since its id would then keep the monitor from queueing it again.
const webhookMaxRetry = math.MaxInt32

// WebhookJob is the webhook:deliver job of the delivery of outbox row
// outboxID to endpoint, for its replays-th replay (WebhookTaskID); first is
// set on a new delivery's first attempt (the relay's). Its retries follow
// the schedule (webhook.Schedule, applied through webhook.RetryIn by the handler and
// the worker's RetryDelayFunc), and the handler parks the delivery after
// the last attempt. A completed task is not kept: the delivery's row says
// it is done, so a second task for it makes no attempt.
func WebhookJob(outboxID int64, endpoint string, replays int, first *FirstAttempt) handover.Job {
	b, _ := json.Marshal(WebhookDeliverPayload{OutboxID: outboxID, Endpoint: endpoint, First: first}) // plain values
	return handover.Job{ID: WebhookTaskID(outboxID, endpoint, replays), Type: TypeWebhookDeliver, Payload: b,
		Queue: QueueWebhooks, MaxRetry: webhookMaxRetry, Timeout: 30 * time.Second}
}

// NewOutboxRelayTask builds an outbox:relay task: one immediate relay pass
// on some worker, for whoever wants the outbox drained now rather than at
// the next tick of the workers' own loops. While one is queued (up to 10 s),
// enqueueing another fails with asynq.ErrDuplicateTask, which callers can
// ignore.
func NewOutboxRelayTask() *asynq.Task {
	return asynq.NewTask(TypeOutboxRelay, nil,
		asynq.Queue(QueueCritical), asynq.MaxRetry(0), asynq.Timeout(time.Minute), asynq.Unique(10*time.Second))
}
