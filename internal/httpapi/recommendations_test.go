package httpapi_test

import (
	"context"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
)

// completeProfile is an onboarding body with everything recommendations need.
func completeProfile() map[string]any {
	return map[string]any{
		"name": "Ada Lovelace", "email": "ada@example.com", "graduation_year": "2027",
		"gpa": 3.8, "test_scores": map[string]any{"sat": 1380}, "home": map[string]any{"lat": 39.95, "lon": -75.16},
		"state": "PA", "max_distance_miles": 400, "budget": 25000, "family_income": 70000,
		"intended_majors": []string{"computer", "mathematics"}, "preferred_size": "medium",
	}
}

// newStudent creates a student through onboarding and returns its id and token.
func (a *testAPI) newStudent(t testing.TB, profile map[string]any) (string, string) {
	t.Helper()
	id := uuid.NewString()
	tok := token(t, id, false)
	res := a.do(t, "POST", "/v2/onboarding/minimal", tok, profile)
	require.Equal(t, http.StatusCreated, res.Status, "%s", res.Raw)
	return id, tok
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sorted(s ...string) []string {
	slices.Sort(s)
	return s
}

func TestRecommendationsShape(t *testing.T) {
	api := newTestAPI(t)
	api.seedSchools(t, 300)
	id, tok := api.newStudent(t, completeProfile())

	res := api.do(t, "POST", "/recommendations", tok, map[string]any{"student_id": id})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	assert.Equal(t, sorted("recommendations", "metadata", "learning_state", "total_swipes"), keys(res.Body))
	assert.Equal(t, map[string]any{"total_count": 300.0, "learning_phase": "discovery", "algorithm_version": match.AlgorithmVersion},
		res.Body["metadata"])
	assert.EqualValues(t, 0, res.Body["total_swipes"])
	ls := res.Body["learning_state"].(map[string]any)
	assert.Equal(t, "discovery", ls["phase"])
	assert.EqualValues(t, 0, ls["progress"])
	weights := ls["preference_weights"].(map[string]any)
	assert.Equal(t, sorted(match.WeightKeys[:]...), keys(weights))
	assert.EqualValues(t, 0.6, weights["cost_weight"], "a stated budget raises cost_weight")

	recs := res.Body["recommendations"].([]any)
	require.Len(t, recs, 20, "limit defaults to 20")
	for i, raw := range recs {
		it := raw.(map[string]any)
		assert.Equal(t, sorted("school_id", "name", "match_score", "match_grade", "match_reasons", "components", "school",
			"explanations", "is_probe", "matched_majors", "distance", "admission_band"), keys(it))
		score := it["match_score"].(float64)
		assert.Equal(t, score, math.Round(score*1e4)/1e4, "4 decimals")
		assert.Equal(t, match.Grade(score), it["match_grade"])
		assert.Equal(t, (i+1)%4 == 0, it["is_probe"], "no swipes yet: positions 4, 8, 12, ... are probes")
		assert.NotEmpty(t, it["match_reasons"])
		assert.Equal(t, it["match_reasons"], it["explanations"])
		assert.Contains(t, []any{"reach", "target", "safety"}, it["admission_band"])
		d := it["distance"].(float64)
		assert.Equal(t, d, math.Round(d*10)/10, "miles to 0.1")
		comps := it["components"].(map[string]any)
		assert.Equal(t, sorted("academic", "financial", "campus", "outcomes"), keys(comps))
		for _, v := range comps {
			assert.True(t, v.(float64) >= 0 && v.(float64) <= 1)
		}
		school := it["school"].(map[string]any)
		assert.Equal(t, sorted("id", "name", "city", "state", "control", "setting", "size", "admission_rate", "sat_range",
			"act_range", "net_price", "graduation_rate", "retention_rate", "median_earnings_10yr", "median_earnings_6yr", "url"),
			keys(school))
		assert.Equal(t, it["school_id"], school["id"])
		assert.Equal(t, it["name"], school["name"])
		if np, ok := school["net_price"].(map[string]any); ok {
			assert.Equal(t, sorted("amount", "source"), keys(np))
			assert.NotEmpty(t, np["source"])
		}
		assert.NotNil(t, it["matched_majors"])
	}
}

func TestRecommendationsValidation(t *testing.T) {
	api := newTestAPI(t)
	api.seedSchools(t, 50)
	id, tok := api.newStudent(t, completeProfile())
	for name, c := range map[string]struct {
		body  any
		field string
	}{
		"limit as a string":   {`{"student_id":"` + id + `","limit":"5"}`, "limit"},
		"limit 0":             {map[string]any{"student_id": id, "limit": 0}, "limit"},
		"limit 101":           {map[string]any{"student_id": id, "limit": 101}, "limit"},
		"limit fractional":    {map[string]any{"student_id": id, "limit": 5.5}, "limit"},
		"limit null":          {map[string]any{"student_id": id, "limit": nil}, "limit"},
		"offset negative":     {map[string]any{"student_id": id, "offset": -1}, "offset"},
		"offset a string":     {map[string]any{"student_id": id, "offset": "0"}, "offset"},
		"offset an object":    {map[string]any{"student_id": id, "offset": map[string]any{}}, "offset"},
		"unknown field":       {map[string]any{"student_id": id, "page": 2}, "page"},
		"no student_id":       {map[string]any{"limit": 5}, "student_id"},
		"student_id a number": {map[string]any{"student_id": 5}, "student_id"},
		"empty body":          {"", "body"},
		"malformed JSON":      {`{"student_id":`, "body"},
		"not an object":       {`[1]`, "body"},
		"two objects":         {`{"student_id":"` + id + `"} {}`, "body"},
	} {
		t.Run(name, func(t *testing.T) {
			res := api.do(t, "POST", "/recommendations", tok, c.body)
			require.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Raw)
			assert.Equal(t, "INVALID_REQUEST", res.errorCode())
			assert.Contains(t, res.errorFields(), c.field, "%s", res.Raw)
		})
	}
	t.Run("non-UUID student_id", func(t *testing.T) {
		res := api.do(t, "POST", "/recommendations", tok, map[string]any{"student_id": "student-1"})
		require.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Raw)
		assert.Contains(t, res.errorFields(), "student_id")
	})
	t.Run("bounds are accepted", func(t *testing.T) {
		res := api.do(t, "POST", "/recommendations", tok, map[string]any{"student_id": id, "limit": 100, "offset": 0})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		assert.Len(t, res.Body["recommendations"], 50)
		res = api.do(t, "POST", "/recommendations", tok, map[string]any{"student_id": strings.ToUpper(id), "limit": 1, "offset": 49})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		assert.Len(t, res.Body["recommendations"], 1)
	})
}

func TestRecommendationsUnknownAndIncomplete(t *testing.T) {
	api := newTestAPI(t)
	api.seedSchools(t, 30)

	unknown := uuid.NewString()
	utok := token(t, unknown, false)
	res := api.do(t, "POST", "/recommendations", utok, map[string]any{"student_id": unknown})
	details := requireErrorBody(t, res, http.StatusNotFound, "INVALID_STUDENT_ID")
	assert.Equal(t, unknown, details["student_id"])
	res = api.do(t, "GET", "/m/recommendations/"+unknown, utok, nil)
	details = requireErrorBody(t, res, http.StatusNotFound, "INVALID_STUDENT_ID")
	assert.Equal(t, unknown, details["student_id"])

	id, tok := api.newStudent(t, map[string]any{"name": "B", "email": "b@example.com", "graduation_year": "2027", "gpa": 3.2})
	res = api.do(t, "POST", "/recommendations", tok, map[string]any{"student_id": id})
	details = requireErrorBody(t, res, http.StatusUnprocessableEntity, "MISSING_PROFILE")
	assert.Equal(t, []any{domain.MissingLocation}, details["missing"])
	res = api.do(t, "GET", "/m/recommendations/"+id, tok, nil)
	details = requireErrorBody(t, res, http.StatusUnprocessableEntity, "MISSING_PROFILE")
	assert.Equal(t, []any{domain.MissingLocation}, details["missing"])

	// Completing the profile makes the same student servable.
	res = api.do(t, "POST", "/v2/onboarding/minimal", tok, map[string]any{"state": "OH"})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	res = api.do(t, "POST", "/recommendations", tok, map[string]any{"student_id": id})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
}

func TestRecommendationsOffsetPastTheEnd(t *testing.T) {
	api := newTestAPI(t)
	api.seedSchools(t, 30)
	id, tok := api.newStudent(t, completeProfile())
	res := api.do(t, "POST", "/recommendations", tok, map[string]any{"student_id": id, "limit": 10, "offset": 25})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	assert.Len(t, res.Body["recommendations"], 5)
	res = api.do(t, "POST", "/recommendations", tok, map[string]any{"student_id": id, "offset": 1000})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	assert.Equal(t, []any{}, res.Body["recommendations"])
	assert.EqualValues(t, 30, res.Body["metadata"].(map[string]any)["total_count"])
}

// The compact score is round(match_score*100) of the same school, in the
// same order, with the same grade.
func TestCompactScoreMatchesStandardScore(t *testing.T) {
	api := newTestAPI(t)
	api.seedSchools(t, 300)
	for _, first := range []string{"compact", "standard"} { // whichever builds the feed
		t.Run(first+" first", func(t *testing.T) {
			id, tok := api.newStudent(t, completeProfile())
			var compact, standard result
			if first == "compact" {
				compact = api.do(t, "GET", "/m/recommendations/"+id, tok, nil)
				standard = api.do(t, "POST", "/recommendations", tok, map[string]any{"student_id": id})
			} else {
				standard = api.do(t, "POST", "/recommendations", tok, map[string]any{"student_id": id})
				compact = api.do(t, "GET", "/m/recommendations/"+id, tok, nil)
			}
			require.Equal(t, http.StatusOK, compact.Status, "%s", compact.Raw)
			require.Equal(t, http.StatusOK, standard.Status, "%s", standard.Raw)
			assert.Equal(t, []string{"r"}, keys(compact.Body))
			r := compact.Body["r"].([]any)
			recs := standard.Body["recommendations"].([]any)
			require.Len(t, r, 20)
			for i := range r {
				c, s := r[i].(map[string]any), recs[i].(map[string]any)
				if s["is_probe"] == true {
					assert.Equal(t, sorted("i", "n", "s", "g", "c", "st", "p"), keys(c))
					assert.Equal(t, true, c["p"])
				} else {
					assert.Equal(t, sorted("i", "n", "s", "g", "c", "st"), keys(c), "p only on probes")
				}
				assert.Equal(t, s["school_id"], c["i"])
				assert.Equal(t, s["name"], c["n"])
				assert.Equal(t, math.Round(s["match_score"].(float64)*100), c["s"], "s = round(match_score*100)")
				assert.Equal(t, s["match_grade"], c["g"])
				school := s["school"].(map[string]any)
				assert.Equal(t, school["city"], c["c"])
				assert.Equal(t, school["state"], c["st"])
			}
		})
	}
}

// A cached read does not touch PostgreSQL: the read side's store is not
// called, and the student row can even be gone.
func TestRecommendationsCacheMissThenHit(t *testing.T) {
	api := newTestAPI(t)
	api.seedSchools(t, 200)
	id, tok := api.newStudent(t, completeProfile())
	body := map[string]any{"student_id": id, "limit": 10}

	miss := api.do(t, "POST", "/recommendations", tok, body)
	require.Equal(t, http.StatusOK, miss.Status, "%s", miss.Raw)
	require.EqualValues(t, 1, api.Students.calls.Load())
	hit := api.do(t, "POST", "/recommendations", tok, body)
	require.Equal(t, http.StatusOK, hit.Status)
	assert.EqualValues(t, 1, api.Students.calls.Load(), "the second request is served from Redis")
	assert.Equal(t, miss.Body, hit.Body)
	compact := api.do(t, "GET", "/m/recommendations/"+id, tok, nil)
	require.Equal(t, http.StatusOK, compact.Status)
	detail := api.do(t, "GET", "/match/"+id+"/"+hit.Body["recommendations"].([]any)[0].(map[string]any)["school_id"].(string), tok, nil)
	require.Equal(t, http.StatusOK, detail.Status, "%s", detail.Raw)
	assert.EqualValues(t, 1, api.Students.calls.Load(), "nor the compact feed or match detail")

	_, err := api.Pool.Exec(context.Background(), "DELETE FROM students WHERE id = $1", id)
	require.NoError(t, err)
	again := api.do(t, "POST", "/recommendations", tok, body)
	require.Equal(t, http.StatusOK, again.Status, "served with the row gone: %s", again.Raw)
	assert.Equal(t, miss.Body, again.Body)
	again = api.do(t, "GET", "/m/recommendations/"+id, tok, nil)
	require.Equal(t, http.StatusOK, again.Status)
	assert.Equal(t, compact.Raw, again.Raw)

	assert.EqualValues(t, 1, counterValue(t, api.Registry, "matching_feed_cache_reads_total",
		map[string]string{"endpoint": "recommendations", "result": "miss"}))
	assert.EqualValues(t, 2, counterValue(t, api.Registry, "matching_feed_cache_reads_total",
		map[string]string{"endpoint": "recommendations", "result": "hit"}))
	assert.EqualValues(t, 2, counterValue(t, api.Registry, "matching_feed_cache_reads_total",
		map[string]string{"endpoint": "compact", "result": "hit"}))
}

func TestCompactETagAnd304(t *testing.T) {
	api := newTestAPI(t)
	api.seedSchools(t, 200)
	id, tok := api.newStudent(t, completeProfile())
	path := "/m/recommendations/" + id
	get := func(inm string) result {
		t.Helper()
		return api.doHeaders(t, "GET", path, tok, map[string]string{"If-None-Match": inm})
	}

	first := get("")
	require.Equal(t, http.StatusOK, first.Status, "%s", first.Raw)
	etag := first.Header.Get("ETag")
	assert.Regexp(t, `^"[A-Za-z0-9_-]+"$`, etag, "a strong ETag")
	assert.Equal(t, "private, max-age=300", first.Header.Get("Cache-Control"))
	assert.Equal(t, "application/json", first.Header.Get("Content-Type"))
	assert.NotEmpty(t, first.Header.Get("X-RateLimit-Limit"))

	for _, inm := range []string{etag, "*", `"other", ` + etag, "W/" + etag, ` "a" ,` + etag + `,"b"`} {
		res := get(inm)
		require.Equal(t, http.StatusNotModified, res.Status, "If-None-Match: %s", inm)
		assert.Empty(t, res.Raw, "304 has no body")
		assert.Equal(t, etag, res.Header.Get("ETag"))
		assert.Equal(t, "private, max-age=300", res.Header.Get("Cache-Control"))
		assert.NotEmpty(t, res.Header.Get("X-RateLimit-Remaining"), "a 304 is counted")
	}
	for _, inm := range []string{`"other"`, strings.Trim(etag, `"`), etag + "x"} {
		res := get(inm)
		require.Equal(t, http.StatusOK, res.Status, "If-None-Match: %s", inm)
		assert.Equal(t, first.Raw, res.Raw)
	}

	// The profile changes: the feed is rebuilt, and so is its ETag.
	res := api.do(t, "POST", "/v2/onboarding/minimal", tok, map[string]any{"home": map[string]any{"lat": 34.05, "lon": -118.24}, "state": "CA"})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	changed := get(etag)
	require.Equal(t, http.StatusOK, changed.Status, "the old ETag no longer matches")
	assert.NotEqual(t, etag, changed.Header.Get("ETag"))
	assert.NotEqual(t, first.Raw, changed.Raw)
	assert.Equal(t, http.StatusNotModified, get(changed.Header.Get("ETag")).Status)
}

// redisCalls counts round trips a client makes: one per command, one per
// pipeline.
type redisCalls struct{ n atomic.Int64 }

func (c *redisCalls) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *redisCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.n.Add(1); return next(ctx, cmd) }
}
func (c *redisCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { c.n.Add(1); return next(ctx, cmds) }
}

// The hot path: a cached GET /m/recommendations is one Redis round trip
// (the rate-limit count and the feed read pipelined) and no PostgreSQL.
func TestCompactCachedReadIsOneRoundTrip(t *testing.T) {
	api := newTestAPI(t)
	api.seedSchools(t, 100)
	id, tok := api.newStudent(t, completeProfile())
	path := "/m/recommendations/" + id
	require.Equal(t, http.StatusOK, api.do(t, "GET", path, tok, nil).Status)
	loads := api.Students.calls.Load()

	calls := &redisCalls{}
	api.Redis.(*redis.Client).AddHook(calls)
	for range 3 {
		res := api.do(t, "GET", path, tok, nil)
		require.Equal(t, http.StatusOK, res.Status)
	}
	assert.EqualValues(t, 3, calls.n.Load(), "one round trip per cached read")
	assert.Equal(t, loads, api.Students.calls.Load(), "and no PostgreSQL")
}

// So is a cached page of POST /recommendations and /v2/recommendations:
// the count and the page read (an HMGET of the page's stored items) in one
// round trip, the stored bytes written as they are, no PostgreSQL, and the
// same body the full path writes.
func TestRecommendationsCachedPageIsOneRoundTrip(t *testing.T) {
	api := newTestAPI(t)
	api.seedSchools(t, 200)
	id, tok := api.newStudent(t, completeProfile())
	body := map[string]any{"student_id": id, "limit": 20, "offset": 10}
	first := api.do(t, "POST", "/recommendations", tok, body)
	require.Equal(t, http.StatusOK, first.Status, "%s", first.Raw)
	loads := api.Students.calls.Load()

	calls := &redisCalls{}
	api.Redis.(*redis.Client).AddHook(calls)
	for _, path := range []string{"/recommendations", "/v2/recommendations", "/recommendations"} {
		res := api.do(t, "POST", path, tok, body)
		require.Equal(t, http.StatusOK, res.Status)
		assert.Equal(t, first.Raw, res.Raw, path)
		assert.NotEmpty(t, res.Header.Get("X-RateLimit-Remaining"))
	}
	assert.EqualValues(t, 3, calls.n.Load(), "one round trip per cached page")
	assert.Equal(t, loads, api.Students.calls.Load(), "and no PostgreSQL")
	assert.Positive(t, counterValue(t, api.Registry, "matching_feed_cache_reads_total",
		map[string]string{"endpoint": "recommendations", "result": "hit"}))

	// A page deeper than the stored bytes takes the full path.
	res := api.do(t, "POST", "/recommendations", tok, map[string]any{"student_id": id, "limit": 20, "offset": 60})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	assert.Len(t, res.Body["recommendations"], 20)
}

// With Redis unreachable the read side computes from PostgreSQL: 200, never
// a 500.
func TestReadsWhenRedisIsDown(t *testing.T) {
	api := newTestAPI(t)
	api.seedSchools(t, 100)
	id, tok := api.newStudent(t, completeProfile())
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = down.Close() })
	outage := newTestAPIOn(t, api.Pool, down)

	start := time.Now()
	res := outage.do(t, "POST", "/recommendations", tok, map[string]any{"student_id": id, "limit": 5})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	assert.Equal(t, "60", res.Header.Get("X-RateLimit-Limit"), "counted in the replica's memory")
	first := res.Body["recommendations"].([]any)[0].(map[string]any)
	res = outage.do(t, "GET", "/m/recommendations/"+id, tok, nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	assert.NotEmpty(t, res.Header.Get("ETag"))
	assert.Equal(t, first["school_id"], res.Body["r"].([]any)[0].(map[string]any)["i"])
	res = outage.do(t, "GET", "/match/"+id+"/"+first["school_id"].(string), tok, nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	assert.Equal(t, first["match_score"], res.Body["overall_score"])
	res = outage.do(t, "POST", "/m/batch/schools", tok, map[string]any{"school_ids": []string{first["school_id"].(string)}})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	assert.Less(t, time.Since(start), 3*time.Second)
	assert.Positive(t, counterValue(t, outage.Registry, "matching_feed_cache_reads_total",
		map[string]string{"endpoint": "recommendations", "result": "error"}))
}

func TestMatchDetailEndpoint(t *testing.T) {
	api := newTestAPI(t)
	schools := api.seedSchools(t, 60)
	id, tok := api.newStudent(t, completeProfile())
	school := schools[9].ID

	res := api.do(t, "GET", "/match/"+id+"/"+strings.ToUpper(school), tok, nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	assert.Equal(t, sorted("student_id", "school_id", "overall_score", "grade", "components", "explanation", "match_reasons",
		"admission_band", "net_price", "distance", "matched_majors", "confidence", "missing", "school", "algorithm_version"),
		keys(res.Body))
	assert.Equal(t, id, res.Body["student_id"])
	assert.Equal(t, school, res.Body["school_id"], "ids come back in lower case")
	comps := res.Body["components"].(map[string]any)
	for name, factors := range map[string][]string{
		"academic":  {"sat_match", "selectivity_fit", "program_strength"},
		"financial": {"affordability", "aid_availability", "value_score"},
		"campus":    {"size_fit", "location_fit", "setting_fit"},
		"outcomes":  {"graduation_rate", "employment", "earnings"},
	} {
		c := comps[name].(map[string]any)
		assert.Equal(t, sorted("score", "factors"), keys(c), name)
		assert.Equal(t, sorted(factors...), keys(c["factors"].(map[string]any)), name)
	}
	assert.NotEmpty(t, res.Body["explanation"])
	assert.Equal(t, match.Grade(res.Body["overall_score"].(float64)), res.Body["grade"])
	assert.Equal(t, []any{}, res.Body["missing"])

	// Errors.
	res = api.do(t, "GET", "/match/"+id+"/not-a-uuid", tok, nil)
	require.Equal(t, http.StatusBadRequest, res.Status)
	assert.Contains(t, res.errorFields(), "school_id")
	unknown := uuid.NewString()
	res = api.do(t, "GET", "/match/"+id+"/"+unknown, tok, nil)
	details := requireErrorBody(t, res, http.StatusNotFound, "INVALID_SCHOOL_ID")
	assert.Equal(t, unknown, details["school_id"])
	stranger := uuid.NewString()
	res = api.do(t, "GET", "/match/"+stranger+"/"+school, token(t, stranger, false), nil)
	details = requireErrorBody(t, res, http.StatusNotFound, "INVALID_STUDENT_ID")
	assert.Equal(t, stranger, details["student_id"])

	// An inactive school is unknown.
	_, err := api.Store.DeactivateSchoolsNotIn(context.Background(), "seed", []string{schools[0].ID})
	require.NoError(t, err)
	require.NoError(t, api.Catalog.Load(context.Background()))
	res = api.do(t, "GET", "/match/"+id+"/"+school, tok, nil)
	requireErrorBody(t, res, http.StatusNotFound, "INVALID_SCHOOL_ID")

	// An incomplete profile still gets a detail, saying what is missing.
	bare, btok := api.newStudent(t, map[string]any{"name": "C", "email": "c@example.com", "graduation_year": "2028"})
	res = api.do(t, "GET", "/match/"+bare+"/"+schools[0].ID, btok, nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	assert.ElementsMatch(t, []any{domain.MissingAcademic, domain.MissingLocation}, res.Body["missing"])
	assert.Nil(t, res.Body["distance"])
}

func TestBatchSchoolsEndpoint(t *testing.T) {
	api := newTestAPI(t)
	schools := api.seedSchools(t, 40)
	tok := token(t, "", false)
	a, b, unknown := schools[3], schools[30], uuid.NewString()

	res := api.do(t, "POST", "/m/batch/schools", tok, map[string]any{
		"school_ids": []string{strings.ToUpper(b.ID), unknown, a.ID, b.ID, unknown}})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	assert.Equal(t, sorted("r", "missing"), keys(res.Body))
	r := res.Body["r"].([]any)
	require.Len(t, r, 2, "duplicates once")
	assert.Equal(t, b.ID, r[0].(map[string]any)["i"], "request order")
	assert.Equal(t, a.ID, r[1].(map[string]any)["i"])
	assert.Equal(t, []any{unknown}, res.Body["missing"])
	item := r[1].(map[string]any)
	assert.Equal(t, a.Name, item["n"])
	assert.Equal(t, a.City, item["c"])
	assert.Equal(t, a.State, item["st"])
	for k := range item {
		assert.Contains(t, []string{"i", "n", "c", "st", "ctl", "set", "sz", "ar", "sat", "np", "gr", "e", "u", "ll"}, k)
	}

	res = api.do(t, "POST", "/m/batch/schools", tok, map[string]any{"school_ids": []string{}})
	require.Equal(t, http.StatusOK, res.Status)
	assert.Equal(t, map[string]any{"r": []any{}, "missing": []any{}}, res.Body)

	hundred := make([]string, 100)
	for i := range hundred {
		hundred[i] = uuid.NewString()
	}
	res = api.do(t, "POST", "/m/batch/schools", tok, map[string]any{"school_ids": hundred})
	require.Equal(t, http.StatusOK, res.Status, "100 ids are allowed")
	assert.Len(t, res.Body["missing"], 100)

	for name, c := range map[string]struct {
		body  any
		field string
	}{
		"101 ids":        {map[string]any{"school_ids": append(hundred, a.ID)}, "school_ids"},
		"not a UUID":     {map[string]any{"school_ids": []any{a.ID, b.ID, "nope"}}, "school_ids[2]"},
		"a number":       {map[string]any{"school_ids": []any{a.ID, 7}}, "school_ids[1]"},
		"not an array":   {map[string]any{"school_ids": a.ID}, "school_ids"},
		"null":           {map[string]any{"school_ids": nil}, "school_ids"},
		"missing":        {map[string]any{}, "school_ids"},
		"unknown field":  {map[string]any{"school_ids": []string{}, "fields": "all"}, "fields"},
		"malformed JSON": {`{"school_ids": [`, "body"},
	} {
		t.Run(name, func(t *testing.T) {
			res := api.do(t, "POST", "/m/batch/schools", tok, c.body)
			require.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Raw)
			assert.Contains(t, res.errorFields(), c.field, "%s", res.Raw)
		})
	}
}

// Every key the read side and the limiter write expires.
func TestReadSideKeysHaveTTLs(t *testing.T) {
	api := newTestAPI(t)
	api.seedSchools(t, 50)
	id, tok := api.newStudent(t, completeProfile())
	require.Equal(t, http.StatusOK, api.do(t, "POST", "/recommendations", tok, map[string]any{"student_id": id}).Status)
	require.Equal(t, http.StatusOK, api.do(t, "GET", "/m/recommendations/"+id, tok, nil).Status)
	res := api.do(t, "POST", "/v2/onboarding/minimal", tok, map[string]any{"budget": 30000}) // leaves a tombstone
	require.Equal(t, http.StatusOK, res.Status)

	ctx := context.Background()
	all, err := api.Redis.Keys(ctx, "*").Result()
	require.NoError(t, err)
	require.Contains(t, all, "rm:v2:{student:"+id+"}:feed")
	for _, k := range all {
		ttl, err := api.Redis.PTTL(ctx, k).Result()
		require.NoError(t, err)
		assert.Greater(t, ttl, time.Duration(0), "%s has a TTL", k)
	}
}

// Cached pages are written from pooled buffers: under concurrent reads of
// different students and pages, every answer is still its own page,
// byte for byte.
func TestCachedPagesServedConcurrently(t *testing.T) {
	api := newTestAPI(t, withRates(redisClient(t), unlimited()))
	api.seedSchools(t, 200)
	type page struct {
		tok  string
		path string
		body map[string]any
		want []byte
	}
	var pages []page
	for range 2 {
		id, tok := api.newStudent(t, completeProfile())
		for _, pg := range [][2]int{{20, 0}, {5, 3}, {40, 0}} {
			body := map[string]any{"student_id": id, "limit": pg[0], "offset": pg[1]}
			for _, path := range []string{"/recommendations", "/v2/recommendations"} {
				first := api.do(t, "POST", path, tok, body)
				require.Equal(t, http.StatusOK, first.Status, "%s", first.Raw)
				pages = append(pages, page{tok, path, body, first.Raw})
			}
		}
	}
	hits := counterValue(t, api.Registry, "matching_feed_cache_reads_total",
		map[string]string{"endpoint": "recommendations", "result": "hit"})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for k := range 40 {
				p := pages[(g+k)%len(pages)]
				res := api.do(t, "POST", p.path, p.tok, p.body)
				if !assert.Equal(t, http.StatusOK, res.Status) || !assert.Equal(t, string(p.want), string(res.Raw), "%s %v", p.path, p.body) {
					return
				}
			}
		})
	}
	wg.Wait()
	assert.Greater(t, counterValue(t, api.Registry, "matching_feed_cache_reads_total",
		map[string]string{"endpoint": "recommendations", "result": "hit"}), hits, "served from stored bytes")
}
