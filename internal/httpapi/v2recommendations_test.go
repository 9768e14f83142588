package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
)

func TestRecommendationsV2MinimalProfile(t *testing.T) {
	api := newTestAPI(t)
	api.seedSchools(t, 400)
	id, tok := api.newStudent(t, minimalProfile())
	v2 := func(body map[string]any) result {
		t.Helper()
		body["student_id"] = id
		res := api.do(t, "POST", "/v2/recommendations", tok, body)
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		return res
	}

	res := v2(map[string]any{})
	assert.Equal(t, "60", res.Header.Get("X-RateLimit-Limit"), "rate group recommendations")
	assert.Equal(t, sorted("recommendations", "metadata", "learning_state", "total_swipes"), keys(res.Body))
	assert.Equal(t, map[string]any{"total_count": 400.0, "learning_phase": "discovery", "algorithm_version": match.AlgorithmVersion},
		res.Body["metadata"])
	assert.EqualValues(t, 0, res.Body["total_swipes"])
	ls := res.Body["learning_state"].(map[string]any)
	assert.Equal(t, "discovery", ls["phase"])
	assert.EqualValues(t, 0, ls["progress"])
	assert.Equal(t, match.DefaultWeights(), weightsOf(t, ls["preference_weights"]), "nothing stated: the default weights")

	recs := res.Body["recommendations"].([]any)
	require.Len(t, recs, 20, "a student with only a name, an e-mail and a graduation year gets a full first page")
	for i, raw := range recs {
		it := raw.(map[string]any)
		assert.Equal(t, sorted("school_id", "name", "match_score", "match_grade", "match_reasons", "components", "school",
			"explanations", "is_probe", "matched_majors", "distance", "admission_band"), keys(it))
		assert.Nil(t, it["distance"], "no location: distance is null")
		assert.Equal(t, (i+1)%4 == 0, it["is_probe"], "every 4th item is a probe")
		assert.Equal(t, match.Grade(it["match_score"].(float64)), it["match_grade"])
		assert.Contains(t, []any{"reach", "target", "safety"}, it["admission_band"])
		assert.Equal(t, it["school_id"], it["school"].(map[string]any)["id"])
		assert.NotNil(t, it["matched_majors"])
	}

	t.Run("pages tile one list", func(t *testing.T) {
		page := v2(map[string]any{"limit": 7, "offset": 3})
		assert.Equal(t, recs[3:10], page.Body["recommendations"])
		past := v2(map[string]any{"offset": 1000})
		assert.Empty(t, past.Body["recommendations"])
		assert.Equal(t, 400.0, past.Body["metadata"].(map[string]any)["total_count"])
	})

	t.Run("served from the stored feed", func(t *testing.T) {
		n, err := api.Redis.Exists(context.Background(), cache.FeedKey(id)).Result()
		require.NoError(t, err)
		assert.EqualValues(t, 1, n, "the feed is stored")
		calls := api.Students.calls.Load()
		again := v2(map[string]any{})
		assert.Equal(t, string(res.Raw), string(again.Raw))
		assert.Equal(t, calls, api.Students.calls.Load(), "a stored feed is served without loading the student")
	})

	t.Run("POST /recommendations and the compact feed still refuse the incomplete profile", func(t *testing.T) {
		for range 2 {
			r := api.do(t, "POST", "/recommendations", tok, map[string]any{"student_id": id})
			require.Equal(t, http.StatusUnprocessableEntity, r.Status, "%s", r.Raw)
			assert.Equal(t, domain.CodeMissingProfile, r.errorCode())
			assert.ElementsMatch(t, []any{domain.MissingAcademic, domain.MissingLocation},
				r.Body["error"].(map[string]any)["details"].(map[string]any)["missing"])
			r = api.do(t, "GET", "/m/recommendations/"+id, tok, nil)
			require.Equal(t, http.StatusUnprocessableEntity, r.Status, "%s", r.Raw)
			assert.Equal(t, domain.CodeMissingProfile, r.errorCode())
		}
	})

	t.Run("once the profile is complete both endpoints serve the same list", func(t *testing.T) {
		upd := api.do(t, "POST", "/v2/onboarding/minimal", tok, map[string]any{"gpa": 3.4, "state": "TX"})
		require.Equal(t, http.StatusOK, upd.Status, "%s", upd.Raw)
		v1 := api.do(t, "POST", "/recommendations", tok, map[string]any{"student_id": id})
		require.Equal(t, http.StatusOK, v1.Status, "%s", v1.Raw)
		assert.Equal(t, string(v1.Raw), string(v2(map[string]any{}).Raw))
		assert.NotNil(t, v1.Body["recommendations"].([]any)[0].(map[string]any)["distance"])
		c := api.do(t, "GET", "/m/recommendations/"+id, tok, nil)
		require.Equal(t, http.StatusOK, c.Status, "%s", c.Raw)
	})
}

func TestRecommendationsV2PartialProfiles(t *testing.T) {
	api := newTestAPI(t)
	api.seedSchools(t, 300)

	t.Run("a location and no academic signal", func(t *testing.T) {
		p := minimalProfile()
		p["state"] = "CA"
		id, tok := api.newStudent(t, p)
		res := api.do(t, "POST", "/v2/recommendations", tok, map[string]any{"student_id": id, "limit": 10})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		require.Len(t, res.Body["recommendations"], 10)
		for _, raw := range res.Body["recommendations"].([]any) {
			assert.NotNil(t, raw.(map[string]any)["distance"], "distances from the state's centre")
		}
	})

	t.Run("an academic signal and no location", func(t *testing.T) {
		p := minimalProfile()
		p["test_scores"] = map[string]any{"sat": 1450}
		id, tok := api.newStudent(t, p)
		res := api.do(t, "POST", "/v2/recommendations", tok, map[string]any{"student_id": id})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		require.Len(t, res.Body["recommendations"], 20)
		for _, raw := range res.Body["recommendations"].([]any) {
			assert.Nil(t, raw.(map[string]any)["distance"])
		}
	})
}

func TestRecommendationsV2Errors(t *testing.T) {
	api := newTestAPI(t)
	api.seedSchools(t, 50)
	id, tok := api.newStudent(t, minimalProfile())
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
		"unknown field":       {map[string]any{"student_id": id, "page": 2}, "page"},
		"no student_id":       {map[string]any{"limit": 5}, "student_id"},
		"student_id a number": {map[string]any{"student_id": 5}, "student_id"},
		"student_id not UUID": {map[string]any{"student_id": "me"}, "student_id"},
		"empty body":          {"", "body"},
		"malformed JSON":      {`{"student_id":`, "body"},
		"not an object":       {`[1]`, "body"},
		"two objects":         {`{"student_id":"` + id + `"} {}`, "body"},
	} {
		t.Run(name, func(t *testing.T) {
			res := api.do(t, "POST", "/v2/recommendations", tok, c.body)
			require.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Raw)
			assert.Equal(t, "INVALID_REQUEST", res.errorCode())
			assert.Contains(t, res.errorFields(), c.field, "%s", res.Raw)
		})
	}

	t.Run("unknown student", func(t *testing.T) {
		other := uuid.NewString()
		res := api.do(t, "POST", "/v2/recommendations", token(t, other, false), map[string]any{"student_id": other})
		require.Equal(t, http.StatusNotFound, res.Status, "%s", res.Raw)
		assert.Equal(t, domain.CodeInvalidStudentID, res.errorCode())
		assert.Equal(t, other, res.Body["error"].(map[string]any)["details"].(map[string]any)["student_id"])
	})
	t.Run("another student's id", func(t *testing.T) {
		res := api.do(t, "POST", "/v2/recommendations", tok, map[string]any{"student_id": uuid.NewString()})
		require.Equal(t, http.StatusForbidden, res.Status, "%s", res.Raw)
	})
	t.Run("a service token acts for any student", func(t *testing.T) {
		res := api.do(t, "POST", "/v2/recommendations", token(t, "", true), map[string]any{"student_id": id, "limit": 3})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		require.Len(t, res.Body["recommendations"], 3)
	})
}
