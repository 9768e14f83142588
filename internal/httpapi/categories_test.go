package httpapi_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
)

// archetypeIDs are the six category ids in display order.
func archetypeIDs() []string {
	var out []string
	for _, a := range match.Archetypes() {
		out = append(out, string(a.ID))
	}
	return out
}

func TestCategorySchools(t *testing.T) {
	api := newTestAPI(t)
	tok := token(t, "", false)

	t.Run("empty catalogue: six categories, no example", func(t *testing.T) {
		res := api.do(t, "GET", "/v2/onboarding/category-schools", tok, nil)
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		cats := res.Body["categories"].([]any)
		require.Len(t, cats, 6)
		for i, raw := range cats {
			c := raw.(map[string]any)
			assert.Equal(t, archetypeIDs()[i], c["id"])
			assert.Contains(t, c, "example_school")
			assert.Nil(t, c["example_school"], "no member in an empty catalogue")
		}
	})

	schools := api.seedSchools(t, 3000)
	byID := map[string]domain.School{}
	for _, s := range schools {
		byID[s.ID] = s
	}

	res := api.do(t, "GET", "/v2/onboarding/category-schools", tok, nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	assert.Equal(t, []string{"categories"}, keys(res.Body))
	assert.Equal(t, "600", res.Header.Get("X-RateLimit-Limit"), "rate group default")
	cats := res.Body["categories"].([]any)
	require.Len(t, cats, 6, "exactly six categories")
	seen := map[string]bool{}
	for i, raw := range cats {
		c := raw.(map[string]any)
		a := match.Archetypes()[i]
		assert.Equal(t, sorted("id", "name", "description", "example_school"), keys(c))
		assert.Equal(t, string(a.ID), c["id"], "fixed order")
		assert.Equal(t, a.Name, c["name"])
		assert.Equal(t, a.Description, c["description"])
		ex, ok := c["example_school"].(map[string]any)
		require.True(t, ok, "%s has an example school: %s", a.ID, res.Raw)
		assert.Equal(t, sorted("id", "name", "city", "state", "image_url"), keys(ex))
		id := ex["id"].(string)
		s, found := byID[id]
		require.True(t, found, "the example %s is a school of the catalogue", id)
		assert.Equal(t, s.Name, ex["name"])
		assert.Equal(t, s.City, ex["city"])
		assert.Equal(t, s.State, ex["state"])
		assert.Contains(t, match.Classify(s), a.ID, "the example %s belongs to %s", s.Name, a.ID)
		assert.Equal(t, "https://images.collegematch.example/schools/"+id+".jpg", ex["image_url"])
		assert.False(t, seen[id], "six different schools")
		seen[id] = true
	}

	again := api.do(t, "GET", "/v2/onboarding/category-schools", tok, nil)
	assert.Equal(t, string(res.Raw), string(again.Raw), "the same catalogue gives the same answer")
}

func TestCategorySwipeValidation(t *testing.T) {
	api := newTestAPI(t)
	id, tok := api.newStudent(t, minimalProfile())
	for name, c := range map[string]struct {
		body   any
		fields []string
	}{
		"unknown category":       {map[string]any{"student_id": id, "category_id": "ivy-league", "direction": "right"}, []string{"category_id"}},
		"category in upper case": {map[string]any{"student_id": id, "category_id": "LIBERAL-ARTS", "direction": "right"}, []string{"category_id"}},
		"no category":            {map[string]any{"student_id": id, "direction": "right"}, []string{"category_id"}},
		"null category":          {map[string]any{"student_id": id, "category_id": nil, "direction": "right"}, []string{"category_id"}},
		"category a number":      {map[string]any{"student_id": id, "category_id": 2, "direction": "right"}, []string{"category_id"}},
		"bad direction":          {map[string]any{"student_id": id, "category_id": "liberal-arts", "direction": "up"}, []string{"direction"}},
		"direction in capitals":  {map[string]any{"student_id": id, "category_id": "liberal-arts", "direction": "RIGHT"}, []string{"direction"}},
		"no direction":           {map[string]any{"student_id": id, "category_id": "liberal-arts"}, []string{"direction"}},
		"direction a boolean":    {map[string]any{"student_id": id, "category_id": "liberal-arts", "direction": true}, []string{"direction"}},
		"no student_id":          {map[string]any{"category_id": "liberal-arts", "direction": "left"}, []string{"student_id"}},
		"student_id not a UUID":  {map[string]any{"student_id": "student-1", "category_id": "liberal-arts", "direction": "left"}, []string{"student_id"}},
		"student_id a number":    {map[string]any{"student_id": 7, "category_id": "liberal-arts", "direction": "left"}, []string{"student_id"}},
		"unknown field":          {map[string]any{"student_id": id, "category_id": "liberal-arts", "direction": "left", "weight": 1}, []string{"weight"}},
		"everything wrong":       {map[string]any{"student_id": id, "category_id": "x", "direction": "down"}, []string{"category_id", "direction"}},
		"empty body":             {"", []string{"body"}},
		"malformed JSON":         {`{"student_id":`, []string{"body"}},
		"not an object":          {`["liberal-arts"]`, []string{"body"}},
		"two objects":            {`{"student_id":"` + id + `","category_id":"liberal-arts","direction":"left"} {}`, []string{"body"}},
	} {
		t.Run(name, func(t *testing.T) {
			res := api.do(t, "POST", "/v2/onboarding/category-swipe", tok, c.body)
			require.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Raw)
			assert.Equal(t, "INVALID_REQUEST", res.errorCode())
			assert.Equal(t, sorted(c.fields...), keys(res.errorFields()), "%s", res.Raw)
		})
	}

	t.Run("an unknown category lists the valid ids", func(t *testing.T) {
		res := api.do(t, "POST", "/v2/onboarding/category-swipe", tok,
			map[string]any{"student_id": id, "category_id": "ivy-league", "direction": "right"})
		require.Equal(t, http.StatusBadRequest, res.Status)
		msg := res.Body["error"].(map[string]any)["message"].(string)
		details := res.Body["error"].(map[string]any)["details"].(map[string]any)
		var listed []string
		for _, v := range details["category_ids"].([]any) {
			listed = append(listed, v.(string))
		}
		assert.Equal(t, archetypeIDs(), listed)
		for _, c := range archetypeIDs() {
			assert.Contains(t, msg, c)
			assert.Contains(t, res.errorFields()["category_id"], c)
		}
	})

	t.Run("nothing is stored for a refused swipe", func(t *testing.T) {
		prefs, err := api.Store.CategoryPreferences(context.Background(), id)
		require.NoError(t, err)
		assert.Empty(t, prefs)
	})

	t.Run("unknown student", func(t *testing.T) {
		other := uuid.NewString()
		res := api.do(t, "POST", "/v2/onboarding/category-swipe", token(t, other, false),
			map[string]any{"student_id": other, "category_id": "liberal-arts", "direction": "right"})
		require.Equal(t, http.StatusNotFound, res.Status, "%s", res.Raw)
		assert.Equal(t, domain.CodeInvalidStudentID, res.errorCode())
		assert.Equal(t, other, res.Body["error"].(map[string]any)["details"].(map[string]any)["student_id"])
	})

	t.Run("another student's id", func(t *testing.T) {
		res := api.do(t, "POST", "/v2/onboarding/category-swipe", tok,
			map[string]any{"student_id": uuid.NewString(), "category_id": "liberal-arts", "direction": "right"})
		require.Equal(t, http.StatusForbidden, res.Status, "%s", res.Raw)
	})

	t.Run("no token", func(t *testing.T) {
		res := api.do(t, "POST", "/v2/onboarding/category-swipe", "",
			map[string]any{"student_id": id, "category_id": "liberal-arts", "direction": "right"})
		require.Equal(t, http.StatusUnauthorized, res.Status, "%s", res.Raw)
	})

	t.Run("an erased student", func(t *testing.T) {
		gone, gtok := api.newStudent(t, minimalProfile())
		_, err := api.Store.DeleteStudent(context.Background(), gone)
		require.NoError(t, err)
		res := api.do(t, "POST", "/v2/onboarding/category-swipe", gtok,
			map[string]any{"student_id": gone, "category_id": "liberal-arts", "direction": "right"})
		require.Equal(t, http.StatusNotFound, res.Status, "%s", res.Raw)
		assert.Equal(t, domain.CodeInvalidStudentID, res.errorCode())
		res = api.do(t, "POST", "/v2/recommendations", gtok, map[string]any{"student_id": gone})
		require.Equal(t, http.StatusNotFound, res.Status, "%s", res.Raw)
		assert.Equal(t, domain.CodeInvalidStudentID, res.errorCode())
		// The student is checked before the school.
		res = api.do(t, "GET", "/match/"+gone+"/"+uuid.NewString(), gtok, nil)
		require.Equal(t, http.StatusNotFound, res.Status, "match detail of an erased student: %s", res.Raw)
		assert.Equal(t, domain.CodeInvalidStudentID, res.errorCode())
	})
}

// weightsOf reads a preference_weights object.
func weightsOf(t *testing.T, v any) match.Weights {
	t.Helper()
	m := map[string]float64{}
	for k, x := range v.(map[string]any) {
		m[k] = x.(float64)
	}
	require.Len(t, m, len(match.WeightKeys))
	return match.WeightsFromMap(m)
}

// membersOnPage counts the items of a recommendations page that belong to
// category id.
func membersOnPage(t *testing.T, res result, byID map[string]domain.School, id match.ArchetypeID) int {
	t.Helper()
	n := 0
	for _, raw := range res.Body["recommendations"].([]any) {
		s, ok := byID[raw.(map[string]any)["school_id"].(string)]
		require.True(t, ok)
		if slices.Contains(match.Classify(s), id) {
			n++
		}
	}
	return n
}

func schoolIDs(res result) []string {
	var out []string
	for _, raw := range res.Body["recommendations"].([]any) {
		out = append(out, raw.(map[string]any)["school_id"].(string))
	}
	return out
}

func TestCategorySwipeMovesThePrior(t *testing.T) {
	api := newTestAPI(t)
	schools := api.seedSchools(t, 3000)
	byID := map[string]domain.School{}
	for _, s := range schools {
		byID[s.ID] = s
	}
	profile := minimalProfile()
	profile["gpa"], profile["state"] = 3.7, "OH"
	// A fixed student id: exploration and probe slots are seeded by it, so
	// the before/after comparison is the same on every run.
	id := "6b1f2c1e-7d3a-4c55-8e0f-000000000043"
	tok := token(t, id, false)
	require.Equal(t, http.StatusCreated, api.do(t, "POST", "/v2/onboarding/minimal", tok, profile).Status)
	recs := func() result {
		t.Helper()
		res := api.do(t, "POST", "/v2/recommendations", tok, map[string]any{"student_id": id})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		return res
	}
	swipe := func(category, direction string) result {
		t.Helper()
		res := api.do(t, "POST", "/v2/onboarding/category-swipe", tok,
			map[string]any{"student_id": id, "category_id": category, "direction": direction})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		assert.Equal(t, "300", res.Header.Get("X-RateLimit-Limit"), "rate group swipes")
		assert.Equal(t, sorted("success", "category_id", "direction", "preference_weights"), keys(res.Body))
		assert.Equal(t, true, res.Body["success"])
		assert.Equal(t, category, res.Body["category_id"])
		assert.Equal(t, direction, res.Body["direction"])
		return res
	}

	before := recs()
	w0 := weightsOf(t, before.Body["learning_state"].(map[string]any)["preference_weights"])
	assert.Equal(t, match.SeedWeights(match.Profile{}), w0, "no category swipe yet: the profile's seed weights")
	liberal0 := membersOnPage(t, before, byID, match.ArchetypeLiberalArts)

	liked := swipe("liberal-arts", "right")
	w1 := weightsOf(t, liked.Body["preference_weights"])
	assert.InDelta(t, w0.SizePreference-0.3, w1.SizePreference, 1e-9, "liking small liberal-arts colleges lowers size_preference")
	assert.InDelta(t, w0.CampusWeight+0.25, w1.CampusWeight, 1e-9, "and raises campus_weight")
	assert.Equal(t, w0.CostWeight, w1.CostWeight, "other weights stay")

	after := recs()
	assert.Equal(t, w1, weightsOf(t, after.Body["learning_state"].(map[string]any)["preference_weights"]),
		"the next recommendations rank with the new prior")
	assert.NotEqual(t, schoolIDs(before), schoolIDs(after), "the stored feed was superseded")
	liberal1 := membersOnPage(t, after, byID, match.ArchetypeLiberalArts)
	t.Logf("liberal-arts colleges on the first page: %d before the like, %d after", liberal0, liberal1)
	assert.Greater(t, liberal1, liberal0, "the first page has more liberal-arts colleges")

	// The latest direction wins: one preference per category.
	disliked := swipe("liberal-arts", "left")
	w2 := weightsOf(t, disliked.Body["preference_weights"])
	assert.InDelta(t, w0.SizePreference+0.15, w2.SizePreference, 1e-9, "a dislike moves the other way, half as much")
	assert.InDelta(t, w0.CampusWeight-0.125, w2.CampusWeight, 1e-9)
	assert.Equal(t, w2, weightsOf(t, recs().Body["learning_state"].(map[string]any)["preference_weights"]))
	prefs, err := api.Store.CategoryPreferences(context.Background(), id)
	require.NoError(t, err)
	require.Len(t, prefs, 1)
	assert.Equal(t, "left", prefs[0].Direction)

	// Several categories add up.
	w3 := weightsOf(t, swipe("public-flagship", "right").Body["preference_weights"])
	assert.InDelta(t, w0.SizePreference+0.15+0.3, w3.SizePreference, 1e-9)
	assert.InDelta(t, w0.OutcomesWeight+0.05, w3.OutcomesWeight, 1e-9)

	// A category swipe is not a school swipe.
	res := recs()
	assert.EqualValues(t, 0, res.Body["total_swipes"])
	assert.Equal(t, "discovery", res.Body["metadata"].(map[string]any)["learning_phase"])
}

func TestCategoryPriorAlsoRanksPOSTRecommendations(t *testing.T) {
	api := newTestAPI(t)
	schools := api.seedSchools(t, 3000)
	byID := map[string]domain.School{}
	for _, s := range schools {
		byID[s.ID] = s
	}
	profile := completeProfile()
	delete(profile, "intended_majors")
	delete(profile, "preferred_size")
	// A fixed student id: exploration and probe slots are seeded by it, so
	// the comparison is the same on every run; a long page so it counts
	// more than a handful of slots.
	id := "6b1f2c1e-7d3a-4c55-8e0f-000000000042"
	tok := token(t, id, false)
	require.Equal(t, http.StatusCreated, api.do(t, "POST", "/v2/onboarding/minimal", tok, profile).Status)
	body := map[string]any{"student_id": id, "limit": 100}

	before := api.do(t, "POST", "/recommendations", tok, body)
	require.Equal(t, http.StatusOK, before.Status, "%s", before.Raw)
	tech0 := membersOnPage(t, before, byID, match.ArchetypeTechEngineering)

	res := api.do(t, "POST", "/v2/onboarding/category-swipe", tok,
		map[string]any{"student_id": id, "category_id": "tech-engineering", "direction": "right"})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	w := weightsOf(t, res.Body["preference_weights"])

	v1 := api.do(t, "POST", "/recommendations", tok, body)
	require.Equal(t, http.StatusOK, v1.Status, "%s", v1.Raw)
	assert.Equal(t, w, weightsOf(t, v1.Body["learning_state"].(map[string]any)["preference_weights"]))
	tech1 := membersOnPage(t, v1, byID, match.ArchetypeTechEngineering)
	t.Logf("technical schools on the first page of POST /recommendations: %d before the like, %d after", tech0, tech1)
	assert.Greater(t, tech1, tech0)
	for _, raw := range v1.Body["recommendations"].([]any)[:5] {
		assert.NotEmpty(t, raw.(map[string]any)["matched_majors"], "the liked category suggests engineering and computing majors")
	}

	v2 := api.do(t, "POST", "/v2/recommendations", tok, body)
	require.Equal(t, http.StatusOK, v2.Status, "%s", v2.Raw)
	assert.Equal(t, string(v1.Raw), string(v2.Raw), "a complete profile gets the same answer from both")
}

func TestCategoryPriorMessagesNameTheIDs(t *testing.T) {
	// The message of a refused category id is usable as it is.
	api := newTestAPI(t)
	id, tok := api.newStudent(t, minimalProfile())
	res := api.do(t, "POST", "/v2/onboarding/category-swipe", tok,
		map[string]any{"student_id": id, "category_id": "", "direction": "right"})
	require.Equal(t, http.StatusBadRequest, res.Status)
	assert.True(t, strings.HasPrefix(res.Body["error"].(map[string]any)["message"].(string), "category_id must be one of "),
		"%s", res.Raw)
}
