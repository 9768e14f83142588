package loadtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/testutil"
)

// Of every 100 requests of the mixed load, 70 are compact feed reads, 25
// swipes and 5 sync pulls, and each kind is made by its own maker.
func TestMixPicksItsShares(t *testing.T) {
	counts := map[string]int{}
	for p := range 100 {
		counts[pickMix(p)]++
	}
	assert.Equal(t, map[string]int{kindCompact: 70, kindSwipe: 25, kindPull: 5}, counts)

	m := mix{
		compact: func() Request { return Request{Kind: "c"} },
		swipe:   func() Request { return Request{Kind: "s"} },
		pull:    func() Request { return Request{Kind: "p"} },
	}
	assert.Equal(t, "c", m.request(kindCompact).Kind)
	assert.Equal(t, "s", m.request(kindSwipe).Kind)
	assert.Equal(t, "p", m.request(kindPull).Kind)
	seen := map[string]bool{}
	for range 2000 {
		seen[m.next().Kind] = true
	}
	assert.Equal(t, map[string]bool{"c": true, "s": true, "p": true}, seen, "next draws every kind")
}

// A pull carries the cursor the student's last pull answered, as a phone
// does: none before the first, the newest after each answer that gave
// one; an answer that failed or gave none keeps the cursor held.
func TestPullsCarryTheLastCursor(t *testing.T) {
	r := testRunner("11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222")
	s, other := r.students[0], r.students[1]
	cursor := func(req Request) (string, bool) {
		var body map[string]any
		require.NoError(t, json.Unmarshal(req.Body, &body))
		assert.Equal(t, s, body["student_id"])
		c, ok := body["cursor"].(string)
		return c, ok
	}
	first := r.pullRequestFor(s)
	assert.Equal(t, kindPull, first.Kind)
	assert.Equal(t, "/m/sync/pull", first.Path)
	_, has := cursor(first)
	assert.False(t, has, "a student's first pull carries no cursor")

	first.Done(http.StatusOK, []byte(`{"changes":[],"cursor":"c1"}`))
	second := r.pullRequestFor(s)
	c, _ := cursor(second)
	assert.Equal(t, "c1", c)

	second.Done(http.StatusServiceUnavailable, []byte(`{"cursor":"wrong"}`))
	second.Done(http.StatusOK, []byte(`{"changes":[]}`))
	third := r.pullRequestFor(s)
	c, _ = cursor(third)
	assert.Equal(t, "c1", c, "a failed answer, or one without a cursor, keeps the last cursor")

	third.Done(http.StatusOK, []byte(`{"cursor":"c2"}`))
	c, _ = cursor(r.pullRequestFor(s))
	assert.Equal(t, "c2", c)

	var body map[string]any
	require.NoError(t, json.Unmarshal(r.pullRequestFor(other).Body, &body))
	assert.NotContains(t, body, "cursor", "each student has a cursor of their own")
}

// The baselines serve the same mix: compact reads and pulls from B1
// servers (a GET each), swipes from B3 with the bodies the service gets.
func TestBaselineMixServesEachKindFromItsBaseline(t *testing.T) {
	r := testRunner("11111111-1111-1111-1111-111111111111")
	m := r.baselineMix("http://b1-compact", "http://b1-pull", "http://b3")

	compact := m.request(kindCompact)
	assert.Equal(t, Request{Kind: kindCompact, Method: http.MethodGet, Path: "http://b1-compact/v"}, compact)
	pull := m.request(kindPull)
	assert.Equal(t, Request{Kind: kindPull, Method: http.MethodGet, Path: "http://b1-pull/v"}, pull)

	swipe := m.request(kindSwipe)
	assert.Equal(t, kindSwipe, swipe.Kind)
	assert.Equal(t, http.MethodPost, swipe.Method)
	assert.Equal(t, "http://b3/swipe", swipe.Path)
	var body b3Swipe
	require.NoError(t, json.Unmarshal(swipe.Body, &body))
	assert.Equal(t, r.students[0], body.StudentID)
	assert.Contains(t, r.schools, body.SchoolID)
	assert.NotEmpty(t, body.SwipeID)

	svc := r.serviceMix()
	assert.Equal(t, "/m/recommendations/"+r.students[0], svc.request(kindCompact).Path)
	assert.Equal(t, "/swipe", svc.request(kindSwipe).Path)
	assert.Equal(t, "/m/sync/pull", svc.request(kindPull).Path)
}

// testRunner is a runner over the given students and two schools, with
// no servers behind it.
func testRunner(students ...string) *runner {
	return &runner{students: students, schools: []string{"33333333-3333-3333-3333-333333333333", "44444444-4444-4444-4444-444444444444"},
		cursors: map[string]string{}, decks: map[string][]string{}}
}

// A client with no base sends each request of the baselines' mix to the
// server its full URL names.
func TestBaselineMixReachesEachServer(t *testing.T) {
	served := map[string]*atomic.Int64{"b1": {}, "b3": {}}
	// serving answers method and path only, counted under name.
	serving := func(name, method, path string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == method && r.URL.Path == path {
				served[name].Add(1)
				return
			}
			http.NotFound(w, r)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	b1, b3 := serving("b1", http.MethodGet, "/v"), serving("b3", http.MethodPost, "/swipe")
	m := testRunner("11111111-1111-1111-1111-111111111111").baselineMix(b1.URL, b1.URL, b3.URL)
	res := ClosedLoop(context.Background(), NewClient("", "", 4, 5*time.Second), 4, 300*time.Millisecond,
		func(int) Request { return m.next() })
	for _, kind := range mixKinds {
		require.Contains(t, res, kind)
		assert.Equal(t, res[kind].Sent, res[kind].OK(), "%s: every request answered 2xx (%s)", kind, statusLine(res[kind]))
	}
	// A request the end of the run cut off was served but not counted:
	// at most one a client.
	b1n, b3n := int64(res[kindCompact].OK()+res[kindPull].OK()), int64(res[kindSwipe].OK())
	assert.InDelta(t, b1n, served["b1"].Load(), 4)
	assert.InDelta(t, b3n, served["b3"].Load(), 4)
	assert.GreaterOrEqual(t, served["b1"].Load()+served["b3"].Load(), b1n+b3n)
}

// Before the mixed load every student has pulled once, so every pull of
// the load carries a cursor, as a phone's do.
func TestPrimeCursorsGivesEveryStudentACursor(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			StudentID string `json:"student_id"`
			Cursor    string `json:"cursor"`
		}
		if r.URL.Path != "/m/sync/pull" || json.NewDecoder(r.Body).Decode(&in) != nil || in.Cursor != "" {
			http.Error(w, "not a first pull", http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"changes": []any{}, "cursor": "c-" + in.StudentID})
	}))
	t.Cleanup(srv.Close)
	r := testRunner("11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222", "33333333-3333-3333-3333-333333333333")
	r.api = NewClient(srv.URL, "", 4, 5*time.Second)
	require.NoError(t, r.primeCursors(context.Background()))
	for _, s := range r.students {
		var body map[string]any
		require.NoError(t, json.Unmarshal(r.pullRequestFor(s).Body, &body))
		assert.Equal(t, "c-"+s, body["cursor"])
	}
	size, err := r.pullSize(context.Background(), 5)
	assert.Error(t, err, "a pull the server refuses (it takes first pulls only) is an error")
	assert.Zero(t, size)
}

// The mixed load says so when PostgreSQL's max_connections may not hold
// the API's, the worker's and B3's pools together, and is silent when it
// does or cannot tell.
func TestMixedWarnsOfTooFewConnections(t *testing.T) {
	pool := poolNamed(t, testutil.NewDBURL(t), toolAppName)
	var limit int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT current_setting('max_connections')::int`).Scan(&limit))
	var out strings.Builder
	r := testRunner()
	r.pool, r.c.Out = pool, &out
	r.c.WorkerConns = limit // the worker alone could take them all
	r.warnConnections(context.Background())
	assert.Contains(t, out.String(), fmt.Sprintf("max_connections is %d", limit))

	out.Reset()
	r.c.WorkerConns = limit - mixedConnections(1) - 10 // the pools fit
	require.Positive(t, r.c.WorkerConns, "the test server's max_connections is too small for this test")
	r.warnConnections(context.Background())
	assert.Empty(t, out.String())

	pool.Close()
	out.Reset()
	r.warnConnections(context.Background())
	assert.Empty(t, out.String(), "nothing said when the setting cannot be read")
}
