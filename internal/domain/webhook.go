package domain

import "time"

// The outbox and webhook delivery records the store and the worker share.

// OutboxRow is one event in the transactional outbox.
type OutboxRow struct {
	ID        int64
	Topic     string
	StudentID string // "" when the event concerns no student
	Payload   []byte // JSON
	CreatedAt time.Time
}

// Subscription is a configured webhook endpoint as deliveries are written
// for it: its URL, the key its webhook-ids carry (msg_<outbox id>_<key>)
// and the events it subscribes to.
type Subscription struct {
	URL    string
	Key    string
	Events []string
}

// ClaimedEvent is an outbox row a relay claimed and is publishing, with
// the endpoints that have a delivery of it already (the relay writes none
// for those).
type ClaimedEvent struct {
	OutboxRow
	Delivered []string
}

// DeliveryWrite is a delivery a relay writes for an event it publishes: in
// its state after its first attempt, with that attempt (Attempt); pending
// without an attempt, leased until Next to whoever makes its first attempt;
// or ended without one (disabled, parked: LastError says why).
type DeliveryWrite struct {
	OutboxID  int64
	Endpoint  string
	WebhookID string
	Topic     string
	Status    string
	Next      time.Time // zero: no next attempt
	LastError string
	Attempt   *WebhookAttempt
}

// Webhook delivery statuses (webhook_deliveries.status).
const (
	DeliveryPending   = "pending"
	DeliverySucceeded = "succeeded"
	DeliveryParked    = "parked"
	DeliveryDisabled  = "disabled"
)

// WebhookLease is how long a claimed attempt holds its delivery: longer
// than a task may run (its 30 s timeout), so two tasks never attempt one
// delivery at once, and short enough that a worker killed mid-attempt
// delays the delivery by about a minute.
const WebhookLease = time.Minute

// WebhookClockSlack is how early, by the database's clock, a task may claim
// an attempt: the worker schedules retries by its own clock.
const WebhookClockSlack = time.Second

// DeliveryKey names the delivery of one outbox row to one endpoint, and
// its webhook-id.
type DeliveryKey struct {
	OutboxID  int64
	Endpoint  string
	MessageID string
}

// WebhookEvent is the outbox row a delivery sends.
type WebhookEvent struct {
	Topic     string
	Payload   []byte
	CreatedAt time.Time
}

// WebhookDelivery is a delivery's row as an attempt starts, with its event.
type WebhookDelivery struct {
	ID               int64
	Status           string
	Attempts         int // in all, replays included
	RoundStart       int // attempts made before the last replay (0: never replayed)
	Replays          int
	EndpointDisabled bool // the endpoint answered 410 Gone and was not replayed since
	// Claimed is true when this caller may make the next attempt: the
	// delivery was pending and due, and is now leased to it.
	Claimed       bool
	NextAttemptAt time.Time // when a pending delivery not claimed is due (or its lease ends)
	Event         WebhookEvent
}

// Round is the number of attempts made since the delivery was first queued
// or last replayed: the retry schedule and parking go by it, not by the
// queue's retry count, which starts again at 0 when a lost task is queued
// again.
func (d WebhookDelivery) Round() int { return max(d.Attempts-d.RoundStart, 0) }

// WebhookAttempt is one attempt's record.
type WebhookAttempt struct {
	StatusCode int // 0: no response
	Latency    time.Duration
	Error      string // "" when delivered
}

// AttemptRecord is an attempt to record with the delivery's new state
// (store.RecordWebhookAttempts): see RecordWebhookAttempt for the fields.
type AttemptRecord struct {
	DeliveryID int64
	Attempt    WebhookAttempt
	Status     string
	Next       time.Time // zero: no next attempt
	Replays    int
}

// StaleDelivery is a pending delivery whose next attempt is overdue.
type StaleDelivery struct {
	ID       int64
	OutboxID int64
	Endpoint string
	Replays  int
}

// Unlearned is a student whose learned state lacks swipes or feedback.
type Unlearned struct {
	StudentID      string
	Version        int64 // students.version now
	LastFeedbackID int64 // the last feedback not folded in; 0 when only swipes are
}

// SweepCursor is where the learn sweep has got to: the swipes and feedback
// after these ids may still be unlearned.
type SweepCursor struct {
	SwipeID    int64
	FeedbackID int64
}
