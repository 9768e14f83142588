package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/hibiken/asynq"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/tasks"
)

// Schedule is the wait before each retry of a webhook delivery
// (decisions.md): after the first attempt, 5 s, then 30 s, 2 min, 15 min,
// 1 h, 4 h, 10 h and 10 h, each with +-20 % jitter: 9 attempts over about
// 25.5 h. A delivery still failing after the last one is parked.
var Schedule = []time.Duration{
	5 * time.Second, 30 * time.Second, 2 * time.Minute, 15 * time.Minute,
	time.Hour, 4 * time.Hour, 10 * time.Hour, 10 * time.Hour,
}

// Jitter is the relative jitter of every wait of the schedule.
const Jitter = 0.2

// MessageID is the webhook-id of the delivery of outbox row
// outboxID to endpointURL, and the body's "id": the same on every attempt
// and every replay, distinct per endpoint.
func MessageID(outboxID int64, endpointURL string) string {
	return "msg_" + strconv.FormatInt(outboxID, 10) + "_" + tasks.EndpointKey(endpointURL)
}

// ErrNotDue is the error of a webhook:deliver task that found its delivery
// not due: another task holds the attempt, or the next attempt is later.
// The task comes back when the delivery is due (RetryIn), so a delivery
// never waits on a task that stopped.
var ErrNotDue = errors.New("webhook delivery not due")

// Store is what delivery needs from the database.
type Store interface {
	// BeginWebhookDelivery returns the delivery's row and its event, and
	// claims the next attempt when the delivery is pending and due (its next
	// attempt then moves domain.WebhookLease ahead until the attempt is recorded);
	// it inserts the row, claimed, if there is none (idempotent on
	// (outbox_id, endpoint_url)). A domain.KindNotFound error when the event
	// is gone.
	BeginWebhookDelivery(ctx context.Context, k domain.DeliveryKey) (domain.WebhookDelivery, error)
	// RecordWebhookAttempt adds an attempt row and moves the delivery to
	// status (a delivery no longer pending keeps its status unless status is
	// succeeded), with its next attempt at next (zero: none). replays is the
	// delivery's replay count at the claim: a delivery replayed since stays
	// pending and due now unless the attempt succeeded.
	RecordWebhookAttempt(ctx context.Context, deliveryID int64, a domain.WebhookAttempt, status string, next time.Time, replays int) error
	// SetWebhookDeliveryStatus moves a pending delivery to status without an
	// attempt.
	SetWebhookDeliveryStatus(ctx context.Context, deliveryID int64, status, lastError string) error
	// DisableWebhookEndpoint marks the endpoint disabled and moves its
	// pending deliveries to disabled; it returns how many it moved.
	DisableWebhookEndpoint(ctx context.Context, endpoint, reason string) (int, error)
	// WebhookBacklog counts pending deliveries and dates the oldest.
	WebhookBacklog(ctx context.Context) (pending int, oldest time.Time, err error)
	// WebhookEventExists reports whether outbox row outboxID is still
	// there: an erasure deletes a student's events with their deliveries.
	WebhookEventExists(ctx context.Context, outboxID int64) (bool, error)
	// StaleWebhookDeliveries lists up to limit pending deliveries whose next
	// attempt was due more than overdue ago, with row ids above afterID, in
	// id order.
	StaleWebhookDeliveries(ctx context.Context, overdue time.Duration, afterID int64, limit int) ([]domain.StaleDelivery, error)
}

// Poster signs and posts messages (*Sender).
type Poster interface {
	// Name returns the name of the configured endpoint with this URL (the
	// endpoint label of the metrics); ok is false when it is not configured.
	Name(endpointURL string) (name string, ok bool)
	// Send posts body to endpointURL under message id id.
	Send(ctx context.Context, endpointURL, id string, body []byte) Result
}

// RetryConfig tunes delivery; zero fields take the defaults.
type RetryConfig struct {
	Schedule []time.Duration // default Schedule; its last step repeats when Attempts asks for more
	Attempts int             // attempts per round before parking; default 1 + len(Schedule) = 9
	Jitter   float64         // default Jitter; negative: none
	Rand     func() float64  // in [0,1); default math/rand/v2
	Now      func() time.Time
}

func (c RetryConfig) withDefaults() RetryConfig {
	if len(c.Schedule) == 0 {
		c.Schedule = Schedule
	}
	if c.Attempts <= 0 {
		c.Attempts = 1 + len(Schedule)
	}
	if c.Jitter == 0 {
		c.Jitter = Jitter
	}
	c.Jitter = max(c.Jitter, 0)
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Delay is the wait before retry n+1 (n retries done so far): the
// schedule's step with jitter.
func (c RetryConfig) Delay(n int) time.Duration {
	c = c.withDefaults()
	d := c.Schedule[min(max(n, 0), len(c.Schedule)-1)]
	f := 1 + c.Jitter*(2*c.Rand()-1)
	return time.Duration(float64(d) * f)
}

// MaxRetry is the number of retries after the first attempt of a round.
func (c RetryConfig) MaxRetry() int { return c.withDefaults().Attempts - 1 }

// retryAt is the wait from now until a retry due delay from now, rounded up
// so that the retry falls on a whole second: the queue keeps retry times in
// whole seconds, rounding down, and would otherwise run a retry up to a
// second early (before a Retry-After, or under the schedule's -20 %).
func retryAt(now time.Time, delay time.Duration) time.Duration {
	at := now.Add(delay)
	if t := at.Truncate(time.Second); t.Before(at) {
		at = t.Add(time.Second)
	}
	return at.Sub(now)
}

// RetryIn is returned by a handler that wants its task retried after Delay
// exactly (the jitter already applied, or a Retry-After honoured); the
// worker's RetryDelayFunc reads it.
type RetryIn struct {
	Delay time.Duration
	Err   error
}

func (e *RetryIn) Error() string {
	return fmt.Sprintf("%v (retry in %s)", e.Err, e.Delay.Round(time.Millisecond))
}

func (e *RetryIn) Unwrap() error { return e.Err }

// RetryDelayFunc is the worker's asynq.Config.RetryDelayFunc: the delay a
// handler asked for with RetryIn; for webhook:deliver otherwise (an error
// before or after an attempt that left the delivery's row as it was, such
// as the database being down) StoreRetryDelay, since no attempt of the
// schedule was used up; for every other type asynq's default.
func (c RetryConfig) RetryDelayFunc() asynq.RetryDelayFunc {
	return func(n int, err error, t *asynq.Task) time.Duration {
		var ri *RetryIn
		if errors.As(err, &ri) && ri.Delay > 0 {
			return ri.Delay
		}
		if t != nil && t.Type() == tasks.TypeWebhookDeliver {
			return StoreRetryDelay(n, c.withDefaults().Rand)
		}
		return asynq.DefaultRetryDelayFunc(n, err, t)
	}
}

// StoreRetryDelay is the wait before running a webhook:deliver task again
// after its n-th failure to read or write its delivery's row: 1 s doubling
// to at most a minute, with +-20 % jitter so that a recovering database is
// not hit by every waiting task at once.
func StoreRetryDelay(n int, rnd func() float64) time.Duration {
	d := time.Minute
	if n < 6 {
		d = time.Second << n
	}
	return time.Duration(float64(d) * (1 + Jitter*(2*rnd()-1)))
}

// Body is the JSON body of a delivery: {"id","event","data"} where
// id is the webhook-id and, for swipe.recorded, data is {student_id,
// school_id, direction, timestamp} with the timestamp in ISO 8601 UTC.
func Body(messageID string, ev domain.WebhookEvent) ([]byte, error) {
	type body struct {
		ID    string `json:"id"`
		Event string `json:"event"`
		Data  any    `json:"data"`
	}
	switch ev.Topic {
	case tasks.TopicSwipeRecorded:
		var p struct {
			StudentID string `json:"student_id"`
			SchoolID  string `json:"school_id"`
			Direction string `json:"direction,omitempty"`
			Timestamp string `json:"timestamp"`
		}
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			return nil, fmt.Errorf("decode %s payload: %w", ev.Topic, err)
		}
		// An erased student's events keep their ids only (docs/onboarding.md);
		// the event time is then the row's, which is the swipe's commit time.
		if t, err := time.Parse(time.RFC3339Nano, p.Timestamp); err == nil {
			p.Timestamp = t.UTC().Format("2006-01-02T15:04:05.000Z")
		} else {
			p.Timestamp = ev.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z")
		}
		return json.Marshal(body{ID: messageID, Event: ev.Topic, Data: p})
	default:
		if !json.Valid(ev.Payload) {
			return nil, fmt.Errorf("%s payload is not JSON", ev.Topic)
		}
		return json.Marshal(body{ID: messageID, Event: ev.Topic, Data: json.RawMessage(ev.Payload)})
	}
}

// firstRun reports whether the task runs for the first time (not a retry).
func firstRun(ctx context.Context) bool {
	n, ok := asynq.GetRetryCount(ctx)
	return !ok || n == 0
}

// webhooks delivers webhook:deliver tasks.
type webhooks struct {
	log    *slog.Logger
	store  Store
	sender Poster
	m      *Metrics
	cfg    RetryConfig
	// batch records first attempts together when the store can
	// (attempts.go); nil records each alone.
	batch *attemptBatcher
	// lease is told how late first attempts start (the relay's of this
	// worker sizes its leases by it).
	lease *firstLease
}

// label is the endpoint label of the metrics for url: its name, or
// UnconfiguredEndpoint.
func (w *webhooks) label(url string) string {
	if name, ok := w.sender.Name(url); ok {
		return name
	}
	return UnconfiguredEndpoint
}

// firstAttemptMargin is how much of its lease a first attempt must have
// left to go without a claim: time for the request (10 s at most) and the
// clocks apart. A first attempt that starts later claims its attempt.
const firstAttemptMargin = 15 * time.Second

// recordTimeout bounds the database writes after an attempt, which run
// even when the task's context has ended (shutdown mid-delivery).
const recordTimeout = 5 * time.Second

// errDeliveryGone is what recording an attempt returns when the delivery
// was deleted meanwhile with its event (an erasure): the attempt is not
// recorded, and the task ends without a retry.
var errDeliveryGone = errors.New("webhook delivery gone with its event")

func (w *webhooks) handle(ctx context.Context, t *asynq.Task) error {
	err := w.deliver(ctx, t)
	if errors.Is(err, errDeliveryGone) {
		w.log.DebugContext(ctx, "webhook event erased during its attempt; not recorded")
		return nil // the task is deleted: nothing about the event stays queued
	}
	return err
}

func (w *webhooks) deliver(ctx context.Context, t *asynq.Task) error {
	var p tasks.WebhookDeliverPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.OutboxID <= 0 || p.Endpoint == "" {
		// The payload names the endpoint, whose URL may carry a secret: it
		// is not quoted.
		return fmt.Errorf("decode %s payload (%d bytes): %v: %w", t.Type(), len(t.Payload()), domain.Scrub(err), asynq.SkipRetry)
	}
	msgID := MessageID(p.OutboxID, p.Endpoint)
	var d domain.WebhookDelivery
	var record recordFunc = w.store.RecordWebhookAttempt
	fromTask := false // the delivery and its event come from the task, unread
	first := p.First
	if first != nil && first.LeasedFor > 0 && firstRun(ctx) {
		now := w.cfg.Now()
		w.lease.observe(now, now.Sub(time.UnixMilli(first.LeasedUntil-first.LeasedFor)))
	}
	if first != nil && firstRun(ctx) && w.cfg.Now().Before(time.UnixMilli(first.LeasedUntil).Add(-firstAttemptMargin)) {
		// The relay wrote the delivery leased to this task, with the event:
		// the attempt needs no read.
		d = domain.WebhookDelivery{ID: first.DeliveryID, Status: domain.DeliveryPending, Claimed: true,
			Event: domain.WebhookEvent{Topic: first.Topic, Payload: first.Payload, CreatedAt: first.CreatedAt}}
		record = w.recordFirst(p.OutboxID)
		fromTask = true
	} else {
		var err error
		d, err = w.store.BeginWebhookDelivery(ctx, domain.DeliveryKey{OutboxID: p.OutboxID, Endpoint: p.Endpoint, MessageID: msgID})
		if err != nil {
			var de *domain.Error
			if errors.As(err, &de) && de.Kind == domain.KindNotFound {
				// The event is gone (the student was erased, or retention
				// deleted it): nothing to send. The task ends without being
				// archived, so no copy of it stays in the queue.
				w.log.DebugContext(ctx, "webhook event gone; task dropped", "outbox_id", p.OutboxID)
				return nil
			}
			return err // the database: retried soon (RetryDelayFunc), no attempt counted
		}
	}
	ev := d.Event
	log := w.log.With("outbox_id", p.OutboxID, "delivery_id", d.ID, "webhook_id", msgID)
	name, configured := w.sender.Name(p.Endpoint)
	if !configured {
		name = UnconfiguredEndpoint
	}
	if configured {
		log = log.With("endpoint", name)
	}
	switch {
	case d.Status != domain.DeliveryPending:
		// A late duplicate of a delivery that already ended.
		return nil
	case !d.Claimed:
		// Another task holds the attempt, or the next one is later: come
		// back then, and claim it if nobody has.
		now := w.cfg.Now()
		return &RetryIn{Delay: retryAt(now, max(d.NextAttemptAt.Sub(now), time.Second)), Err: ErrNotDue}
	case d.EndpointDisabled:
		w.m.Deliveries.WithLabelValues(domain.DeliveryDisabled, name).Inc()
		return w.store.SetWebhookDeliveryStatus(ctx, d.ID, domain.DeliveryDisabled,
			"endpoint disabled after 410 Gone; `matchctl webhooks enable` it, or replay a delivery")
	case !configured:
		log.WarnContext(ctx, "webhook endpoint no longer configured; delivery disabled")
		w.m.Deliveries.WithLabelValues(domain.DeliveryDisabled, name).Inc()
		return w.store.SetWebhookDeliveryStatus(ctx, d.ID, domain.DeliveryDisabled,
			"endpoint not in WEBHOOK_ENDPOINTS_FILE")
	}
	body, err := Body(msgID, ev)
	if err != nil {
		log.ErrorContext(ctx, "webhook event cannot be encoded; delivery parked", "err", err)
		w.m.Deliveries.WithLabelValues(domain.DeliveryParked, name).Inc()
		return w.store.SetWebhookDeliveryStatus(ctx, d.ID, domain.DeliveryParked, err.Error())
	}

	if fromTask {
		// The attempt was handed over with its event and read nothing:
		// the event must still exist when the attempt starts, since an
		// erasure deletes a student's events (and the task may have
		// waited in the queue long after). One primary-key read.
		ok, err := w.store.WebhookEventExists(ctx, p.OutboxID)
		if err != nil {
			return err // the database: retried soon, no attempt counted
		}
		if !ok {
			log.DebugContext(ctx, "webhook event gone before its first attempt; task dropped")
			return nil
		}
	}
	res := w.sender.Send(ctx, p.Endpoint, msgID, body)
	w.m.AttemptLatency.WithLabelValues(name).Observe(res.Latency.Seconds())
	a := domain.WebhookAttempt{StatusCode: res.StatusCode, Latency: res.Latency}
	if res.Err != nil {
		// Whatever the sender said, what is recorded names no secret and
		// quotes no raw subscriber bytes.
		res.Err = domain.Scrub(res.Err)
		a.Error = res.Err.Error()
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	record = w.unlessGone(p.OutboxID, record)
	now := w.cfg.Now()
	// round attempts were made before this one in this round (since the
	// first hand-over or the last replay), by whichever task ran them.
	round := d.Round()
	o := w.outcome(res, round, ctx.Err() != nil, now)
	w.m.Attempts.WithLabelValues(o.label, name).Inc()
	if o.label == "interrupted" {
		// Shutdown or the task's deadline, mid-attempt: record it, and let
		// the queue run the task again (same webhook-id).
		a.Error = "interrupted: " + a.Error
		_ = record(rctx, d.ID, a, o.status, o.next(now), d.Replays)
		return ctx.Err()
	}
	if err := record(rctx, d.ID, a, o.status, o.next(now), d.Replays); err != nil {
		return err // retried: the receiver sees the same webhook-id again
	}
	if err := w.ended(rctx, log, o, p.Endpoint, name, d.ID, round, ev.CreatedAt, a.Error, now); err != nil {
		return err
	}
	if o.status == domain.DeliveryPending {
		return &RetryIn{Delay: o.delay, Err: res.Err}
	}
	return nil
}

// outcome is what an attempt's result makes of its delivery.
type outcome struct {
	label  string        // the attempt, as matching_webhook_attempts_total counts it
	status string        // the delivery's status after it
	delay  time.Duration // until the next attempt, for a delivery left pending
}

// next is when the delivery's next attempt is due (zero: none).
func (o outcome) next(now time.Time) time.Time {
	if o.status != domain.DeliveryPending {
		return time.Time{}
	}
	return now.Add(o.delay)
}

// outcome classifies the result of an attempt made after round attempts of
// its delivery's round (interrupted: its task's context ended while it was
// on the wire); a retry's wait is the schedule's step or the Retry-After
// asked for, whichever is longer, ending on a whole second.
func (w *webhooks) outcome(res Result, round int, interrupted bool, now time.Time) outcome {
	switch {
	case res.Outcome == Delivered:
		return outcome{label: "delivered", status: domain.DeliverySucceeded}
	case interrupted:
		return outcome{label: "interrupted", status: domain.DeliveryPending}
	case res.Outcome == Gone:
		return outcome{label: "gone", status: domain.DeliveryDisabled}
	case round >= w.cfg.MaxRetry():
		return outcome{label: "failed", status: domain.DeliveryParked}
	default:
		return outcome{label: "failed", status: domain.DeliveryPending,
			delay: retryAt(now, max(w.cfg.Delay(round), res.RetryAfter))}
	}
}

// ended does what a recorded attempt's outcome asks when it ended its
// delivery: counts the delivery (and its lag, when delivered), and after a
// 410 Gone disables the endpoint with its pending deliveries.
func (w *webhooks) ended(ctx context.Context, log *slog.Logger, o outcome, endpoint, name string, deliveryID int64,
	round int, eventAt time.Time, errText string, now time.Time) error {
	switch o.status {
	case domain.DeliverySucceeded:
		w.m.Deliveries.WithLabelValues(domain.DeliverySucceeded, name).Inc()
		w.m.Lag.WithLabelValues(name).Observe(max(now.Sub(eventAt), 0).Seconds())
	case domain.DeliveryDisabled:
		n, err := w.store.DisableWebhookEndpoint(ctx, endpoint, "410 Gone on delivery "+strconv.FormatInt(deliveryID, 10))
		if err != nil {
			return fmt.Errorf("disable endpoint after 410: %v: %w", err, asynq.SkipRetry)
		}
		w.m.Deliveries.WithLabelValues(domain.DeliveryDisabled, name).Add(float64(1 + n))
		log.WarnContext(ctx, "webhook endpoint answered 410 Gone; endpoint disabled", "pending_disabled", n)
	case domain.DeliveryParked:
		w.m.Deliveries.WithLabelValues(domain.DeliveryParked, name).Inc()
		log.WarnContext(ctx, "webhook delivery parked after its last attempt", "attempts", round+1, "err", errText)
	}
	return nil
}

// unlessGone wraps record: a delivery that is not found is gone when its
// event is gone too (errDeliveryGone); else (the relay's row not committed
// yet, recordFirst's wait having ended) the error stays.
func (w *webhooks) unlessGone(outboxID int64, record recordFunc) recordFunc {
	return func(ctx context.Context, id int64, a domain.WebhookAttempt, status string, next time.Time, replays int) error {
		err := record(ctx, id, a, status, next, replays)
		if domain.KindOf(err) != domain.KindNotFound {
			return err
		}
		if ok, xerr := w.store.WebhookEventExists(ctx, outboxID); xerr == nil && !ok {
			return errDeliveryGone
		}
		return err
	}
}

// recordFunc records an attempt (Store.RecordWebhookAttempt).
type recordFunc func(ctx context.Context, id int64, a domain.WebhookAttempt, status string, next time.Time, replays int) error

// recordFirst records a first attempt made without a claim. The relay
// queues the task a moment before it commits the delivery's row, so a
// quick task may find the row not there yet: it waits for the commit, a
// few seconds at most. A row that never comes (the relay rolled back) is
// written again by the relay's next pass, whose task attempts again with
// the same webhook-id.
func (w *webhooks) recordFirst(outboxID int64) recordFunc {
	return func(ctx context.Context, id int64, a domain.WebhookAttempt, status string, next time.Time, replays int) error {
		return w.recordFirstOf(ctx, outboxID, id, a, status, next, replays)
	}
}

func (w *webhooks) recordFirstOf(ctx context.Context, outboxID, id int64, a domain.WebhookAttempt, status string, next time.Time, replays int) error {
	if w.batch != nil {
		done, err := w.batch.record(ctx, domain.AttemptRecord{DeliveryID: id, Attempt: a, Status: status, Next: next, Replays: replays})
		if err != nil || done {
			return err
		}
		// Not recorded: the relay's row is not committed yet.
	}
	wait := 10 * time.Millisecond
	for {
		err := w.store.RecordWebhookAttempt(ctx, id, a, status, next, replays)
		if domain.KindOf(err) != domain.KindNotFound || ctx.Err() != nil {
			return err
		}
		// Not committed yet, or deleted with its event by an erasure,
		// which no wait brings back.
		if ok, xerr := w.store.WebhookEventExists(ctx, outboxID); xerr == nil && !ok {
			return errDeliveryGone
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}
