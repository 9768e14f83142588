package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/testutil"
)

// studentInShard stores a student (as learnEnv.student) whose id falls in
// shard.
func (e *learnEnv) studentInShard(t testing.TB, shard int) string {
	t.Helper()
	require.Less(t, shard, tasks.LearnShards())
	for {
		id := uuid.NewString()
		if tasks.LearnShard(id) != shard {
			continue
		}
		sat, gpa, lat, lon, budget := 1380, 3.8, 39.95, -75.16, 25000
		st, _, err := e.db.SaveStudent(context.Background(), domain.Student{ID: id, Name: "Ada",
			Email: "ada@example.com", GraduationYear: "2027", SAT: &sat, GPA: &gpa, HomeLat: &lat, HomeLon: &lon,
			State: "PA", Budget: &budget, IntendedMajors: []domain.Major{"computer"}})
		require.NoError(t, err)
		return st.ID
	}
}

// mark hands a swipe over as the write side does; queued reports that it
// armed the shard's drain.
func (e *learnEnv) mark(t testing.TB, rec domain.RecordedSwipe) (queued bool) {
	t.Helper()
	n, err := handover.NewClient(e.rdb, handover.NewQueuer()).Queue(context.Background(), tasks.LearnMark(rec.StudentID, rec.Version))
	require.NoError(t, err)
	return n == 1
}

func (e *learnEnv) drain(ctx context.Context, shard int) error {
	b, _ := json.Marshal(tasks.LearnDrainPayload{Shard: shard})
	return e.handler.HandleLearnDrain(ctx, asynq.NewTask(tasks.TypeLearnDrain, b))
}

// drainTasks lists the learn:drain tasks waiting in the critical queue.
func (e *learnEnv) drainTasks(t *testing.T) []*asynq.TaskInfo {
	t.Helper()
	pending, err := asynq.NewInspectorFromRedisClient(e.rdb).ListPendingTasks(tasks.QueueCritical, asynq.PageSize(1000))
	if errors.Is(err, asynq.ErrQueueNotFound) {
		return nil
	}
	require.NoError(t, err)
	var out []*asynq.TaskInfo
	for _, ti := range pending {
		if ti.Type == tasks.TypeLearnDrain {
			out = append(out, ti)
		}
	}
	return out
}

// Swipes of several students of one shard arm one drain task; the drain
// reads them all in one batch, folds each student's swipes once, rebuilds
// each feed to the student's version, and disarms with the shard empty, so
// the next swipe arms a new task.
func TestLearnDrainFoldsAShardInOneBatch(t *testing.T) {
	e := newLearnEnv(t, 120)
	ctx := context.Background()
	schools := e.catalog.Current().Schools
	const shard = 3
	var students []string
	versions := map[string]int64{}
	armed := 0
	for i := range 5 {
		id := e.studentInShard(t, shard)
		students = append(students, id)
		for j := range 3 {
			rec := e.swipe(t, id, schools[i*3+j].ID, []string{"right", "left"}[j%2])
			versions[id] = rec.Version
			if e.mark(t, rec) {
				armed++
			}
		}
	}
	assert.Equal(t, 1, armed, "the first mark arms the shard; the others join it")
	queued := e.drainTasks(t)
	require.Len(t, queued, 1)
	var p tasks.LearnDrainPayload
	require.NoError(t, json.Unmarshal(queued[0].Payload, &p))
	assert.Equal(t, shard, p.Shard)

	require.NoError(t, e.drain(ctx, shard))

	assert.EqualValues(t, 15, e.swipesFolded(), "each swipe folded once")
	batches, students5 := histogram(t, e.lm.DrainBatch)
	assert.EqualValues(t, 1, batches, "one batch")
	assert.EqualValues(t, 5, students5, "of the five students")
	for _, id := range students {
		st := e.state(t, id)
		assert.Equal(t, versions[id], st.studentVersion)
		v, found, err := e.feeds.LearnedVersion(ctx, id)
		require.NoError(t, err)
		require.True(t, found)
		assert.Equal(t, versions[id], v, "the feed is rebuilt with every swipe learned")
	}
	pendingKey, armedKey := tasks.LearnDrainKeys(students[0])
	n, err := e.rdb.Exists(ctx, pendingKey, armedKey).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "the shard is empty and disarmed")

	rec := e.swipe(t, students[0], schools[40].ID, "right")
	assert.True(t, e.mark(t, rec), "the next swipe arms a new drain")
}

// A mark whose score is above what the drain folded (a swipe stored after
// the drain read the student) stays pending; one the fold covered is
// cleared. A student whose backlog is longer than a batch reads is folded
// over several batches, each event once.
func TestLearnDrainClearsOnlyWhatItCovered(t *testing.T) {
	e := newLearnEnv(t, 60)
	ctx := context.Background()
	schools := e.catalog.Current().Schools
	id := e.studentInShard(t, 3)
	rec := e.swipe(t, id, schools[0].ID, "right")
	e.mark(t, rec)
	require.Len(t, e.drainTasks(t), 1)
	pendingKey, _ := tasks.LearnDrainKeys(id)
	// A mark from the future: a write the drain's read cannot have seen.
	require.NoError(t, e.rdb.ZAdd(ctx, pendingKey, redis.Z{Score: float64(rec.Version + 5), Member: id}).Err())

	// The drain folds the swipe but cannot clear the later mark: it runs
	// until its time is up and hands the shard on to a new task.
	defer tasks.SetDrainRun(time.Second)()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	start := time.Now()
	require.NoError(t, e.drain(ctx, 3))
	assert.Greater(t, time.Since(start), time.Second, "it kept the shard while a mark was owed")
	assert.Len(t, e.drainTasks(t), 2, "handed on to a new task (beside the one run here, which no server took)")
	assert.Equal(t, rec.Version, e.state(t, id).studentVersion)
	score, err := e.rdb.ZScore(ctx, pendingKey, id).Result()
	require.NoError(t, err)
	assert.EqualValues(t, rec.Version+5, score, "the later mark stays")
	assert.EqualValues(t, 1, e.swipesFolded(), "folded once, however often read")
}

// Under concurrent swipes, with a real task server running the drains,
// every swipe is learned exactly once, every feed ends at its student's
// version, and every shard ends empty and disarmed: a mark that comes while
// a drain runs is either in its set or arms a new drain.
func TestLearnDrainsKeepUpWithConcurrentSwipes(t *testing.T) {
	e := newLearnEnv(t, 200)
	ctx := context.Background()
	schools := e.catalog.Current().Schools
	srv := asynq.NewServerFromRedisClient(e.rdb, asynq.Config{Concurrency: 4, Queues: tasks.QueuePriorities(),
		LogLevel: asynq.ErrorLevel, ShutdownTimeout: 5 * time.Second})
	mux := asynq.NewServeMux()
	e.handler.Register(mux)
	require.NoError(t, srv.Start(mux))
	defer srv.Shutdown()

	const writers, perWriter, swipesEach = 4, 6, 12
	var (
		mu       sync.Mutex
		versions = map[string]int64{}
		wg       sync.WaitGroup
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids := make([]string, perWriter)
			for i := range ids {
				ids[i] = e.studentInShard(t, (w*perWriter+i)%3) // three shards, many students each
			}
			for j := range swipesEach {
				for i, id := range ids {
					rec := e.swipe(t, id, schools[(i*swipesEach+j)%len(schools)].ID, []string{"right", "left"}[(i+j)%2])
					e.mark(t, rec)
					mu.Lock()
					versions[id] = rec.Version
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()

	require.Eventually(t, func() bool {
		for id, v := range versions {
			lv, found, err := e.feeds.LearnedVersion(ctx, id)
			if err != nil || !found || lv < v {
				return false
			}
		}
		return true
	}, 30*time.Second, 50*time.Millisecond, "every feed learns its student's last swipe")
	require.Eventually(t, func() bool {
		for id := range versions {
			pendingKey, armedKey := tasks.LearnDrainKeys(id)
			if n, err := e.rdb.Exists(ctx, pendingKey, armedKey).Result(); err != nil || n != 0 {
				return false
			}
		}
		return true
	}, 10*time.Second, 50*time.Millisecond, "every shard empty and disarmed")
	assert.EqualValues(t, writers*perWriter*swipesEach, e.swipesFolded(), "each swipe folded exactly once")
	batches, _ := histogram(t, e.lm.DrainBatch)
	assert.Less(t, batches, float64(writers*perWriter*swipesEach), "swipes share batches")
	t.Logf("%d swipes of %d students folded in %.0f batches", writers*perWriter*swipesEach, len(versions), batches)
}

// A drain that fails (PostgreSQL refuses the save) clears nothing: its
// students stay pending, the shard stays armed, and the task's next run
// folds each swipe once.
func TestLearnDrainThatFailsLeavesItsStudentsPending(t *testing.T) {
	e := newLearnEnv(t, 60)
	ctx := context.Background()
	schools := e.catalog.Current().Schools
	const shard = 2
	id := e.studentInShard(t, shard)
	var last domain.RecordedSwipe
	for i := range 3 {
		last = e.swipe(t, id, schools[i].ID, "right")
		e.mark(t, last)
	}
	_, err := e.db.Pool().Exec(ctx, `
CREATE FUNCTION refuse_learning() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'learning refused'; END $$;
CREATE TRIGGER refuse_learning BEFORE INSERT OR UPDATE ON learning_state FOR EACH ROW EXECUTE FUNCTION refuse_learning();`)
	require.NoError(t, err)
	require.Error(t, e.drain(ctx, shard))
	pendingKey, armedKey := tasks.LearnDrainKeys(id)
	n, err := e.rdb.Exists(ctx, pendingKey, armedKey).Result()
	require.NoError(t, err)
	assert.EqualValues(t, 2, n, "still pending and armed")

	_, err = e.db.Pool().Exec(ctx, `DROP TRIGGER refuse_learning ON learning_state`)
	require.NoError(t, err)
	require.NoError(t, e.drain(ctx, shard))
	assert.Equal(t, last.Version, e.state(t, id).studentVersion)
	assert.EqualValues(t, 3, e.swipesFolded())
	n, err = e.rdb.Exists(ctx, pendingKey, armedKey).Result()
	require.NoError(t, err)
	assert.Zero(t, n)
}

// An erased student's mark is cleared with nothing folded, and an erasure
// takes the student out of their shard's pending set.
func TestLearnDrainSkipsErasedStudents(t *testing.T) {
	e := newLearnEnv(t, 60)
	ctx := context.Background()
	schools := e.catalog.Current().Schools
	const shard = 1
	gone, kept := e.studentInShard(t, shard), e.studentInShard(t, shard)
	e.mark(t, e.swipe(t, gone, schools[0].ID, "right"))
	keptRec := e.swipe(t, kept, schools[1].ID, "right")
	e.mark(t, keptRec)
	_, err := e.db.Pool().Exec(ctx, `UPDATE students SET deleted_at = now() WHERE id = $1`, gone)
	require.NoError(t, err)
	require.NoError(t, e.drain(ctx, shard))
	var states int
	require.NoError(t, e.db.Pool().QueryRow(ctx, `SELECT count(*) FROM learning_state WHERE student_id = $1`, gone).Scan(&states))
	assert.Zero(t, states, "nothing learned for an erased student")
	assert.Equal(t, keptRec.Version, e.state(t, kept).studentVersion)

	e.mark(t, e.swipe(t, kept, schools[2].ID, "right"))
	require.NoError(t, tasks.ForgetLearnMarks(ctx, e.rdb, kept))
	pendingKey, _ := tasks.LearnDrainKeys(kept)
	_, err = e.rdb.ZScore(ctx, pendingKey, kept).Result()
	assert.ErrorIs(t, err, redis.Nil, "forgotten")
}

// histogram reads a histogram's count and sum.
func histogram(t *testing.T, h prometheus.Histogram) (count, sum float64) {
	t.Helper()
	var m dto.Metric
	require.NoError(t, h.Write(&m))
	return float64(m.GetHistogram().GetSampleCount()), m.GetHistogram().GetSampleSum()
}

func (e *learnEnv) swipesFolded() float64 {
	return promtest.ToFloat64(e.lm.Events.WithLabelValues("swipe"))
}

// The worker's cost per swipe when 64 students of one shard have swiped
// once each since their last fold, on a 3,000-school catalogue, feeds
// rebuilt into Redis: folded by one learn drain (one read statement, one
// save statement, one Redis round trip for the feeds) against one
// student:learn task per student (the path before drains). The swipes are
// recorded and marked outside the timer.
//
//	go test ./internal/tasks -run XXX -bench 'LearnShard' -benchtime 20x
func BenchmarkLearnShardDrained(b *testing.B)  { benchmarkShard(b, true) }
func BenchmarkLearnShardOneByOne(b *testing.B) { benchmarkShard(b, false) }

func benchmarkShard(b *testing.B, drained bool) {
	const students = 64
	e := newLearnEnvTB(b, 3000)
	ctx := context.Background()
	schools := e.catalog.Current().Schools
	ids := make([]string, students)
	for i := range ids {
		ids[i] = e.studentInShard(b, 0)
	}
	round := 0
	swipeAll := func() {
		for i, id := range ids {
			rec := e.swipe(b, id, schools[(round*students+i*7)%len(schools)].ID, []string{"right", "left"}[(round+i)%3%2])
			if drained {
				e.mark(b, rec)
			}
		}
		round++
	}
	swipeAll() // the first folds start the learned states
	if drained {
		require.NoError(b, e.drain(ctx, 0))
	} else {
		for _, id := range ids {
			require.NoError(b, e.learnErr(ctx, id))
		}
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		swipeAll()
		b.StartTimer()
		if drained {
			require.NoError(b, e.drain(ctx, 0))
			continue
		}
		for _, id := range ids {
			require.NoError(b, e.learnErr(ctx, id))
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*students), "ns/swipe")
}

// A failed learn drain, which keeps its shard armed, runs again within
// seconds (1 s doubling to 30 s, +-20 %), not on asynq's backoff of 15 s
// and more; other tasks keep the schedule they had.
func TestFailedDrainsRetryWithinSeconds(t *testing.T) {
	for n, want := range map[int]time.Duration{0: time.Second, 1: 2 * time.Second, 3: 8 * time.Second, 4: 16 * time.Second,
		5: 30 * time.Second, 20: 30 * time.Second} {
		assert.Equal(t, want, tasks.DrainRetryDelay(n, func() float64 { return 0.5 }), "after failure %d", n)
		assert.Equal(t, time.Duration(float64(want)*0.8), tasks.DrainRetryDelay(n, func() float64 { return 0 }))
		assert.Equal(t, time.Duration(float64(want)*1.2), tasks.DrainRetryDelay(n, func() float64 { return 1 }))
	}
	other := func(int, error, *asynq.Task) time.Duration { return time.Hour }
	delay := tasks.RetryDelayFunc(other)
	assert.LessOrEqual(t, delay(0, errors.New("x"), asynq.NewTask(tasks.TypeLearnDrain, nil)), 1200*time.Millisecond)
	assert.Equal(t, time.Hour, delay(0, errors.New("x"), asynq.NewTask(tasks.TypeStudentLearn, nil)))
}

// During a rolling update an API of an older build marks students in the
// 32-shard spread: LearnPending counts those marks, and an erasure
// forgets them there too.
func TestLegacyShardMarksAreCountedAndForgotten(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBTasks)
	ctx := context.Background()
	// Students whose shard in an older spread is one neither the present
	// spread nor the other older one has.
	for name, c := range map[string]struct {
		shardOf func(string) int
		alone   func(id string) bool
	}{
		"legacy spread of 32": {tasks.LegacyLearnShard, func(id string) bool { return tasks.LegacyLearnShard(id) >= 8 }},
		"former default spread of 8": {tasks.FormerDefaultShard, func(id string) bool {
			return tasks.FormerDefaultShard(id) >= tasks.LearnShards() && tasks.LegacyLearnShard(id) != tasks.FormerDefaultShard(id)
		}},
	} {
		id := uuid.NewString()
		for !c.alone(id) {
			id = uuid.NewString()
		}
		shardOf := c.shardOf
		key, _ := handover.DrainKeys(tasks.QueueCritical, "learn:"+strconv.Itoa(shardOf(id)))
		require.NoError(t, rdb.ZAdd(ctx, key, redis.Z{Score: 3, Member: id}).Err())
		n, err := tasks.LearnPending(ctx, rdb)
		require.NoError(t, err)
		assert.Equal(t, 1, n, name)
		require.NoError(t, tasks.ForgetLearnMarks(ctx, rdb, id))
		n, err = tasks.LearnPending(ctx, rdb)
		require.NoError(t, err)
		assert.Zero(t, n, name)
	}
}

// The shard count is a setting (LEARN_SHARDS): students spread over as
// many shards as it says, each mark's drain task names the student's
// shard, and a count out of range is refused.
func TestLearnShardsIsASetting(t *testing.T) {
	require.NoError(t, tasks.SetLearnShards(64))
	t.Cleanup(func() { require.NoError(t, tasks.SetLearnShards(tasks.DefaultLearnShards)) })
	seen := map[int]bool{}
	for range 2000 {
		id := uuid.NewString()
		n := tasks.LearnShard(id)
		require.Less(t, n, 64)
		seen[n] = true
		var p tasks.LearnDrainPayload
		require.NoError(t, json.Unmarshal(tasks.LearnMark(id, 1).Payload, &p))
		require.Equal(t, n, p.Shard)
	}
	assert.Greater(t, len(seen), 48, "spread over the 64 shards")
	assert.Error(t, tasks.SetLearnShards(0))
	assert.Error(t, tasks.SetLearnShards(1025))
	assert.Equal(t, 64, tasks.LearnShards())
}

// An erasure of many students forgets their marks in every spread, the
// present one and the two older ones, in one round trip.
func TestForgetLearnMarksIsOneRoundTrip(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBTasks)
	ctx := context.Background()
	var ids []string
	for range 20 {
		id := uuid.NewString()
		ids = append(ids, id)
		for _, shard := range []int{tasks.LearnShard(id), tasks.FormerDefaultShard(id), tasks.LegacyLearnShard(id)} {
			key, _ := handover.DrainKeys(tasks.QueueCritical, "learn:"+strconv.Itoa(shard))
			require.NoError(t, rdb.ZAdd(ctx, key, redis.Z{Score: 3, Member: id}).Err())
			require.NoError(t, rdb.ZAdd(ctx, handover.DrainOrder(key), redis.Z{Score: 7, Member: id}).Err())
		}
	}
	kept := uuid.NewString()
	require.NoError(t, rdb.ZAdd(ctx, "learn-unrelated", redis.Z{Score: 1, Member: kept}).Err())
	trips := &tripCounter{}
	rdb.AddHook(trips)
	require.NoError(t, tasks.ForgetLearnMarks(ctx, rdb, ids...))
	assert.Equal(t, 1, trips.n, "round trips")
	n, err := tasks.LearnPending(ctx, rdb)
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.Equal(t, int64(1), rdb.ZCard(ctx, "learn-unrelated").Val())
	orders, err := rdb.Keys(ctx, "drain:{"+tasks.QueueCritical+"}:*:order").Result()
	require.NoError(t, err)
	assert.Empty(t, orders, "their waits are forgotten too")
}

// tripCounter counts a client's round trips: a command or a pipeline each,
// but those a new connection makes to set itself up.
type tripCounter struct{ n int }

var connectionSetup = map[string]bool{"hello": true, "select": true, "client": true, "auth": true}

func (c *tripCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *tripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !connectionSetup[cmd.Name()] {
			c.n++
		}
		return next(ctx, cmd)
	}
}

func (c *tripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && !connectionSetup[cmds[0].Name()] {
			c.n++
		}
		return next(ctx, cmds)
	}
}
