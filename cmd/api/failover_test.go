package main

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/testutil"
)

// A failover as PostgreSQL shows it to the service: the database turns
// read-only for new sessions (the old primary left a standby) and the
// service's sessions are ended. Every write a student can make answers 503
// SERVICE_UNAVAILABLE with Retry-After within 5 s, never 500; once the
// database takes writes again, swipes succeed within 10 s (no connection
// opened on the read-only server is kept, and none that met a refused
// write is reused). The same holds when DATABASE_URL lets the pool open
// connections on any server (target_session_attrs=any, as through a
// pooler): the connections opened read-only are closed on their first
// refused write.
func TestPostgresTurnsReadOnly(t *testing.T) {
	for _, params := range []string{"", "target_session_attrs=any"} {
		t.Run("DATABASE_URL "+params, func(t *testing.T) {
			var ps []string
			if params != "" {
				ps = append(ps, params)
			}
			testPostgresTurnsReadOnly(t, startFaultAPI(t, ps...))
		})
	}
}

func testPostgresTurnsReadOnly(t *testing.T, f *faultAPI) {
	student := f.onboard(t)
	a, ids := f.feed(t, student)
	require.Equal(t, http.StatusOK, a.code, "%v", a)
	require.Greater(t, len(ids), 10, "%v", a)
	a = f.swipeOn(t, student, ids[0])
	require.Equal(t, http.StatusOK, a.code, "%v", a)

	testutil.SetReadOnly(t, f.direct, true, true)
	at := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	writes := []struct {
		name, method, path string
		body               func() any
	}{
		{"swipe", "POST", "/swipe", func() any {
			return map[string]any{"student_id": student, "school_id": ids[1], "direction": "right", "swipe_id": uuid.NewString()}
		}},
		{"feedback", "POST", "/feedback", func() any {
			return map[string]any{"student_id": student, "school_id": ids[0], "reason": "too_expensive"}
		}},
		{"onboarding", "POST", "/v2/onboarding/minimal", func() any {
			return map[string]any{"name": "Ada", "email": "ada@example.com", "graduation_year": "2028", "gpa": 3.8,
				"home": map[string]any{"lat": 39.95, "lon": -75.16}}
		}},
		{"category swipe", "POST", "/v2/onboarding/category-swipe", func() any {
			return map[string]any{"student_id": student, "category_id": "liberal-arts", "direction": "right"}
		}},
		{"sync push", "POST", "/m/sync/push", func() any {
			return map[string]any{"student_id": student, "changes": []any{
				map[string]any{"id": uuid.NewString(), "type": "swipe", "school_id": ids[2], "direction": "left", "occurred_at": at},
				map[string]any{"id": uuid.NewString(), "type": "feedback", "school_id": ids[2], "reason": "wrong_location", "occurred_at": at}}}
		}},
		{"continuous feed with carried swipes", "POST", "/continuous-feed", func() any {
			return map[string]any{"student_id": student, "limit": 5, "swipes": []any{
				map[string]any{"school_id": ids[3], "direction": "right", "swipe_id": uuid.NewString()}}}
		}},
	}
	// Each write more than once: the first may meet a connection the
	// failover ended, the next ones a server that refuses writes.
	for range 3 {
		for _, w := range writes {
			a := f.call(t, student, w.method, w.path, w.body())
			t.Run(w.name, func(t *testing.T) { requireUnavailable(t, a) })
		}
	}

	// Swipes at once, as traffic does: the pool opens several connections
	// on the read-only server.
	const atOnce = 8
	answers := make([]answer, atOnce)
	var wg sync.WaitGroup
	for i := range atOnce {
		wg.Go(func() { answers[i] = f.swipeOn(t, student, ids[5+i]) })
	}
	wg.Wait()
	for _, a := range answers {
		requireUnavailable(t, a)
	}

	testutil.SetReadOnly(t, f.direct, false, false)
	back := time.Now()
	for {
		a := f.swipeOn(t, student, ids[4])
		if a.code == http.StatusOK {
			break
		}
		requireUnavailable(t, a)
		require.Less(t, time.Since(back), 10*time.Second, "swipes still fail after the database takes writes again: %v", a)
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("swipes succeed %v after the database takes writes again", time.Since(back).Round(time.Millisecond))
	for _, w := range writes {
		a := f.call(t, student, w.method, w.path, w.body())
		require.Less(t, a.code, 300, "%s: %v", w.name, a)
	}
}

// The same failover through PgBouncer in transaction pooling mode, whose
// server connections outlive the API's: while the database refuses
// writes every swipe is 503 with Retry-After, never 500; once it takes
// them again, the server connections PgBouncer opened on it are closed as
// their server_lifetime passes (2 s here; the shipped settings say 60 s),
// and swipes succeed. That lifetime is the floor through PgBouncer
// (docs/operations.md, "Failover").
func TestPostgresTurnsReadOnlyThroughPgBouncer(t *testing.T) {
	const lifetime = 2 * time.Second
	t.Setenv("PGBOUNCER_SERVER_LIFETIME", "2")
	direct := testutil.NewDBURL(t)
	pgb := pgBouncer(t)
	f := startFaultAPIOn(t, direct, pgb.DatabaseURL(direct))
	student := f.onboard(t)
	a, ids := f.feed(t, student)
	require.Equal(t, http.StatusOK, a.code, "%v", a)
	require.Greater(t, len(ids), 12, "%v", a)

	testutil.SetReadOnly(t, f.direct, true, true)
	for i := range 4 {
		requireUnavailable(t, f.swipeOn(t, student, ids[i]))
	}
	answers := make([]answer, 8)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() { answers[i] = f.swipeOn(t, student, ids[4+i]) })
	}
	wg.Wait()
	for _, a := range answers {
		requireUnavailable(t, a)
	}

	testutil.SetReadOnly(t, f.direct, false, false)
	back := time.Now()
	for {
		a := f.swipeOn(t, student, ids[0])
		if a.code == http.StatusOK {
			break
		}
		requireUnavailable(t, a)
		require.Less(t, time.Since(back), lifetime+10*time.Second,
			"swipes still fail after the database takes writes again: %v", a)
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("through PgBouncer, swipes succeed %v after the database takes writes again (server_lifetime %v)",
		time.Since(back).Round(time.Millisecond), lifetime)
}
