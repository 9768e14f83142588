package tasks_test

import (
	"encoding/json"
	"testing"

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
	assert.Equal(t, tasks.StudentLearnPayload{StudentID: "5f0c6f43-3b0e-4a8e-9b1f-6d1c2b9a7e10", Version: 9}, lp)
	_, err = tasks.NewStudentLearnTask("", 9)
	assert.Error(t, err)

	hook := tasks.WebhookJob(9, "https://a.example/hook", 0, nil)
	assert.Equal(t, tasks.TypeWebhookDeliver, hook.Type)
	var wp tasks.WebhookDeliverPayload
	require.NoError(t, json.Unmarshal(hook.Payload, &wp))
	assert.Equal(t, tasks.WebhookDeliverPayload{OutboxID: 9, Endpoint: "https://a.example/hook"}, wp)
	assert.Equal(t, tasks.WebhookTaskID(9, "https://a.example/hook", 0), hook.ID)
	assert.NotEqual(t, tasks.WebhookTaskID(9, "https://a.example/hook", 0), tasks.WebhookTaskID(9, "https://a.example/hook", 1),
		"a replay has a task of its own")

	assert.Equal(t, tasks.TypeOutboxRelay, tasks.NewOutboxRelayTask().Type())
}

// A write's learn job has an id derived from the write, so the write and
// the learn sweep queue it once.
func TestLearnJob(t *testing.T) {
	const s = "5f0c6f43-3b0e-4a8e-9b1f-6d1c2b9a7e10"
	j := tasks.LearnJob(s, 12, 0)
	assert.Equal(t, "learn:"+s+":v12", j.ID)
	assert.Equal(t, tasks.QueueCritical, j.Queue)
	assert.Zero(t, j.Retention, "a second fold folds nothing twice")
	var p tasks.StudentLearnPayload
	require.NoError(t, json.Unmarshal(j.Payload, &p))
	assert.Equal(t, int64(12), p.Version)

	f := tasks.LearnJob(s, 12, 99)
	assert.Equal(t, "learn:"+s+":f99", f.ID, "feedback moves no version")
	var fp tasks.StudentLearnPayload
	require.NoError(t, json.Unmarshal(f.Payload, &fp))
	assert.Zero(t, fp.Version, "always folded")
}
