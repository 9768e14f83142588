package httpapi_test

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/command"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/testutil"
)

// swipe posts one swipe and requires a 200.
func (a *testAPI) swipe(t testing.TB, tok string, body map[string]any) map[string]any {
	t.Helper()
	res := a.do(t, "POST", "/swipe", tok, body)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	return res.Body
}

// count runs a query returning one integer.
func (a *testAPI) count(t testing.TB, q string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, a.Pool.QueryRow(context.Background(), q, args...).Scan(&n))
	return n
}

func TestSwipeCountsPhasesAndTexts(t *testing.T) {
	api := newTestAPI(t)
	schools := api.seedSchools(t, 400)
	id, tok := api.newStudent(t, completeProfile())

	for i := 1; i <= 35; i++ {
		body := api.swipe(t, tok, map[string]any{"student_id": id, "school_id": schools[i].ID,
			"direction": []string{"left", "right"}[i%2], "time_spent": 1.5})
		assert.Equal(t, sorted("success", "swipe_count", "learning_phase", "ui_message", "learning_state",
			"trigger_feedback", "feedback_options"), keys(body))
		require.EqualValues(t, i, body["swipe_count"], "swipe %d", i)
		phase, text := "discovery", "Learning your preferences..."
		switch {
		case i > 30:
			phase, text = "stable", "Personalized for you"
		case i > 10:
			phase, text = "refinement", "Refining matches..."
		}
		assert.Equal(t, true, body["success"])
		assert.Equal(t, phase, body["learning_phase"], "swipe %d", i)
		assert.Equal(t, text, body["ui_message"], "swipe %d", i)
		ls := body["learning_state"].(map[string]any)
		assert.Equal(t, sorted("phase", "progress", "updated_weights"), keys(ls))
		assert.Equal(t, phase, ls["phase"])
		assert.InDelta(t, math.Min(float64(i)/31, 1), ls["progress"], 1e-4)
		assert.IsType(t, true, ls["updated_weights"])
		assert.Equal(t, []any{"too_expensive", "wrong_location", "not_my_major", "too_selective", "perfect_match"},
			body["feedback_options"])

		// Every read after the answer shows the count and the phase.
		if i == 10 || i == 11 || i == 30 || i == 31 {
			recs := api.do(t, "POST", "/recommendations", tok, map[string]any{"student_id": id, "limit": 5})
			require.Equal(t, http.StatusOK, recs.Status, "%s", recs.Raw)
			assert.EqualValues(t, i, recs.Body["total_swipes"])
			assert.Equal(t, phase, recs.Body["metadata"].(map[string]any)["learning_phase"])
		}
	}
	assert.Equal(t, 35, api.count(t, `SELECT swipe_count FROM students WHERE id = $1`, id))
	assert.Equal(t, 35, api.count(t, `SELECT count(*) FROM swipes WHERE student_id = $1 AND counted`, id))
	assert.Equal(t, 35, api.count(t, `SELECT count(*) FROM outbox WHERE student_id = $1 AND topic = 'swipe.recorded'`, id))
	assert.Equal(t, 0, api.count(t, `SELECT count(*) FROM swipes WHERE student_id = $1 AND swipe_count IS NULL`, id),
		"every swipe keeps what a retry's answer is derived from")
}

func TestSwipeWritesItsEventAndQueuesTheLearner(t *testing.T) {
	api := newTestAPI(t)
	schools := api.seedSchools(t, 400)
	id, tok := api.newStudent(t, completeProfile())

	before := time.Now().UTC().Add(-time.Second)
	api.swipe(t, tok, map[string]any{"student_id": id, "school_id": strings.ToUpper(schools[3].ID), "direction": "right"})

	var (
		outboxID  int64
		payload   map[string]any
		published bool
		swipeID   int64
	)
	require.NoError(t, api.Pool.QueryRow(context.Background(),
		`SELECT o.id, o.payload, o.published_at IS NOT NULL, s.id FROM outbox o, swipes s
		 WHERE o.student_id = $1 AND o.topic = 'swipe.recorded' AND s.student_id = $1`, id).
		Scan(&outboxID, &payload, &published, &swipeID))
	assert.Equal(t, sorted("student_id", "school_id", "direction", "timestamp", "swipe_id"), keys(payload))
	assert.Equal(t, id, payload["student_id"])
	assert.Equal(t, schools[3].ID, payload["school_id"], "ids in lower case")
	assert.Equal(t, "right", payload["direction"])
	assert.EqualValues(t, swipeID, payload["swipe_id"])
	ts, err := time.Parse(time.RFC3339Nano, payload["timestamp"].(string))
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(payload["timestamp"].(string), "Z"), "UTC")
	assert.WithinRange(t, ts, before, time.Now().Add(time.Second))

	// The student is marked for their shard's learn drain under the
	// swipe's version, and the shard's drain task is queued; the event is
	// the worker's relay's to publish.
	assert.False(t, published)
	var version int64
	require.NoError(t, api.Pool.QueryRow(context.Background(), `SELECT version FROM students WHERE id = $1`, id).Scan(&version))
	pendingKey, armedKey := tasks.LearnDrainKeys(id)
	score, err := api.Redis.ZScore(context.Background(), pendingKey, id).Result()
	require.NoError(t, err)
	assert.EqualValues(t, version, score)
	taskID, err := api.Redis.Get(context.Background(), armedKey).Result()
	require.NoError(t, err, "the shard's drain is armed")
	info, err := asynq.NewInspectorFromRedisClient(api.Redis).GetTaskInfo(tasks.QueueCritical, taskID)
	require.NoError(t, err)
	assert.Equal(t, tasks.TypeLearnDrain, info.Type)
	var p tasks.LearnDrainPayload
	require.NoError(t, json.Unmarshal(info.Payload, &p))
	assert.Equal(t, tasks.LearnShard(id), p.Shard)
	assert.NotZero(t, outboxID)
}

func TestWeakSignalsAreStoredNotCounted(t *testing.T) {
	api := newTestAPI(t)
	schools := api.seedSchools(t, 400)
	id, tok := api.newStudent(t, completeProfile())

	api.swipe(t, tok, map[string]any{"student_id": id, "school_id": schools[0].ID, "direction": "right"})
	for i, kind := range []string{"tap", "detail_view", "save"} {
		body := api.swipe(t, tok, map[string]any{"student_id": id, "school_id": schools[i+1].ID, "direction": "left",
			"interaction_type": kind, "time_spent": 12.25})
		assert.EqualValues(t, 1, body["swipe_count"], "%s is not counted", kind)
		assert.Equal(t, "discovery", body["learning_phase"])
		assert.Equal(t, false, body["trigger_feedback"], "feedback follows swipes only")
	}
	assert.Equal(t, 4, api.count(t, `SELECT count(*) FROM swipes WHERE student_id = $1`, id))
	assert.Equal(t, 3, api.count(t, `SELECT count(*) FROM swipes WHERE student_id = $1 AND NOT counted`, id))
	assert.Equal(t, 1, api.count(t, `SELECT swipe_count FROM students WHERE id = $1`, id))
	assert.Equal(t, 1, api.count(t, `SELECT count(*) FROM outbox WHERE student_id = $1 AND topic = 'swipe.recorded'`, id),
		"only counted swipes are webhook events")
	assert.Equal(t, 1, api.count(t, `SELECT count(*) FROM outbox WHERE student_id = $1`, id),
		"weak signals are stored for the learner, not published")
	assert.Equal(t, 1, api.count(t, `SELECT count(*) FROM swipes WHERE student_id = $1 AND time_spent = 12.25 AND interaction_type = 'save'`, id))
}

func TestSwipeRetriesStoreOnceAndReturnTheFirstAnswer(t *testing.T) {
	api := newTestAPI(t)
	schools := api.seedSchools(t, 400)
	id, tok := api.newStudent(t, completeProfile())
	api.swipe(t, tok, map[string]any{"student_id": id, "school_id": schools[0].ID, "direction": "left"})

	swipeID := uuid.NewString()
	body := map[string]any{"student_id": id, "school_id": schools[1].ID, "direction": "right", "swipe_id": swipeID}
	first := api.do(t, "POST", "/swipe", tok, body)
	require.Equal(t, http.StatusOK, first.Status, "%s", first.Raw)
	assert.Empty(t, first.Header.Get("Idempotent-Replayed"))
	// Another swipe in between: a retry still answers what the first did.
	api.swipe(t, tok, map[string]any{"student_id": id, "school_id": schools[2].ID, "direction": "right"})
	for range 3 {
		again := api.do(t, "POST", "/swipe", tok, body)
		require.Equal(t, http.StatusOK, again.Status)
		assert.Equal(t, first.Body, again.Body)
		assert.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	}
	// The id in another letter case is the same id.
	body["swipe_id"] = strings.ToUpper(swipeID)
	assert.Equal(t, first.Body, api.do(t, "POST", "/swipe", tok, body).Body)
	assert.Equal(t, 3, api.count(t, `SELECT count(*) FROM swipes WHERE student_id = $1`, id))
	assert.Equal(t, 3, api.count(t, `SELECT swipe_count FROM students WHERE id = $1`, id))
	assert.Equal(t, 3, api.count(t, `SELECT count(*) FROM outbox WHERE student_id = $1`, id))

	t.Run("the Idempotency-Key header", func(t *testing.T) {
		key := "retry-" + uuid.NewString()
		b := map[string]any{"student_id": id, "school_id": schools[4].ID, "direction": "left"}
		h := map[string]string{"Idempotency-Key": key}
		one := api.doHeaders(t, "POST", "/swipe", tok, h, b)
		require.Equal(t, http.StatusOK, one.Status, "%s", one.Raw)
		two := api.doHeaders(t, "POST", "/swipe", tok, h, b)
		assert.Equal(t, one.Body, two.Body)
		assert.Equal(t, "true", two.Header.Get("Idempotent-Replayed"))
		assert.EqualValues(t, 4, two.Body["swipe_count"])
		// swipe_id wins over the header when both are sent.
		b["swipe_id"] = uuid.NewString()
		three := api.doHeaders(t, "POST", "/swipe", tok, h, b)
		assert.EqualValues(t, 5, three.Body["swipe_count"])
	})

	t.Run("the same id for another swipe is 409", func(t *testing.T) {
		for _, change := range []map[string]any{{"school_id": schools[9].ID}, {"direction": "left"}, {"interaction_type": "save"}} {
			b := map[string]any{"student_id": id, "school_id": schools[1].ID, "direction": "right", "swipe_id": swipeID}
			for k, v := range change {
				b[k] = v
			}
			res := api.do(t, "POST", "/swipe", tok, b)
			require.Equal(t, http.StatusConflict, res.Status, "%v: %s", change, res.Raw)
			assert.Equal(t, domain.CodeInvalidRequest, res.errorCode())
			assert.Contains(t, res.errorFields(), "swipe_id")
		}
	})

	t.Run("concurrent retries", func(t *testing.T) {
		before := api.count(t, `SELECT count(*) FROM swipes WHERE student_id = $1`, id)
		b := map[string]any{"student_id": id, "school_id": schools[7].ID, "direction": "right", "swipe_id": uuid.NewString()}
		const n = 8
		out := make([]result, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { out[i] = api.do(t, "POST", "/swipe", tok, b) })
		}
		wg.Wait()
		replayed := 0
		for _, r := range out {
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
			assert.Equal(t, out[0].Body, r.Body)
			if r.Header.Get("Idempotent-Replayed") == "true" {
				replayed++
			}
		}
		assert.Equal(t, n-1, replayed, "one request recorded it, the others replayed it")
		assert.Equal(t, before+1, api.count(t, `SELECT count(*) FROM swipes WHERE student_id = $1`, id))
		assert.EqualValues(t, api.count(t, `SELECT swipe_count FROM students WHERE id = $1`, id), out[0].Body["swipe_count"])
	})
}

func TestRepeatSwipesAreCounted(t *testing.T) {
	api := newTestAPI(t)
	schools := api.seedSchools(t, 400)
	id, tok := api.newStudent(t, completeProfile())
	for i, dir := range []string{"right", "left", "right"} {
		body := api.swipe(t, tok, map[string]any{"student_id": id, "school_id": schools[5].ID, "direction": dir})
		assert.EqualValues(t, i+1, body["swipe_count"])
	}
	assert.Equal(t, 3, api.count(t, `SELECT count(*) FROM swipes WHERE student_id = $1 AND school_id = $2`, id, schools[5].ID))
}

func TestSwipeOnAProbeAsksForFeedback(t *testing.T) {
	api := newTestAPI(t)
	schools := api.seedSchools(t, 400)
	id, tok := api.newStudent(t, completeProfile())
	probes := cache.NewProbes(api.Redis, 5*time.Minute)
	require.NoError(t, probes.Remember(context.Background(), id, schools[8].ID))

	plain := api.swipe(t, tok, map[string]any{"student_id": id, "school_id": schools[7].ID, "direction": "right"})
	onProbe := api.swipe(t, tok, map[string]any{"student_id": id, "school_id": schools[8].ID, "direction": "right"})
	assert.Equal(t, true, onProbe["trigger_feedback"])
	assert.Equal(t, 1, api.count(t, `SELECT count(*) FROM swipes WHERE student_id = $1 AND is_probe`, id))
	if plain["trigger_feedback"] == true {
		t.Log("the plain swipe was a pattern break")
	}
	// A weak signal on a probe is no probe swipe.
	require.NoError(t, probes.Remember(context.Background(), id, schools[9].ID))
	tap := api.swipe(t, tok, map[string]any{"student_id": id, "school_id": schools[9].ID, "direction": "right", "interaction_type": "tap"})
	assert.Equal(t, false, tap["trigger_feedback"])
}

// trainedModel stores a learning state for the student in which the model
// is confident: it liked the 40 schools ranked best for them and disliked
// the 40 ranked worst. It returns the model and the profile it uses.
func (a *testAPI) trainedModel(t *testing.T, id string) (match.Model, match.Profile) {
	t.Helper()
	st, err := a.Store.Student(context.Background(), id)
	require.NoError(t, err)
	p, prior := match.CategoryStart(match.NewProfile(st), nil)
	cat := a.Catalog.Current().Catalog
	ranked := match.Rank(nil, p, prior, cat)
	var hist []match.Observation
	for i := range 40 {
		hist = append(hist, match.SwipeObservation(int(ranked[i].Index), match.Like),
			match.SwipeObservation(int(ranked[len(ranked)-1-i].Index), match.Dislike))
	}
	m := match.Fold(prior, p, cat, hist)
	b, err := m.MarshalBinary()
	require.NoError(t, err)
	w, err := json.Marshal(m.Weights().Map())
	require.NoError(t, err)
	_, err = a.Pool.Exec(context.Background(),
		`INSERT INTO learning_state (student_id, model_bin, weights, version) VALUES ($1, $2, $3::jsonb, 1)`, id, b, string(w))
	require.NoError(t, err)
	return m, p
}

func TestPatternBreakAsksForFeedback(t *testing.T) {
	api := newTestAPI(t)
	api.seedSchools(t, 400)
	id, tok := api.newStudent(t, completeProfile())
	m, p := api.trainedModel(t, id)
	cat := api.Catalog.Current().Catalog

	// The school the model is surest the student likes, and one it is
	// surest they do not.
	best, worst := 0, 0
	for i := range cat.Len() {
		if m.PredictLike(p, cat, i) > m.PredictLike(p, cat, best) {
			best = i
		}
		if m.PredictLike(p, cat, i) < m.PredictLike(p, cat, worst) {
			worst = i
		}
	}
	require.GreaterOrEqual(t, m.PredictLike(p, cat, best), match.PatternBreakProbability)
	require.LessOrEqual(t, m.PredictLike(p, cat, worst), 1-match.PatternBreakProbability)

	expected := api.swipe(t, tok, map[string]any{"student_id": id, "school_id": cat.Schools[best].ID, "direction": "right"})
	assert.Equal(t, false, expected["trigger_feedback"], "a swipe the model expected")
	broken := api.swipe(t, tok, map[string]any{"student_id": id, "school_id": cat.Schools[best].ID, "direction": "left"})
	assert.Equal(t, true, broken["trigger_feedback"], "disliking what the model was sure of")
	broken = api.swipe(t, tok, map[string]any{"student_id": id, "school_id": cat.Schools[worst].ID, "direction": "right"})
	assert.Equal(t, true, broken["trigger_feedback"], "liking what the model was sure of the other way")
	assert.Equal(t, true, broken["learning_state"].(map[string]any)["updated_weights"])
}

func TestSwipeRefusals(t *testing.T) {
	api := newTestAPI(t)
	schools := api.seedSchools(t, 400)
	id, tok := api.newStudent(t, completeProfile())
	school := schools[0].ID
	svc := token(t, "", true)

	for name, c := range map[string]struct {
		body  any
		field string
	}{
		"direction":        {map[string]any{"student_id": id, "school_id": school, "direction": "up"}, "direction"},
		"no direction":     {map[string]any{"student_id": id, "school_id": school}, "direction"},
		"school id":        {map[string]any{"student_id": id, "school_id": "nope", "direction": "left"}, "school_id"},
		"no school":        {map[string]any{"student_id": id, "direction": "left"}, "school_id"},
		"interaction":      {map[string]any{"student_id": id, "school_id": school, "direction": "left", "interaction_type": "poke"}, "interaction_type"},
		"null interaction": {map[string]any{"student_id": id, "school_id": school, "direction": "left", "interaction_type": nil}, "interaction_type"},
		"negative time":    {map[string]any{"student_id": id, "school_id": school, "direction": "left", "time_spent": -1}, "time_spent"},
		"a day and more":   {map[string]any{"student_id": id, "school_id": school, "direction": "left", "time_spent": 86401}, "time_spent"},
		"time as text":     {map[string]any{"student_id": id, "school_id": school, "direction": "left", "time_spent": "3"}, "time_spent"},
		"swipe id":         {map[string]any{"student_id": id, "school_id": school, "direction": "left", "swipe_id": "abc"}, "swipe_id"},
		"unknown field":    {map[string]any{"student_id": id, "school_id": school, "direction": "left", "liked": true}, "liked"},
	} {
		t.Run(name, func(t *testing.T) {
			res := api.do(t, "POST", "/swipe", tok, c.body)
			require.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Raw)
			assert.Equal(t, domain.CodeInvalidRequest, res.errorCode())
			assert.Contains(t, res.errorFields(), c.field)
		})
	}
	t.Run("a bad Idempotency-Key", func(t *testing.T) {
		res := api.doHeaders(t, "POST", "/swipe", tok, map[string]string{"Idempotency-Key": "has space"},
			map[string]any{"student_id": id, "school_id": school, "direction": "left"})
		require.Equal(t, http.StatusBadRequest, res.Status)
		assert.Contains(t, res.errorFields(), "Idempotency-Key")
	})
	t.Run("unknown student", func(t *testing.T) {
		other := uuid.NewString()
		res := api.do(t, "POST", "/swipe", svc, map[string]any{"student_id": other, "school_id": school, "direction": "left"})
		require.Equal(t, http.StatusNotFound, res.Status)
		assert.Equal(t, domain.CodeInvalidStudentID, res.errorCode())
	})
	t.Run("unknown school", func(t *testing.T) {
		res := api.do(t, "POST", "/swipe", tok, map[string]any{"student_id": id, "school_id": uuid.NewString(), "direction": "left"})
		require.Equal(t, http.StatusNotFound, res.Status)
		assert.Equal(t, domain.CodeInvalidSchoolID, res.errorCode())
	})
	t.Run("inactive school", func(t *testing.T) {
		_, err := api.Pool.Exec(context.Background(), `UPDATE schools SET active = false WHERE id = $1`, schools[1].ID)
		require.NoError(t, err)
		res := api.do(t, "POST", "/swipe", tok, map[string]any{"student_id": id, "school_id": schools[1].ID, "direction": "left"})
		require.Equal(t, http.StatusNotFound, res.Status)
		assert.Equal(t, domain.CodeInvalidSchoolID, res.errorCode())
	})
	t.Run("another student's id", func(t *testing.T) {
		res := api.do(t, "POST", "/swipe", token(t, "", false), map[string]any{"student_id": id, "school_id": school, "direction": "left"})
		require.Equal(t, http.StatusForbidden, res.Status)
	})
	t.Run("erased student", func(t *testing.T) {
		_, err := api.Store.DeleteStudent(context.Background(), id)
		require.NoError(t, err)
		res := api.do(t, "POST", "/swipe", tok, map[string]any{"student_id": id, "school_id": school, "direction": "left"})
		require.Equal(t, http.StatusNotFound, res.Status)
		assert.Equal(t, domain.CodeInvalidStudentID, res.errorCode())
	})
	assert.Equal(t, 0, api.count(t, `SELECT count(*) FROM swipes`))
	assert.Equal(t, "300", api.do(t, "POST", "/swipe", tok, map[string]any{}).Header.Get("X-RateLimit-Limit"), "rate group swipes")
}

// unreachableRedis is a client whose every call fails at once.
func unreachableRedis(t testing.TB) redis.UniversalClient {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func TestSwipeWithRedisDownIsStillRecorded(t *testing.T) {
	up := newTestAPI(t)
	schools := up.seedSchools(t, 400)
	id, tok := up.newStudent(t, completeProfile())
	down := newTestAPIOn(t, up.Pool, unreachableRedis(t))

	for i := range 5 {
		start := time.Now()
		res := down.do(t, "POST", "/swipe", tok, map[string]any{"student_id": id, "school_id": schools[i].ID,
			"direction": "right", "swipe_id": uuid.NewString()})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		assert.EqualValues(t, i+1, res.Body["swipe_count"])
		assert.Less(t, time.Since(start), 2*time.Second)
	}
	fb := down.do(t, "POST", "/feedback", tok, map[string]any{"student_id": id, "school_id": schools[0].ID, "reason": "too_expensive"})
	require.Equal(t, http.StatusOK, fb.Status, "%s", fb.Raw)
	assert.Equal(t, 5, down.count(t, `SELECT count(*) FROM swipes WHERE student_id = $1`, id))
	assert.Equal(t, 5, down.count(t, `SELECT count(*) FROM outbox WHERE student_id = $1 AND published_at IS NULL`, id),
		"every event waits for the relay")
	assert.Equal(t, 1, down.count(t, `SELECT count(*) FROM feedback WHERE student_id = $1`, id),
		"feedback is stored; the worker's learn sweep asks for its learning")
}

func TestFeedback(t *testing.T) {
	api := newTestAPI(t)
	schools := api.seedSchools(t, 400)
	id, tok := api.newStudent(t, completeProfile())
	cat := api.Catalog.Current().Catalog
	prior := func() match.Weights {
		st, err := api.Store.Student(context.Background(), id)
		require.NoError(t, err)
		_, w := match.CategoryStart(match.NewProfile(st), nil)
		return w
	}()

	for _, c := range []struct {
		reason string
		moved  func(before, after match.Weights) bool
	}{
		{"too_expensive", func(b, a match.Weights) bool { return a.CostWeight > b.CostWeight }},
		{"wrong_location", func(b, a match.Weights) bool { return a.DistanceWeight > b.DistanceWeight }},
		{"not_my_major", func(b, a match.Weights) bool { return a.ProgramWeight > b.ProgramWeight }},
		{"too_selective", func(b, a match.Weights) bool { return a.AcademicSelectivity < b.AcademicSelectivity }},
		{"perfect_match", func(b, a match.Weights) bool { return a != b }},
	} {
		t.Run(c.reason, func(t *testing.T) {
			res := api.do(t, "POST", "/feedback", tok, map[string]any{"student_id": id, "school_id": cat.Schools[3].ID,
				"reason": c.reason, "comment": "über budget"})
			require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
			assert.Equal(t, sorted("success", "preference_weights", "updated_weights"), keys(res.Body))
			assert.Equal(t, true, res.Body["success"])
			assert.Equal(t, true, res.Body["updated_weights"])
			// No learning state yet: each answer is the prior with this reason applied.
			assert.True(t, c.moved(prior, weightsOf(t, res.Body["preference_weights"])), "%v", res.Body["preference_weights"])
		})
	}
	assert.Equal(t, 5, api.count(t, `SELECT count(*) FROM feedback WHERE student_id = $1 AND comment = 'über budget'`, id))
	assert.Zero(t, api.count(t, `SELECT count(*) FROM outbox WHERE student_id = $1`, id),
		"feedback is not a published event")
	pending, err := asynq.NewInspectorFromRedisClient(api.Redis).ListPendingTasks(tasks.QueueCritical)
	require.NoError(t, err)
	learn := 0
	for _, ti := range pending {
		if ti.Type == tasks.TypeStudentLearn && strings.Contains(string(ti.Payload), id) {
			learn++
		}
	}
	assert.Equal(t, 5, learn, "one learn task per feedback")

	for name, c := range map[string]struct {
		body  map[string]any
		field string
	}{
		"reason":         {map[string]any{"student_id": id, "school_id": schools[0].ID, "reason": "too_far"}, "reason"},
		"no reason":      {map[string]any{"student_id": id, "school_id": schools[0].ID}, "reason"},
		"long comment":   {map[string]any{"student_id": id, "school_id": schools[0].ID, "reason": "too_expensive", "comment": strings.Repeat("é", 1001)}, "comment"},
		"null comment":   {map[string]any{"student_id": id, "school_id": schools[0].ID, "reason": "too_expensive", "comment": nil}, "comment"},
		"NUL in comment": {map[string]any{"student_id": id, "school_id": schools[0].ID, "reason": "too_expensive", "comment": "a\u0000b"}, "comment"},
		"school":         {map[string]any{"student_id": id, "school_id": 7, "reason": "too_expensive"}, "school_id"},
	} {
		t.Run(name, func(t *testing.T) {
			res := api.do(t, "POST", "/feedback", tok, c.body)
			require.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Raw)
			assert.Contains(t, res.errorFields(), c.field)
		})
	}
	ok := api.do(t, "POST", "/feedback", tok, map[string]any{"student_id": id, "school_id": schools[0].ID,
		"reason": "too_expensive", "comment": strings.Repeat("é", 1000)})
	assert.Equal(t, http.StatusOK, ok.Status, "1000 characters are fine")
	res := api.do(t, "POST", "/feedback", tok, map[string]any{"student_id": id, "school_id": uuid.NewString(), "reason": "too_expensive"})
	assert.Equal(t, http.StatusNotFound, res.Status)
	assert.Equal(t, domain.CodeInvalidSchoolID, res.errorCode())
	res = api.do(t, "POST", "/feedback", token(t, "", true), map[string]any{"student_id": uuid.NewString(), "school_id": schools[0].ID, "reason": "too_expensive"})
	assert.Equal(t, http.StatusNotFound, res.Status)
	assert.Equal(t, domain.CodeInvalidStudentID, res.errorCode())
	assert.Equal(t, "300", res.Header.Get("X-RateLimit-Limit"), "rate group swipes")
}

// A swipe makes two Redis round trips: the read it is predicted from goes
// with the rate-limit count, and the feed's patch with the learn task's
// hand-over after the commit. A read made for another swipe, or not made,
// is not used: the swipe reads for itself.
func TestSwipeReadsWithItsRateLimitCount(t *testing.T) {
	api := newTestAPI(t)
	schools := api.seedSchools(t, 200)
	id, tok := api.newStudent(t, completeProfile())
	require.Equal(t, http.StatusOK, api.do(t, "GET", "/m/recommendations/"+id, tok, nil).Status)
	probes := cache.NewProbes(api.Redis, 5*time.Minute)
	require.NoError(t, probes.Remember(context.Background(), id, schools[8].ID, schools[9].ID, schools[10].ID))

	calls := &redisCalls{}
	api.Redis.(*redis.Client).AddHook(calls)
	res := api.do(t, "POST", "/swipe", tok, map[string]any{"student_id": id, "school_id": strings.ToUpper(schools[8].ID),
		"direction": "right"})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	assert.Equal(t, true, res.Body["trigger_feedback"], "the probe is known from the read made with the count")
	assert.NotEmpty(t, res.Header.Get("X-RateLimit-Remaining"))
	assert.EqualValues(t, 2, calls.n.Load(), "the count and the read, then the patch and the hand-over")

	ctx := context.Background()
	ws := newWriteSide(api.Store, api.Redis, api.Catalog, testutil.Logger(t), nil)
	other := ws.swipes.ReadBefore(id, schools[0].ID) // not a probe
	_, err := api.Redis.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		other.Queue(ctx, pipe)
		return nil
	})
	if err != nil {
		require.ErrorIs(t, err, redis.Nil, "a school with no probe memory is no failure")
	}
	calls.n.Store(0)
	got, err := ws.swipes.RecordRead(ctx, command.SwipeInput{StudentID: id, SchoolID: schools[9].ID, Direction: "left"}, other)
	require.NoError(t, err)
	assert.True(t, got.TriggerFeedback, "the read of another school is not used")
	assert.EqualValues(t, 2, calls.n.Load(), "a read of its own, then the patch")

	unmade := ws.swipes.ReadBefore(id, schools[10].ID)
	got, err = ws.swipes.RecordRead(ctx, command.SwipeInput{StudentID: id, SchoolID: schools[10].ID, Direction: "left"}, unmade)
	require.NoError(t, err)
	assert.True(t, got.TriggerFeedback, "a read never made is not used")
	assert.Nil(t, ws.swipes.ReadBefore(id, "not-a-uuid"))
	assert.Equal(t, 3, api.count(t, `SELECT count(*) FROM swipes WHERE student_id = $1 AND is_probe`, id))
}
