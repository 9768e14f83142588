package httpapi_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/config"
	"github.com/collegematch/matching/internal/domain"
)

// interactionChange is a change of a push that is not a counted swipe.
func interactionChange(school domain.School, kind string) map[string]any {
	c := swipeChange(school, "right")
	c["interaction_type"] = kind
	return c
}

// feedbackChange is a feedback change of a push with a comment.
func feedbackChange(school domain.School, comment string) map[string]any {
	c := map[string]any{"id": uuid.NewString(), "type": "feedback", "school_id": school.ID, "reason": "too_expensive",
		"occurred_at": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano)}
	if comment != "" {
		c["comment"] = comment
	}
	return c
}

// storedRows counts every row a student's writes stored: interactions of
// any kind and feedback.
func (a *testAPI) storedRows(t *testing.T, student string) int {
	t.Helper()
	return a.count(t, `SELECT (SELECT count(*) FROM swipes WHERE student_id = $1) + (SELECT count(*) FROM feedback WHERE student_id = $1)`,
		student)
}

func retryAfter(t *testing.T, res result) int {
	t.Helper()
	secs, err := strconv.Atoi(res.Header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After is whole seconds: %q", res.Header.Get("Retry-After"))
	return secs
}

// Every change a push stores costs a unit of the swipes allowance, whatever
// its kind (decisions.md, third round): taps, detail views and saves like
// counted swipes, feedback like POST /feedback; those beyond it, in the
// order sent, come back rate_limited with Retry-After, and nothing beyond
// it is stored, whichever way in spends it.
func TestSyncPushEveryStoredChangeCostsAllowance(t *testing.T) {
	const allowance = 10 // a unit back every 6 s
	api := newTestAPI(t, withRates(redisClient(t), swipeRates(config.Rate{N: allowance, Period: time.Minute})))
	schools := api.seedSchools(t, 40)
	student, tok := api.newStudent(t, completeProfile())
	start := time.Now()

	kinds := []string{"tap", "detail_view", "save"}
	changes := make([]map[string]any, 12)
	for i := range changes {
		changes[i] = interactionChange(schools[i], kinds[i%3])
	}
	changes[4] = feedbackChange(schools[4], "")
	res := api.do(t, "POST", "/m/sync/push", tok, map[string]any{"student_id": student, "changes": changes})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	assert.Equal(t, ids(changes[:allowance]), strs(res.Body["accepted"]), "taken in the order sent")
	assert.Equal(t, map[string]string{changes[10]["id"].(string): "rate_limited", changes[11]["id"].(string): "rate_limited"},
		rejectedErrors(res.Body))
	assert.GreaterOrEqual(t, retryAfter(t, res), 11, "two more units are back in 12 s")
	assert.LessOrEqual(t, retryAfter(t, res), 12)
	assert.Equal(t, allowance, api.storedRows(t, student))
	assert.EqualValues(t, 0, res.Body["swipe_count"], "taps, views, saves and feedback are not counted swipes")

	// Spent for every way in: POST /feedback, POST /swipe, and a push of
	// feedback.
	requireErrorBody(t, api.do(t, "POST", "/feedback", tok, map[string]any{"student_id": student, "school_id": schools[20].ID,
		"reason": "too_expensive"}), http.StatusTooManyRequests, "RATE_LIMITED")
	requireErrorBody(t, api.do(t, "POST", "/swipe", tok, map[string]any{"student_id": student, "school_id": schools[21].ID,
		"direction": "left"}), http.StatusTooManyRequests, "RATE_LIMITED")
	fb := []map[string]any{feedbackChange(schools[22], ""), feedbackChange(schools[23], "far")}
	res = api.do(t, "POST", "/m/sync/push", tok, map[string]any{"student_id": student, "changes": fb})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	assert.Len(t, rejectedErrors(res.Body), 2, "%s", res.Raw)
	assert.NotEmpty(t, res.Header.Get("Retry-After"))

	assert.LessOrEqual(t, api.storedRows(t, student), allowance+int(time.Since(start)/(6*time.Second)),
		"no more rows than the allowance in a minute")
}

// Feedback carried by a push costs the allowance POST /feedback costs: a
// student who spent it on pushed feedback cannot send POST /feedback, and
// one who spent it on POST /feedback has pushed feedback refused.
func TestSyncPushFeedbackChargesTheFeedbackAllowance(t *testing.T) {
	api := newTestAPI(t, withRates(redisClient(t), swipeRates(config.Rate{N: 3, Period: time.Minute})))
	schools := api.seedSchools(t, 20)
	student, tok := api.newStudent(t, completeProfile())
	for i := range 3 {
		res := api.do(t, "POST", "/feedback", tok, map[string]any{"student_id": student, "school_id": schools[i].ID,
			"reason": "wrong_location"})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	}
	fb := []map[string]any{feedbackChange(schools[5], "")}
	res := api.do(t, "POST", "/m/sync/push", tok, map[string]any{"student_id": student, "changes": fb})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	assert.Equal(t, map[string]string{fb[0]["id"].(string): "rate_limited"}, rejectedErrors(res.Body))
	assert.Equal(t, 3, api.count(t, `SELECT count(*) FROM feedback WHERE student_id = $1`, student))

	other, tok2 := api.newStudent(t, completeProfile())
	fb = []map[string]any{feedbackChange(schools[6], ""), feedbackChange(schools[7], ""), feedbackChange(schools[8], "")}
	res = api.do(t, "POST", "/m/sync/push", tok2, map[string]any{"student_id": other, "changes": fb})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	assert.Len(t, strs(res.Body["accepted"]), 3)
	requireErrorBody(t, api.do(t, "POST", "/feedback", tok2, map[string]any{"student_id": other, "school_id": schools[9].ID,
		"reason": "too_expensive"}), http.StatusTooManyRequests, "RATE_LIMITED")
}

// The bytes of comments a student stores are bounded per minute
// (FEEDBACK_COMMENT_BYTES_PER_MIN), by POST /feedback and a push alike: a
// comment that does not fit whole is refused (429 for POST /feedback;
// rate_limited with Retry-After in a push), and feedback without a
// comment still goes through.
func TestFeedbackCommentBytesAreBoundedPerMinute(t *testing.T) {
	rates := swipeRates(config.Rate{N: 6000, Period: time.Minute})
	rates.CommentBytes = 3500
	api := newTestAPI(t, withRates(redisClient(t), rates))
	schools := api.seedSchools(t, 20)
	student, tok := api.newStudent(t, completeProfile())
	comment := strings.Repeat("x", 1000)

	changes := []map[string]any{feedbackChange(schools[0], comment), feedbackChange(schools[1], comment),
		feedbackChange(schools[2], ""), feedbackChange(schools[3], comment), feedbackChange(schools[4], comment),
		interactionChange(schools[5], "tap")}
	res := api.do(t, "POST", "/m/sync/push", tok, map[string]any{"student_id": student, "changes": changes})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	assert.Equal(t, ids([]map[string]any{changes[0], changes[1], changes[2], changes[3], changes[5]}), strs(res.Body["accepted"]))
	assert.Equal(t, map[string]string{changes[4]["id"].(string): "rate_limited"}, rejectedErrors(res.Body))
	secs := retryAfter(t, res)
	assert.GreaterOrEqual(t, secs, 8, "500 more bytes back in about 8.6 s (3,500 a minute)")
	assert.LessOrEqual(t, secs, 18)
	assert.Equal(t, 3000, api.count(t, `SELECT coalesce(sum(octet_length(comment)), 0) FROM feedback WHERE student_id = $1`, student))

	res = api.do(t, "POST", "/feedback", tok, map[string]any{"student_id": student, "school_id": schools[6].ID,
		"reason": "too_expensive", "comment": comment})
	details := requireErrorBody(t, res, http.StatusTooManyRequests, "RATE_LIMITED")
	assert.Equal(t, "comment_bytes", details["group"])
	assert.EqualValues(t, 1000, details["comment_bytes"])
	assert.NotEmpty(t, res.Header.Get("Retry-After"))
	res = api.do(t, "POST", "/feedback", tok, map[string]any{"student_id": student, "school_id": schools[7].ID,
		"reason": "too_expensive"})
	require.Equal(t, http.StatusOK, res.Status, "feedback without a comment: %s", res.Raw)
	assert.Equal(t, 3000, api.count(t, `SELECT coalesce(sum(octet_length(comment)), 0) FROM feedback WHERE student_id = $1`, student))
	assert.EqualValues(t, 2, counterValue(t, api.Registry, "matching_rate_limited_total", map[string]string{"group": "comment_bytes"}))
}

// The flood of a push at the default allowances: 500 non-counted changes
// and 500 feedback with 1,000-character comments, pushed twice each, store
// no more rows than the swipes allowance's burst (300) and what came back
// meanwhile, and no more comment bytes than the 64 KiB budget and its
// refill.
func TestSyncPushFloodStoresAtMostTheAllowance(t *testing.T) {
	api := newTestAPI(t, withRates(redisClient(t), config.RateLimits{Recommendations: config.Rate{N: 6000, Period: time.Minute},
		Swipes: config.Rate{N: 300, Period: time.Minute}, Batch: config.Rate{N: 6000, Period: time.Minute},
		Default: config.Rate{N: 6000, Period: time.Minute}}))
	schools := api.seedSchools(t, 50)
	student, tok := api.newStudent(t, completeProfile())
	comment := strings.Repeat("y", 1000)
	start := time.Now()
	limited := 0
	for round := range 4 {
		changes := make([]map[string]any, 500)
		for i := range changes {
			if round%2 == 0 {
				changes[i] = interactionChange(schools[i%50], []string{"tap", "detail_view", "save"}[i%3])
			} else {
				changes[i] = feedbackChange(schools[i%50], comment)
			}
		}
		res := api.do(t, "POST", "/m/sync/push", tok, map[string]any{"student_id": student, "changes": changes})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		limited += len(rejectedErrors(res.Body))
		assert.NotEmpty(t, res.Header.Get("Retry-After"))
	}
	refill := int(time.Since(start)/(200*time.Millisecond)) + 1 // a unit every 200 ms
	assert.LessOrEqual(t, api.storedRows(t, student), 300+refill)
	assert.GreaterOrEqual(t, limited, 2000-300-refill)
	bytes := api.count(t, `SELECT coalesce(sum(octet_length(comment)), 0) FROM feedback WHERE student_id = $1`, student)
	assert.LessOrEqual(t, bytes, 64<<10+int(time.Since(start).Seconds()*(64<<10)/60)+1)
}

// Continuous-feed's carried interactions follow its own rule: each costs a
// unit whatever its kind, and when the allowance cannot cover them the
// request is 429 with nothing recorded.
func TestContinuousFeedCarriedInteractionsCostAllowance(t *testing.T) {
	api := newTestAPI(t, withRates(redisClient(t), swipeRates(config.Rate{N: 3, Period: time.Minute})))
	schools := api.seedSchools(t, 20)
	student, tok := api.newStudent(t, completeProfile())
	carried := func(from, n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = map[string]any{"school_id": schools[from+i].ID, "direction": "right",
				"interaction_type": []string{"tap", "detail_view", "save"}[i%3]}
		}
		return out
	}
	res := api.do(t, "POST", "/continuous-feed", tok, map[string]any{"student_id": student, "limit": 1, "swipes": carried(0, 2)})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	res = api.do(t, "POST", "/continuous-feed", tok, map[string]any{"student_id": student, "limit": 1, "swipes": carried(5, 2)})
	requireErrorBody(t, res, http.StatusTooManyRequests, "RATE_LIMITED")
	assert.NotEmpty(t, res.Header.Get("Retry-After"))
	assert.Equal(t, 2, api.storedRows(t, student), "nothing of the refused request is recorded")
}
