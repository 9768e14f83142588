package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/collegematch/matching/internal/command"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/query"
)

// Fuzz targets for every request decoder of the public API: the function
// each handler calls to turn a request into its input (readSwipe, ...),
// over any body. `make test` runs their seeds and the inputs kept under
// testdata/fuzz (inputs that once found a bug stay there as regression
// inputs); `go test -fuzz FuzzX ./internal/httpapi` searches for more
// (make fuzz runs each for a while).
//
// Every decoder, for every input: does not panic; answers either a valid
// input or a 400 (*domain.Error of KindInvalid) whose message and details
// are small whatever the body; and allocates no more than a small multiple
// of the body (decisions.md, "HTTP": limits apply while decoding).

const (
	fuzzStudent = "5b1c7b4e-2a61-4c0e-9a0f-3f7d2c1e9a10"
	fuzzSchool  = "0c6d1b7e-9f1a-4a5b-8c3d-2e4f6a8b0c1d"
)

// fuzzRequest is a POST of body to the decoder, as the router hands it
// over: the body read by actingStudent, with the Content-Type a client sets.
func fuzzRequest(body []byte, header map[string]string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		r.Header.Set(k, v)
	}
	r.Body = newLimitedBody(body)
	return r
}

// decodeBudget is what decoding a body may allocate: a fixed allowance
// plus a small multiple of the body.
func decodeBudget(body []byte) uint64 { return 64<<10 + 4*uint64(len(body)) }

// checkDecoded runs decode on body and applies the rules every decoder
// keeps; it returns decode's error for the target's own checks.
func checkDecoded(t *testing.T, body []byte, decode func() error) error {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := decode()
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > decodeBudget(body) {
		t.Errorf("decoding a %d-byte body allocated %d bytes (budget %d)", len(body), got, decodeBudget(body))
	}
	if err == nil {
		return nil
	}
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindInvalid || de.Code != domain.CodeInvalidRequest {
		t.Fatalf("a bad body must be 400 INVALID_REQUEST, got %T %v", err, err)
	}
	if de.Message == "" {
		t.Fatal("a 400 has a message")
	}
	out, jerr := json.Marshal(errorBody{Error: errorObject{Code: de.Code, Message: de.Message, Details: de.Details}})
	if jerr != nil {
		t.Fatalf("the error body does not encode: %v", jerr)
	}
	if len(out) > 8<<10 {
		t.Errorf("a %d-byte error body for a %d-byte request: %.300s", len(out), len(body), out)
	}
	if fields, ok := de.Details["fields"].(map[string]string); ok && len(fields) > 2*maxReported+2 {
		t.Errorf("%d fields reported", len(fields))
	}
	return err
}

// hostileSeeds are bodies that have broken decoders of this kind of API:
// long arrays, many and repeated keys, deep nesting, odd escapes, numbers
// and control characters.
func hostileSeeds(f *testing.F, field string) {
	f.Add([]byte(`{"` + field + `":[` + strings.Repeat("0,", 2000) + `0]}`))
	f.Add([]byte(`{"` + field + `":{` + strings.Repeat(`"k":0,`, 500) + `"k":0}}`))
	f.Add([]byte(`{"` + field + `":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`))
	f.Add([]byte(`{"` + field + `":1,"` + field + `":2}`))
	f.Add([]byte(`{"` + strings.ToUpper(field) + `":1}`))
	f.Add([]byte(`{"\u0000":"\u0000","` + field + `":"\ud800"}`))
	f.Add([]byte(`{"` + field + `":1e999999,"x":-0.0e-400}`))
	f.Add([]byte(`{"` + field + `":"` + strings.Repeat("\\u0041", 300) + `"}`))
	f.Add([]byte(`[` + strings.Repeat(`{},`, 300) + `{}]`))
	f.Add([]byte(`{"a":1} {"b":2}`))
	f.Add([]byte(`{"a":1`))
	f.Add([]byte("\xef\xbb\xbf{}"))
	f.Add([]byte(``))
	f.Add([]byte(`null`))
}

func FuzzShape(f *testing.F) {
	hostileSeeds(f, "school_ids")
	f.Add([]byte(`{"school_ids":["a","b"],"x":{"y":[1,{"z":null}]}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, s := range []*shape{batchSchoolsBody, onboardingBody, continuousBody, syncPushBody} {
			p := scanShape(body, s)
			if len(p.fields) > maxReported {
				t.Fatalf("%d problems listed", len(p.fields))
			}
		}
		// What encoding/json reads as an object or array, the scan walks
		// the same way.
		var obj map[string]json.RawMessage
		if json.Unmarshal(body, &obj) == nil && obj != nil {
			n := 0
			if !members(body, func(k, v []byte) bool {
				if !json.Valid(v) {
					t.Fatalf("member %q: %q is not one value", k, v)
				}
				n++
				return true
			}) && scanDepth(body) < maxDepth {
				t.Fatalf("members refused an object encoding/json reads: %q", body)
			}
			if n > 0 && len(obj) == 0 {
				t.Fatal("members found members of an empty object")
			}
		}
		var arr []json.RawMessage
		if json.Unmarshal(body, &arr) == nil && arr != nil {
			elems, tooMany, ok := elements(body, 1<<20)
			if (!ok || tooMany) && scanDepth(body) < maxDepth {
				t.Fatalf("elements refused an array encoding/json reads: %q", body)
			}
			if ok && len(elems) != len(arr) {
				t.Fatalf("elements: %d, encoding/json: %d", len(elems), len(arr))
			}
		}
	})
}

// scanDepth is how deeply body nests, as far as brackets tell (strings
// aside); the scanners refuse what nests maxDepth deep or more.
func scanDepth(body []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

func FuzzBodyStudentID(f *testing.F) {
	hostileSeeds(f, "student_id")
	f.Add([]byte(`{"student_id":"` + fuzzStudent + `"}`))
	f.Add([]byte(`{"Student_ID":"a","student_id":"b"}`))
	f.Add([]byte(`{"\u017ftudent_id":"a"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		id, repeated := bodyStudentID(body)
		// encoding/json's reading (case-insensitive, last one wins) agrees
		// whenever the body names student_id once.
		var v struct {
			StudentID string `json:"student_id"`
		}
		if json.Unmarshal(body, &v) == nil && !repeated && scanDepth(body) < maxDepth && id != v.StudentID {
			t.Fatalf("bodyStudentID %q, encoding/json %q", id, v.StudentID)
		}
	})
}

func FuzzReadProfile(f *testing.F) {
	hostileSeeds(f, "intended_majors")
	f.Add([]byte(`{"name":"Ada","email":"ada@example.com","graduation_year":"2027","gpa":3.8,"test_scores":{"sat":1380,"act":30},` +
		`"home":{"lat":37.4,"lon":-122.1},"state":"ca","zip":"94305-1234","max_distance_miles":300,"budget":20000,` +
		`"family_income":80000,"intended_majors":["Comp Sci","11.0701","Communications"],"preferred_size":"Medium","preferred_setting":"city"}`))
	f.Add([]byte(`{"student_id":"` + fuzzStudent + `","gpa":null,"test_scores":null,"home":null,"intended_majors":null}`))
	f.Add([]byte(`{"home":{"lat":1,"lat":2},"test_scores":{"sat":1600.5,"x":1}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var (
			id string
			p  domain.ProfilePatch
		)
		if checkDecoded(t, body, func() (err error) { id, p, err = readProfile(fuzzRequest(body, nil)); return err }) != nil {
			return
		}
		if id != "" && (!isUUID(id) || id != strings.ToLower(id)) {
			t.Fatalf("student_id %q", id)
		}
		if v := p.Name; v.Set && !v.Null && (v.Value == "" || len(v.Value) > 200 || !utf8.ValidString(v.Value)) {
			t.Fatalf("name %q", v.Value)
		}
		if v := p.Email; v.Set && !v.Null && !validEmail(v.Value) {
			t.Fatalf("email %q", v.Value)
		}
		if v := p.GPA; v.Set && !v.Null && (v.Value < 0 || v.Value > 5) {
			t.Fatalf("gpa %v", v.Value)
		}
		if v := p.SAT; v.Set && !v.Null && (v.Value < 400 || v.Value > 1600) {
			t.Fatalf("sat %v", v.Value)
		}
		if v := p.IntendedMajors; v.Set && len(v.Value) > maxIntendedMajors {
			t.Fatalf("%d majors", len(v.Value))
		}
		for _, m := range p.IntendedMajors.Value {
			if domain.MajorName(m) == string(m) {
				t.Fatalf("major %q is not a key", m)
			}
		}
		if v := p.State; v.Set && !v.Null {
			if _, ok := domain.LookupState(v.Value); !ok {
				t.Fatalf("state %q", v.Value)
			}
		}
	})
}

func FuzzReadPage(f *testing.F) {
	hostileSeeds(f, "limit")
	f.Add([]byte(`{"student_id":"` + fuzzStudent + `","limit":100,"offset":2147483647}`))
	f.Add([]byte(`{"student_id":"` + fuzzStudent + `","limit":1.5,"offset":-1}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var limit, offset int
		if checkDecoded(t, body, func() (err error) { limit, offset, err = readPage(fuzzRequest(body, nil)); return err }) != nil {
			return
		}
		if limit < 1 || limit > maxLimit || offset < 0 {
			t.Fatalf("limit %d, offset %d", limit, offset)
		}
	})
}

func FuzzReadSwipe(f *testing.F) {
	hostileSeeds(f, "direction")
	f.Add([]byte(`{"student_id":"` + fuzzStudent + `","school_id":"` + fuzzSchool + `","direction":"right","interaction_type":"save","time_spent":4.2,"swipe_id":"` + fuzzSchool + `"}`))
	f.Add([]byte(`{"student_id":"` + fuzzStudent + `","school_id":"` + fuzzSchool + `","direction":"up","time_spent":-1}`))
	f.Add([]byte(`{"student_id":"` + fuzzStudent + `","sch\u006fol_id":"` + fuzzSchool + `" ,"direction" : "left","time_spent":null}`))
	f.Add([]byte(`{"student_id":"a\u00e9","school_id":"\ud800","direction":"le\u0066t","time_spent":"1","swipe_id":17}`))
	f.Add([]byte(`{"student_id":"a` + "\x01" + `","school_id":"` + "\xff" + `","direction":"right","time_spent":1e999}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		// The body's members are taken as json.Unmarshal takes them, and a
		// body it refuses is refused.
		var got swipeRequest
		err := decodeBytes(body, swipeBody, &got)
		type plain swipeRequest // no takeMember: encoding/json's path
		var want plain
		jsonErr := json.Unmarshal(body, &want)
		if err == nil && jsonErr != nil {
			t.Fatalf("took %q, which json.Unmarshal refuses: %v", body, jsonErr)
		}
		if err != nil && jsonErr == nil && checkShape(body, swipeBody) == nil {
			t.Fatalf("refused %q, which json.Unmarshal takes: %v", body, err)
		}
		for i, pair := range [][2]json.RawMessage{{got.StudentID, want.StudentID}, {got.SchoolID, want.SchoolID},
			{got.Direction, want.Direction}, {got.InteractionType, want.InteractionType}, {got.TimeSpent, want.TimeSpent},
			{got.SwipeID, want.SwipeID}} {
			if err == nil && ((pair[0] == nil) != (pair[1] == nil) || string(pair[0]) != string(pair[1])) {
				t.Fatalf("%s: %q, json.Unmarshal %q", swipeFields[i], pair[0], pair[1])
			}
		}
		_ = checkDecoded(t, body, func() error {
			in, err := readSwipe(fuzzRequest(body, map[string]string{"Idempotency-Key": "retry-1"}))
			if err == nil && (!isUUID(in.SchoolID) || !slices.Contains(swipeDirections, in.Direction) || in.ClientID == "" ||
				(in.TimeSpent != nil && (*in.TimeSpent < 0 || *in.TimeSpent > maxTimeSpent))) {
				t.Fatalf("accepted %+v", in)
			}
			return err
		})
	})
}

func FuzzReadFeedback(f *testing.F) {
	hostileSeeds(f, "reason")
	f.Add([]byte(`{"student_id":"` + fuzzStudent + `","school_id":"` + fuzzSchool + `","reason":"too_expensive","comment":"pricey"}`))
	f.Add([]byte(`{"student_id":"` + fuzzStudent + `","school_id":"` + fuzzSchool + `","reason":"perfect_match","comment":"a\u0000b"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		_ = checkDecoded(t, body, func() error {
			in, err := readFeedback(fuzzRequest(body, nil))
			if err == nil && (!isUUID(in.SchoolID) || !match.ValidReason(in.Reason)) {
				t.Fatalf("accepted %+v", in)
			}
			return err
		})
	})
}

func FuzzReadCategorySwipe(f *testing.F) {
	hostileSeeds(f, "category_id")
	f.Add([]byte(`{"student_id":"` + fuzzStudent + `","category_id":"liberal-arts","direction":"left"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		_ = checkDecoded(t, body, func() error {
			cat, dir, err := readCategorySwipe(fuzzRequest(body, nil))
			if _, ok := match.LookupArchetype(cat); err == nil && (!ok || !slices.Contains(swipeDirections, dir)) {
				t.Fatalf("accepted %q %q", cat, dir)
			}
			return err
		})
	})
}

func FuzzReadContinuous(f *testing.F) {
	hostileSeeds(f, "swipes")
	f.Add([]byte(`{"student_id":"` + fuzzStudent + `","limit":5,"swipes":[{"school_id":"` + fuzzSchool + `","direction":"left","time_spent":1.5,"interaction_type":"tap"},` +
		`{"school_id":"` + fuzzSchool + `","direction":"right","swipe_id":"` + fuzzStudent + `"}]}`))
	f.Add([]byte(`{"student_id":"` + fuzzStudent + `","swipes":[{"school_id":1,"direction":"left","extra":1},null,[]]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		_ = checkDecoded(t, body, func() error {
			limit, swipes, err := readContinuous(fuzzRequest(body, map[string]string{"Idempotency-Key": "k"}))
			if err != nil {
				return err
			}
			if limit < 1 || limit > query.MaxContinuousLimit || len(swipes) > query.MaxContinuousSwipes {
				t.Fatalf("limit %d, %d swipes", limit, len(swipes))
			}
			for _, s := range swipes {
				if !isUUID(s.SchoolID) || !slices.Contains(swipeDirections, s.Direction) || !isUUID(s.ClientID) {
					t.Fatalf("accepted swipe %+v", s)
				}
			}
			return nil
		})
	})
}

func FuzzReadBatchSchools(f *testing.F) {
	hostileSeeds(f, "school_ids")
	f.Add([]byte(`{"school_ids":["` + fuzzSchool + `","` + strings.ToUpper(fuzzSchool) + `"]}`))
	f.Add([]byte(`{"school_ids":[1,null,"x"]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		_ = checkDecoded(t, body, func() error {
			ids, err := readBatchSchools(fuzzRequest(body, nil))
			if len(ids) > maxBatchSchools {
				t.Fatalf("%d ids", len(ids))
			}
			for _, id := range ids {
				if !isUUID(id) || id != strings.ToLower(id) {
					t.Fatalf("id %q", id)
				}
			}
			return err
		})
	})
}

func FuzzReadSyncPush(f *testing.F) {
	hostileSeeds(f, "changes")
	f.Add([]byte(`{"student_id":"` + fuzzStudent + `","changes":[{"id":"` + fuzzSchool + `","type":"swipe","school_id":"` + fuzzSchool +
		`","direction":"left","time_spent":2.5,"occurred_at":"2026-01-01T00:00:00Z"},{"id":"x","type":"feedback","reason":"too_expensive","comment":"\u0000"}]}`))
	f.Add([]byte(`{"student_id":"` + fuzzStudent + `","changes":[{"id":1,"id":2,"zz":3},"x",{}]}`))
	f.Add([]byte(`{"student_id":"` + fuzzStudent + `","changes":[{` + strings.Repeat(`"k":1,`, 300) + `"id":"a"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		_ = checkDecoded(t, body, func() error {
			changes, err := readSyncPush(fuzzRequest(body, nil))
			if len(changes) > command.MaxChanges {
				t.Fatalf("%d changes", len(changes))
			}
			for _, c := range changes {
				if len(c.Problem) > 512 {
					t.Fatalf("a %d-byte problem", len(c.Problem))
				}
			}
			return err
		})
	})
}

func FuzzReadSyncPull(f *testing.F) {
	hostileSeeds(f, "cursor")
	f.Add([]byte(`{"student_id":"` + fuzzStudent + `","cursor":"abc"}`))
	f.Add([]byte(`{"student_id":"` + fuzzStudent + `","cursor":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		_ = checkDecoded(t, body, func() error {
			_, err := readSyncPull(fuzzRequest(body, nil))
			return err
		})
	})
}

// A body of POST /recommendations taken from its members (memberDecoder)
// reads as json.Unmarshal reads it, and any body the member path does not
// take is refused as json.Unmarshal refuses it.
func FuzzPageMembersAsJSON(f *testing.F) {
	for _, b := range []string{`{"student_id":"` + fuzzStudent + `","limit":5,"offset":0}`, ` { "limit" : 5 , "offset":0 } `,
		`{"student_id":null,"limit":null,"offset":null}`, `{"student_id":"a\"b\\u0041"}`, `{}`, `[]`, `null`, `"x"`,
		`{"limit":1e2}`, `{"limit":"x"}`, `{"limit":{"a":[1,{"b":2}]}}`, "{\"student_id\":\"\xff\"}", "{\"student_id\":\"a\tb\"}",
		`{"limit":01}`, `{"limit":1.}`, `{"limit":tru}`, `{"limit":1,}`, `{"limit":1}{}`} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var got recommendationsRequest
		err := decodeBytes(body, recommendationsBody, &got)
		var want recommendationsRequest
		jsonErr := json.Unmarshal(body, &want)
		if err != nil {
			if jsonErr == nil && checkShape(body, recommendationsBody) == nil {
				t.Fatalf("refused %q, which json.Unmarshal takes: %v", body, err)
			}
			return
		}
		if jsonErr != nil {
			t.Fatalf("took %q, which json.Unmarshal refuses: %v", body, jsonErr)
		}
		if string(want.StudentID) != string(got.StudentID) || string(want.Limit) != string(got.Limit) ||
			string(want.Offset) != string(got.Offset) {
			t.Fatalf("%q: took %+v, json.Unmarshal %+v", body, got, want)
		}
	})
}
