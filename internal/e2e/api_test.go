package e2e

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A new student onboards, sees the six categories and likes or passes on
// each; the requests go to whichever replica the balancer picks.
func TestOnboardingAndCategories(t *testing.T) {
	deployment(t)
	c := newStudent(t)
	c.onboard(t)
	cats := c.must(t, http.StatusOK, "GET", "/v2/onboarding/category-schools", nil)
	list, _ := cats.Body["categories"].([]any)
	require.Len(t, list, 6, "%s", cats.Raw)
	for i, raw := range list {
		cat := raw.(map[string]any)
		c.must(t, http.StatusOK, "POST", "/v2/onboarding/category-swipe", map[string]any{
			"student_id": c.id, "category_id": cat["id"], "direction": []string{"right", "left"}[i%2]})
	}
	recs := c.must(t, http.StatusOK, "POST", "/v2/recommendations", map[string]any{"student_id": c.id, "limit": 10})
	assert.NotEmpty(t, recs.Body["recommendations"], "%s", recs.Raw)
}

// Each swipe's answer has the exact count and phase although consecutive
// swipes land on different replicas, and a read after a swipe shows it.
func TestSwipeCountsAndPhases(t *testing.T) {
	deployment(t)
	schools := schoolIDs(t, 40)
	c := newStudent(t)
	c.onboard(t)
	for i := 1; i <= 35; i++ {
		body := c.must(t, http.StatusOK, "POST", "/swipe", map[string]any{"student_id": c.id, "school_id": schools[i],
			"direction": []string{"left", "right"}[i%2], "swipe_id": uuid.NewString()}).Body
		require.EqualValues(t, i, body["swipe_count"], "swipe %d", i)
		phase := "discovery"
		switch {
		case i > 30:
			phase = "stable"
		case i > 10:
			phase = "refinement"
		}
		assert.Equal(t, phase, body["learning_phase"], "swipe %d", i)
		ls, _ := body["learning_state"].(map[string]any)
		assert.InDelta(t, math.Min(float64(i)/31, 1), ls["progress"], 1e-4, "swipe %d", i)
		if i == 10 || i == 11 || i == 30 || i == 31 {
			recs := c.must(t, http.StatusOK, "POST", "/recommendations", map[string]any{"student_id": c.id, "limit": 5})
			assert.EqualValues(t, i, recs.Body["total_swipes"], "read after swipe %d", i)
		}
	}
	var count, rows int
	require.NoError(t, db(t).QueryRow(context.Background(),
		`SELECT (SELECT swipe_count FROM students WHERE id = $1), (SELECT count(*) FROM swipes WHERE student_id = $1 AND counted)`,
		c.id).Scan(&count, &rows))
	assert.Equal(t, 35, count)
	assert.Equal(t, 35, rows)
}

// A swipe sent again with the same swipe_id, or the same Idempotency-Key,
// gets the first answer from every replica and is stored once.
func TestIdempotentRetry(t *testing.T) {
	deployment(t)
	schools := schoolIDs(t, 5)
	c := newStudent(t)
	c.onboard(t)
	swipeID := uuid.NewString()
	body := map[string]any{"student_id": c.id, "school_id": schools[1], "direction": "right", "swipe_id": swipeID}
	first := c.must(t, http.StatusOK, "POST", "/swipe", body)
	require.EqualValues(t, 1, first.Body["swipe_count"])
	for range 4 {
		again := c.must(t, http.StatusOK, "POST", "/swipe", body)
		assert.EqualValues(t, 1, again.Body["swipe_count"], "%s", again.Raw)
	}
	key := uuid.NewString()
	keyed := map[string]any{"student_id": c.id, "school_id": schools[2], "direction": "left"}
	for range 4 {
		res := c.must(t, http.StatusOK, "POST", "/swipe", keyed, "Idempotency-Key", key)
		assert.EqualValues(t, 2, res.Body["swipe_count"], "%s", res.Raw)
	}
	var stored int
	require.NoError(t, db(t).QueryRow(context.Background(),
		`SELECT count(*) FROM swipes WHERE student_id = $1`, c.id).Scan(&stored))
	assert.Equal(t, 2, stored)
}

// The compact first page carries an ETag every replica honours.
func TestRecommendationsETag(t *testing.T) {
	deployment(t)
	c := newStudent(t)
	c.onboard(t)
	path := "/m/recommendations/" + c.id
	c.must(t, http.StatusOK, "GET", path, nil)
	page := c.must(t, http.StatusOK, "GET", path, nil)
	etag := page.Header.Get("ETag")
	require.NotEmpty(t, etag)
	for range 4 {
		res := c.must(t, http.StatusNotModified, "GET", path, nil, "If-None-Match", etag)
		assert.Empty(t, res.Raw)
	}
	schools := schoolIDs(t, 3)
	c.must(t, http.StatusOK, "POST", "/swipe", map[string]any{"student_id": c.id, "school_id": schools[0], "direction": "right",
		"swipe_id": uuid.NewString()})
	changed := c.must(t, http.StatusOK, "GET", path, nil, "If-None-Match", etag)
	assert.NotEqual(t, etag, changed.Header.Get("ETag"), "a swipe changes the page")
}

// Offline changes pushed twice (through different replicas) are stored
// once, and a pull returns each once.
func TestSyncPushPullExactlyOnce(t *testing.T) {
	deployment(t)
	schools := schoolIDs(t, 4)
	c := newStudent(t)
	c.onboard(t)
	at := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	ids := []string{uuid.NewString(), uuid.NewString(), uuid.NewString()}
	changes := []any{
		map[string]any{"id": ids[0], "type": "swipe", "school_id": schools[0], "direction": "right", "occurred_at": at},
		map[string]any{"id": ids[1], "type": "swipe", "school_id": schools[1], "direction": "left", "occurred_at": at},
		map[string]any{"id": ids[2], "type": "feedback", "school_id": schools[1], "reason": "wrong_location", "occurred_at": at},
	}
	push := map[string]any{"student_id": c.id, "changes": changes}
	first := c.must(t, http.StatusOK, "POST", "/m/sync/push", push)
	assert.Len(t, first.Body["accepted"], 3, "%s", first.Raw)
	again := c.must(t, http.StatusOK, "POST", "/m/sync/push", push)
	assert.Empty(t, again.Body["accepted"], "%s", again.Raw)
	assert.Len(t, again.Body["duplicates"], 3, "%s", again.Raw)

	pulled := map[string]int{}
	body := map[string]any{"student_id": c.id}
	for range 10 {
		res := c.must(t, http.StatusOK, "POST", "/m/sync/pull", body)
		for _, raw := range res.Body["swipes"].([]any) {
			if id, ok := raw.(map[string]any)["id"].(string); ok {
				pulled[id]++
			}
		}
		if more, _ := res.Body["has_more"].(bool); !more {
			break
		}
		body["cursor"] = res.Body["cursor"]
	}
	assert.Equal(t, map[string]int{ids[0]: 1, ids[1]: 1}, pulled)
	var count int
	require.NoError(t, db(t).QueryRow(context.Background(),
		`SELECT swipe_count FROM students WHERE id = $1`, c.id).Scan(&count))
	assert.Equal(t, 2, count)
}

// A student's allowance is one for the whole fleet: requests spread over
// the replicas get the allowance once, not once per replica.
func TestRateLimitSharedAcrossReplicas(t *testing.T) {
	deployment(t)
	schools := schoolIDs(t, 2)
	c := newStudent(t)
	c.onboard(t)
	body := map[string]any{"school_ids": schools}
	first := c.must(t, http.StatusOK, "POST", "/m/batch/schools", body)
	limit, err := strconv.Atoi(first.Header.Get("X-RateLimit-Limit"))
	require.NoError(t, err, "X-RateLimit-Limit %q", first.Header.Get("X-RateLimit-Limit"))
	start := time.Now()
	ok, limited := 1, 0
	for range limit + 10 {
		res, err := c.do("POST", "/m/batch/schools", body)
		require.NoError(t, err)
		switch res.Status {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
			limited++
			assert.NotEmpty(t, res.Header.Get("Retry-After"))
		default:
			t.Fatalf("status %d: %s", res.Status, res.Raw)
		}
	}
	// The allowance refills continuously (limit per minute): allow what
	// the run's own duration regained.
	regained := int(time.Since(start).Minutes()*float64(limit)) + 1
	assert.GreaterOrEqual(t, ok, limit, "the allowance is granted")
	assert.LessOrEqual(t, ok, limit+regained, "%d of %d allowed with a limit of %d: the allowance is per replica", ok, limit+11, limit)
	assert.Positive(t, limited)
}

// Every swipe reaches the subscriber, signed, under one webhook-id however
// many times it is posted.
func TestWebhooksDelivered(t *testing.T) {
	deployment(t)
	needHooks(t)
	schools := schoolIDs(t, 12)
	c := newStudent(t)
	c.onboard(t)
	var swipes [][2]string
	for _, s := range schools {
		c.must(t, http.StatusOK, "POST", "/swipe", map[string]any{"student_id": c.id, "school_id": s, "direction": "right",
			"swipe_id": uuid.NewString()})
		swipes = append(swipes, [2]string{c.id, s})
	}
	posts := hooks.check(t, swipes, durationEnv("E2E_WAIT", 3*time.Minute))
	t.Logf("%d swipes delivered in %d posts", len(swipes), posts)
}
