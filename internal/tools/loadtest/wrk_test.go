package loadtest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWrkSwipes drives a recording server with wrk as the swipe scenario
// does: every swipe is a valid body with a fresh (version 4) swipe_id, a
// student swipes its deck's cards before any other school, the cards wrk
// swiped come off the decks, the token goes with every request, and the
// round's counts are what the server answered (answers above 399 as
// NotOK). Without wrk the
// test is skipped, except under CI, where it fails (scripts/wrk.sh
// installs it).
func TestWrkSwipes(t *testing.T) {
	if _, err := exec.LookPath("wrk"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("wrk is not installed (scripts/wrk.sh installs it)")
		}
		t.Skip("wrk is not installed (scripts/wrk.sh installs it)")
	}
	type swipe struct {
		StudentID string  `json:"student_id"`
		SchoolID  string  `json:"school_id"`
		Direction string  `json:"direction"`
		SwipeID   string  `json:"swipe_id"`
		TimeSpent float64 `json:"time_spent"`
	}
	var (
		mu       sync.Mutex
		seen     = map[string][]string{} // schools swiped, per student, in order
		ids      = map[string]bool{}
		answered = map[int]int{}
		bad      []string
	)
	const refused = "00000000-0000-4000-8000-00000000000f" // answered 404, as B3 answers an unknown student
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var s swipe
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		err := dec.Decode(&s)
		mu.Lock()
		defer mu.Unlock()
		u, uerr := uuid.Parse(s.SwipeID)
		if uerr == nil && (u.Version() != 4 || u.Variant() != uuid.RFC4122) {
			uerr = errors.New("not a version 4 UUID")
		}
		switch {
		case r.Method != http.MethodPost || r.URL.Path != "/swipe", r.Header.Get("Authorization") != "Bearer tok",
			r.Header.Get("Content-Type") != "application/json", err != nil, uerr != nil, ids[s.SwipeID],
			s.Direction != "left" && s.Direction != "right", s.TimeSpent < 0 || s.TimeSpent >= 20:
			bad = append(bad, r.Method+" "+r.URL.Path+" "+string(b))
		}
		ids[s.SwipeID] = true
		seen[s.StudentID] = append(seen[s.StudentID], s.SchoolID)
		status := http.StatusCreated
		if s.StudentID == refused {
			status = http.StatusNotFound
		}
		answered[status]++
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)

	r := &runner{c: Config{Clients: 4, Duration: time.Second}, decks: map[string][]string{}}
	for i := range 16 {
		s := "00000000-0000-4000-8000-0000000000" + string("0123456789abcdef"[i/16]) + string("0123456789abcdef"[i%16])
		r.students = append(r.students, s)
	}
	// The decks' cards are schools of their own, told apart from the
	// schools swiped once a deck is done.
	for i := range 40 {
		s := r.students[i%len(r.students)]
		r.decks[s] = append(r.decks[s], uuid.NewString())
		r.schools = append(r.schools, uuid.NewString())
	}
	decks := map[string][]string{}
	for s, d := range r.decks {
		decks[s] = append([]string(nil), d...)
	}

	res, err := r.wrkSwipes(context.Background(), srv.URL, "tok")
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, bad, "every swipe well formed, with a fresh swipe_id and the token")
	require.Positive(t, res.OK())
	// wrk counts the answers it read; the server may have taken a few more
	// that the end of the round cut off.
	assert.InDelta(t, answered[http.StatusCreated], res.OK(), float64(r.c.Clients))
	assert.InDelta(t, answered[http.StatusNotFound], res.NotOK, float64(r.c.Clients))
	assert.Positive(t, res.NotOK, "answers above 399 are counted")
	assert.Len(t, res.Latencies, 1000, "wrk's quantiles")
	assert.Greater(t, res.Quantile(0.99), time.Duration(0))
	assert.InDelta(t, time.Second, res.Elapsed, float64(500*time.Millisecond))

	// A thread's connections send in parallel, so the server may take a
	// student's swipes out of the order they were made in; and wrk makes
	// a first request in its first thread that it never sends, and a
	// request or so per connection that the end of the round cuts off. So: the cards
	// the server got are among those taken off the deck, which are the
	// deck's first, and only those few were taken and not swiped.
	skipped := 0
	for _, s := range r.students {
		deck := decks[s]
		taken := len(deck) - len(r.decks[s])
		assert.Equal(t, deck[taken:], r.decks[s], "student %s: what is left is the deck's end", s)
		got := 0
		for _, school := range seen[s] {
			switch {
			case slices.Contains(deck[:taken], school):
				got++
			case slices.Contains(deck, school):
				t.Errorf("student %s swiped %s, a card not taken off its deck", s, school)
			default:
				assert.Contains(t, r.schools, school, "student %s: once its deck is done, any school", s)
				assert.Len(t, r.decks[s], 0, "student %s swiped another school with cards left", s)
			}
		}
		assert.LessOrEqual(t, got, taken, "student %s", s)
		skipped += taken - got
	}
	assert.LessOrEqual(t, skipped, wrkThreads+r.c.Clients, "cards taken and not swiped")
}

func TestParseWrkRefusesAnOutputWithoutItsResult(t *testing.T) {
	_, _, err := parseWrk([]byte("Running 1s test @ http://127.0.0.1:1\n"))
	assert.ErrorContains(t, err, "no result")
	_, _, err = parseWrk([]byte("wrk-result requests=x\n"))
	assert.ErrorContains(t, err, "unreadable")
}

// TestWrkReads: the reads script asks for what each kind names, for the
// students given, with the token, and the round counts what was answered.
func TestWrkReads(t *testing.T) {
	if _, err := exec.LookPath("wrk"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("wrk is not installed (scripts/wrk.sh installs it)")
		}
		t.Skip("wrk is not installed (scripts/wrk.sh installs it)")
	}
	r := &runner{c: Config{Clients: 4, Duration: time.Second}, students: []string{"s-1", "s-2"}}
	for kind, want := range map[string][]string{
		"compact": {"GET /m/recommendations/s-1", "GET /m/recommendations/s-2"},
		"page":    {"POST /recommendations s-1", "POST /recommendations s-2"},
		"bare":    {"GET /v"},
	} {
		// A server per kind: a request of the kind before, cut off by the
		// end of its round, may still arrive.
		var (
			mu   sync.Mutex
			seen = map[string]int{}
			bad  []string
		)
		token := "tok"
		if kind == "bare" {
			token = ""
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			defer mu.Unlock()
			key := r.Method + " " + r.URL.Path
			if want := "Bearer " + token; token != "" && r.Header.Get("Authorization") != want || token == "" && r.Header.Get("Authorization") != "" {
				bad = append(bad, key+": Authorization "+r.Header.Get("Authorization"))
			}
			if r.Method == http.MethodPost {
				var in struct {
					StudentID string `json:"student_id"`
					Limit     int    `json:"limit"`
				}
				if err := json.Unmarshal(b, &in); err != nil || in.Limit != 20 || r.Header.Get("Content-Type") != "application/json" {
					bad = append(bad, key+" "+string(b))
				}
				key += " " + in.StudentID
			}
			seen[key]++
			_, _ = io.WriteString(w, `{"r":[]}`)
		}))
		res, err := r.wrkReads(context.Background(), kind, srv.URL, token)
		require.NoError(t, err, kind)
		mu.Lock()
		keys, n := []string{}, 0
		for k, c := range seen {
			keys = append(keys, k)
			n += c
		}
		assert.ElementsMatch(t, want, keys, kind)
		assert.Empty(t, bad, kind)
		mu.Unlock()
		srv.Close()
		assert.Equal(t, kind, res.Kind)
		assert.Positive(t, res.OK(), kind)
		assert.InDelta(t, n, res.OK(), float64(r.wrkConns()+wrkThreads), kind)
		assert.Zero(t, res.NotOK, kind)
	}
}

// TestWrkRoundFailures: without wrk on the PATH, and when wrk refuses its
// arguments, a round is an error that says so, not a round of nothing.
func TestWrkRoundFailures(t *testing.T) {
	r := &runner{c: Config{Clients: 2, Duration: time.Second}, students: []string{"s-1", "s-2"}}
	if _, err := exec.LookPath("wrk"); err == nil {
		_, err := r.wrkReads(context.Background(), "compact", "not a url", "")
		assert.ErrorContains(t, err, "wrk: exit status", "wrk refused its URL")
		assert.ErrorContains(t, err, "invalid URL", "and the error says why")
	}
	t.Setenv("PATH", t.TempDir())
	_, err := r.wrkSwipes(context.Background(), "http://127.0.0.1:1", "")
	assert.ErrorContains(t, err, "needs wrk on PATH")
}
