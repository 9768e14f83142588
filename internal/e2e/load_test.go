package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loadStudent is one student of the load and what the service acknowledged.
type loadStudent struct {
	c       *client
	schools []string // still to swipe, in order
	acked   []ack
	// answers counted by outcome
	requests, limited, unavailable, transport, other int
	latencies                                        []time.Duration
}

type ack struct {
	swipeID, school string
	count           int
}

// next swipes the next school once; it returns false when none is left.
func (s *loadStudent) next() bool {
	if len(s.schools) == 0 {
		return false
	}
	school := s.schools[0]
	s.schools = s.schools[1:]
	id := uuid.NewString()
	s.requests++
	start := time.Now()
	res, err := s.c.do("POST", "/swipe", map[string]any{"student_id": s.c.id, "school_id": school,
		"direction": []string{"left", "right"}[len(s.schools)%2], "swipe_id": id})
	switch {
	case err != nil:
		s.transport++
		time.Sleep(100 * time.Millisecond)
	case res.Status == http.StatusOK:
		s.latencies = append(s.latencies, time.Since(start))
		n, _ := res.Body["swipe_count"].(float64)
		s.acked = append(s.acked, ack{swipeID: id, school: school, count: int(n)})
	case res.Status == http.StatusTooManyRequests:
		s.limited++
		wait, _ := strconv.Atoi(res.Header.Get("Retry-After"))
		time.Sleep(time.Duration(max(wait, 1)) * time.Second)
	case res.Status == http.StatusServiceUnavailable:
		s.unavailable++
		time.Sleep(100 * time.Millisecond)
	default:
		s.other++
		time.Sleep(100 * time.Millisecond)
	}
	return true
}

// Students swipe as fast as the service answers for E2E_LOAD_SECONDS while,
// halfway through, E2E_DISRUPT runs (a worker killed, Redis restarted
// empty, a Sentinel failover). Afterwards every student can swipe again,
// every acknowledged swipe is in PostgreSQL exactly once with the count its
// answer gave, each student's count is the number of swipes stored, and
// every acknowledged swipe reaches the webhook subscriber.
func TestSwipeLoad(t *testing.T) {
	deployment(t)
	length := durationEnv("E2E_LOAD_SECONDS", 12*time.Second)
	wait := durationEnv("E2E_WAIT", 3*time.Minute)
	n := intEnv("E2E_LOAD_STUDENTS", 16)
	label := os.Getenv("E2E_LABEL")
	disrupt := os.Getenv("E2E_DISRUPT")
	schools := schoolIDs(t, 600)

	students := make([]*loadStudent, n)
	for i := range students {
		c := newStudent(t)
		c.onboard(t)
		own := slices.Clone(schools)
		// Each student its own order, so they do not all lock the same rows.
		k := (i * 37) % len(own)
		own = append(own[k:], own[:k]...)
		students[i] = &loadStudent{c: c, schools: own}
	}

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), length)
	defer cancel()
	var wg sync.WaitGroup
	for _, s := range students {
		wg.Go(func() {
			for ctx.Err() == nil && s.next() {
			}
		})
	}
	var disruptTook time.Duration
	var disruptEnd time.Time
	if disrupt != "" {
		select {
		case <-time.After(length / 2):
		case <-ctx.Done():
		}
		at := time.Now()
		out, err := exec.Command("sh", "-c", disrupt).CombinedOutput()
		disruptEnd = time.Now()
		disruptTook = disruptEnd.Sub(at)
		t.Logf("disruption %q (%s): %s", disrupt, disruptTook.Round(time.Millisecond), out)
		require.NoError(t, err, "the disruption failed: %s", out)
	}
	wg.Wait()
	loadTook := time.Since(start)

	// The service recovers: every student's next swipe is acknowledged.
	recoverStart := time.Now()
	for _, s := range students {
		acked := len(s.acked)
		for len(s.acked) == acked {
			require.Less(t, time.Since(recoverStart), wait, "the service did not recover: swipes still fail")
			require.True(t, s.next(), "a student ran out of schools")
		}
	}
	recovered := time.Since(recoverStart)

	var total struct{ requests, acked, limited, unavailable, transport, other int }
	var lat []time.Duration
	var swipes [][2]string
	for _, s := range students {
		total.requests += s.requests
		total.acked += len(s.acked)
		total.limited += s.limited
		total.unavailable += s.unavailable
		total.transport += s.transport
		total.other += s.other
		lat = append(lat, s.latencies...)
		for _, a := range s.acked {
			swipes = append(swipes, [2]string{s.c.id, a.school})
		}
	}

	// PostgreSQL has every acknowledged swipe once, with the count its
	// answer gave, and each student's count is the swipes stored.
	pg := db(t)
	for _, s := range students {
		rows, err := pg.Query(context.Background(),
			`SELECT client_id, school_id::text, swipe_count FROM swipes WHERE student_id = $1 AND counted`, s.c.id)
		require.NoError(t, err)
		stored := map[string]int{}
		schoolOf := map[string]string{}
		countOf := map[string]int{}
		counts := map[int]int{}
		for rows.Next() {
			var id, school string
			var count *int
			require.NoError(t, rows.Scan(&id, &school, &count))
			stored[id]++
			schoolOf[id] = school
			if count != nil {
				counts[*count]++
				countOf[id] = *count
			}
		}
		require.NoError(t, rows.Err())
		for _, a := range s.acked {
			require.Equal(t, 1, stored[a.swipeID], "acknowledged swipe %s of student %s stored %d times", a.swipeID, s.c.id, stored[a.swipeID])
			assert.Equal(t, a.school, schoolOf[a.swipeID])
			assert.Equal(t, a.count, countOf[a.swipeID], "swipe %s: the count answered is the count stored", a.swipeID)
		}
		var count int
		require.NoError(t, pg.QueryRow(context.Background(), `SELECT swipe_count FROM students WHERE id = $1`, s.c.id).Scan(&count))
		assert.Equal(t, len(stored), count, "student %s: the count is the swipes stored", s.c.id)
		seen := map[int]bool{}
		for _, a := range s.acked {
			assert.False(t, seen[a.count], "student %s: two acknowledged swipes answered count %d", s.c.id, a.count)
			seen[a.count] = true
			assert.LessOrEqual(t, a.count, count)
		}
		for c, k := range counts {
			assert.Equal(t, 1, k, "student %s: %d stored swipes answered count %d", s.c.id, k, c)
		}
	}

	delivered, posts := "no subscriber", 0
	if hooks != nil {
		hookStart := time.Now()
		posts = hooks.check(t, swipes, wait)
		delivered = fmt.Sprintf("all %d delivered in %d posts within %s", len(swipes), posts, time.Since(hookStart).Round(100*time.Millisecond))
	}

	slices.Sort(lat)
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))].Round(100 * time.Microsecond)
	}
	errors := total.unavailable + total.transport + total.other
	fmt.Printf("scaleout summary [%s]: %d students, %d swipe requests in %s (%.0f/s), %d acknowledged (2xx %.2f%%), "+
		"errors %d (503 %d, transport %d, other %d), 429 %d; latency p50 %s p99 %s; disruption %s; every student swiping again %s later; webhooks: %s\n",
		label, n, total.requests, loadTook.Round(100*time.Millisecond), float64(total.requests)/loadTook.Seconds(), total.acked,
		100*float64(total.acked)/float64(max(total.requests, 1)), errors, total.unavailable, total.transport, total.other, total.limited,
		pct(0.5), pct(0.99), describeDisruption(disrupt, disruptTook), recovered.Round(100*time.Millisecond), delivered)
	assert.Zero(t, total.other, "answers other than 200, 429 and 503")
}

func describeDisruption(cmd string, took time.Duration) string {
	if cmd == "" {
		return "none"
	}
	return fmt.Sprintf("%q (took %s)", cmd, took.Round(100*time.Millisecond))
}
