package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/erasure"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/testutil"
)

// learner runs the worker's student:learn task over the API's database
// and Redis, as a worker would.
func (a *testAPI) learner(t *testing.T) func(student string) {
	t.Helper()
	log := testutil.Logger(t)
	reg := prometheus.NewRegistry()
	queries := query.New(query.Config{Students: a.Store, Feeds: cache.NewFeeds(a.Redis, 5*time.Minute), Catalogs: a.Catalog,
		Log: log, Metrics: query.NewMetrics(reg), Probes: cache.NewProbes(a.Redis, 5*time.Minute)})
	h := tasks.NewHandler(tasks.Deps{Log: log, LearnDrains: tasks.NewLearnDrains(a.Redis), Learning: a.Store, Feeds: queries, Catalogs: a.Catalog,
		LearnMetrics: tasks.NewLearnMetrics(reg)})
	return func(student string) {
		t.Helper()
		task, err := tasks.NewStudentLearnTask(student, 0)
		require.NoError(t, err)
		require.NoError(t, h.HandleStudentLearn(context.Background(), asynq.NewTask(task.Type(), task.Payload())))
	}
}

// learnedSwipes is how many swipes the student's learned model holds, -1
// without one.
func (a *testAPI) learnedSwipes(t *testing.T, student string) int {
	t.Helper()
	ex, err := a.Store.ExportStudent(context.Background(), student)
	if domain.KindOf(err) == domain.KindNotFound {
		return -1 // erased: no student, no model
	}
	require.NoError(t, err)
	if ex.LearningState == nil {
		return -1
	}
	m, err := match.DecodeModel(ex.LearningState.ModelBinary)
	require.NoError(t, err)
	return m.Swipes()
}

// erase does what `matchctl students delete ID` does: the erasure in
// PostgreSQL, then the student's Redis keys dropped by name and a feed
// tombstone at the erased version.
func (a *testAPI) erase(t *testing.T, student string) {
	t.Helper()
	ctx := context.Background()
	_, _, redisErr, err := erasure.Erase(ctx, a.Store, a.Redis, student)
	require.NoError(t, err)
	require.NoError(t, redisErr)
}

// After erasure, onboarding again with the same id starts an empty profile:
// no swipe, feedback, category preference, learned weight or sync history
// of before comes back, through any endpoint or the learner; and what is
// kept carries no trace of the id.
func TestErasureIsFinal(t *testing.T) {
	api := newTestAPI(t)
	schools := api.seedSchools(t, 120)
	learn := api.learner(t)
	student, tok := api.newStudent(t, completeProfile())
	ctx := context.Background()

	// A history through every way in.
	for i := range 6 {
		api.swipe(t, tok, map[string]any{"student_id": student, "school_id": schools[i].ID, "direction": []string{"left", "right"}[i%2],
			"swipe_id": uuid.NewString()})
	}
	res := api.do(t, "POST", "/continuous-feed", tok, map[string]any{"student_id": student, "limit": 3,
		"swipes": []any{map[string]any{"school_id": schools[10].ID, "direction": "right"}}})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	res = api.do(t, "POST", "/feedback", tok, map[string]any{"student_id": student, "school_id": schools[1].ID,
		"reason": "too_expensive", "comment": "my mum says no"})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	res = api.do(t, "POST", "/v2/onboarding/category-swipe", tok, map[string]any{"student_id": student,
		"category_id": "tech-engineering", "direction": "right"})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	api.push(t, tok, student, []map[string]any{swipeChange(schools[20], "right")})
	learn(student)
	require.Equal(t, 8, api.learnedSwipes(t, student))
	before := api.pull(t, tok, student, nil)
	require.Len(t, before["swipes"], 8)
	oldCursor := before["cursor"]

	api.erase(t, student)
	res = api.do(t, "POST", "/m/sync/pull", tok, map[string]any{"student_id": student})
	requireErrorBody(t, res, http.StatusNotFound, "INVALID_STUDENT_ID")
	// A learn task queued before the erasure and run after it learns nothing.
	learn(student)
	assert.Equal(t, -1, api.learnedSwipes(t, student))

	// Onboarding again with the same id; a never-seen student with the
	// same profile is what it must look like.
	res = api.do(t, "POST", "/v2/onboarding/minimal", tok, completeProfile())
	require.Contains(t, []int{http.StatusOK, http.StatusCreated}, res.Status, "%s", res.Raw)
	fresh, freshTok := api.newStudent(t, completeProfile())
	learn(student) // a stale task again, now for the new profile
	learn(fresh)

	pulled := api.pull(t, tok, student, nil)
	assert.Empty(t, pulled["swipes"], "sync pull serves nothing from before")
	assert.Empty(t, pulled["feedback"])
	ls := pulled["learning_state"].(map[string]any)
	assert.EqualValues(t, 0, ls["swipe_count"])
	freshLS := api.pull(t, freshTok, fresh, nil)["learning_state"].(map[string]any)
	assert.Equal(t, freshLS["preference_weights"], ls["preference_weights"], "no learned weight or category prior of before")
	assert.Equal(t, freshLS["phase"], ls["phase"])
	again := api.pull(t, tok, student, oldCursor)
	assert.Empty(t, again["swipes"], "a cursor of before finds nothing from before either")
	assert.Empty(t, again["feedback"])

	recs := api.do(t, "POST", "/v2/recommendations", tok, map[string]any{"student_id": student})
	require.Equal(t, http.StatusOK, recs.Status, "%s", recs.Raw)
	freshRecs := api.do(t, "POST", "/v2/recommendations", freshTok, map[string]any{"student_id": fresh})
	require.Equal(t, http.StatusOK, freshRecs.Status, "%s", freshRecs.Raw)
	assert.Equal(t, freshRecs.Body["learning_state"], recs.Body["learning_state"])
	assert.EqualValues(t, 0, recs.Body["total_swipes"])
	assert.Equal(t, len(freshRecs.Body["recommendations"].([]any)), len(recs.Body["recommendations"].([]any)),
		"no school is left out as swiped before")

	ex, err := api.Store.ExportStudent(ctx, student)
	require.NoError(t, err)
	assert.False(t, ex.Erased)
	assert.Empty(t, ex.Swipes)
	assert.Empty(t, ex.Feedback)
	assert.Empty(t, ex.CategoryPreferences)
	assert.Empty(t, ex.OutboxEvents)
	assert.Empty(t, ex.WebhookDeliveries)
	assert.Zero(t, ex.Profile.SwipeCount)
	assert.Nil(t, ex.LearningState, "the learner re-learned nothing")

	// The learner learns the new profile's swipes only.
	api.swipe(t, tok, map[string]any{"student_id": student, "school_id": schools[0].ID, "direction": "right"})
	learn(student)
	assert.Equal(t, 1, api.learnedSwipes(t, student))
	assert.Len(t, api.pull(t, tok, student, nil)["swipes"], 1)

	// What was kept of before carries no trace of the id: the id is only in
	// the new profile's swipe, its event and its learned state.
	assert.Equal(t, 8, api.count(t, `SELECT count(*) FROM anonymous_swipes`))
	for _, table := range []string{"swipes", "feedback", "category_preferences", "learning_state", "outbox",
		"webhook_deliveries", "anonymous_swipes"} {
		assert.Equal(t, map[string]int{"swipes": 1, "outbox": 1, "learning_state": 1}[table],
			api.count(t, `SELECT count(*) FROM `+table+` t WHERE strpos(t::text, $1) > 0`, student), table)
	}
}
