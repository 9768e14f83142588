package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/httpapi"
	"github.com/collegematch/matching/internal/store"
)

func minimalProfile() map[string]any {
	return map[string]any{"name": "Ada Lovelace", "email": "ada@example.com", "graduation_year": "2027"}
}

func TestOnboardingCreateThenUpdate(t *testing.T) {
	api := newTestAPI(t)
	id := uuid.NewString()
	tok := token(t, id, false)

	res := api.do(t, "POST", "/v2/onboarding/minimal", tok, minimalProfile())
	require.Equal(t, 201, res.Status, "%s", res.Raw)
	assert.Equal(t, id, res.Body["student_id"])
	assert.Equal(t, false, res.Body["profile_complete"])
	assert.Equal(t, []any{"gpa_or_test_score", "home_or_state"}, res.Body["missing"])
	profile := res.Body["profile"].(map[string]any)
	assert.Equal(t, "Ada Lovelace", profile["name"])
	assert.Equal(t, "ada@example.com", profile["email"])
	assert.Equal(t, "2027", profile["graduation_year"])
	assert.Nil(t, profile["gpa"])
	assert.Equal(t, map[string]any{"sat": nil, "act": nil}, profile["test_scores"])
	assert.Equal(t, "application/json", res.Header.Get("Content-Type"))
	assert.NotEmpty(t, res.Header.Get("X-RateLimit-Limit"))

	// Repeat with more fields: 200, merged, complete.
	body := minimalProfile()
	body["gpa"] = 3.85
	body["test_scores"] = map[string]any{"sat": 1380}
	body["state"] = "ca"
	body["intended_majors"] = []string{"Computer Science", "engineering", "cs", "Communications", "Comp Sci", "52.0201", "2601"}
	body["preferred_size"] = "Medium"
	body["budget"] = 20000
	res = api.do(t, "POST", "/v2/onboarding/minimal", tok, body)
	require.Equal(t, 200, res.Status, "%s", res.Raw)
	assert.Equal(t, true, res.Body["profile_complete"])
	assert.Equal(t, []any{}, res.Body["missing"])
	profile = res.Body["profile"].(map[string]any)
	assert.Equal(t, 3.85, profile["gpa"])
	assert.Equal(t, map[string]any{"sat": 1380.0, "act": nil}, profile["test_scores"])
	assert.Equal(t, "CA", profile["state"])
	assert.Equal(t, []any{"computer", "engineering", "communication", "business_marketing", "biological"}, profile["intended_majors"])
	assert.Equal(t, "medium", profile["preferred_size"])

	// Absent fields keep their value; null clears.
	res = api.do(t, "POST", "/v2/onboarding/minimal", tok, map[string]any{"name": "Ada L.", "gpa": nil})
	require.Equal(t, 200, res.Status, "%s", res.Raw)
	profile = res.Body["profile"].(map[string]any)
	assert.Equal(t, "Ada L.", profile["name"])
	assert.Equal(t, "ada@example.com", profile["email"], "absent field kept")
	assert.Nil(t, profile["gpa"], "null cleared")
	assert.Equal(t, true, res.Body["profile_complete"], "SAT still counts as the academic signal")

	st, err := api.Store.Student(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, "Ada L.", st.Name)
	assert.Equal(t, 1380, *st.SAT)
}

func TestOnboardingCompleteness(t *testing.T) {
	api := newTestAPI(t)
	cases := []struct {
		name    string
		extra   map[string]any
		missing []any
	}{
		{"nothing", nil, []any{"gpa_or_test_score", "home_or_state"}},
		{"gpa only", map[string]any{"gpa": 3.2}, []any{"home_or_state"}},
		{"act and home", map[string]any{"test_scores": map[string]any{"act": 30}, "home": map[string]any{"lat": 40.7, "lon": -74.0}}, []any{}},
		{"state only", map[string]any{"state": "TX"}, []any{"gpa_or_test_score"}},
		{"sat and state", map[string]any{"test_scores": map[string]any{"sat": 1200}, "state": "DC"}, []any{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := minimalProfile()
			for k, v := range tc.extra {
				body[k] = v
			}
			res := api.do(t, "POST", "/v2/onboarding/minimal", token(t, "", false), body)
			require.Equal(t, 201, res.Status, "%s", res.Raw)
			assert.Equal(t, tc.missing, res.Body["missing"])
			assert.Equal(t, len(tc.missing) == 0, res.Body["profile_complete"])
		})
	}
}

func TestOnboardingValidation(t *testing.T) {
	api := newTestAPI(t)
	cases := []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"missing name", map[string]any{"email": "a@example.com", "graduation_year": "2027"}, "name"},
		{"missing email", map[string]any{"name": "A", "graduation_year": "2027"}, "email"},
		{"missing year", map[string]any{"name": "A", "email": "a@example.com"}, "graduation_year"},
		{"empty name", map[string]any{"name": "  ", "email": "a@example.com", "graduation_year": "2027"}, "name"},
		{"long name", map[string]any{"name": strings.Repeat("x", 201), "email": "a@example.com", "graduation_year": "2027"}, "name"},
		{"null name", map[string]any{"name": nil, "email": "a@example.com", "graduation_year": "2027"}, "name"},
		{"bad email", map[string]any{"name": "A", "email": "not-an-email", "graduation_year": "2027"}, "email"},
		{"email without dot", map[string]any{"name": "A", "email": "a@localhost", "graduation_year": "2027"}, "email"},
		{"email with name", map[string]any{"name": "A", "email": "Ada <a@example.com>", "graduation_year": "2027"}, "email"},
		{"year as number", map[string]any{"name": "A", "email": "a@example.com", "graduation_year": 2027}, "graduation_year"},
		{"year two digits", map[string]any{"name": "A", "email": "a@example.com", "graduation_year": "27"}, "graduation_year"},
		{"year implausible", map[string]any{"name": "A", "email": "a@example.com", "graduation_year": "1850"}, "graduation_year"},
		{"year far future", map[string]any{"name": "A", "email": "a@example.com", "graduation_year": "3000"}, "graduation_year"},
		{"gpa too high", withExtra("gpa", 5.5), "gpa"},
		{"gpa negative", withExtra("gpa", -1), "gpa"},
		{"gpa string", withExtra("gpa", "3.5"), "gpa"},
		{"sat too low", withExtra("test_scores", map[string]any{"sat": 200}), "test_scores.sat"},
		{"sat too high", withExtra("test_scores", map[string]any{"sat": 1700}), "test_scores.sat"},
		{"sat fractional", withExtra("test_scores", map[string]any{"sat": 1200.5}), "test_scores.sat"},
		{"act too high", withExtra("test_scores", map[string]any{"act": 37}), "test_scores.act"},
		{"unknown test", withExtra("test_scores", map[string]any{"gre": 320}), "test_scores.gre"},
		{"test_scores not object", withExtra("test_scores", []int{1}), "test_scores"},
		{"home lat out of range", withExtra("home", map[string]any{"lat": 91, "lon": 0}), "home.lat"},
		{"home missing lon", withExtra("home", map[string]any{"lat": 40}), "home.lon"},
		{"bad state", withExtra("state", "XX"), "state"},
		{"territory", withExtra("state", "PR"), "state"},
		{"bad zip", withExtra("zip", "1234"), "zip"},
		{"distance zero", withExtra("max_distance_miles", 0), "max_distance_miles"},
		{"budget negative", withExtra("budget", -5), "budget"},
		{"income not number", withExtra("family_income", "lots"), "family_income"},
		{"unknown major", withExtra("intended_majors", []string{"underwater basket weaving"}), "intended_majors[0]"},
		{"majors not array", withExtra("intended_majors", "cs"), "intended_majors"},
		{"bad size", withExtra("preferred_size", "huge"), "preferred_size"},
		{"bad setting", withExtra("preferred_setting", "moon"), "preferred_setting"},
		{"unknown field", withExtra("favourite_colour", "blue"), "favourite_colour"},
		{"student_id not uuid", withExtra("student_id", "abc"), "student_id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := api.do(t, "POST", "/v2/onboarding/minimal", token(t, "", false), tc.body)
			require.Equal(t, 400, res.Status, "%s", res.Raw)
			assert.Equal(t, "INVALID_REQUEST", res.errorCode())
			assert.Contains(t, res.errorFields(), tc.field, "%s", res.Raw)
		})
	}

	t.Run("all problems at once", func(t *testing.T) {
		res := api.do(t, "POST", "/v2/onboarding/minimal", token(t, "", false),
			map[string]any{"name": "", "email": "x", "graduation_year": "x", "gpa": 9})
		require.Equal(t, 400, res.Status)
		assert.Len(t, res.errorFields(), 4, "%s", res.Raw)
	})
}

func withExtra(k string, v any) map[string]any {
	b := minimalProfile()
	b[k] = v
	return b
}

func TestOnboardingZip(t *testing.T) {
	api := newTestAPI(t)
	_, err := api.Store.ReplaceZipCentroids(context.Background(), []store.ZipCentroid{{Zip: "02138", Lat: 42.38, Lon: -71.135, State: "MA"}})
	require.NoError(t, err)

	res := api.do(t, "POST", "/v2/onboarding/minimal", token(t, "", false), withExtra("zip", "02138-1234"))
	require.Equal(t, 201, res.Status, "%s", res.Raw)
	p := res.Body["profile"].(map[string]any)
	assert.Equal(t, "MA", p["state"])
	assert.Equal(t, "02138", p["zip"])
	assert.Equal(t, map[string]any{"lat": 42.38, "lon": -71.135}, p["home"])

	// Unknown ZIP with a state falls back to the state.
	body := withExtra("zip", "99999")
	body["state"] = "NV"
	res = api.do(t, "POST", "/v2/onboarding/minimal", token(t, "", false), body)
	require.Equal(t, 201, res.Status, "%s", res.Raw)
	p = res.Body["profile"].(map[string]any)
	assert.Equal(t, "NV", p["state"])
	assert.Nil(t, p["home"])
	assert.Equal(t, []any{"gpa_or_test_score"}, res.Body["missing"])

	// Unknown ZIP alone is a 400.
	res = api.do(t, "POST", "/v2/onboarding/minimal", token(t, "", false), withExtra("zip", "99999"))
	require.Equal(t, 400, res.Status, "%s", res.Raw)
	assert.Contains(t, res.errorFields(), "zip")
}

func TestOnboardingServiceToken(t *testing.T) {
	api := newTestAPI(t)
	svc := token(t, "backend", true)
	id := uuid.NewString()

	res := api.do(t, "POST", "/v2/onboarding/minimal", svc, withExtra("student_id", id))
	require.Equal(t, 201, res.Status, "%s", res.Raw)
	assert.Equal(t, id, res.Body["student_id"])

	// A service token must name the student: its own sub is no student id.
	res = api.do(t, "POST", "/v2/onboarding/minimal", svc, minimalProfile())
	require.Equal(t, 400, res.Status, "%s", res.Raw)
	assert.Contains(t, res.errorFields(), "student_id")

	// A student token naming itself is fine; naming another is 403.
	own := uuid.NewString()
	res = api.do(t, "POST", "/v2/onboarding/minimal", token(t, own, false), withExtra("student_id", own))
	require.Equal(t, 201, res.Status, "%s", res.Raw)
	res = api.do(t, "POST", "/v2/onboarding/minimal", token(t, own, false), withExtra("student_id", id))
	require.Equal(t, 403, res.Status, "%s", res.Raw)
	assert.Equal(t, "FORBIDDEN", res.errorCode())
}

func TestMalformedBodies(t *testing.T) {
	api := newTestAPI(t)
	tok := token(t, "", false)
	cases := []struct {
		name string
		body any
	}{
		{"not json", "this is not json"},
		{"truncated", `{"name": "A`},
		{"array", `[1,2,3]`},
		{"string", `"hello"`},
		{"empty", ""},
		{"two objects", `{"name":"A","email":"a@example.com","graduation_year":"2027"} {}`},
		{"wrong type", `{"name": 42, "email":"a@example.com","graduation_year":"2027"}`},
		{"nested wrong type", `{"name":"A","email":"a@example.com","graduation_year":"2027","home":{"lat":"north","lon":1}}`},
		{"oversize", `{"name":"` + strings.Repeat("a", 1<<20+10) + `"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := api.do(t, "POST", "/v2/onboarding/minimal", tok, tc.body)
			require.Equal(t, 400, res.Status, "%s", res.Raw)
			assert.Equal(t, "INVALID_REQUEST", res.errorCode())
			e := res.Body["error"].(map[string]any)
			assert.NotEmpty(t, e["message"])
			assert.NotNil(t, e["details"])
		})
	}
}

func TestHealth(t *testing.T) {
	api := newTestAPI(t)
	res := api.do(t, "GET", "/health", token(t, "", false), nil)
	require.Equal(t, 200, res.Status, "%s", res.Raw)
	assert.Equal(t, "ok", res.Body["status"])
	assert.Equal(t, map[string]any{"postgres": "ok", "redis": "ok"}, res.Body["checks"])
	assert.Equal(t, "test", res.Body["version"])
	assert.NotEmpty(t, res.Header.Get("X-Request-ID"))

	res = api.do(t, "GET", "/health", "", nil)
	assert.Equal(t, 401, res.Status)
}

// An endpoint whose use case is not wired answers 501 (offline sync is
// optional in httpapi.Deps).
func TestNotImplementedEndpointsAnswer501(t *testing.T) {
	api := newTestAPI(t, func(d *httpapi.Deps) { d.SyncPush, d.SyncPull = nil, nil })
	id := uuid.NewString()
	tok := token(t, id, false)
	for _, ep := range [][2]string{
		{"POST", "/m/sync/pull"}, {"POST", "/m/sync/push"},
	} {
		var body any
		if ep[0] == "POST" {
			body = map[string]any{"student_id": id}
		}
		res := api.do(t, ep[0], ep[1], tok, body)
		assert.Equal(t, 501, res.Status, ep[1])
		assert.Equal(t, "NOT_IMPLEMENTED", res.errorCode(), ep[1])
	}
}

func TestRequestIDEchoed(t *testing.T) {
	api := newTestAPI(t)
	req := api.do(t, "GET", "/nope", "", nil)
	assert.Equal(t, 404, req.Status)
	assert.Equal(t, "NOT_FOUND", req.errorCode())
	assert.Len(t, req.Header.Get("X-Request-ID"), 24)
}

func TestOnboardingConcurrentUpdatesAreAllKept(t *testing.T) {
	api := newTestAPI(t)
	id := uuid.NewString()
	tok := token(t, id, false)
	require.Equal(t, 201, api.do(t, "POST", "/v2/onboarding/minimal", tok, minimalProfile()).Status)

	updates := []map[string]any{
		{"gpa": 3.5}, {"state": "OR"}, {"budget": 18000}, {"family_income": 52000},
		{"max_distance_miles": 300}, {"preferred_size": "small"}, {"preferred_setting": "town"},
		{"intended_majors": []string{"history"}},
	}
	var wg sync.WaitGroup
	for _, u := range updates {
		wg.Go(func() {
			res := api.do(t, "POST", "/v2/onboarding/minimal", tok, u)
			assert.Equal(t, 200, res.Status, "%s", res.Raw)
		})
	}
	wg.Wait()
	st, err := api.Store.Student(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, 3.5, *st.GPA)
	assert.Equal(t, "OR", st.State)
	assert.Equal(t, 18000, *st.Budget)
	assert.Equal(t, 52000, *st.FamilyIncome)
	assert.Equal(t, 300, *st.MaxDistanceMiles)
	assert.Equal(t, "small", st.PreferredSize)
	assert.Equal(t, "town", st.PreferredSetting)
	assert.Len(t, st.IntendedMajors, 1)
}

func TestOnboardingHomeFollowsStateAndZip(t *testing.T) {
	api := newTestAPI(t)
	_, err := api.Store.ReplaceZipCentroids(context.Background(), []store.ZipCentroid{{Zip: "02138", Lat: 42.38, Lon: -71.135, State: "MA"}})
	require.NoError(t, err)
	tok := token(t, "", false)
	res := api.do(t, "POST", "/v2/onboarding/minimal", tok, withExtra("zip", "02138"))
	require.Equal(t, 201, res.Status, "%s", res.Raw)

	// Moving to another state drops the Cambridge coordinates.
	res = api.do(t, "POST", "/v2/onboarding/minimal", tok, map[string]any{"state": "HI"})
	require.Equal(t, 200, res.Status, "%s", res.Raw)
	p := res.Body["profile"].(map[string]any)
	assert.Equal(t, "HI", p["state"])
	assert.Nil(t, p["home"])

	// The same state again keeps explicit coordinates.
	res = api.do(t, "POST", "/v2/onboarding/minimal", tok, map[string]any{"home": map[string]any{"lat": 21.3, "lon": -157.8}})
	require.Equal(t, 200, res.Status, "%s", res.Raw)
	res = api.do(t, "POST", "/v2/onboarding/minimal", tok, map[string]any{"state": "HI"})
	require.Equal(t, 200, res.Status, "%s", res.Raw)
	assert.Equal(t, map[string]any{"lat": 21.3, "lon": -157.8}, res.Body["profile"].(map[string]any)["home"])

	// A ZIP that contradicts the state sent with it is refused.
	body := map[string]any{"zip": "02138", "state": "TX"}
	res = api.do(t, "POST", "/v2/onboarding/minimal", tok, body)
	require.Equal(t, 400, res.Status, "%s", res.Raw)
	assert.Contains(t, res.errorFields(), "zip")
}

func TestOnboardingRefusesControlCharactersAndOtherContentTypes(t *testing.T) {
	api := newTestAPI(t)
	res := api.do(t, "POST", "/v2/onboarding/minimal", token(t, "", false), withExtra("name", "Ada\u0000Lovelace"))
	require.Equal(t, 400, res.Status, "%s", res.Raw)
	assert.Contains(t, res.errorFields(), "name")

	req, err := http.NewRequest("POST", api.URL+"/v2/onboarding/minimal", strings.NewReader(`{"name":"A","email":"a@example.com","graduation_year":"2027"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token(t, "", false))
	req.Header.Set("Content-Type", "text/plain")
	r, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	r.Body.Close()
	assert.Equal(t, 400, r.StatusCode)
}
