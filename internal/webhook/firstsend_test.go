package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/testutil"
	"github.com/collegematch/matching/internal/webhook"
)

// subscriber is a webhook receiver; answer says what it answers to its
// n-th request (from 1), and may hold the request.
type subscriber struct {
	srv    *httptest.Server
	answer func(r *http.Request, n int) int

	mu   sync.Mutex
	seen []string // webhook-ids, in arrival order
}

func newSubscriber(t *testing.T, answer func(r *http.Request, n int) int) *subscriber {
	t.Helper()
	s := &subscriber{answer: answer}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		s.mu.Lock()
		s.seen = append(s.seen, r.Header.Get("webhook-id"))
		n := len(s.seen)
		s.mu.Unlock()
		w.WriteHeader(s.answer(r, n))
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *subscriber) url() string { return s.srv.URL + "/hook" }

func (s *subscriber) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

// sendingWorker is a relay that sends first attempts, with the webhook
// handler it sends through, to subs.
type sendingWorker struct {
	relay   *webhook.Relay
	handler *webhook.Handler
	metrics *webhook.Metrics
	relayed *webhook.RelayMetrics
	reg     *prometheus.Registry
}

func (e *env) sendingWorker(t *testing.T, src webhook.OutboxSource, q webhook.Queue, subs []*subscriber,
	cfg webhook.RelayConfig, retry webhook.RetryConfig) *sendingWorker {
	t.Helper()
	doc := "["
	var ds []domain.Subscription
	for i, s := range subs {
		if i > 0 {
			doc += ","
		}
		doc += `{"name": "sub` + string(rune('a'+i)) + `", "url": "` + s.url() + `", "secret": "` + testSecret +
			`", "events": ["swipe.recorded"], "allow_private": true}`
		ds = append(ds, domain.Subscription{URL: s.url(), Key: tasks.EndpointKey(s.url()), Events: []string{tasks.TopicSwipeRecorded}})
	}
	eps, err := webhook.Parse([]byte(doc + "]"))
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	w := &sendingWorker{reg: reg, metrics: webhook.NewMetrics(reg), relayed: webhook.NewRelayMetrics(reg)}
	w.relay = webhook.NewRelay(testutil.Logger(t), src, q, ds, w.relayed, cfg)
	w.handler = webhook.NewHandler(webhook.Deps{Log: testutil.Logger(t), Relay: w.relay, Store: e.db,
		Poster: webhook.NewSender(eps, webhook.Config{Timeout: 5 * time.Second}), Metrics: w.metrics, Retry: retry})
	w.relay.SendFirstAttempts(w.handler)
	return w
}

// deliveryRow is a delivery's row with its attempts.
type deliveryRow struct {
	id                 int64
	outboxID           int64
	endpoint, status   string
	webhookID          string
	attempts, recorded int // the row's count, the attempt rows
	next               *time.Time
}

func (e *env) deliveries(t *testing.T) []deliveryRow {
	t.Helper()
	rows, err := e.db.Pool().Query(context.Background(), `SELECT d.id, d.outbox_id, d.endpoint_url, d.status, d.webhook_id,
	d.attempts, (SELECT count(*) FROM webhook_attempts a WHERE a.delivery_id = d.id), d.next_attempt_at
FROM webhook_deliveries d ORDER BY d.outbox_id, d.endpoint_url`)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (deliveryRow, error) {
		var d deliveryRow
		return d, r.Scan(&d.id, &d.outboxID, &d.endpoint, &d.status, &d.webhookID, &d.attempts, &d.recorded, &d.next)
	})
	require.NoError(t, err)
	return out
}

// The relay makes first attempts itself: each delivery is written once,
// after its attempt, with it; no task is queued for it, and the attempt
// carries the webhook-id of the delivery.
func TestRelaySendsFirstAttemptsAndWritesEachDeliveryOnce(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	sub := newSubscriber(t, func(*http.Request, int) int { return http.StatusNoContent })
	w := e.sendingWorker(t, e.db, e.queue, []*subscriber{sub}, webhook.RelayConfig{}, webhook.RetryConfig{})
	ids := e.write(t, swipes(5)...)

	n, err := w.relay.Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 5, n)
	assert.Empty(t, e.unpublished(t))
	assert.Empty(t, e.queued(t, tasks.QueueWebhooks, "pending"), "no task: the relay made the attempts")
	got := e.deliveries(t)
	require.Len(t, got, 5)
	for i, d := range got {
		assert.Equal(t, ids[i], d.outboxID)
		assert.Equal(t, domain.DeliverySucceeded, d.status)
		assert.Equal(t, 1, d.attempts)
		assert.Equal(t, 1, d.recorded, "the attempt logged")
		assert.Equal(t, webhook.MessageID(ids[i], sub.url()), d.webhookID)
		assert.Nil(t, d.next)
	}
	assert.ElementsMatch(t, []string{got[0].webhookID, got[1].webhookID, got[2].webhookID, got[3].webhookID, got[4].webhookID},
		sub.requests())
	assert.Equal(t, 5.0, value(t, w.reg, "matching_outbox_first_attempts_total", "path", "sent"))
	assert.Equal(t, 5.0, value(t, w.reg, "matching_webhook_attempts_total", "result", "delivered"))
	assert.Equal(t, 5.0, value(t, w.reg, "matching_webhook_deliveries_total", "outcome", "succeeded"))
}

// crashingSource is the store as seen by a worker that dies after its
// relay's attempts were sent and written, before the commit: the
// transaction rolls back.
type crashingSource struct{ webhook.OutboxSource }

var errCrash = errors.New("the worker died")

func (c crashingSource) PublishOutbox(ctx context.Context, topics, endpoints []string, limit int,
	hand func(ctx context.Context, events []domain.ClaimedEvent, disabled map[string]string,
		write func(ctx context.Context, ds []domain.DeliveryWrite) ([]int64, error)) error) (int, error) {
	return c.OutboxSource.PublishOutbox(ctx, topics, endpoints, limit,
		func(ctx context.Context, events []domain.ClaimedEvent, disabled map[string]string,
			write func(ctx context.Context, ds []domain.DeliveryWrite) ([]int64, error)) error {
			if err := hand(ctx, events, disabled, write); err != nil {
				return err
			}
			return errCrash
		})
}

// A worker that dies between sending first attempts and recording them
// leaves their events unpublished and their deliveries unwritten; the next
// pass (any worker's) sends them again under the same webhook-ids and
// records them: at least once, never lost, every recorded attempt logged.
func TestFirstAttemptsSentButNotRecordedAreSentAgain(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	sub := newSubscriber(t, func(*http.Request, int) int { return http.StatusOK })
	crashing := e.sendingWorker(t, crashingSource{e.db}, e.queue, []*subscriber{sub}, webhook.RelayConfig{}, webhook.RetryConfig{})
	ids := e.write(t, swipes(3)...)

	_, err := crashing.relay.Drain(ctx)
	require.ErrorIs(t, err, errCrash)
	require.Len(t, sub.requests(), 3, "sent")
	assert.Equal(t, ids, e.unpublished(t), "not published: the batch never committed")
	assert.Empty(t, e.deliveries(t), "nothing recorded")

	next := e.sendingWorker(t, e.db, e.queue, []*subscriber{sub}, webhook.RelayConfig{}, webhook.RetryConfig{})
	n, err := next.relay.Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.Empty(t, e.unpublished(t))
	reqs := sub.requests()
	require.Len(t, reqs, 6)
	assert.ElementsMatch(t, reqs[:3], reqs[3:], "sent again under the same webhook-ids")
	for _, d := range e.deliveries(t) {
		assert.Equal(t, domain.DeliverySucceeded, d.status)
		assert.Equal(t, 1, d.recorded)
	}
}

// One subscriber that holds every request does not hold back the relay,
// nor the other subscriber's deliveries: the batch waits FirstWait at
// most; the attempts on the wire to the slow one are recorded when they
// end, the ones that found no sender free go to the webhook queue (with
// the event, leased, as the relay queued every first attempt before), and
// the fast one's are all delivered and recorded in the batch.
func TestASlowSubscriberHoldsBackNeitherTheRelayNorOthers(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	release := make(chan struct{})
	slow := newSubscriber(t, func(r *http.Request, _ int) int {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return http.StatusOK
	})
	fast := newSubscriber(t, func(*http.Request, int) int { return http.StatusOK })
	cfg := webhook.RelayConfig{Senders: 8, EndpointSenders: 3, FirstWait: time.Second}
	w := e.sendingWorker(t, e.db, e.queue, []*subscriber{slow, fast}, cfg, webhook.RetryConfig{})
	e.write(t, swipes(40)...)

	start := time.Now()
	n, err := w.relay.Drain(ctx)
	took := time.Since(start)
	require.NoError(t, err)
	assert.Equal(t, 40, n)
	assert.Less(t, took, 3*time.Second, "the batch waited FirstWait, not for the slow subscriber")
	assert.Empty(t, e.unpublished(t))

	bySub := map[string][]deliveryRow{}
	for _, d := range e.deliveries(t) {
		bySub[d.endpoint] = append(bySub[d.endpoint], d)
	}
	require.Len(t, bySub[fast.url()], 40)
	for _, d := range bySub[fast.url()] {
		assert.Equal(t, domain.DeliverySucceeded, d.status, "the fast subscriber's deliveries went out in the batch")
		assert.Equal(t, 1, d.recorded)
	}
	require.Len(t, bySub[slow.url()], 40)
	queued := e.queued(t, tasks.QueueWebhooks, "pending")
	onTheWire := 0
	for _, d := range bySub[slow.url()] {
		assert.Equal(t, domain.DeliveryPending, d.status)
		assert.Zero(t, d.attempts)
		if _, ok := queued[tasks.WebhookTaskID(d.outboxID, slow.url(), 0)]; !ok {
			onTheWire++
		}
	}
	assert.Equal(t, 3, onTheWire, "as many on the wire as the slow subscriber's senders")
	assert.Len(t, queued, 37, "the rest handed to the queue")
	for _, ti := range queued {
		var p tasks.WebhookDeliverPayload
		require.NoError(t, json.Unmarshal(ti.Payload, &p))
		require.NotNil(t, p.First, "with the event: the task reads nothing")
	}
	assert.Len(t, slow.requests(), 3)
	assert.Equal(t, 3.0, value(t, w.reg, "matching_outbox_first_attempts_total", "path", "in_flight"))
	assert.Equal(t, 37.0, value(t, w.reg, "matching_outbox_first_attempts_total", "path", "queued"))
	assert.Equal(t, 40.0, value(t, w.reg, "matching_outbox_first_attempts_total", "path", "sent"))

	// The next batch does not wait for the slow subscriber's senders, all
	// held by attempts that outlived their batch: its deliveries to it go
	// to the queue at once.
	e.write(t, swipes(10)...)
	start = time.Now()
	n, err = w.relay.Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 10, n)
	assert.Less(t, time.Since(start), cfg.FirstWait/2, "no wait for a stuck subscriber")
	assert.Len(t, e.queued(t, tasks.QueueWebhooks, "pending"), 47)
	assert.Equal(t, 50.0, value(t, w.reg, "matching_outbox_first_attempts_total", "path", "sent"))

	// The held attempts end: recorded once they do.
	close(release)
	require.Eventually(t, func() bool {
		done := 0
		for _, d := range e.deliveries(t) {
			if d.endpoint == slow.url() && d.status == domain.DeliverySucceeded && d.recorded == 1 {
				done++
			}
		}
		return done == 3
	}, 5*time.Second, 20*time.Millisecond)
}

// Every attempt the subscriber saw is logged, first attempts and retries,
// under one webhook-id per delivery: a first attempt that fails is recorded
// with the delivery (pending, due after the schedule's first step) and
// retried by a webhook:deliver task scheduled for that time, which a real
// task server runs.
func TestAttemptLogIsCompleteAcrossFirstAttemptsAndRetries(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	// Every first request of a webhook-id fails; the second succeeds.
	var mu sync.Mutex
	tries := map[string]int{}
	sub := newSubscriber(t, func(r *http.Request, _ int) int {
		mu.Lock()
		defer mu.Unlock()
		tries[r.Header.Get("webhook-id")]++
		if tries[r.Header.Get("webhook-id")] == 1 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	retry := webhook.RetryConfig{Schedule: []time.Duration{time.Second}, Jitter: -1}
	w := e.sendingWorker(t, e.db, e.queue, []*subscriber{sub}, webhook.RelayConfig{}, retry)
	ids := e.write(t, swipes(10)...)

	before := time.Now()
	_, err := w.relay.Drain(ctx)
	require.NoError(t, err)
	for _, d := range e.deliveries(t) {
		assert.Equal(t, domain.DeliveryPending, d.status)
		assert.Equal(t, 1, d.attempts)
		assert.Equal(t, 1, d.recorded, "the failed first attempt logged")
		require.NotNil(t, d.next)
		assert.WithinDuration(t, before.Add(time.Second), *d.next, 1500*time.Millisecond)
	}
	insp := asynq.NewInspectorFromRedisClient(e.rdb)
	scheduled, err := insp.ListScheduledTasks(tasks.QueueWebhooks)
	require.NoError(t, err)
	var want, got []string
	for _, id := range ids {
		want = append(want, tasks.WebhookTaskID(id, sub.url(), 0))
	}
	for _, ti := range scheduled {
		got = append(got, ti.ID)
		assert.WithinDuration(t, before.Add(time.Second), ti.NextProcessAt, 1500*time.Millisecond)
	}
	assert.ElementsMatch(t, want, got, "one retry task each, under the delivery's task id, for its time")

	srv := asynq.NewServerFromRedisClient(e.rdb, asynq.Config{Concurrency: 4, Queues: tasks.WebhookQueues(),
		TaskCheckInterval: 20 * time.Millisecond, DelayedTaskCheckInterval: 100 * time.Millisecond,
		RetryDelayFunc: retry.RetryDelayFunc(), LogLevel: asynq.FatalLevel})
	mux := asynq.NewServeMux()
	w.handler.Register(mux)
	require.NoError(t, srv.Start(mux))
	t.Cleanup(srv.Shutdown)
	require.Eventually(t, func() bool {
		for _, d := range e.deliveries(t) {
			if d.status != domain.DeliverySucceeded {
				return false
			}
		}
		return true
	}, 10*time.Second, 50*time.Millisecond)

	requests := sub.requests()
	logged := 0
	for _, d := range e.deliveries(t) {
		assert.Equal(t, 2, d.attempts)
		assert.Equal(t, 2, d.recorded)
		logged += d.recorded
		n := 0
		for _, id := range requests {
			if id == d.webhookID {
				n++
			}
		}
		assert.Equal(t, 2, n, "both attempts of %s under its webhook-id", d.webhookID)
	}
	assert.Equal(t, len(requests), logged, "every request the subscriber saw is logged")
}

// With Redis down the relay still makes and records first attempts (they
// need no Redis); a retry Redis did not take is queued again by the monitor
// once it is overdue.
func TestRelaySendsWhileRedisIsDown(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	sub := newSubscriber(t, func(*http.Request, int) int { return http.StatusInternalServerError })
	w := e.sendingWorker(t, e.db, failingQueue{}, []*subscriber{sub}, webhook.RelayConfig{}, webhook.RetryConfig{})
	e.write(t, swipes(2)...)

	n, err := w.relay.Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Len(t, sub.requests(), 2)
	for _, d := range e.deliveries(t) {
		assert.Equal(t, domain.DeliveryPending, d.status)
		assert.Equal(t, 1, d.recorded)
	}
	assert.Equal(t, 1.0, value(t, w.reg, "matching_outbox_relay_errors_total", "stage", "queue"))

	_, err = e.db.Pool().Exec(ctx, `UPDATE webhook_deliveries SET next_attempt_at = now() - interval '2 minutes'`)
	require.NoError(t, err)
	mon := webhook.NewMonitor(testutil.Logger(t), e.db, handover.NewClient(e.rdb, handover.NewQueuer()), nil,
		webhook.NewMetrics(prometheus.NewRegistry()), webhook.MonitorConfig{})
	assert.Equal(t, 2, mon.Pass(ctx), "Redis back: the monitor queues the retries")
}

// An erasure of a student whose events a batch is sending waits for the
// batch (its rows are locked); once it has completed, no attempt about
// the student starts, and an attempt that was on the wire is not recorded
// nor retried.
func TestNoRelayAttemptAboutAnErasedStudent(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	release := make(chan struct{})
	sub := newSubscriber(t, func(r *http.Request, _ int) int {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return http.StatusServiceUnavailable
	})
	cfg := webhook.RelayConfig{FirstWait: time.Second, EndpointSenders: 2}
	w := e.sendingWorker(t, e.db, e.queue, []*subscriber{sub}, cfg, webhook.RetryConfig{})
	student := uuid.NewString()
	_, err := e.db.Pool().Exec(ctx, `INSERT INTO students (id) VALUES ($1)`, student)
	require.NoError(t, err)
	e.write(t, event{tasks.TopicSwipeRecorded, student}, event{tasks.TopicSwipeRecorded, student},
		event{tasks.TopicSwipeRecorded, student})

	drained := make(chan struct{})
	go func() {
		defer close(drained)
		_, err := w.relay.Drain(ctx)
		assert.NoError(t, err)
	}()
	require.Eventually(t, func() bool { return len(sub.requests()) == 2 }, 5*time.Second, 5*time.Millisecond)
	erasing := time.Now()
	_, err = e.db.DeleteStudent(ctx, student)
	require.NoError(t, err)
	assert.Greater(t, time.Since(erasing), 300*time.Millisecond, "the erasure waited for the batch's wait to end")
	<-drained

	close(release)
	time.Sleep(500 * time.Millisecond) // the held attempts end and try to record
	assert.Len(t, sub.requests(), 2, "no attempt started after the erasure")
	assert.Empty(t, e.deliveries(t), "nothing about the student recorded")
	scheduled, err := asynq.NewInspectorFromRedisClient(e.rdb).ListScheduledTasks(tasks.QueueWebhooks)
	if !errors.Is(err, asynq.ErrQueueNotFound) {
		require.NoError(t, err)
	}
	assert.Empty(t, scheduled, "no retry")
}

// On shutdown the relay does not cut its first attempts short: Run returns
// once the attempts on the wire have ended and are recorded.
func TestRelayRunRecordsAttemptsOnTheWireBeforeReturning(t *testing.T) {
	e := newEnv(t)
	release := make(chan struct{})
	sub := newSubscriber(t, func(*http.Request, int) int { <-release; return http.StatusOK })
	w := e.sendingWorker(t, e.db, e.queue, []*subscriber{sub},
		webhook.RelayConfig{Interval: 20 * time.Millisecond, FirstWait: 100 * time.Millisecond}, webhook.RetryConfig{})
	e.write(t, swipes(1)...)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.relay.Run(ctx) }()
	require.Eventually(t, func() bool { return len(sub.requests()) == 1 }, 5*time.Second, 5*time.Millisecond)
	cancel()
	select {
	case <-done:
		t.Fatal("Run returned with an attempt on the wire")
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return once the attempt ended")
	}
	got := e.deliveries(t)
	require.Len(t, got, 1)
	assert.Equal(t, domain.DeliverySucceeded, got[0].status)
	assert.Equal(t, 1, got[0].recorded)
}

// A worker that stops while its relay's attempts are on the wire gives them
// ShutdownTimeout; then they are cut short, recorded as interrupted and
// handed to the queue at once (same webhook-id), as a task's attempt is.
func TestRelayStopsAttemptsThatOutliveTheShutdownTimeout(t *testing.T) {
	e := newEnv(t)
	sub := newSubscriber(t, func(r *http.Request, _ int) int { <-r.Context().Done(); return http.StatusOK })
	w := e.sendingWorker(t, e.db, e.queue, []*subscriber{sub}, webhook.RelayConfig{Interval: 20 * time.Millisecond,
		FirstWait: 100 * time.Millisecond, ShutdownTimeout: 200 * time.Millisecond}, webhook.RetryConfig{})
	ids := e.write(t, swipes(1)...)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.relay.Run(ctx) }()
	require.Eventually(t, func() bool { return len(sub.requests()) == 1 }, 5*time.Second, 5*time.Millisecond)
	time.Sleep(200 * time.Millisecond) // past the batch's wait: on the wire after it
	cancel()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("Run did not return after the shutdown timeout")
	}
	got := e.deliveries(t)
	require.Len(t, got, 1)
	assert.Equal(t, domain.DeliveryPending, got[0].status)
	assert.Equal(t, 1, got[0].recorded, "the interrupted attempt logged")
	var msg string
	require.NoError(t, e.db.Pool().QueryRow(context.Background(), `SELECT error FROM webhook_attempts`).Scan(&msg))
	assert.Contains(t, msg, "interrupted")
	assert.Contains(t, e.queued(t, tasks.QueueWebhooks, "pending"), tasks.WebhookTaskID(ids[0], sub.url(), 0),
		"handed to the queue at once")
	assert.Equal(t, 1.0, value(t, w.reg, "matching_webhook_attempts_total", "result", "interrupted"))
}
