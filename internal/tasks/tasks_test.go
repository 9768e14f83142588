package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/tasks"
)

func TestOutboxTaskID(t *testing.T) {
	assert.Equal(t, "outbox:42:student:learn", tasks.OutboxTaskID(42, tasks.TypeStudentLearn))
	assert.Equal(t, "outbox:7:webhook:deliver:abc", tasks.OutboxTaskID(7, tasks.TypeWebhookDeliver, "abc"))
}

func TestEndpointKey(t *testing.T) {
	a := tasks.EndpointKey("https://a.example/hook")
	assert.Len(t, a, 16)
	assert.Equal(t, a, tasks.EndpointKey("https://a.example/hook"), "stable")
	assert.NotEqual(t, a, tasks.EndpointKey("https://b.example/hook"))
}

func TestQueuePriorities(t *testing.T) {
	q := tasks.QueuePriorities()
	assert.Greater(t, q[tasks.QueueCritical], q[tasks.QueueDefault])
	assert.Greater(t, q[tasks.QueueDefault], q[tasks.QueueLow])
	assert.Positive(t, q[tasks.QueueLow])
	q[tasks.QueueLow] = 0
	assert.Positive(t, tasks.QueuePriorities()[tasks.QueueLow], "a fresh map each time")
}

func TestConstructors(t *testing.T) {
	learn, err := tasks.NewStudentLearnTask("5f0c6f43-3b0e-4a8e-9b1f-6d1c2b9a7e10", 9)
	require.NoError(t, err)
	assert.Equal(t, tasks.TypeStudentLearn, learn.Type())
	var lp tasks.StudentLearnPayload
	require.NoError(t, json.Unmarshal(learn.Payload(), &lp))
	assert.Equal(t, tasks.StudentLearnPayload{StudentID: "5f0c6f43-3b0e-4a8e-9b1f-6d1c2b9a7e10", OutboxID: 9}, lp)
	_, err = tasks.NewStudentLearnTask("", 9)
	assert.Error(t, err)

	hook, err := tasks.NewWebhookDeliverTask(9, "https://a.example/hook")
	require.NoError(t, err)
	assert.Equal(t, tasks.TypeWebhookDeliver, hook.Type())
	var wp tasks.WebhookDeliverPayload
	require.NoError(t, json.Unmarshal(hook.Payload(), &wp))
	assert.Equal(t, tasks.WebhookDeliverPayload{OutboxID: 9, Endpoint: "https://a.example/hook"}, wp)
	_, err = tasks.NewWebhookDeliverTask(0, "https://a.example/hook")
	assert.Error(t, err)
	_, err = tasks.NewWebhookDeliverTask(9, "")
	assert.Error(t, err)

	assert.Equal(t, tasks.TypeOutboxRelay, tasks.NewOutboxRelayTask().Type())
}

func TestLearnRoute(t *testing.T) {
	jobs, err := tasks.LearnRoute(tasks.OutboxRow{ID: 3, Topic: tasks.TopicSwipeRecorded, StudentID: "s-1"})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	assert.Equal(t, "outbox:3:student:learn", jobs[0].ID)
	assert.Equal(t, tasks.TypeStudentLearn, jobs[0].Task.Type())

	_, err = tasks.LearnRoute(tasks.OutboxRow{ID: 3, Topic: tasks.TopicSwipeRecorded})
	assert.Error(t, err, "an event without a student cannot teach anyone")

	// A sync push's swipes are learned by its one sync.pushed event.
	jobs, err = tasks.LearnRoute(tasks.OutboxRow{ID: 4, Topic: tasks.TopicSwipeRecorded, StudentID: "s-1",
		Payload: []byte(`{"student_id":"s-1","learn_batched":true}`)})
	require.NoError(t, err)
	assert.Empty(t, jobs)
	jobs, err = tasks.LearnRoute(tasks.OutboxRow{ID: 5, Topic: tasks.TopicSyncPushed, StudentID: "s-1",
		Payload: []byte(`{"student_id":"s-1","swipes":3,"feedback":1}`)})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	assert.Equal(t, "outbox:5:student:learn", jobs[0].ID)
	assert.Contains(t, tasks.LearnTopics(), tasks.TopicSyncPushed)
}

func TestRouter(t *testing.T) {
	r := tasks.NewRouter()
	job := func(id string) tasks.Job { return tasks.Job{ID: id, Task: asynq.NewTask("x:y", nil)} }
	r.Add("swipe.recorded", func(row tasks.OutboxRow) ([]tasks.Job, error) {
		return []tasks.Job{job("first")}, nil
	})
	r.Add("swipe.recorded", func(row tasks.OutboxRow) ([]tasks.Job, error) {
		return []tasks.Job{job("second"), job("third")}, nil
	})
	errBad := errors.New("bad payload")
	r.Add("broken", func(row tasks.OutboxRow) ([]tasks.Job, error) { return nil, errBad })
	r.Add("sloppy", func(row tasks.OutboxRow) ([]tasks.Job, error) { return []tasks.Job{{ID: "no-task"}}, nil })
	assert.ElementsMatch(t, []string{"swipe.recorded", "broken", "sloppy"}, r.Topics())

	jobs, err := r.Route(tasks.OutboxRow{ID: 1, Topic: "swipe.recorded"})
	require.NoError(t, err)
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j.ID)
	}
	assert.Equal(t, []string{"first", "second", "third"}, ids, "every route, in the order added")

	_, err = r.Route(tasks.OutboxRow{ID: 2, Topic: "mystery"})
	assert.ErrorIs(t, err, tasks.ErrUnknownTopic)

	_, err = r.Route(tasks.OutboxRow{ID: 3, Topic: "broken"})
	assert.ErrorIs(t, err, errBad)
	assert.NotErrorIs(t, err, tasks.ErrUnknownTopic)

	_, err = r.Route(tasks.OutboxRow{ID: 4, Topic: "sloppy"})
	assert.Error(t, err)

	assert.Panics(t, func() { r.Add("", tasks.LearnRoute) })
	assert.Panics(t, func() { r.Add("t", nil) })
}

// enqueueFunc adapts a function to tasks.Enqueuer.
type enqueueFunc func(ctx context.Context, task *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error)

func (f enqueueFunc) EnqueueContext(ctx context.Context, task *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error) {
	return f(ctx, task, opts...)
}

func TestEnqueue(t *testing.T) {
	ctx := context.Background()
	job := tasks.Job{ID: "outbox:1:student:learn", Task: asynq.NewTask(tasks.TypeStudentLearn, nil)}
	var gotID string
	ok := enqueueFunc(func(_ context.Context, _ *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error) {
		for _, o := range opts {
			if o.Type() == asynq.TaskIDOpt {
				gotID = o.Value().(string)
			}
		}
		return &asynq.TaskInfo{}, nil
	})
	dup, err := tasks.Enqueue(ctx, ok, job)
	require.NoError(t, err)
	assert.False(t, dup)
	assert.Equal(t, job.ID, gotID, "enqueued under the job's id")

	conflict := enqueueFunc(func(context.Context, *asynq.Task, ...asynq.Option) (*asynq.TaskInfo, error) {
		return nil, asynq.ErrTaskIDConflict
	})
	dup, err = tasks.Enqueue(ctx, conflict, job)
	require.NoError(t, err, "an id the queue already holds was handed over before")
	assert.True(t, dup)

	errDown := errors.New("connection refused")
	down := enqueueFunc(func(context.Context, *asynq.Task, ...asynq.Option) (*asynq.TaskInfo, error) {
		return nil, errDown
	})
	_, err = tasks.Enqueue(ctx, down, job)
	assert.ErrorIs(t, err, errDown)
}
