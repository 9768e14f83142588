package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/httpapi"
)

// nearMax is the size the hostile bodies below are padded to: just under
// the 1 MiB cap, so the cap is not what refuses them.
const nearMax = httpapi.MaxBodyBytes - 1024

// fill returns prefix + item repeated (separated by commas) + suffix, as
// long as fits in nearMax bytes.
func fill(prefix, suffix string, item func(i int) string) []byte {
	var b bytes.Buffer
	b.WriteString(prefix)
	for i := 0; ; i++ {
		it := item(i)
		if b.Len()+len(it)+1+len(suffix) > nearMax {
			break
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(it)
	}
	b.WriteString(suffix)
	return b.Bytes()
}

// hostileBodies are 1 MiB bodies built to cost the most to decode, per
// endpoint: the longest arrays, the most keys (unknown or repeated), the
// deepest nesting. want is the field the 400 names ("" when the endpoint
// answers otherwise, as sync push does for a change it rejects alone).
func hostileBodies(student string) []struct {
	name, path string
	body       []byte
	status     int
	want       string
} {
	zero := func(int) string { return "0" }
	key := func(i int) string { return `"k` + strconv.Itoa(i) + `":0` }
	sid := `{"student_id":"` + student + `",`
	return []struct {
		name, path string
		body       []byte
		status     int
		want       string
	}{
		{"batch ids", "/m/batch/schools", fill(`{"school_ids":[`, `]}`, zero), 400, "school_ids"},
		{"sync changes", "/m/sync/push", fill(sid+`"changes":[`, `]}`, zero), 400, "changes"},
		{"continuous swipes", "/continuous-feed", fill(sid+`"swipes":[`, `]}`, zero), 400, "swipes"},
		{"onboarding majors", "/v2/onboarding/minimal", fill(`{"intended_majors":[`, `]}`, func(int) string { return `"x"` }), 400, "intended_majors"},
		{"onboarding unknown keys", "/v2/onboarding/minimal", fill(`{`, `}`, key), 400, "k0"},
		{"onboarding repeated key", "/v2/onboarding/minimal", fill(`{`, `}`, func(int) string { return `"name":"Ada"` }), 400, "name"},
		{"onboarding nested unknown keys", "/v2/onboarding/minimal", fill(`{"home":{`, `}}`, key), 400, "home.k0"},
		{"swipe unknown keys", "/swipe", fill(sid, `}`, key), 400, "k0"},
		{"recommendations unknown keys", "/recommendations", fill(sid, `}`, key), 400, "k0"},
		{"feedback repeated key", "/feedback", fill(`{`, `}`, func(int) string { return `"reason":"x"` }), 400, "reason"},
		{"category swipe deep", "/v2/onboarding/category-swipe",
			[]byte(sid + `"direction":` + strings.Repeat("[", nearMax/2-100) + strings.Repeat("]", nearMax/2-100) + `}`), 400, "body"},
		{"sync pull keys in a free value", "/m/sync/pull", fill(sid+`"cursor":{`, `}}`, key), 400, "cursor"},
		{"sync push one change of many keys", "/m/sync/push", fill(sid+`"changes":[{`, `}]}`, key), 200, ""},
		{"health with a body", "/health", fill(`{"x":[`, `]}`, zero), 200, ""},
	}
}

// A 1 MiB body built to be expensive (issue: {"school_ids":[0,0,...]} held
// about 19 MiB while decoding; onboarding answered each unknown key, a 400
// three times the request) is refused as its limit is reached: serving it
// allocates a small multiple of the body in all, and the 400 names the
// field in a few hundred bytes.
func TestHostileBodiesAreRefusedWithoutMaterialising(t *testing.T) {
	api := newTestAPI(t)
	student := uuid.NewString()
	tok := token(t, student, false)
	created := api.do(t, "POST", "/v2/onboarding/minimal", tok, map[string]any{"name": "Ada", "email": "ada@example.com", "graduation_year": "2027"})
	require.Equal(t, http.StatusCreated, created.Status, "%s", created.Raw)

	for _, tc := range hostileBodies(student) {
		t.Run(tc.name, func(t *testing.T) {
			method := http.MethodPost
			if tc.path == "/health" {
				method = http.MethodGet
			}
			req := httptest.NewRequest(method, tc.path, bytes.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			api.Handler.ServeHTTP(rec, req)
			runtime.ReadMemStats(&after)
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d-byte body: %d, %d-byte answer, %.1f MiB allocated", len(tc.body), rec.Code, rec.Body.Len(),
				float64(allocated)/(1<<20))

			require.Equal(t, tc.status, rec.Code, "%.500s", rec.Body.String())
			assert.Less(t, rec.Body.Len(), 4096, "the answer is not a multiple of the request")
			assert.Less(t, allocated, uint64(3*len(tc.body)), "serving the body allocates a small multiple of it")
			if tc.status != http.StatusBadRequest {
				return
			}
			var body struct {
				Error struct {
					Code    string `json:"code"`
					Message string `json:"message"`
					Details struct {
						Fields map[string]string `json:"fields"`
					} `json:"details"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
			assert.Equal(t, "INVALID_REQUEST", body.Error.Code)
			assert.Contains(t, body.Error.Details.Fields, tc.want, "%s", rec.Body.String())
			assert.LessOrEqual(t, len(body.Error.Details.Fields), 2*20, "at most 20 unknown or repeated fields (and the known ones)")
		})
	}
}
