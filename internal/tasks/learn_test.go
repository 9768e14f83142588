package tasks_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/active"
	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/testutil"
)

// learnEnv is the learner over a fresh database with a generated catalogue
// and this package's Redis DB.
type learnEnv struct {
	db      *store.Store
	rdb     *redis.Client
	catalog *active.Holder
	feeds   *cache.Feeds
	queries *query.Service
	reg     *prometheus.Registry
	handler *tasks.Handler
	lm      *tasks.LearnMetrics
	now     time.Time // the handler's clock; zero: time.Now
}

func newLearnEnv(t *testing.T, schools int) *learnEnv { return newLearnEnvTB(t, schools) }

func newLearnEnvTB(t testing.TB, schools int) *learnEnv {
	t.Helper()
	e := &learnEnv{db: store.New(testutil.NewDB(t)), rdb: testutil.NewRedis(t, testutil.RedisDBTasks), reg: prometheus.NewRegistry()}
	ctx := context.Background()
	_, err := e.db.UpsertSchools(ctx, catalog.Generate(schools, 3))
	require.NoError(t, err)
	log := testutil.Logger(t)
	qm := query.NewMetrics(e.reg)
	e.catalog = active.NewHolder(e.db, log, active.NewMetrics(e.reg), time.Hour)
	require.NoError(t, e.catalog.Load(ctx))
	e.feeds = cache.NewFeeds(e.rdb, 5*time.Minute)
	e.queries = query.New(query.Config{Students: e.db, Feeds: e.feeds, Catalogs: e.catalog, Log: log,
		Metrics: qm, Probes: cache.NewProbes(e.rdb, 5*time.Minute)})
	e.lm = tasks.NewLearnMetrics(e.reg)
	e.handler = tasks.NewHandler(tasks.Deps{Log: log, LearnDrains: tasks.NewLearnDrains(e.rdb), Learning: e.db, Feeds: e.queries,
		Catalogs: e.catalog, LearnMetrics: e.lm,
		Now: func() time.Time {
			if e.now.IsZero() {
				return time.Now()
			}
			return e.now
		}})
	return e
}

// student stores a complete profile: home in Philadelphia, a budget, SAT.
func (e *learnEnv) student(t *testing.T) string {
	t.Helper()
	sat, gpa, lat, lon, budget, income, dist := 1380, 3.8, 39.95, -75.16, 25000, 70000, 400
	st, _, err := e.db.SaveStudent(context.Background(), domain.Student{ID: uuid.NewString(), Name: "Ada",
		Email: "ada@example.com", GraduationYear: "2027", SAT: &sat, GPA: &gpa, HomeLat: &lat, HomeLon: &lon,
		State: "PA", Budget: &budget, FamilyIncome: &income, MaxDistanceMiles: &dist,
		IntendedMajors: []domain.Major{"computer"}})
	require.NoError(t, err)
	return st.ID
}

// swipe records a swipe as the write side does.
func (e *learnEnv) swipe(t testing.TB, student, school, direction string, interaction ...string) domain.RecordedSwipe {
	t.Helper()
	kind := domain.InteractionSwipe
	if len(interaction) > 0 {
		kind = interaction[0]
	}
	rec, err := e.db.RecordSwipe(context.Background(), domain.Swipe{StudentID: student, SchoolID: school,
		Direction: direction, Interaction: kind})
	require.NoError(t, err)
	return rec
}

func (e *learnEnv) feedback(t *testing.T, student, school, reason string) {
	t.Helper()
	_, err := e.db.RecordFeedback(context.Background(), domain.Feedback{StudentID: student, SchoolID: school, Reason: reason})
	require.NoError(t, err)
}

// learn runs one student:learn task through the handler.
func (e *learnEnv) learn(t *testing.T, student string) {
	t.Helper()
	require.NoError(t, e.learnErr(context.Background(), student))
}

func (e *learnEnv) learnErr(ctx context.Context, student string) error {
	task, err := tasks.NewStudentLearnTask(student, 0)
	if err != nil {
		return err
	}
	return e.handler.HandleStudentLearn(ctx, asynq.NewTask(task.Type(), task.Payload()))
}

// state reads the stored learning state.
type learnRow struct {
	model                       match.Model
	weights                     match.Weights
	lastSwipe, lastFeedback, lv int64
	studentVersion              int64
}

func (e *learnEnv) state(t *testing.T, student string) learnRow {
	t.Helper()
	var (
		r          learnRow
		model, wts []byte
		noJSON     bool
	)
	require.NoError(t, e.db.Pool().QueryRow(context.Background(), `
SELECT ls.model_bin, ls.model IS NULL, ls.weights, ls.last_swipe_id, ls.last_feedback_id, ls.version, s.version
FROM students s JOIN learning_state ls ON ls.student_id = s.id WHERE s.id = $1`, student).
		Scan(&model, &noJSON, &wts, &r.lastSwipe, &r.lastFeedback, &r.lv, &r.studentVersion))
	assert.True(t, noJSON, "a save leaves no JSON form behind")
	var err error
	r.model, err = match.DecodeModel(model)
	require.NoError(t, err)
	want, err := r.model.MarshalBinary()
	require.NoError(t, err)
	assert.Equal(t, want, model, "the model is stored in its binary form")
	var m map[string]float64
	require.NoError(t, json.Unmarshal(wts, &m))
	r.weights = match.WeightsFromMap(m)
	assert.Equal(t, r.model.Weights().Map(), m, "weights are the model's")
	return r
}

func (e *learnEnv) studentVersion(t *testing.T, student string) int64 {
	t.Helper()
	v, err := e.db.StudentVersion(context.Background(), student)
	require.NoError(t, err)
	return v
}

// profile is the scoring view and prior the learner uses for the student.
func (e *learnEnv) profile(t *testing.T, student string) (match.Profile, match.Weights) {
	t.Helper()
	st, err := e.db.Student(context.Background(), student)
	require.NoError(t, err)
	return match.CategoryStart(match.NewProfile(st), nil)
}

// schoolsWhere lists up to n catalogue ids whose detail for the student satisfies keep.
func (e *learnEnv) schoolsWhere(t *testing.T, student string, n int, keep func(d match.MatchDetail) bool) []string {
	t.Helper()
	p, w := e.profile(t, student)
	cat := e.catalog.Current().Catalog
	var out []string
	for i := 0; i < cat.Len() && len(out) < n; i++ {
		if keep(match.Detail(p, w, cat, i)) {
			out = append(out, cat.Schools[i].ID)
		}
	}
	return out
}

func histogramCount(t *testing.T, reg *prometheus.Registry, name string) uint64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

func TestLearnFoldsOnceAndRebuildsTheFeed(t *testing.T) {
	e := newLearnEnv(t, 600)
	ctx := context.Background()
	student := e.student(t)
	cat := e.catalog.Current()
	var swiped []string
	var last int64
	for i := range 6 {
		id := cat.Schools[i*7].ID
		swiped = append(swiped, id)
		last = e.swipe(t, student, id, []string{"right", "left"}[i%2]).ID
	}
	e.swipe(t, student, cat.Schools[100].ID, "right", "save")
	e.feedback(t, student, cat.Schools[7].ID, match.ReasonTooExpensive)

	e.learn(t, student)
	first := e.state(t, student)
	assert.Equal(t, 6, first.model.Swipes())
	assert.Equal(t, 1, first.model.Signals())
	assert.Equal(t, 1, first.model.FeedbackCount())
	assert.EqualValues(t, 1, first.lv, "a new learning state starts at version 1")
	assert.Equal(t, last+1, first.lastSwipe, "the save came after the last swipe")
	assert.Positive(t, first.lastFeedback)

	// The feed is rebuilt with the new state: its version, its weights,
	// no swiped school.
	f, err := e.feeds.Feed(ctx, student)
	require.NoError(t, err)
	assert.Equal(t, first.studentVersion, f.StudentVersion)
	assert.Equal(t, 6, f.TotalSwipes)
	assert.Equal(t, cat.Len()-6, f.TotalCount)
	assert.Equal(t, first.model.Weights().Map(), f.Weights)
	for _, it := range f.Range(0, f.Len()) {
		assert.NotContains(t, swiped, it.SchoolID.String())
	}
	assert.EqualValues(t, 7, histogramCount(t, e.reg, "matching_feed_lag_seconds"), "one lag per swipe folded (the save too)")

	// The same task again changes nothing more: same state, same feed.
	e.learn(t, student)
	again := e.state(t, student)
	assert.Equal(t, first.lv, again.lv)
	assert.Equal(t, first.studentVersion, again.studentVersion)
	assert.Equal(t, first.model, again.model)
	g, err := e.feeds.Feed(ctx, student)
	require.NoError(t, err)
	assert.Equal(t, f.BuiltAt, g.BuiltAt, "the stored feed was current: not rebuilt")
	assert.EqualValues(t, 7, histogramCount(t, e.reg, "matching_feed_lag_seconds"))

	// A dropped feed is rebuilt by the next task even with nothing to fold.
	require.NoError(t, e.feeds.Delete(ctx, student))
	e.learn(t, student)
	g, err = e.feeds.Feed(ctx, student)
	require.NoError(t, err)
	assert.Equal(t, first.studentVersion, g.StudentVersion)
	assert.Equal(t, first.lv, e.state(t, student).lv)

	// A new swipe is folded on top, incrementally.
	e.swipe(t, student, cat.Schools[300].ID, "right")
	e.learn(t, student)
	next := e.state(t, student)
	assert.Equal(t, 7, next.model.Swipes())
	assert.Equal(t, first.lv+1, next.lv)
	assert.Greater(t, next.studentVersion, first.studentVersion)
}

func TestConsistentSwipesMoveWeightsThroughTheWorker(t *testing.T) {
	e := newLearnEnv(t, 1500)
	student := e.student(t)
	_, prior := e.profile(t, student)
	const budget, maxDist = 25000.0, 400.0
	cheapNear := e.schoolsWhere(t, student, 15, func(d match.MatchDetail) bool {
		return d.NetPrice.Known() && float64(d.NetPrice.Amount) < 0.7*budget && d.Distance >= 0 && d.Distance < 0.6*maxDist
	})
	dearFar := e.schoolsWhere(t, student, 15, func(d match.MatchDetail) bool {
		return float64(d.NetPrice.Amount) > 1.1*budget && d.Distance > 1.5*maxDist
	})
	require.Len(t, cheapNear, 15)
	require.Len(t, dearFar, 15)
	for k := range 15 {
		e.swipe(t, student, cheapNear[k], "right")
		e.swipe(t, student, dearFar[k], "left")
		if k%5 == 4 {
			e.learn(t, student) // folded in several steps, as tasks arrive
		}
	}
	w := e.state(t, student).weights
	assert.Greater(t, w.CostWeight, prior.CostWeight+0.05, "cost_weight %v -> %v", prior.CostWeight, w.CostWeight)
	assert.Greater(t, w.DistanceWeight, prior.DistanceWeight+0.05, "distance_weight %v -> %v", prior.DistanceWeight, w.DistanceWeight)

	// Folding in steps is folding all at once.
	p, _ := e.profile(t, student)
	cat := e.catalog.Current().Catalog
	var hist []match.Observation
	for k := range 15 {
		a, _ := cat.Index(cheapNear[k])
		b, _ := cat.Index(dearFar[k])
		hist = append(hist, match.SwipeObservation(a, match.Like), match.SwipeObservation(b, match.Dislike))
	}
	assert.Equal(t, match.Fold(prior, p, cat, hist).Weights(), w)
}

func TestFeedbackMovesWeightsThroughTheWorker(t *testing.T) {
	e := newLearnEnv(t, 400)
	cat := e.catalog.Current()
	for _, c := range []struct {
		reason string
		moved  func(before, after match.Weights) bool
	}{
		{match.ReasonTooExpensive, func(b, a match.Weights) bool { return a.CostWeight > b.CostWeight+0.01 }},
		{match.ReasonWrongLocation, func(b, a match.Weights) bool { return a.DistanceWeight > b.DistanceWeight+0.01 }},
		{match.ReasonNotMyMajor, func(b, a match.Weights) bool { return a.ProgramWeight > b.ProgramWeight+0.01 }},
		{match.ReasonTooSelective, func(b, a match.Weights) bool { return a.AcademicSelectivity < b.AcademicSelectivity-0.01 }},
		{match.ReasonPerfectMatch, func(b, a match.Weights) bool { return a != b }},
	} {
		t.Run(c.reason, func(t *testing.T) {
			student := e.student(t)
			// A few swipes first, so feedback acts on a learned model.
			for i := range 3 {
				e.swipe(t, student, cat.Schools[i*11].ID, "right")
			}
			e.learn(t, student)
			before := e.state(t, student)
			e.feedback(t, student, cat.Schools[50].ID, c.reason)
			e.learn(t, student)
			after := e.state(t, student)
			assert.True(t, c.moved(before.weights, after.weights), "%v -> %v", before.weights, after.weights)
			assert.Equal(t, 1, after.model.FeedbackCount())
			assert.Equal(t, before.lv+1, after.lv)
		})
	}
}

func TestRepeatSwipeKeepsTheLatestDirection(t *testing.T) {
	e := newLearnEnv(t, 400)
	student := e.student(t)
	cat := e.catalog.Current()
	p, prior := e.profile(t, student)
	x, y := cat.Schools[10].ID, cat.Schools[20].ID
	e.swipe(t, student, x, "right")
	e.swipe(t, student, y, "left")
	e.learn(t, student)
	e.swipe(t, student, x, "left") // changes its mind
	e.learn(t, student)

	st := e.state(t, student)
	xi, _ := cat.Index(x)
	yi, _ := cat.Index(y)
	want := match.Fold(prior, p, cat.Catalog, []match.Observation{match.SwipeObservation(yi, match.Dislike),
		match.SwipeObservation(xi, match.Dislike)})
	assert.Equal(t, want.Weights(), st.weights, "the first direction on x is gone")
	assert.Equal(t, 2, st.model.Swipes(), "one swipe per school")
	f, err := e.feeds.Feed(context.Background(), student)
	require.NoError(t, err)
	assert.Equal(t, 3, f.TotalSwipes, "yet all three are counted")
	assert.Equal(t, cat.Len()-2, f.TotalCount)
}

func TestConcurrentLearnTasksFoldEachSwipeOnce(t *testing.T) {
	e := newLearnEnv(t, 400)
	student := e.student(t)
	cat := e.catalog.Current()
	for i := range 12 {
		e.swipe(t, student, cat.Schools[i*3].ID, "right")
	}
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() { errs[i] = e.learnErr(context.Background(), student) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	st := e.state(t, student)
	assert.Equal(t, 12, st.model.Swipes())
	assert.EqualValues(t, 1, st.lv, "one task stored its fold, the others found nothing new")
}

// A burst of swipes is one fold and one rebuild: a task whose write an
// earlier fold took in ends without reading the database.
func TestLearnTasksOfABurstCoalesce(t *testing.T) {
	e := newLearnEnv(t, 400)
	student := e.student(t)
	cat := e.catalog.Current()
	var versions []int64
	for i := range 5 {
		versions = append(versions, e.swipe(t, student, cat.Schools[i*3].ID, "right").Version)
	}
	run := func(version int64) {
		t.Helper()
		task, err := tasks.NewStudentLearnTask(student, version)
		require.NoError(t, err)
		require.NoError(t, e.handler.HandleStudentLearn(context.Background(), task))
	}
	run(versions[0]) // folds all five
	assert.Equal(t, 5, e.state(t, student).model.Swipes())
	for _, v := range versions[1:] {
		run(v)
	}
	assert.EqualValues(t, 1, e.state(t, student).lv, "one fold")
	assert.Equal(t, 4.0, counterValue(t, e.reg, "matching_learn_coalesced_total"), "four tasks found their swipe folded")
}

func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

func TestLearnInterruptedBeforeCommitLosesNothing(t *testing.T) {
	e := newLearnEnv(t, 400)
	student := e.student(t)
	cat := e.catalog.Current()
	for i := range 5 {
		e.swipe(t, student, cat.Schools[i*5].ID, "right")
	}
	versionBefore := e.studentVersion(t, student)

	// The worker dies in the middle of the fold, before it stores the
	// result: the context ends between the read and the write.
	ctx, cancel := context.WithCancel(context.Background())
	st, err := e.db.LearnerState(ctx, student)
	require.NoError(t, err)
	require.Len(t, st.New, 5)
	cancel()
	_, _, err = e.db.SaveLearning(ctx, student, st.LearningVersion, domain.LearningUpdate{Model: []byte(`{}`),
		StudentCreatedAt: st.Student.CreatedAt})
	require.Error(t, err)

	var n int
	require.NoError(t, e.db.Pool().QueryRow(context.Background(),
		`SELECT count(*) FROM learning_state WHERE student_id = $1`, student).Scan(&n))
	assert.Zero(t, n, "nothing was stored")
	assert.Equal(t, versionBefore, e.studentVersion(t, student))

	// The retried task folds every swipe exactly once.
	e.learn(t, student)
	assert.Equal(t, 5, e.state(t, student).model.Swipes())
	e.learn(t, student)
	assert.Equal(t, 5, e.state(t, student).model.Swipes())
}

func TestLearnSkipsErasedAndUnknownStudents(t *testing.T) {
	e := newLearnEnv(t, 200)
	student := e.student(t)
	e.swipe(t, student, e.catalog.Current().Schools[0].ID, "right")
	_, err := e.db.DeleteStudent(context.Background(), student)
	require.NoError(t, err)
	e.learn(t, student)
	var n int
	require.NoError(t, e.db.Pool().QueryRow(context.Background(),
		`SELECT count(*) FROM learning_state WHERE student_id = $1`, student).Scan(&n))
	assert.Zero(t, n)
	_, err = e.feeds.Header(context.Background(), student)
	assert.ErrorIs(t, err, cache.ErrNotBuilt)

	e.learn(t, uuid.NewString())
	err = e.handler.HandleStudentLearn(context.Background(), asynq.NewTask(tasks.TypeStudentLearn, []byte("{")))
	assert.ErrorIs(t, err, asynq.SkipRetry)
}

func TestLearnReloadsACatalogueThatMissesASwipedSchool(t *testing.T) {
	e := newLearnEnv(t, 200)
	student := e.student(t)
	// A school added after the worker loaded its catalogue, swiped at once.
	added := catalog.Generate(201, 3)[200]
	added.ID = uuid.NewString()
	_, err := e.db.UpsertSchools(context.Background(), []domain.School{added})
	require.NoError(t, err)
	_, known := e.catalog.Current().Index(added.ID)
	require.False(t, known)
	e.swipe(t, student, added.ID, "right")
	e.swipe(t, student, e.catalog.Current().Schools[3].ID, "left")

	e.learn(t, student)
	assert.Equal(t, 2, e.state(t, student).model.Swipes(), "the catalogue is reloaded, no swipe is skipped")
	_, known = e.catalog.Current().Index(added.ID)
	assert.True(t, known)
}

// A stored model that does not decode (another version's) is refolded from
// the history; one that decodes is folded on from where it stood.
func TestLearnRefoldsAModelThatDoesNotDecode(t *testing.T) {
	cat := active.NewCatalog(catalog.Generate(50, 3), 1)
	school := cat.Catalog.Schools[7].ID
	st := domain.LearnerState{Student: domain.Student{ID: uuid.NewString(), IntendedMajors: []domain.Major{"biology"}},
		New: []domain.LearnEvent{{SwipeID: 1, SchoolID: school, Direction: "right", Interaction: domain.InteractionSwipe, Seq: 1}}}
	history := 0
	read := func() ([]domain.LearnEvent, error) { history++; return st.New, nil }

	up, rebuilt, err := tasks.Learn(st, cat.Catalog, read)
	require.NoError(t, err)
	assert.False(t, rebuilt, "nothing stored: folded on")
	assert.Zero(t, history)

	st.Model, st.New = up.Model, []domain.LearnEvent{{SwipeID: 2, SchoolID: cat.Catalog.Schools[9].ID,
		Direction: "left", Interaction: domain.InteractionSwipe, Seq: 2}}
	_, rebuilt, err = tasks.Learn(st, cat.Catalog, read)
	require.NoError(t, err)
	assert.False(t, rebuilt, "the stored model decodes: folded on")
	assert.Zero(t, history)

	st.Model = []byte(`{"version": "another"}`)
	_, rebuilt, err = tasks.Learn(st, cat.Catalog, read)
	require.NoError(t, err)
	assert.True(t, rebuilt, "the stored model does not decode: refolded")
	assert.Equal(t, 1, history)
}
