package webhook_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/webhook"
)

func TestWebhookScheduleIsTheDecisionsSchedule(t *testing.T) {
	want := []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute, 15 * time.Minute,
		time.Hour, 4 * time.Hour, 10 * time.Hour, 10 * time.Hour}
	assert.Equal(t, want, webhook.Schedule)
	var total time.Duration
	for _, d := range want {
		total += d
	}
	assert.InDelta(t, 25.5, total.Hours(), 0.25, "about 25.5 h")
	assert.Equal(t, 8, webhook.RetryConfig{}.MaxRetry(), "9 attempts")
	job := tasks.WebhookJob(1, "https://a.example", 0, nil)
	assert.Equal(t, tasks.QueueWebhooks, job.Queue)
	assert.Zero(t, job.Retention, "a finished delivery's row says it is done")

	for n, d := range want {
		lo := webhook.RetryConfig{Rand: func() float64 { return 0 }}.Delay(n)
		hi := webhook.RetryConfig{Rand: func() float64 { return 0.999999 }}.Delay(n)
		assert.InDelta(t, float64(d)*0.8, float64(lo), float64(time.Millisecond), "step %d low", n)
		assert.InDelta(t, float64(d)*1.2, float64(hi), float64(d)/1e5, "step %d high", n)
		for range 100 {
			got := webhook.RetryConfig{}.Delay(n)
			assert.GreaterOrEqual(t, got, time.Duration(float64(d)*0.8))
			assert.LessOrEqual(t, got, time.Duration(float64(d)*1.2))
		}
	}
}

func TestRetryDelayFunc(t *testing.T) {
	f := webhook.RetryConfig{Rand: func() float64 { return 0.5 }}.RetryDelayFunc()
	hook := asynq.NewTask(tasks.TypeWebhookDeliver, nil)
	assert.Equal(t, 42*time.Second, f(0, &webhook.RetryIn{Delay: 42 * time.Second, Err: errors.New("x")}, hook), "the handler's delay")
	// A failure on the database used up no attempt: a short backoff, not
	// the schedule.
	assert.Equal(t, 2*time.Second, f(1, errors.New("db down"), hook))
	assert.Equal(t, time.Minute, f(40, errors.New("db down"), hook), "capped")
	learn := asynq.NewTask(tasks.TypeStudentLearn, nil)
	assert.Positive(t, f(0, errors.New("x"), learn))
}

func TestStoreRetryDelay(t *testing.T) {
	mid := func() float64 { return 0.5 }
	assert.Equal(t, time.Second, webhook.StoreRetryDelay(0, mid))
	assert.Equal(t, 32*time.Second, webhook.StoreRetryDelay(5, mid))
	assert.Equal(t, time.Minute, webhook.StoreRetryDelay(6, mid))
	assert.Equal(t, 48*time.Second, webhook.StoreRetryDelay(100, func() float64 { return 0 }), "-20 %")
	assert.Equal(t, 72*time.Second, webhook.StoreRetryDelay(100, func() float64 { return 1 }), "+20 %")
}

func TestWebhookBody(t *testing.T) {
	created := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	b, err := webhook.Body("msg_1_ab", domain.WebhookEvent{Topic: tasks.TopicSwipeRecorded, CreatedAt: created,
		Payload: []byte(`{"student_id":"s1","school_id":"c1","direction":"left","timestamp":"2026-05-01T13:00:00.250+01:00","swipe_id":9}`)})
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":"msg_1_ab","event":"swipe.recorded","data":{"student_id":"s1","school_id":"c1","direction":"left","timestamp":"2026-05-01T12:00:00.250Z"}}`, string(b))

	// An erased student's event keeps its ids: the event time stands in.
	b, err = webhook.Body("msg_1_ab", domain.WebhookEvent{Topic: tasks.TopicSwipeRecorded, CreatedAt: created,
		Payload: []byte(`{"student_id":"s1","school_id":"c1","swipe_id":9}`)})
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":"msg_1_ab","event":"swipe.recorded","data":{"student_id":"s1","school_id":"c1","timestamp":"2026-05-01T12:00:00.000Z"}}`, string(b))

	_, err = webhook.Body("m", domain.WebhookEvent{Topic: tasks.TopicSwipeRecorded, Payload: []byte(`nope`)})
	assert.Error(t, err)
	assert.Equal(t, "msg_12_"+tasks.EndpointKey("https://a"), webhook.MessageID(12, "https://a"))
}

func TestRetryAtFallsOnAWholeSecondNoSooner(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 300_000_000, time.UTC)
	d := webhook.RetryAt(now, 4200*time.Millisecond)
	assert.Equal(t, 4700*time.Millisecond, d, "12:00:04.500 rounds up to 12:00:05")
	assert.Equal(t, 2*time.Second, webhook.RetryAt(now.Truncate(time.Second), 2*time.Second), "already whole")
}

// hookStore is a Store over one delivery row, for the handler's
// decisions; the real store is exercised by cmd/worker's tests.
type hookStore struct {
	d        domain.WebhookDelivery
	missing  int  // records that find no row (the relay has not committed yet)
	gone     bool // the event was deleted (an erasure)
	checked  int  // existence checks
	begun    int  // claims read
	ids      []int64
	statuses []string
	next     []time.Time
}

func (s *hookStore) BeginWebhookDelivery(context.Context, domain.DeliveryKey) (domain.WebhookDelivery, error) {
	s.begun++
	if s.gone {
		return domain.WebhookDelivery{}, &domain.Error{Kind: domain.KindNotFound, Message: "outbox event not found"}
	}
	return s.d, nil
}

func (s *hookStore) RecordWebhookAttempt(_ context.Context, id int64, _ domain.WebhookAttempt, status string, next time.Time, _ int) error {
	if s.missing > 0 || s.gone {
		s.missing = max(s.missing-1, 0)
		return &domain.Error{Kind: domain.KindNotFound, Message: "webhook delivery not found"}
	}
	s.d.Attempts++
	s.ids = append(s.ids, id)
	s.statuses = append(s.statuses, status)
	s.next = append(s.next, next)
	return nil
}

func (s *hookStore) WebhookEventExists(context.Context, int64) (bool, error) {
	s.checked++
	return !s.gone, nil
}

func (s *hookStore) SetWebhookDeliveryStatus(context.Context, int64, string, string) error {
	return nil
}
func (s *hookStore) DisableWebhookEndpoint(context.Context, string, string) (int, error) {
	return 0, nil
}
func (s *hookStore) WebhookBacklog(context.Context) (int, time.Time, error) {
	return 0, time.Time{}, nil
}
func (s *hookStore) StaleWebhookDeliveries(context.Context, time.Duration, int64, int) ([]domain.StaleDelivery, error) {
	return nil, nil
}

type failingSender struct{ retryAfter time.Duration }

func (failingSender) Name(string) (string, bool) { return "test", true }
func (f failingSender) Send(context.Context, string, string, []byte) webhook.Result {
	return webhook.Result{Outcome: webhook.Failed, StatusCode: 503, Err: errors.New("HTTP 503"), RetryAfter: f.retryAfter}
}

// The schedule and parking go by the attempts in the delivery's row, not by
// the queue's retry count: a task queued again after Redis lost the first
// one (retry count 0) still parks the delivery at its 9th attempt, and a
// replayed delivery gets 9 attempts again.
func TestWebhookAttemptsCountedFromTheRow(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	run := func(d domain.WebhookDelivery, sender webhook.Poster) (*hookStore, error) {
		st := &hookStore{d: d}
		job := tasks.WebhookJob(1, "https://a.example/hook", 0, nil)
		return st, webhookHandler(st, sender, now).HandleDeliver(context.Background(), asynq.NewTask(job.Type, job.Payload))
	}
	ev := domain.WebhookEvent{Topic: tasks.TopicSwipeRecorded, CreatedAt: now,
		Payload: []byte(`{"student_id":"s","school_id":"c","direction":"left","timestamp":"2026-05-01T12:00:00Z"}`)}

	st, err := run(domain.WebhookDelivery{ID: 1, Status: domain.DeliveryPending, Attempts: 8, Claimed: true, Event: ev}, failingSender{})
	require.NoError(t, err, "parked: nothing left to retry")
	assert.Equal(t, []string{domain.DeliveryParked}, st.statuses)

	st, err = run(domain.WebhookDelivery{ID: 1, Status: domain.DeliveryPending, Attempts: 10, RoundStart: 9, Claimed: true, Event: ev}, failingSender{})
	var ri *webhook.RetryIn
	require.ErrorAs(t, err, &ri, "the second attempt after a replay is retried")
	assert.Equal(t, 30*time.Second, ri.Delay, "after the round's second attempt, the schedule's second step")
	assert.Equal(t, []string{domain.DeliveryPending}, st.statuses)
	assert.Equal(t, []time.Time{now.Add(30 * time.Second)}, st.next)

	_, err = run(domain.WebhookDelivery{ID: 1, Status: domain.DeliveryPending, Claimed: true, Event: ev}, failingSender{retryAfter: 90 * time.Second})
	require.ErrorAs(t, err, &ri)
	assert.Equal(t, 90*time.Second, ri.Delay, "Retry-After longer than the schedule's 5 s wins")

	// Not claimed: another task holds the attempt or it is not due. No
	// attempt; the task comes back when the delivery is due.
	st, err = run(domain.WebhookDelivery{ID: 1, Status: domain.DeliveryPending, Attempts: 3, NextAttemptAt: now.Add(40 * time.Second),
		Event: ev}, panicSender{})
	require.ErrorIs(t, err, webhook.ErrNotDue)
	require.ErrorAs(t, err, &ri)
	assert.GreaterOrEqual(t, ri.Delay, 39*time.Second)
	assert.LessOrEqual(t, ri.Delay, 41*time.Second)
	assert.Empty(t, st.statuses, "nothing recorded")

	// Ended meanwhile: the duplicate is done.
	st, err = run(domain.WebhookDelivery{ID: 1, Status: domain.DeliverySucceeded, Event: ev}, panicSender{})
	require.NoError(t, err)
	assert.Empty(t, st.statuses)
}

// panicSender must not be asked to send.
type panicSender struct{}

func (panicSender) Name(string) (string, bool) { return "test", true }
func (panicSender) Send(context.Context, string, string, []byte) webhook.Result {
	panic("no attempt may be made")
}

func webhookHandler(st webhook.Store, sender webhook.Poster, now time.Time) *webhook.Handler {
	return webhook.NewHandler(webhook.Deps{Log: slog.New(slog.DiscardHandler), Relay: &webhook.Relay{},
		Store: st, Poster: sender, Metrics: webhook.NewMetrics(prometheus.NewRegistry()),
		Retry: webhook.RetryConfig{Rand: func() float64 { return 0.5 }, Now: func() time.Time { return now }}})
}

type okSender struct{ sent int }

func (*okSender) Name(string) (string, bool) { return "test", true }
func (s *okSender) Send(context.Context, string, string, []byte) webhook.Result {
	s.sent++
	return webhook.Result{Outcome: webhook.Delivered, StatusCode: 204}
}

// A new delivery's first attempt, queued by the relay with the event and a
// lease, reads nothing: it sends and records, one statement. A first
// attempt whose lease is (nearly) over, and a retry, claim it first.
func TestFirstAttemptNeedsNoRead(t *testing.T) {
	now := time.Now()
	first := &tasks.FirstAttempt{DeliveryID: 42, LeasedUntil: now.Add(time.Minute).UnixMilli(),
		Topic: tasks.TopicSwipeRecorded, CreatedAt: now,
		Payload: []byte(`{"student_id":"s","school_id":"c","direction":"left","timestamp":"2026-05-01T12:00:00Z"}`)}
	job := tasks.WebhookJob(7, "https://a.example/hook", 0, first)
	st := &hookStore{missing: 2} // the task ran before the relay's commit
	sender := &okSender{}
	require.NoError(t, webhookHandler(st, sender, now).HandleDeliver(context.Background(), asynq.NewTask(job.Type, job.Payload)))
	assert.Zero(t, st.begun, "no claim read")
	assert.Equal(t, []int64{42}, st.ids)
	assert.Equal(t, []string{domain.DeliverySucceeded}, st.statuses)
	assert.Equal(t, 1, sender.sent)

	// The lease ran out while the task waited in the queue: claim first.
	late := &hookStore{d: domain.WebhookDelivery{ID: 42, Status: domain.DeliveryPending, Claimed: true,
		Event: domain.WebhookEvent{Topic: first.Topic, Payload: first.Payload, CreatedAt: now}}}
	require.NoError(t, webhookHandler(late, &okSender{}, now.Add(2*time.Minute)).HandleDeliver(context.Background(),
		asynq.NewTask(job.Type, job.Payload)))
	assert.Equal(t, 1, late.begun)
}

// erasingSender erases the event (its store's) while the attempt is on
// the wire, and fails.
type erasingSender struct{ st *hookStore }

func (erasingSender) Name(string) (string, bool) { return "test", true }
func (e erasingSender) Send(context.Context, string, string, []byte) webhook.Result {
	e.st.gone = true
	return webhook.Result{Outcome: webhook.Failed, StatusCode: 503, Err: errors.New("HTTP 503")}
}

// No attempt about an erased student's event starts: a first attempt that
// carries its event checks that the event still exists right before it
// starts, and a retry finds its delivery gone; either ends its task
// without archiving it (no copy of the event stays in the queue). An
// attempt already on the wire when the erasure commits is not recorded,
// and its task ends rather than retrying.
func TestNoAttemptAboutAnErasedEvent(t *testing.T) {
	now := time.Now()
	first := &tasks.FirstAttempt{DeliveryID: 42, LeasedUntil: now.Add(time.Minute).UnixMilli(),
		Topic: tasks.TopicSwipeRecorded, CreatedAt: now,
		Payload: []byte(`{"student_id":"s","school_id":"c","direction":"left","timestamp":"2026-05-01T12:00:00Z"}`)}
	job := tasks.WebhookJob(7, "https://a.example/hook", 0, first)

	st := &hookStore{gone: true}
	err := webhookHandler(st, panicSender{}, now).HandleDeliver(context.Background(), asynq.NewTask(job.Type, job.Payload))
	require.NoError(t, err, "the task ends: it is not retried nor archived")
	assert.Equal(t, 1, st.checked, "one existence check before the attempt")
	assert.Zero(t, st.begun, "still no claim read")

	retry := tasks.WebhookJob(7, "https://a.example/hook", 0, nil)
	st = &hookStore{gone: true}
	err = webhookHandler(st, panicSender{}, now).HandleDeliver(context.Background(), asynq.NewTask(retry.Type, retry.Payload))
	require.NoError(t, err)
	assert.NotErrorIs(t, err, asynq.SkipRetry, "SkipRetry would archive the task with its payload")
	assert.Equal(t, 1, st.begun)

	// Erased while the attempt was on the wire: not recorded, no retry.
	st = &hookStore{}
	err = webhookHandler(st, erasingSender{st}, now).HandleDeliver(context.Background(), asynq.NewTask(job.Type, job.Payload))
	require.NoError(t, err, "no retry of an attempt whose event is gone")
	assert.Empty(t, st.statuses)
}

// namedSender delivers to the hookURLs it names.
type namedSender map[string]string

func (s namedSender) Name(url string) (string, bool) { n, ok := s[url]; return n, ok }
func (namedSender) Send(context.Context, string, string, []byte) webhook.Result {
	return webhook.Result{Outcome: webhook.Delivered, StatusCode: 200, Latency: time.Millisecond}
}

// The webhook metrics carry the endpoint's name, never its URL (which may
// carry a token); a delivery to a URL no longer configured is counted
// under one fixed value.
func TestWebhookMetricsLabelledByEndpointName(t *testing.T) {
	const url = "https://hooks.example.com/in?token=SECRET"
	reg := prometheus.NewRegistry()
	m := webhook.NewMetrics(reg).ForEndpoints("crm")
	now := time.Now()
	h := func(st webhook.Store) *webhook.Handler {
		return webhook.NewHandler(webhook.Deps{Log: slog.New(slog.DiscardHandler), Relay: &webhook.Relay{},
			Store: st, Poster: namedSender{url: "crm"}, Metrics: m,
			Retry: webhook.RetryConfig{Now: func() time.Time { return now }}})
	}
	pending := func() *hookStore {
		return &hookStore{d: domain.WebhookDelivery{ID: 1, Status: domain.DeliveryPending, Claimed: true,
			Event: domain.WebhookEvent{Topic: tasks.TopicSwipeRecorded, CreatedAt: now,
				Payload: []byte(`{"student_id":"s","school_id":"c","direction":"left","timestamp":"2026-05-01T12:00:00Z"}`)}}}
	}
	for _, u := range []string{url, "https://removed.example.com/hook?token=SECRET"} {
		job := tasks.WebhookJob(7, u, 0, nil)
		require.NoError(t, h(pending()).HandleDeliver(context.Background(), asynq.NewTask(job.Type, job.Payload)))
	}
	assert.Equal(t, 1.0, promtest.ToFloat64(m.Attempts.WithLabelValues("delivered", "crm")))
	assert.Equal(t, 1.0, promtest.ToFloat64(m.Deliveries.WithLabelValues(domain.DeliverySucceeded, "crm")))
	assert.Equal(t, 1.0, promtest.ToFloat64(m.Deliveries.WithLabelValues(domain.DeliveryDisabled, webhook.UnconfiguredEndpoint)))
	assert.Zero(t, promtest.ToFloat64(m.Attempts.WithLabelValues("failed", "crm")), "present from the start")

	families, err := reg.Gather()
	require.NoError(t, err)
	values := map[string]bool{}
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			for _, l := range metric.GetLabel() {
				if l.GetName() == "endpoint" {
					values[l.GetValue()] = true
				}
				assert.NotContains(t, l.GetValue(), "example.com", f.GetName())
			}
		}
	}
	assert.Equal(t, map[string]bool{"crm": true, webhook.UnconfiguredEndpoint: true}, values)
}
