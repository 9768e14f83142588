package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/tasks"
)

func TestWebhookScheduleIsTheDecisionsSchedule(t *testing.T) {
	want := []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute, 15 * time.Minute,
		time.Hour, 4 * time.Hour, 10 * time.Hour, 10 * time.Hour}
	assert.Equal(t, want, tasks.WebhookSchedule)
	var total time.Duration
	for _, d := range want {
		total += d
	}
	assert.InDelta(t, 25.5, total.Hours(), 0.25, "about 25.5 h")
	assert.Equal(t, 8, tasks.WebhookConfig{}.MaxRetry(), "9 attempts")
	task, err := tasks.NewWebhookDeliverTask(1, "https://a.example")
	require.NoError(t, err)
	assert.NotNil(t, task)

	for n, d := range want {
		lo := tasks.WebhookConfig{Rand: func() float64 { return 0 }}.Delay(n)
		hi := tasks.WebhookConfig{Rand: func() float64 { return 0.999999 }}.Delay(n)
		assert.InDelta(t, float64(d)*0.8, float64(lo), float64(time.Millisecond), "step %d low", n)
		assert.InDelta(t, float64(d)*1.2, float64(hi), float64(d)/1e5, "step %d high", n)
		for range 100 {
			got := tasks.WebhookConfig{}.Delay(n)
			assert.GreaterOrEqual(t, got, time.Duration(float64(d)*0.8))
			assert.LessOrEqual(t, got, time.Duration(float64(d)*1.2))
		}
	}
}

func TestRetryDelayFunc(t *testing.T) {
	f := tasks.WebhookConfig{Rand: func() float64 { return 0.5 }}.RetryDelayFunc()
	hook := asynq.NewTask(tasks.TypeWebhookDeliver, nil)
	assert.Equal(t, 42*time.Second, f(0, &tasks.RetryIn{Delay: 42 * time.Second, Err: errors.New("x")}, hook), "the handler's delay")
	// A failure on the database used up no attempt: a short backoff, not
	// the schedule.
	assert.Equal(t, 2*time.Second, f(1, errors.New("db down"), hook))
	assert.Equal(t, time.Minute, f(40, errors.New("db down"), hook), "capped")
	learn := asynq.NewTask(tasks.TypeStudentLearn, nil)
	assert.Positive(t, f(0, errors.New("x"), learn))
}

// ledger is a DeliveryLedger that remembers what it was asked to record.
type ledger struct {
	keys []tasks.WebhookDeliveryKey
	skip []int64
	err  error
}

func (l *ledger) RecordWebhookDeliveries(_ context.Context, keys []tasks.WebhookDeliveryKey) ([]int64, error) {
	if l.err != nil {
		return nil, l.err
	}
	l.keys = append(l.keys, keys...)
	return l.skip, nil
}

func TestAddWebhookRoutes(t *testing.T) {
	r := tasks.NewRouter()
	tasks.AddLearnRoutes(r)
	l := &ledger{}
	tasks.AddWebhookRoutes(r, []tasks.WebhookSubscription{
		{URL: "https://a.example/1", Events: []string{tasks.TopicSwipeRecorded}},
		{URL: "https://b.example/2", Events: []string{tasks.TopicSwipeRecorded}},
	}, l)
	jobs, err := r.Route(tasks.OutboxRow{ID: 7, Topic: tasks.TopicSwipeRecorded, StudentID: "s"})
	require.NoError(t, err)
	require.Len(t, jobs, 3)
	assert.Equal(t, "outbox:7:student:learn", jobs[0].ID)
	assert.Equal(t, "outbox:7:webhook:deliver:"+tasks.EndpointKey("https://a.example/1"), jobs[1].ID)
	assert.Equal(t, tasks.WebhookTaskID(7, "https://b.example/2", 0), jobs[2].ID)
	assert.NotEqual(t, tasks.WebhookTaskID(7, "https://b.example/2", 0), tasks.WebhookTaskID(7, "https://b.example/2", 1))
	var p tasks.WebhookDeliverPayload
	require.NoError(t, json.Unmarshal(jobs[1].Task.Payload(), &p))
	assert.Equal(t, tasks.WebhookDeliverPayload{OutboxID: 7, Endpoint: "https://a.example/1"}, p)
	assert.Nil(t, jobs[0].Delivery, "a learn job has no delivery")
	assert.Equal(t, &tasks.WebhookDeliveryKey{OutboxID: 7, Endpoint: "https://a.example/1",
		MessageID: tasks.WebhookMessageID(7, "https://a.example/1")}, jobs[1].Delivery)

	// Record writes the deliveries of the webhook jobs, in one call.
	skipped, err := r.Record(context.Background(), jobs)
	require.NoError(t, err)
	assert.Empty(t, skipped)
	require.Len(t, l.keys, 2)
	assert.Equal(t, *jobs[1].Delivery, l.keys[0])
	assert.Equal(t, *jobs[2].Delivery, l.keys[1])
	l.skip = []int64{7}
	skipped, err = r.Record(context.Background(), jobs)
	require.NoError(t, err)
	assert.Equal(t, map[int64]bool{7: true}, skipped, "a relay holds row 7")
	l.err = errors.New("database down")
	_, err = r.Record(context.Background(), jobs)
	assert.ErrorIs(t, err, l.err, "the caller must not queue the tasks")
	_, err = r.Record(context.Background(), jobs[:1])
	assert.NoError(t, err, "no delivery, no call")

	// Interactions are not webhook events.
	jobs, err = r.Route(tasks.OutboxRow{ID: 8, Topic: tasks.TopicInteractionRecorded, StudentID: "s"})
	require.NoError(t, err)
	assert.Len(t, jobs, 1)
}

func TestRecordWithoutLedger(t *testing.T) {
	assert.Panics(t, func() {
		tasks.AddWebhookRoutes(tasks.NewRouter(), []tasks.WebhookSubscription{{URL: "https://a", Events: []string{"e"}}}, nil)
	})
	r := tasks.NewRouter()
	_, err := r.Record(context.Background(), []tasks.Job{{ID: "x", Delivery: &tasks.WebhookDeliveryKey{OutboxID: 1, Endpoint: "https://a"}}})
	assert.Error(t, err, "webhook jobs from elsewhere than AddWebhookRoutes are refused, not queued unrecorded")
}

func TestStoreRetryDelay(t *testing.T) {
	mid := func() float64 { return 0.5 }
	assert.Equal(t, time.Second, tasks.StoreRetryDelay(0, mid))
	assert.Equal(t, 32*time.Second, tasks.StoreRetryDelay(5, mid))
	assert.Equal(t, time.Minute, tasks.StoreRetryDelay(6, mid))
	assert.Equal(t, 48*time.Second, tasks.StoreRetryDelay(100, func() float64 { return 0 }), "-20 %")
	assert.Equal(t, 72*time.Second, tasks.StoreRetryDelay(100, func() float64 { return 1 }), "+20 %")
}

func TestWebhookBody(t *testing.T) {
	created := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	b, err := tasks.WebhookBody("msg_1_ab", tasks.WebhookEvent{Topic: tasks.TopicSwipeRecorded, CreatedAt: created,
		Payload: []byte(`{"student_id":"s1","school_id":"c1","direction":"left","timestamp":"2026-05-01T13:00:00.250+01:00","swipe_id":9}`)})
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":"msg_1_ab","event":"swipe.recorded","data":{"student_id":"s1","school_id":"c1","direction":"left","timestamp":"2026-05-01T12:00:00.250Z"}}`, string(b))

	// An erased student's event keeps its ids: the event time stands in.
	b, err = tasks.WebhookBody("msg_1_ab", tasks.WebhookEvent{Topic: tasks.TopicSwipeRecorded, CreatedAt: created,
		Payload: []byte(`{"student_id":"s1","school_id":"c1","swipe_id":9}`)})
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":"msg_1_ab","event":"swipe.recorded","data":{"student_id":"s1","school_id":"c1","timestamp":"2026-05-01T12:00:00.000Z"}}`, string(b))

	_, err = tasks.WebhookBody("m", tasks.WebhookEvent{Topic: tasks.TopicSwipeRecorded, Payload: []byte(`nope`)})
	assert.Error(t, err)
	assert.Equal(t, "msg_12_"+tasks.EndpointKey("https://a"), tasks.WebhookMessageID(12, "https://a"))
}

func TestRetryAtFallsOnAWholeSecondNoSooner(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 300_000_000, time.UTC)
	d := tasks.RetryAt(now, 4200*time.Millisecond)
	assert.Equal(t, 4700*time.Millisecond, d, "12:00:04.500 rounds up to 12:00:05")
	assert.Equal(t, 2*time.Second, tasks.RetryAt(now.Truncate(time.Second), 2*time.Second), "already whole")
}

// hookStore is a WebhookStore over one delivery row, for the handler's
// decisions; the real store is exercised by cmd/worker's tests.
type hookStore struct {
	d        tasks.WebhookDelivery
	statuses []string
	next     []time.Time
}

func (s *hookStore) BeginWebhookDelivery(context.Context, tasks.WebhookDeliveryKey) (tasks.WebhookDelivery, error) {
	return s.d, nil
}

func (s *hookStore) RecordWebhookAttempt(_ context.Context, _ int64, _ tasks.WebhookAttempt, status string, next time.Time, _ int) error {
	s.d.Attempts++
	s.statuses = append(s.statuses, status)
	s.next = append(s.next, next)
	return nil
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
func (s *hookStore) StaleWebhookDeliveries(context.Context, time.Duration, int64, int) ([]tasks.StaleDelivery, error) {
	return nil, nil
}

type failingSender struct{ retryAfter time.Duration }

func (failingSender) Configured(string) bool { return true }
func (f failingSender) Send(context.Context, string, string, []byte) tasks.WebhookResult {
	return tasks.WebhookResult{Outcome: tasks.WebhookFailed, StatusCode: 503, Err: errors.New("HTTP 503"), RetryAfter: f.retryAfter}
}

// The schedule and parking go by the attempts in the delivery's row, not by
// the queue's retry count: a task queued again after Redis lost the first
// one (retry count 0) still parks the delivery at its 9th attempt, and a
// replayed delivery gets 9 attempts again.
func TestWebhookAttemptsCountedFromTheRow(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	run := func(d tasks.WebhookDelivery, sender tasks.WebhookSender) (*hookStore, error) {
		st := &hookStore{d: d}
		h := tasks.NewHandler(tasks.Deps{Log: slog.New(slog.DiscardHandler), Relay: &tasks.Relay{},
			WebhookStore: st, WebhookSender: sender, WebhookMetrics: tasks.NewWebhookMetrics(prometheus.NewRegistry()),
			WebhookConfig: tasks.WebhookConfig{Rand: func() float64 { return 0.5 }, Now: func() time.Time { return now }}})
		task, err := tasks.NewWebhookDeliverTask(1, "https://a.example/hook")
		require.NoError(t, err)
		return st, h.HandleWebhookDeliver(context.Background(), task)
	}
	ev := tasks.WebhookEvent{Topic: tasks.TopicSwipeRecorded, CreatedAt: now,
		Payload: []byte(`{"student_id":"s","school_id":"c","direction":"left","timestamp":"2026-05-01T12:00:00Z"}`)}

	st, err := run(tasks.WebhookDelivery{ID: 1, Status: tasks.DeliveryPending, Attempts: 8, Claimed: true, Event: ev}, failingSender{})
	require.NoError(t, err, "parked: nothing left to retry")
	assert.Equal(t, []string{tasks.DeliveryParked}, st.statuses)

	st, err = run(tasks.WebhookDelivery{ID: 1, Status: tasks.DeliveryPending, Attempts: 10, RoundStart: 9, Claimed: true, Event: ev}, failingSender{})
	var ri *tasks.RetryIn
	require.ErrorAs(t, err, &ri, "the second attempt after a replay is retried")
	assert.Equal(t, 30*time.Second, ri.Delay, "after the round's second attempt, the schedule's second step")
	assert.Equal(t, []string{tasks.DeliveryPending}, st.statuses)
	assert.Equal(t, []time.Time{now.Add(30 * time.Second)}, st.next)

	_, err = run(tasks.WebhookDelivery{ID: 1, Status: tasks.DeliveryPending, Claimed: true, Event: ev}, failingSender{retryAfter: 90 * time.Second})
	require.ErrorAs(t, err, &ri)
	assert.Equal(t, 90*time.Second, ri.Delay, "Retry-After longer than the schedule's 5 s wins")

	// Not claimed: another task holds the attempt or it is not due. No
	// attempt; the task comes back when the delivery is due.
	st, err = run(tasks.WebhookDelivery{ID: 1, Status: tasks.DeliveryPending, Attempts: 3, NextAttemptAt: now.Add(40 * time.Second),
		Event: ev}, panicSender{})
	require.ErrorIs(t, err, tasks.ErrNotDue)
	require.ErrorAs(t, err, &ri)
	assert.GreaterOrEqual(t, ri.Delay, 39*time.Second)
	assert.LessOrEqual(t, ri.Delay, 41*time.Second)
	assert.Empty(t, st.statuses, "nothing recorded")

	// Ended meanwhile: the duplicate is done.
	st, err = run(tasks.WebhookDelivery{ID: 1, Status: tasks.DeliverySucceeded, Event: ev}, panicSender{})
	require.NoError(t, err)
	assert.Empty(t, st.statuses)
}

// panicSender must not be asked to send.
type panicSender struct{}

func (panicSender) Configured(string) bool { return true }
func (panicSender) Send(context.Context, string, string, []byte) tasks.WebhookResult {
	panic("no attempt may be made")
}
