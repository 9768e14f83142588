package httpapi

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/metrics"
)

// zeros is a JSON array of n zeros.
func zeros(n int) string { return "[" + strings.TrimSuffix(strings.Repeat("0,", n), ",") + "]" }

// manyKeys is a JSON object of n distinct keys.
func manyKeys(n int) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k` + strconv.Itoa(i) + `":0`)
	}
	b.WriteByte('}')
	return b.String()
}

func nested(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func TestCheckShape(t *testing.T) {
	cases := []struct {
		name  string
		shape *shape
		body  string
		want  map[string]string // nil: no problem
		fatal bool
	}{
		{"fits", batchSchoolsBody, `{"school_ids":["a","b"]}`, nil, false},
		{"100 ids fit", batchSchoolsBody, `{"school_ids":` + zeros(100) + `}`, nil, false},
		{"101 ids", batchSchoolsBody, `{"school_ids":` + zeros(101) + `}`,
			map[string]string{"school_ids": "must have at most 100 entries"}, true},
		{"half a million ids", batchSchoolsBody, `{"school_ids":` + zeros(500_000) + `}`,
			map[string]string{"school_ids": "must have at most 100 entries"}, true},
		{"501 changes", syncPushBody, `{"student_id":"x","changes":` + zeros(501) + `}`,
			map[string]string{"changes": "must have at most 500 entries"}, true},
		{"51 swipes", continuousBody, `{"swipes":` + zeros(51) + `}`,
			map[string]string{"swipes": "must have at most 50 entries"}, true},
		{"11 majors", onboardingBody, `{"intended_majors":` + zeros(11) + `}`,
			map[string]string{"intended_majors": "must have at most 10 entries"}, true},
		{"unknown field", swipeBody, `{"student_id":"x","nickname":1}`, map[string]string{"nickname": "is not a known field"}, false},
		{"case is not folded", swipeBody, `{"Student_ID":"x"}`, map[string]string{"Student_ID": "is not a known field"}, false},
		{"escaped known name", swipeBody, `{"student\u005fid":"x"}`, nil, false},
		{"repeated field", swipeBody, `{"direction":"left","direction":"right"}`,
			map[string]string{"direction": "is given more than once"}, false},
		{"nested unknown", continuousBody, `{"swipes":[{"school_id":"a"},{"school_idd":"b"}]}`,
			map[string]string{"swipes[1].school_idd": "is not a known field"}, false},
		{"nested repeated", onboardingBody, `{"home":{"lat":1,"lat":2,"lon":3}}`,
			map[string]string{"home.lat": "is given more than once"}, false},
		{"deep", recommendationsBody, `{"limit":` + nested(maxDepth) + `}`,
			map[string]string{"body": "is nested deeper than 8 levels"}, true},
		{"deep enough", recommendationsBody, `{"limit":` + nested(maxDepth-1) + `}`, nil, false},
		{"very deep", recommendationsBody, `{"limit":` + nested(400_000) + `}`,
			map[string]string{"body": "is nested deeper than 8 levels"}, true},
		{"object where an array goes", batchSchoolsBody, `{"school_ids":` + manyKeys(1000) + `}`, nil, false},
		{"array where an object goes", onboardingBody, `{"home":` + zeros(1000) + `}`, nil, false},
		{"a top-level array is the decoder's", batchSchoolsBody, zeros(1000), nil, false},
		{"malformed is the decoder's", batchSchoolsBody, `{"school_ids":[1,2`, nil, false},
		{"malformed after a problem", swipeBody, `{"x":1,`, map[string]string{"x": "is not a known field"}, false},
		{"empty", swipeBody, ``, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := scanShape([]byte(tc.body), tc.shape)
			assert.Equal(t, tc.want, p.fields)
			assert.Equal(t, tc.fatal, p.fatal)
			err := checkShape([]byte(tc.body), tc.shape)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.Equal(t, domain.KindInvalid, domain.KindOf(err))
		})
	}
}

// decisions.md, "Input that people send": unknown or repeated fields are
// reported at most 20 at a time, so a 400 is never a multiple of the body.
func TestCheckShapeReportsAtMost20(t *testing.T) {
	body := []byte(manyKeys(50_000))
	err := checkShape(body, swipeBody)
	require.Error(t, err)
	de := err.(*domain.Error)
	fields := de.Details["fields"].(map[string]string)
	assert.Len(t, fields, maxReported)
	assert.Equal(t, "50000 fields are invalid; details.fields lists the first 20", de.Message)
	out, _ := json.Marshal(de.Details)
	assert.Less(t, len(out), 2048)

	// Keys of any length are quoted cut short.
	long := []byte(`{"` + strings.Repeat("k", 100_000) + `":1}`)
	de = checkShape(long, swipeBody).(*domain.Error)
	out, _ = json.Marshal(de.Details)
	assert.Less(t, len(out), 512)
}

// The check allocates nothing for what it counts: a 1 MiB body of half a
// million elements, or of keys, costs the problem it reports, not one
// allocation per element.
func TestCheckShapeAllocations(t *testing.T) {
	for name, tc := range map[string]struct {
		body  []byte
		shape *shape
	}{
		"array":                {[]byte(`{"school_ids":` + zeros(500_000) + `}`), batchSchoolsBody},
		"keys in a free value": {[]byte(`{"limit":` + manyKeys(60_000) + `}`), recommendationsBody},
		"fitting body":         {[]byte(`{"school_ids":` + zeros(100) + `}`), batchSchoolsBody},
		"deep":                 {[]byte(`{"limit":` + nested(400_000) + `}`), recommendationsBody},
	} {
		allocs := testing.AllocsPerRun(5, func() { _ = scanShape(tc.body, tc.shape) })
		assert.LessOrEqual(t, allocs, 8.0, "%s: %d-byte body", name, len(tc.body))
	}
}

func TestMembersAndElements(t *testing.T) {
	var got []string
	ok := members([]byte(` { "a" : 1 , "b\"c" : {"x":[1,{"y":null}]}, "d":"}" } `), func(k, v []byte) bool {
		got = append(got, keyString(k)+"="+string(v))
		return true
	})
	require.True(t, ok)
	assert.Equal(t, []string{`a=1`, `b"c={"x":[1,{"y":null}]}`, `d="}"`}, got)
	for _, bad := range []string{``, `[]`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1} x`, `{"a":1 "b":2}`, `{"a":[1}`} {
		assert.False(t, members([]byte(bad), func(k, v []byte) bool { return true }), bad)
	}
	assert.True(t, members([]byte(`{}`), func(k, v []byte) bool { t.Fatal("no members"); return true }))

	elems, tooMany, ok := elements([]byte(`[1, "a", [2], {"b":3}]`), 10)
	require.True(t, ok)
	assert.False(t, tooMany)
	require.Len(t, elems, 4)
	assert.Equal(t, `{"b":3}`, string(elems[3]))
	_, tooMany, ok = elements([]byte(zeros(500_000)), 100)
	assert.True(t, ok)
	assert.True(t, tooMany)
	for _, bad := range []string{``, `{}`, `[`, `[1,]`, `[1 2]`, `[1] x`, `["a]`} {
		_, _, ok := elements([]byte(bad), 10)
		assert.False(t, ok, bad)
	}
	elems, _, ok = elements([]byte(` [ ] `), 10)
	assert.True(t, ok)
	assert.Empty(t, elems)
	// What encoding/json accepts, the scan walks the same way.
	var v []json.RawMessage
	body := []byte(`[{"a":"\u0041\"]"},-1.5e+3,true,false,null,"x\\"]`)
	require.NoError(t, json.Unmarshal(body, &v))
	elems, _, ok = elements(body, 10)
	require.True(t, ok)
	require.Len(t, elems, len(v))
	for i := range v {
		assert.True(t, bytes.Equal(v[i], elems[i]))
	}
}

// Each request type decoded with encoding/json has exactly its shape's
// fields: the shape is what refuses other names (encoding/json would
// match them case-insensitively).
func TestShapesMatchRequestTypes(t *testing.T) {
	for _, tc := range []struct {
		v     any
		shape *shape
	}{
		{recommendationsRequest{}, recommendationsBody},
		{swipeRequest{}, swipeBody},
		{feedbackRequest{}, feedbackBody},
		{categorySwipeRequest{}, categorySwipeBody},
		{continuousRequest{}, continuousBody},
		{batchSchoolsRequest{}, batchSchoolsBody},
		{syncPushRequest{}, syncPushBody},
		{syncPullRequest{}, syncPullBody},
	} {
		typ := reflect.TypeOf(tc.v)
		var tags, names []string
		for i := range typ.NumField() {
			tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			tags = append(tags, tag)
		}
		for _, f := range tc.shape.fields {
			names = append(names, f.name)
		}
		assert.ElementsMatch(t, tags, names, typ.Name())
	}
	var names []string
	for _, f := range onboardingBody.fields {
		names = append(names, f.name)
	}
	assert.ElementsMatch(t, onboardingFields, names)
	names = nil
	for _, f := range continuousBody.fields[2].shape.elem.fields {
		names = append(names, f.name)
	}
	assert.ElementsMatch(t, continuousSwipeFields, names)
}

// Every route that takes a body has its shape in bodyShapes, so its limits
// apply before the body is walked for its student_id.
func TestEveryBodyRouteHasAShape(t *testing.T) {
	routes := chi.NewRouter() // the routes alone: no handler runs
	addRoutes(routes, Deps{Log: slog.New(slog.DiscardHandler), Metrics: metrics.NewHTTP(prometheus.NewRegistry())})
	posts := 0
	require.NoError(t, chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if method == http.MethodPost {
			posts++
			assert.NotNil(t, bodyShapes[route], "POST %s has no shape", route)
		}
		return nil
	}))
	assert.Equal(t, len(bodyShapes), posts)
}
