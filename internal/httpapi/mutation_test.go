package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// statusOfCode is the HTTP status of each error code (decisions.md,
// "Errors and status codes"; a reused swipe_id is INVALID_REQUEST 409).
var statusOfCode = map[string][]int{
	"INVALID_REQUEST": {400, 409}, "UNAUTHORIZED": {401}, "FORBIDDEN": {403}, "NOT_FOUND": {404},
	"METHOD_NOT_ALLOWED": {405}, "INVALID_STUDENT_ID": {404}, "INVALID_SCHOOL_ID": {404}, "MISSING_PROFILE": {422},
	"RATE_LIMITED": {429}, "NOT_IMPLEMENTED": {501}, "SERVICE_UNAVAILABLE": {503}, "INTERNAL_ERROR": {500},
}

// errorBodyProblem says what is wrong with an error answer, "" when it is
// the spec's error body: application/json, exactly
// {"error":{"code","message","details"}}, the code one of decisions.md's
// with its status, details an object.
func errorBodyProblem(status int, header http.Header, raw []byte) string {
	if ct := header.Get("Content-Type"); ct != "application/json" {
		return "Content-Type " + ct
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(raw, &body); err != nil || len(body) != 1 || body["error"] == nil {
		return "not {\"error\":{...}}"
	}
	var e map[string]json.RawMessage
	if err := json.Unmarshal(body["error"], &e); err != nil || len(e) != 3 {
		return "error is not {code, message, details}"
	}
	var code, message string
	var details map[string]any
	if json.Unmarshal(e["code"], &code) != nil || json.Unmarshal(e["message"], &message) != nil || message == "" ||
		json.Unmarshal(e["details"], &details) != nil || details == nil {
		return "code and message must be strings, details an object"
	}
	if !slices.Contains(statusOfCode[code], status) {
		return fmt.Sprintf("code %s with status %d", code, status)
	}
	return ""
}

// mutator rewrites a JSON body into something a careless or hostile client
// might send: structure-aware changes (a value of another type or size, a
// key added, dropped, repeated or recased, a wrapper) and byte-level ones
// (flips, cuts, insertions, duplicated runs).
type mutator struct{ r *rand.Rand }

var oddValues = []any{
	nil, true, false, 0, -1, 1.5, 1e308, -1e308, 4.2, 1e-320, 9007199254740993, "", " ", "x",
	"\u0000", "a\u0000b", "\u202e", "😀", "\ufffd", strings.Repeat("y", 5000), "left", "right", "swipe", "feedback",
	"too_expensive", "liberal-arts", "2027", "CA", "NaN", "-0", "1e999", "00000000-0000-0000-0000-000000000000",
	"<script>", "' OR 1=1 --", "../../etc/passwd", "%00", "\\", "\"", []any{}, map[string]any{},
	[]any{nil, 1, "a"}, map[string]any{"a": map[string]any{"b": []any{1}}},
}

func (m mutator) value() any {
	switch m.r.IntN(4) {
	case 0:
		return uuid.NewString()
	case 1:
		return strings.ToUpper(uuid.NewString())
	}
	return oddValues[m.r.IntN(len(oddValues))]
}

// structural changes one place of v (a decoded JSON value).
func (m mutator) structural(v any) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := map[string]any{}
		for k, val := range x {
			out[k] = val
		}
		if len(keys) == 0 || m.r.IntN(6) == 0 {
			out[[]string{"extra", "Student_ID", "student_id ", "", "__proto__", "limit"}[m.r.IntN(6)]] = m.value()
			return out
		}
		k := keys[m.r.IntN(len(keys))]
		switch m.r.IntN(5) {
		case 0:
			delete(out, k)
		case 1:
			out[strings.ToUpper(k)] = out[k]
			delete(out, k)
		case 2, 3:
			out[k] = m.structural(out[k])
		default:
			out[k] = m.value()
		}
		return out
	case []any:
		out := slices.Clone(x)
		switch {
		case len(out) == 0 || m.r.IntN(5) == 0:
			return append(out, m.value())
		case m.r.IntN(4) == 0:
			n := m.r.IntN(700)
			for range n {
				out = append(out, out[0])
			}
			return out
		}
		i := m.r.IntN(len(out))
		out[i] = m.structural(out[i])
		return out
	}
	if m.r.IntN(3) == 0 {
		return []any{v}
	}
	return m.value()
}

// bytewise damages the encoded body.
func (m mutator) bytewise(b []byte) []byte {
	b = slices.Clone(b)
	if len(b) == 0 {
		return []byte("{")
	}
	i := m.r.IntN(len(b))
	switch m.r.IntN(7) {
	case 0:
		b[i] ^= byte(1 << m.r.IntN(8))
	case 1:
		return b[:i]
	case 2:
		j := min(len(b), i+1+m.r.IntN(16))
		return append(b[:i:i], b[j:]...)
	case 3:
		ins := []string{"\x00", "\\", `"`, "{", "[", "]", "}", ",", ":", "\xff", "\u2028", "1e9999", `\u0000`, `\ud800`}
		return slices.Insert(b, i, []byte(ins[m.r.IntN(len(ins))])...)
	case 4:
		j := min(len(b), i+1+m.r.IntN(32))
		return slices.Insert(b, j, b[i:j]...)
	case 5:
		// a key repeated: the first key again, with another value
		if k := bytes.IndexByte(b, '"'); k >= 0 {
			if e := bytes.IndexByte(b[k+1:], '"'); e >= 0 && len(b) > 1 {
				key := b[k : k+e+2]
				return append(append(append([]byte("{"), key...), []byte(`:"dup",`)...), b[1:]...)
			}
		}
	}
	return append(b, []byte(" garbage")...)
}

// body is base mutated a few times.
func (m mutator) body(base any) []byte {
	v := base
	for range 1 + m.r.IntN(3) {
		v = m.structural(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	if m.r.IntN(3) == 0 {
		b = m.bytewise(b)
	}
	return b
}

// Every endpoint, answered 10,000 mutated bodies through the real router
// (served in process: the HTTP server itself is TestSlowClients' concern
// in cmd/api), PostgreSQL and Redis: no 5xx, and every 4xx is the spec's
// error body.
// MUTATION_REQUESTS changes the count (make test-hostile runs 100,000).
func TestMutatedBodies(t *testing.T) {
	total := 10_000
	if n, err := strconv.Atoi(os.Getenv("MUTATION_REQUESTS")); err == nil && n > 0 {
		total = n
	}
	api := newTestAPIWithoutLimits(t)
	schools := api.seedSchools(t, 120)
	student, tok := api.newStudent(t, completeProfile())
	school := func(i int) string { return schools[i%len(schools)].ID }

	type endpoint struct {
		method, path string
		base         any
	}
	obj := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	endpoints := []endpoint{
		{"POST", "/v2/onboarding/minimal", completeProfile()},
		{"POST", "/recommendations", obj("student_id", student, "limit", 5, "offset", 0)},
		{"POST", "/v2/recommendations", obj("student_id", student, "limit", 5, "offset", 3)},
		{"POST", "/continuous-feed", obj("student_id", student, "limit", 3, "swipes", []any{
			obj("school_id", school(1), "direction", "left", "time_spent", 1.5),
			obj("school_id", school(2), "direction", "right", "interaction_type", "save", "swipe_id", uuid.NewString())})},
		{"POST", "/swipe", obj("student_id", student, "school_id", school(3), "direction", "right", "time_spent", 2.25,
			"interaction_type", "swipe", "swipe_id", uuid.NewString())},
		{"POST", "/feedback", obj("student_id", student, "school_id", school(4), "reason", "too_expensive", "comment", "pricey")},
		{"POST", "/v2/onboarding/category-swipe", obj("student_id", student, "category_id", "liberal-arts", "direction", "left")},
		{"POST", "/m/batch/schools", obj("school_ids", []any{school(5), school(6), uuid.NewString()})},
		{"POST", "/m/sync/push", obj("student_id", student, "changes", []any{
			obj("id", uuid.NewString(), "type", "swipe", "school_id", school(7), "direction", "left", "time_spent", 3.5,
				"occurred_at", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)),
			obj("id", uuid.NewString(), "type", "feedback", "school_id", school(8), "reason", "wrong_location",
				"comment", "far", "occurred_at", time.Now().Add(-time.Minute).UTC().Format(time.RFC3339))})},
		{"POST", "/m/sync/pull", obj("student_id", student)},
		// Path parameters are mutated for the GET endpoints (and a body sent).
		{"GET", "/match/{student}/{school}", obj("x", 1)},
		{"GET", "/m/recommendations/{student}", nil},
		{"GET", "/health", obj("student_id", student)},
		{"GET", "/v2/onboarding/category-schools", nil},
	}
	pathParams := []string{student, strings.ToUpper(student), uuid.NewString(), "", "x", "%00", "..%2F..", strings.Repeat("a", 3000),
		"00000000-0000-0000-0000-000000000000", student + "x", "%E2%80%AE", school(9)}

	var (
		served   atomic.Int64
		byStatus sync.Map // status -> *atomic.Int64
		failures = make(chan string, 20)
	)
	fail := func(s string) {
		select {
		case failures <- s:
		default:
		}
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			m := mutator{r: rand.New(rand.NewPCG(uint64(w), 13))}
			for i := range work {
				ep := endpoints[i%len(endpoints)]
				path := ep.path
				for _, p := range []string{"{student}", "{school}"} {
					v := student
					if p == "{school}" {
						v = school(i)
					}
					if m.r.IntN(2) == 0 {
						v = pathParams[m.r.IntN(len(pathParams))]
					}
					path = strings.Replace(path, p, v, 1)
				}
				var body []byte
				if ep.base != nil {
					body = m.body(ep.base)
				}
				req, err := http.NewRequest(ep.method, "http://api.test"+path, bytes.NewReader(body))
				if err != nil {
					fail(fmt.Sprintf("%s %s: %v", ep.method, path, err))
					continue
				}
				req.RemoteAddr = "192.0.2.1:1234"
				req.Header.Set("Authorization", "Bearer "+tok)
				if m.r.IntN(10) > 0 {
					req.Header.Set("Content-Type", "application/json")
				}
				if m.r.IntN(8) == 0 {
					req.Header.Set("Idempotency-Key", []string{"k-" + strconv.Itoa(i%50), "", " ", "k\x7fk", strings.Repeat("k", 300)}[m.r.IntN(5)])
				}
				rec := httptest.NewRecorder()
				api.Handler.ServeHTTP(rec, req)
				res, raw := rec.Result(), rec.Body.Bytes()
				served.Add(1)
				c, _ := byStatus.LoadOrStore(res.StatusCode, new(atomic.Int64))
				c.(*atomic.Int64).Add(1)
				switch {
				case res.StatusCode >= 500:
					fail(fmt.Sprintf("%s %.200s: %d %.300s\nbody: %.2000s", ep.method, path, res.StatusCode, raw, body))
				case res.StatusCode >= 400:
					if p := errorBodyProblem(res.StatusCode, res.Header, raw); p != "" {
						fail(fmt.Sprintf("%s %.200s: %d: %s: %.300s\nbody: %.2000s", ep.method, path, res.StatusCode, p, raw, body))
					}
				}
			}
		})
	}
	start := time.Now()
	for i := range total {
		work <- i
	}
	close(work)
	wg.Wait()
	close(failures)

	var counts []string
	byStatus.Range(func(k, v any) bool {
		counts = append(counts, fmt.Sprintf("%d: %d", k, v.(*atomic.Int64).Load()))
		return true
	})
	sort.Strings(counts)
	t.Logf("%d mutated requests in %s; by status %s", served.Load(), time.Since(start).Round(time.Millisecond), strings.Join(counts, ", "))
	for f := range failures {
		t.Error(f)
	}
	require.EqualValues(t, total, served.Load(), "every request was answered")
}
