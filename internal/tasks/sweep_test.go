package tasks_test

import (
	"context"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/testutil"
)

// newSweep is a learn sweep over e whose grace the tests' aged events are
// past; pass runs a pass as if the lease had lapsed since the last.
func (e *learnEnv) newSweep(t *testing.T, reg *prometheus.Registry) (pass func() int) {
	t.Helper()
	queue := handover.NewClient(e.rdb, handover.NewQueuer())
	sweep := tasks.NewLearnSweep(testutil.Logger(t), e.db, tasks.NewLearnDrains(e.rdb), queue, handover.NewLeader(e.rdb, "test"),
		reg, tasks.LearnSweepConfig{Interval: time.Second, Grace: 10 * time.Second})
	return func() int {
		t.Helper()
		require.NoError(t, e.rdb.Del(context.Background(), "lead:learn-sweep").Err())
		n, err := sweep.Pass(context.Background())
		require.NoError(t, err)
		return n
	}
}

// age makes every swipe and feedback older than the sweep's grace, younger
// than what its cursor moves past.
func (e *learnEnv) age(t *testing.T, by string) {
	t.Helper()
	for _, table := range []string{"swipes", "feedback"} {
		_, err := e.db.Pool().Exec(context.Background(), `UPDATE `+table+` SET created_at = now() - $1::interval`, by)
		require.NoError(t, err)
	}
}

// pendingMarks lists the students marked in the learn drain of student's shard.
func (e *learnEnv) pendingMarks(t *testing.T, student string) []string {
	t.Helper()
	pending, _ := tasks.LearnDrainKeys(student)
	ids, err := e.rdb.ZRange(context.Background(), pending, 0, -1).Result()
	require.NoError(t, err)
	return ids
}

// workOff runs a worker until every one of students has learned their
// newest swipe.
func (e *learnEnv) workOff(t *testing.T, last map[string]int64) {
	t.Helper()
	srv := asynq.NewServerFromRedisClient(e.rdb, asynq.Config{Concurrency: 2, Queues: map[string]int{tasks.QueueCritical: 1},
		TaskCheckInterval: 20 * time.Millisecond, LogLevel: asynq.FatalLevel})
	mux := asynq.NewServeMux()
	e.handler.Register(mux)
	require.NoError(t, srv.Start(mux))
	defer srv.Shutdown()
	require.Eventually(t, func() bool {
		for student, swipe := range last {
			var learned int64
			err := e.db.Pool().QueryRow(context.Background(), `SELECT last_swipe_id FROM learning_state WHERE student_id = $1`, student).
				Scan(&learned)
			if err != nil || learned < swipe {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond, "every swipe learned")
}

// The learn sweep leaves a student whose mark waits in an armed learn
// drain to that drain: it reads and queues nothing for them (the drain
// folds them; at a high rate drains lag by more than the grace, and a
// re-read each would be their work done twice). A student whose mark was
// lost (never set, or set in a drain whose task died and whose arm lapsed)
// is marked again, which arms their shard's drain, and is folded.
func TestLearnSweepLeavesMarkedStudentsToTheirDrains(t *testing.T) {
	ctx := context.Background()
	e := newLearnEnv(t, 50)
	cat := e.catalog.Current()
	a := e.studentInShard(t, 1)
	b := e.studentInShard(t, 2)
	c := e.studentInShard(t, 3)
	recA := e.swipe(t, a, cat.Schools[0].ID, "right")
	require.True(t, e.mark(t, recA), "a's swipe arms a's shard")
	recB := e.swipe(t, b, cat.Schools[1].ID, "left") // its mark is lost
	e.swipe(t, c, cat.Schools[2].ID, "left")
	e.learn(t, c) // c's is learned
	e.age(t, "30 seconds")
	reg := prometheus.NewRegistry()
	pass := e.newSweep(t, reg)

	require.Len(t, e.drainTasks(t), 1, "a's drain")
	assert.Equal(t, 1, pass(), "b only: a waits in an armed drain, c is learned")
	drains := e.drainTasks(t)
	require.Len(t, drains, 2, "a's drain, and b's, which b's new mark armed")
	var payloads []string
	for _, d := range drains {
		payloads = append(payloads, string(d.Payload))
	}
	assert.ElementsMatch(t, []string{`{"shard":1}`, `{"shard":2}`}, payloads)
	assert.Equal(t, []string{b}, e.pendingMarks(t, b))
	assert.Equal(t, []string{a}, e.pendingMarks(t, a), "a's mark as the swipe set it")
	pending, err := asynq.NewInspectorFromRedisClient(e.rdb).ListPendingTasks(tasks.QueueCritical)
	require.NoError(t, err)
	for _, ti := range pending {
		assert.Equal(t, tasks.TypeLearnDrain, ti.Type, "no student:learn task: nobody is read alone")
	}
	assert.Zero(t, pass(), "both wait in armed drains now")

	// a's drain task dies and its arm lapses: a's mark is there, but no
	// drain will run for it; the next pass arms the shard again.
	insp := asynq.NewInspectorFromRedisClient(e.rdb)
	for _, d := range e.drainTasks(t) {
		if string(d.Payload) == `{"shard":1}` {
			require.NoError(t, insp.DeleteTask(tasks.QueueCritical, d.ID))
		}
	}
	_, armA := tasks.LearnDrainKeys(a)
	require.NoError(t, e.rdb.Del(ctx, armA).Err())
	assert.Equal(t, 1, pass(), "a, whose drain lapsed")
	assert.Len(t, e.drainTasks(t), 2)
	assert.Equal(t, 2.0, counterValue(t, reg, "matching_learn_requeued_total"), "b, then a")

	e.workOff(t, map[string]int64{a: recA.ID, b: recB.ID})
	assert.Zero(t, pass(), "nothing is owed once learned")
}

// Redis loses its data (a restart without persistence) while students
// wait in learn drains, with events older than what the sweep's cursor
// moves past: a mark is not a learned event, so the cursor waited below
// them, and the next pass marks the student again; the learned state
// catches up with every swipe and feedback.
func TestLearnSweepRedrivesWhatRedisLost(t *testing.T) {
	ctx := context.Background()
	e := newLearnEnv(t, 50)
	cat := e.catalog.Current()
	a, b := e.student(t), e.student(t)
	var last domain.RecordedSwipe
	for i := range 3 {
		last = e.swipe(t, a, cat.Schools[i].ID, "right")
		e.mark(t, last)
	}
	fb, err := e.db.RecordFeedback(ctx, domain.Feedback{StudentID: a, SchoolID: cat.Schools[0].ID, Reason: "too_expensive"})
	require.NoError(t, err)
	newest := e.swipe(t, b, cat.Schools[1].ID, "left")
	e.learn(t, b)
	// a's marks wait (the workers are busy or paused) past the time the
	// cursor moves past settled events.
	e.age(t, "2 minutes")
	pass := e.newSweep(t, prometheus.NewRegistry())

	assert.Zero(t, pass(), "a waits in an armed drain")
	cur, err := e.db.LearnSweepCursor(ctx)
	require.NoError(t, err)
	assert.Less(t, cur.SwipeID, last.ID-2, "the cursor waits below a's first unlearned swipe")
	assert.Less(t, cur.FeedbackID, fb.ID, "and below its feedback")

	require.NoError(t, e.rdb.FlushDB(ctx).Err(), "Redis loses its data, the marks and the drain's task with it")
	assert.Equal(t, 1, pass(), "the sweep marks a again")
	e.workOff(t, map[string]int64{a: last.ID})
	var folded int64
	require.NoError(t, e.db.Pool().QueryRow(ctx, `SELECT last_feedback_id FROM learning_state WHERE student_id = $1`, a).Scan(&folded))
	assert.Equal(t, fb.ID, folded, "the feedback learned with the swipes")

	// Learned: the cursor moves past everything and nothing is owed.
	assert.Zero(t, pass())
	cur, err = e.db.LearnSweepCursor(ctx)
	require.NoError(t, err)
	assert.Equal(t, newest.ID, cur.SwipeID)
	assert.Equal(t, fb.ID, cur.FeedbackID)
}
