package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/metrics"
)

// swipesCounted is matching_swipes_total for one direction, phase and slot.
func swipesCounted(t *testing.T, reg *prometheus.Registry, direction, phase, slot string) float64 {
	t.Helper()
	return counterValue(t, reg, "matching_swipes_total", map[string]string{"direction": direction, "phase": phase, "slot": slot})
}

// allSwipesCounted is matching_swipes_total summed over every series.
func allSwipesCounted(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	sum := 0.0
	for _, f := range families {
		if f.GetName() == "matching_swipes_total" {
			for _, m := range f.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

func TestLearningCountersStartAtZeroForEveryLabel(t *testing.T) {
	reg := prometheus.NewRegistry()
	metrics.NewLearning(reg)
	families, err := reg.Gather()
	require.NoError(t, err)
	series := map[string]int{}
	for _, f := range families {
		series[f.GetName()] = len(f.GetMetric())
		for _, m := range f.GetMetric() {
			assert.Zero(t, m.GetCounter().GetValue())
		}
	}
	assert.Equal(t, map[string]int{"matching_swipes_total": 2 * 3 * 3, "matching_feedback_total": 5,
		"matching_feed_patches_total": 5}, series)
	var results []string
	for _, r := range cache.PatchResults {
		results = append(results, string(r))
	}
	assert.ElementsMatch(t, results, metrics.FeedPatchResults, "the results are the patch's")
	assert.Equal(t, match.FeedbackOptions(), metrics.FeedbackReasons, "the reasons are the API's")
	for _, p := range []match.Phase{match.PhaseFor(1), match.PhaseFor(11), match.PhaseFor(31)} {
		assert.Contains(t, metrics.LearningPhases, string(p))
	}
}

// POST /swipe counts each recorded swipe once by direction, phase and slot;
// retries, weak signals and refused swipes are not counted.
func TestSwipesAreCountedByDirectionPhaseAndSlot(t *testing.T) {
	api := newTestAPI(t)
	schools := api.seedSchools(t, 400)
	reg := api.Registry
	id, tok := api.newStudent(t, completeProfile())

	swipeID := uuid.NewString()
	api.swipe(t, tok, map[string]any{"student_id": id, "school_id": schools[0].ID, "direction": "right", "swipe_id": swipeID})
	assert.Equal(t, 1.0, swipesCounted(t, reg, "right", "discovery", "ranked"))
	api.swipe(t, tok, map[string]any{"student_id": id, "school_id": schools[0].ID, "direction": "right", "swipe_id": swipeID})
	assert.Equal(t, 1.0, swipesCounted(t, reg, "right", "discovery", "ranked"), "a retry is not counted again")

	api.swipe(t, tok, map[string]any{"student_id": id, "school_id": schools[1].ID, "direction": "left", "interaction_type": "tap"})
	res := api.do(t, "POST", "/swipe", tok, map[string]any{"student_id": id, "school_id": uuid.NewString(), "direction": "left"})
	require.Equal(t, http.StatusNotFound, res.Status)
	assert.Equal(t, 1.0, allSwipesCounted(t, reg), "weak signals and refused swipes are not counted")

	// A swipe on a school served as a probe counts in slot probe.
	require.NoError(t, cache.NewProbes(api.Redis, 5*time.Minute).Remember(context.Background(), id, schools[2].ID))
	body := api.swipe(t, tok, map[string]any{"student_id": id, "school_id": schools[2].ID, "direction": "left"})
	require.Equal(t, true, body["trigger_feedback"])
	assert.Equal(t, 1.0, swipesCounted(t, reg, "left", "discovery", "probe"))

	// Swipes 3 to 11: the 11th is the first of refinement.
	for i := 3; i <= 11; i++ {
		api.swipe(t, tok, map[string]any{"student_id": id, "school_id": schools[i].ID, "direction": "left"})
	}
	assert.Equal(t, 8.0, swipesCounted(t, reg, "left", "discovery", "ranked"))
	assert.Equal(t, 1.0, swipesCounted(t, reg, "left", "refinement", "ranked"))
	assert.Equal(t, 11.0, allSwipesCounted(t, reg))
}

// The swipes sent along with POST /continuous-feed are counted as POST
// /swipe counts them; feedback by reason.
func TestContinuousFeedSwipesAndFeedbackAreCounted(t *testing.T) {
	api := newTestAPI(t)
	schools := api.seedSchools(t, 400)
	reg := api.Registry
	id, tok := api.newStudent(t, completeProfile())

	res := api.do(t, "POST", "/continuous-feed", tok, map[string]any{"student_id": id, "limit": 5, "swipes": []map[string]any{
		{"school_id": schools[0].ID, "direction": "right"},
		{"school_id": schools[1].ID, "direction": "right"},
		{"school_id": schools[2].ID, "direction": "left"},
		{"school_id": schools[3].ID, "direction": "left", "interaction_type": "detail_view"},
	}})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	assert.Equal(t, 2.0, swipesCounted(t, reg, "right", "discovery", "ranked"))
	assert.Equal(t, 1.0, swipesCounted(t, reg, "left", "discovery", "ranked"))
	assert.Equal(t, 3.0, allSwipesCounted(t, reg))

	for _, reason := range []string{"too_expensive", "too_expensive", "perfect_match"} {
		res := api.do(t, "POST", "/feedback", tok, map[string]any{"student_id": id, "school_id": schools[0].ID, "reason": reason})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	}
	res = api.do(t, "POST", "/feedback", tok, map[string]any{"student_id": id, "school_id": uuid.NewString(), "reason": "too_expensive"})
	require.Equal(t, http.StatusNotFound, res.Status, "%s", res.Raw)
	assert.Equal(t, 2.0, counterValue(t, reg, "matching_feedback_total", map[string]string{"reason": "too_expensive"}))
	assert.Equal(t, 1.0, counterValue(t, reg, "matching_feedback_total", map[string]string{"reason": "perfect_match"}))
	assert.Equal(t, 0.0, counterValue(t, reg, "matching_feedback_total", map[string]string{"reason": "not_my_major"}))
}

// A sync push counts what it accepted, each swipe in the phase its own count
// gave it (the push stores them in occurred_at order), and nothing for its
// duplicates and rejections.
func TestSyncPushSwipesAndFeedbackAreCounted(t *testing.T) {
	api := newTestAPI(t)
	schools := api.seedSchools(t, 400)
	reg := api.Registry
	id, tok := api.newStudent(t, completeProfile())
	for i := range 8 {
		api.swipe(t, tok, map[string]any{"student_id": id, "school_id": schools[i].ID, "direction": "left"})
	}
	require.Equal(t, 8.0, swipesCounted(t, reg, "left", "discovery", "ranked"))

	at := func(minutesAgo int) string {
		return time.Now().Add(-time.Duration(minutesAgo) * time.Minute).UTC().Format(time.RFC3339)
	}
	changes := []map[string]any{
		// Sent out of order: stored as swipes 9 (left), 10 (right), 11 (right).
		{"id": uuid.NewString(), "type": "swipe", "school_id": schools[20].ID, "direction": "right", "occurred_at": at(1)},
		{"id": uuid.NewString(), "type": "swipe", "school_id": schools[21].ID, "direction": "left", "occurred_at": at(3)},
		{"id": uuid.NewString(), "type": "swipe", "school_id": schools[22].ID, "direction": "right", "occurred_at": at(2)},
		{"id": uuid.NewString(), "type": "swipe", "school_id": schools[23].ID, "direction": "right", "interaction_type": "save", "occurred_at": at(2)},
		{"id": uuid.NewString(), "type": "feedback", "school_id": schools[20].ID, "reason": "wrong_location", "occurred_at": at(1)},
		{"id": uuid.NewString(), "type": "swipe", "school_id": schools[24].ID, "direction": "sideways", "occurred_at": at(1)},
	}
	body := api.push(t, tok, id, changes)
	require.Len(t, strs(body["accepted"]), 5)
	require.Len(t, body["rejected"], 1)
	require.EqualValues(t, 11, body["swipe_count"])

	assert.Equal(t, 9.0, swipesCounted(t, reg, "left", "discovery", "ranked"))
	assert.Equal(t, 1.0, swipesCounted(t, reg, "right", "discovery", "ranked"), "swipe 10")
	assert.Equal(t, 1.0, swipesCounted(t, reg, "right", "refinement", "ranked"), "swipe 11")
	assert.Equal(t, 11.0, allSwipesCounted(t, reg))
	assert.Equal(t, 1.0, counterValue(t, reg, "matching_feedback_total", map[string]string{"reason": "wrong_location"}))

	// The same push again: all duplicates, nothing counted.
	body = api.push(t, tok, id, changes[:5])
	require.Len(t, strs(body["duplicates"]), 5)
	assert.Equal(t, 11.0, allSwipesCounted(t, reg))
	assert.Equal(t, 1.0, counterValue(t, reg, "matching_feedback_total", map[string]string{"reason": "wrong_location"}))
}

// Each swipe's patch of the stored feed is counted by what it did: a swipe
// on the feed's next card patches it, one further down drops it for a
// tombstone, the next finds the tombstone, and a student without a stored
// feed has none to patch.
func TestFeedPatchesAreCountedByResult(t *testing.T) {
	api := newTestAPI(t)
	schools := api.seedSchools(t, 400)
	reg := api.Registry
	patches := func(result string) float64 {
		return counterValue(t, reg, "matching_feed_patches_total", map[string]string{"result": result})
	}

	id, tok := api.newStudent(t, completeProfile())
	api.swipe(t, tok, map[string]any{"student_id": id, "school_id": schools[0].ID, "direction": "right"})
	assert.Equal(t, 1.0, patches("none"), "no feed stored yet")

	res := api.do(t, "GET", "/m/recommendations/"+id, tok, nil)
	require.Equal(t, http.StatusOK, res.Status)
	cards := res.Body["r"].([]any)
	require.Greater(t, len(cards), 10)
	card := func(k int) string { return cards[k].(map[string]any)["i"].(string) }
	api.swipe(t, tok, map[string]any{"student_id": id, "school_id": card(0), "direction": "left"})
	assert.Equal(t, 1.0, patches("patched"), "the next card")
	api.swipe(t, tok, map[string]any{"student_id": id, "school_id": card(1), "direction": "left"})
	assert.Equal(t, 2.0, patches("patched"))
	api.swipe(t, tok, map[string]any{"student_id": id, "school_id": card(9), "direction": "left"})
	assert.Equal(t, 1.0, patches("dropped"), "a card further down")
	api.swipe(t, tok, map[string]any{"student_id": id, "school_id": card(3), "direction": "left"})
	assert.Equal(t, 1.0, patches("tombstone"), "no feed since the drop")
	assert.Zero(t, patches("stale"))
}
