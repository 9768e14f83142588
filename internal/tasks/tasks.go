// Package tasks is the asynq contract of the service and the worker's task
// handlers: queue names, task types, payloads (ids, never data: a handler
// re-reads the source of truth), one constructor per type that sets its
// default options, the outbox router and relay, and Handler.Register.
//
// Adapters (store, cache, webhook sender) are injected by cmd/worker through
// the small interfaces declared here.
package tasks

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/hibiken/asynq"
)

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

// Retention keeps a completed task (and so its id) in Redis for a day, so a
// late second hand-over of the same outbox row is still refused as a
// duplicate instead of running again.
const Retention = 24 * time.Hour

// OutboxTaskID is the id of the task of type taskType that outbox row
// outboxID produces, e.g. "outbox:42:student:learn". key tells apart several
// tasks of one type from one row (the webhook endpoint, see EndpointKey).
// Enqueued under this id, a row's task is queued at most once however often
// the row is handed over.
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

// StudentLearnPayload asks for a student's new swipes and feedback to be
// folded into the learning state and the feed to be rebuilt.
type StudentLearnPayload struct {
	StudentID string `json:"student_id"`
	OutboxID  int64  `json:"outbox_id,omitempty"` // the event that asked for it, for logs and lag
}

// NewStudentLearnTask builds a student:learn task.
func NewStudentLearnTask(studentID string, outboxID int64) (*asynq.Task, error) {
	if studentID == "" {
		return nil, errors.New("tasks: student:learn needs a student id")
	}
	b, err := json.Marshal(StudentLearnPayload{StudentID: studentID, OutboxID: outboxID})
	if err != nil {
		return nil, err
	}
	return asynq.NewTask(TypeStudentLearn, b,
		asynq.Queue(QueueCritical), asynq.MaxRetry(10), asynq.Timeout(30*time.Second), asynq.Retention(Retention)), nil
}

// WebhookDeliverPayload names one event (its outbox row) and one configured
// endpoint (its URL); the secret and the body are looked up when delivering.
type WebhookDeliverPayload struct {
	OutboxID int64  `json:"outbox_id"`
	Endpoint string `json:"endpoint"`
}

// webhookMaxRetry is the queue's retry limit for webhook:deliver: in effect
// none. The handler parks a delivery after the 9 attempts of the schedule,
// counted in its row (WebhookDelivery.Round), and the queue's own count
// also grows with runs that failed on the database or found the delivery
// not due; the queue must never archive a task whose delivery is still
// owed, since its id would then keep the monitor from queueing it again.
const webhookMaxRetry = math.MaxInt32

// NewWebhookDeliverTask builds a webhook:deliver task. Its retries follow
// the schedule (WebhookSchedule, applied through RetryIn by the handler and
// the worker's RetryDelayFunc) and its delivery is parked by the handler
// after the last attempt.
func NewWebhookDeliverTask(outboxID int64, endpoint string) (*asynq.Task, error) {
	if outboxID <= 0 || endpoint == "" {
		return nil, fmt.Errorf("tasks: webhook:deliver needs an outbox id and an endpoint, got %d and %q", outboxID, endpoint)
	}
	b, err := json.Marshal(WebhookDeliverPayload{OutboxID: outboxID, Endpoint: endpoint})
	if err != nil {
		return nil, err
	}
	return asynq.NewTask(TypeWebhookDeliver, b,
		asynq.Queue(QueueWebhooks), asynq.MaxRetry(webhookMaxRetry), asynq.Timeout(30*time.Second), asynq.Retention(Retention)), nil
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
