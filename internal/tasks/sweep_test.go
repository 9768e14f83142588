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

// The learn sweep queues again the learn task of a student whose swipes
// their learned state lacks, under the id the write used, and under an id
// of its own when the debt is still there a pass later; one replica leads
// each pass.
func TestLearnSweepQueuesLostLearnTasks(t *testing.T) {
	ctx := context.Background()
	e := newLearnEnv(t, 50)
	queue := handover.NewClient(e.rdb, handover.NewQueuer())
	cat := e.catalog.Current()
	a, b := e.student(t), e.student(t)
	rec := e.swipe(t, a, cat.Schools[0].ID, "right")
	e.swipe(t, b, cat.Schools[1].ID, "left")
	e.learn(t, b) // b's is learned
	// Older than the grace, younger than what the cursor moves past.
	_, err := e.db.Pool().Exec(ctx, `UPDATE swipes SET created_at = now() - interval '30 seconds'`)
	require.NoError(t, err)

	sweep := tasks.NewLearnSweep(testutil.Logger(t), e.db, queue, handover.NewLeader(e.rdb, "test"), prometheus.NewRegistry(),
		tasks.LearnSweepConfig{Interval: time.Second, Grace: 10 * time.Second})
	n, err := sweep.Pass(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	insp := asynq.NewInspectorFromRedisClient(e.rdb)
	ti, err := insp.GetTaskInfo(tasks.QueueCritical, tasks.LearnJob(a, rec.Version, 0).ID)
	require.NoError(t, err, "under the id the swipe's own task had")
	assert.Equal(t, tasks.TypeStudentLearn, ti.Type)

	// Another replica within the interval does nothing.
	other := tasks.NewLearnSweep(testutil.Logger(t), e.db, queue, handover.NewLeader(e.rdb, "other"), prometheus.NewRegistry(),
		tasks.LearnSweepConfig{Interval: time.Second})
	n, err = other.Pass(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "another replica leads this pass")

	// Still unlearned a pass later, as when the task under that id is held
	// by a worker that died (asynq keeps it active until its lease runs
	// out): the sweep queues it under an id of its own, which is not
	// refused. The handler folds once whichever runs first.
	require.NoError(t, e.rdb.Del(ctx, "lead:learn-sweep").Err())
	n, err = sweep.Pass(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "queued again under a new id")
	pending, err := insp.ListPendingTasks(tasks.QueueCritical)
	require.NoError(t, err)
	var ids []string
	for _, ti := range pending {
		ids = append(ids, ti.ID)
	}
	assert.Len(t, ids, 2, "the write's id and the sweep's: %v", ids)
	require.NoError(t, e.rdb.Del(ctx, "lead:learn-sweep").Err())
	n, err = sweep.Pass(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "one second id at most: a debt waiting in a long queue does not pile up tasks")

	// Once learned, nothing is owed.
	e.learn(t, a)
	require.NoError(t, e.rdb.FlushDB(ctx).Err())
	n, err = sweep.Pass(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
}

// Redis loses its data (a restart without persistence) while learn tasks
// wait in the queue, events older than what the sweep's cursor moves past:
// a queued task is not a learned event, so the cursor waited below them,
// the next pass queues the student's task again and the learned state
// catches up with every swipe and feedback.
func TestLearnSweepRedrivesWhatRedisLost(t *testing.T) {
	ctx := context.Background()
	e := newLearnEnv(t, 50)
	queue := handover.NewClient(e.rdb, handover.NewQueuer())
	cat := e.catalog.Current()
	a, b := e.student(t), e.student(t)
	var last domain.RecordedSwipe
	for i := range 3 {
		last = e.swipe(t, a, cat.Schools[i].ID, "right")
	}
	fb, err := e.db.RecordFeedback(ctx, domain.Feedback{StudentID: a, SchoolID: cat.Schools[0].ID, Reason: "too_expensive"})
	require.NoError(t, err)
	newest := e.swipe(t, b, cat.Schools[1].ID, "left")
	e.learn(t, b)
	// The writes queued a's task, which waits (the workers are busy or
	// paused) past the time the cursor moves past settled events.
	_, err = queue.Queue(ctx, tasks.LearnJob(a, e.studentVersion(t, a), fb.ID))
	require.NoError(t, err)
	for _, table := range []string{"swipes", "feedback"} {
		_, err = e.db.Pool().Exec(ctx, `UPDATE `+table+` SET created_at = now() - interval '2 minutes'`)
		require.NoError(t, err)
	}

	sweep := tasks.NewLearnSweep(testutil.Logger(t), e.db, queue, handover.NewLeader(e.rdb, "test"), prometheus.NewRegistry(),
		tasks.LearnSweepConfig{Interval: time.Second, Grace: 10 * time.Second})
	n, err := sweep.Pass(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "a's task is in the queue")
	cur, err := e.db.LearnSweepCursor(ctx)
	require.NoError(t, err)
	assert.Less(t, cur.SwipeID, last.ID-2, "the cursor waits below a's first unlearned swipe")
	assert.Less(t, cur.FeedbackID, fb.ID, "and below its feedback")

	require.NoError(t, e.rdb.FlushDB(ctx).Err(), "Redis loses its data, the queued task with it")
	n, err = sweep.Pass(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the sweep queues a's task again")

	srv := asynq.NewServerFromRedisClient(e.rdb, asynq.Config{Concurrency: 1, Queues: map[string]int{tasks.QueueCritical: 1},
		TaskCheckInterval: 20 * time.Millisecond, LogLevel: asynq.FatalLevel})
	mux := asynq.NewServeMux()
	e.handler.Register(mux)
	require.NoError(t, srv.Start(mux))
	t.Cleanup(srv.Shutdown)
	require.Eventually(t, func() bool {
		var swipe, feedback int64
		err := e.db.Pool().QueryRow(ctx, `SELECT last_swipe_id, last_feedback_id FROM learning_state WHERE student_id = $1`, a).
			Scan(&swipe, &feedback)
		return err == nil && swipe == last.ID && feedback == fb.ID
	}, 10*time.Second, 20*time.Millisecond, "every swipe and the feedback learned")

	// Learned: the cursor moves past everything and nothing is owed.
	require.NoError(t, e.rdb.Del(ctx, "lead:learn-sweep").Err())
	n, err = sweep.Pass(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
	cur, err = e.db.LearnSweepCursor(ctx)
	require.NoError(t, err)
	assert.Equal(t, newest.ID, cur.SwipeID)
	assert.Equal(t, fb.ID, cur.FeedbackID)
}
