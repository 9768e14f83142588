package tasks_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/hibiken/asynq"
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
	assert.Equal(t, 30*time.Second, f(1, errors.New("db down"), hook), "the schedule without a handler delay")
	learn := asynq.NewTask(tasks.TypeStudentLearn, nil)
	assert.Positive(t, f(0, errors.New("x"), learn))
}

func TestAddWebhookRoutes(t *testing.T) {
	r := tasks.NewRouter()
	tasks.AddLearnRoutes(r)
	tasks.AddWebhookRoutes(r, []tasks.WebhookSubscription{
		{URL: "https://a.example/1", Events: []string{tasks.TopicSwipeRecorded}},
		{URL: "https://b.example/2", Events: []string{tasks.TopicSwipeRecorded}},
	})
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

	// Interactions are not webhook events.
	jobs, err = r.Route(tasks.OutboxRow{ID: 8, Topic: tasks.TopicInteractionRecorded, StudentID: "s"})
	require.NoError(t, err)
	assert.Len(t, jobs, 1)
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
