package httpapi_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/config"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/httpapi"
	"github.com/collegematch/matching/internal/ratelimit"
)

// swipeRates are generous allowances for every group but swipes.
func swipeRates(swipes config.Rate) config.RateLimits {
	wide := config.Rate{N: 6000, Period: time.Minute}
	return config.RateLimits{Recommendations: wide, Swipes: swipes, Batch: wide, Default: wide}
}

// withWideSwipeAllowance lets a test that is not about the allowance
// record thousands of swipes a minute.
func withWideSwipeAllowance(t *testing.T) apiOption {
	t.Helper()
	return withRates(redisClient(t), swipeRates(config.Rate{N: 100_000, Period: time.Minute}))
}

// countedSwipes is how many counted swipes the student has stored.
func (a *testAPI) countedSwipes(t *testing.T, student string) int {
	t.Helper()
	return a.count(t, `SELECT count(*) FROM swipes WHERE student_id = $1 AND counted`, student)
}

// swipeChange is a counted swipe change of a push.
func swipeChange(school domain.School, dir string) map[string]any {
	return map[string]any{"id": uuid.NewString(), "type": "swipe", "school_id": school.ID, "direction": dir,
		"occurred_at": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano)}
}

func rejectedErrors(body map[string]any) map[string]string {
	out := map[string]string{}
	for _, x := range body["rejected"].([]any) {
		m := x.(map[string]any)
		out[m["id"].(string)] = m["error"].(string)
	}
	return out
}

// A student cannot record more counted swipes than the swipes allowance,
// whatever mix of POST /swipe, POST /continuous-feed and POST /m/sync/push
// carries them.
func TestCarriedSwipesCountAgainstTheSwipeAllowance(t *testing.T) {
	const allowance = 10 // a unit back every 6 s: none comes back during the test on a normal run
	api := newTestAPI(t, withRates(redisClient(t), swipeRates(config.Rate{N: allowance, Period: time.Minute})))
	schools := api.seedSchools(t, 60)
	student, tok := api.newStudent(t, completeProfile())
	start := time.Now()
	next := 0
	school := func() domain.School { next++; return schools[next] }
	carried := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = map[string]any{"school_id": school().ID, "direction": "right"}
		}
		return out
	}

	for range 3 { // 3 units
		api.swipe(t, tok, map[string]any{"student_id": student, "school_id": school().ID, "direction": "left"})
	}
	res := api.do(t, "POST", "/continuous-feed", tok, map[string]any{"student_id": student, "limit": 1, "swipes": carried(4)})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw) // 7 units
	assert.EqualValues(t, 7, res.Body["total_swipes"])
	assert.Equal(t, "6000", res.Header.Get("X-RateLimit-Limit"), "the request's own group is reported on success")

	// 4 more do not fit in the 3 left: 429, nothing recorded.
	res = api.do(t, "POST", "/continuous-feed", tok, map[string]any{"student_id": student, "limit": 1, "swipes": carried(4)})
	details := requireErrorBody(t, res, http.StatusTooManyRequests, "RATE_LIMITED")
	assert.Equal(t, "swipes", details["group"])
	assert.EqualValues(t, allowance, details["limit"])
	assert.EqualValues(t, 4, details["swipes"])
	retry, err := strconv.Atoi(res.Header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After is whole seconds: %q", res.Header.Get("Retry-After"))
	assert.GreaterOrEqual(t, retry, 5, "one more unit is back in 6 s")
	assert.LessOrEqual(t, retry, 6)
	assert.Equal(t, strconv.Itoa(allowance), res.Header.Get("X-RateLimit-Limit"))
	assert.Equal(t, 7, api.countedSwipes(t, student), "nothing of a refused request is recorded")
	assert.Equal(t, 7, api.count(t, `SELECT count(*) FROM outbox WHERE student_id = $1`, student))

	// A push: every change it stores costs a unit, feedback and taps as
	// much as counted swipes; the 3 units left go to the first 3, in the
	// order sent, and the rest are rate_limited.
	fb := map[string]any{"id": uuid.NewString(), "type": "feedback", "school_id": schools[1].ID, "reason": "too_expensive",
		"occurred_at": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano)}
	tap := swipeChange(school(), "right")
	tap["interaction_type"] = "tap"
	changes := []map[string]any{swipeChange(school(), "left"), fb, swipeChange(school(), "right"), tap,
		swipeChange(school(), "left"), swipeChange(school(), "right"), swipeChange(school(), "left")}
	res = api.do(t, "POST", "/m/sync/push", tok, map[string]any{"student_id": student, "changes": changes})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	assert.Equal(t, []string{changes[0]["id"].(string), fb["id"].(string), changes[2]["id"].(string)}, strs(res.Body["accepted"]))
	assert.Equal(t, map[string]string{tap["id"].(string): "rate_limited", changes[4]["id"].(string): "rate_limited",
		changes[5]["id"].(string): "rate_limited", changes[6]["id"].(string): "rate_limited"}, rejectedErrors(res.Body))
	assert.EqualValues(t, allowance-1, res.Body["swipe_count"], "the feedback took a unit")
	retry, err = strconv.Atoi(res.Header.Get("Retry-After"))
	require.NoError(t, err, "a push with rate_limited changes carries Retry-After: %q", res.Header.Get("Retry-After"))
	assert.GreaterOrEqual(t, retry, 23, "four more units are back in 24 s")
	assert.LessOrEqual(t, retry, 24)

	// The allowance is spent for every way in.
	requireErrorBody(t, api.do(t, "POST", "/swipe", tok, map[string]any{"student_id": student, "school_id": school().ID,
		"direction": "left"}), http.StatusTooManyRequests, "RATE_LIMITED")
	requireErrorBody(t, api.do(t, "POST", "/continuous-feed", tok, map[string]any{"student_id": student, "swipes": carried(1)}),
		http.StatusTooManyRequests, "RATE_LIMITED")
	res = api.do(t, "POST", "/m/sync/push", tok, map[string]any{"student_id": student, "changes": changes[5:]})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	assert.Len(t, rejectedErrors(res.Body), 2)
	// A continuous-feed request without swipes spends nothing.
	res = api.do(t, "POST", "/continuous-feed", tok, map[string]any{"student_id": student, "limit": 1})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)

	assert.LessOrEqual(t, api.storedRows(t, student), allowance+int(time.Since(start)/(6*time.Second)),
		"no more than the allowance is recorded in a minute")
	assert.GreaterOrEqual(t, api.storedRows(t, student), allowance)
	assert.EqualValues(t, 5, counterValue(t, api.Registry, "matching_rate_limited_total", map[string]string{"group": "swipes"}),
		"two refused continuous-feed requests, two limited pushes, a refused POST /swipe")
}

// The rate_limited changes of a push are stored once when pushed again
// after Retry-After under the same ids.
func TestSyncPushRateLimitedChangesArePushedAgainLater(t *testing.T) {
	api := newTestAPI(t, withRates(redisClient(t), swipeRates(config.Rate{N: 5, Period: time.Second})))
	schools := api.seedSchools(t, 20)
	student, tok := api.newStudent(t, completeProfile())
	changes := make([]map[string]any, 8)
	for i := range changes {
		changes[i] = swipeChange(schools[i], "right")
	}
	res := api.do(t, "POST", "/m/sync/push", tok, map[string]any{"student_id": student, "changes": changes})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	accepted := strs(res.Body["accepted"])
	limited := rejectedErrors(res.Body)
	require.GreaterOrEqual(t, len(accepted), 5)
	require.Equal(t, 8, len(accepted)+len(limited))
	require.NotEmpty(t, limited, "8 swipes at once do not fit in 5")
	for _, e := range limited {
		assert.Equal(t, "rate_limited", e)
	}
	retry, err := strconv.Atoi(res.Header.Get("Retry-After"))
	require.NoError(t, err)
	assert.Equal(t, 1, retry, "a unit is back every 200 ms")

	var again []map[string]any
	for _, c := range changes {
		if _, ok := limited[c["id"].(string)]; ok {
			again = append(again, c)
		}
	}
	time.Sleep(time.Duration(retry) * time.Second)
	res = api.do(t, "POST", "/m/sync/push", tok, map[string]any{"student_id": student, "changes": again})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	assert.Equal(t, ids(again), strs(res.Body["accepted"]))
	assert.Empty(t, res.Body["rejected"])
	assert.Empty(t, res.Header.Get("Retry-After"))

	time.Sleep(time.Duration(retry) * time.Second) // the whole allowance back
	res = api.do(t, "POST", "/m/sync/push", tok, map[string]any{"student_id": student, "changes": changes[:5]})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	assert.Equal(t, ids(changes[:5]), strs(res.Body["duplicates"]))
	assert.Equal(t, 8, api.countedSwipes(t, student), "each change is stored once")
	assert.EqualValues(t, 8, res.Body["swipe_count"])
}

// A continuous-feed request that carries more swipes than the whole
// allowance is refused with a message saying so, and spends nothing.
func TestContinuousFeedCarryingMoreThanTheAllowance(t *testing.T) {
	api := newTestAPI(t, withRates(redisClient(t), swipeRates(config.Rate{N: 3, Period: time.Minute})))
	schools := api.seedSchools(t, 20)
	student, tok := api.newStudent(t, completeProfile())
	swipes := make([]any, 4)
	for i := range swipes {
		swipes[i] = map[string]any{"school_id": schools[i].ID, "direction": "left"}
	}
	res := api.do(t, "POST", "/continuous-feed", tok, map[string]any{"student_id": student, "swipes": swipes})
	requireErrorBody(t, res, http.StatusTooManyRequests, "RATE_LIMITED")
	assert.Contains(t, res.Body["error"].(map[string]any)["message"], "send at most 3 at a time")
	assert.NotEmpty(t, res.Header.Get("Retry-After"))
	res = api.do(t, "POST", "/continuous-feed", tok, map[string]any{"student_id": student, "swipes": swipes[:3]})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	assert.Equal(t, 3, api.countedSwipes(t, student))
}

// splitLimiter counts requests on one limiter and carried swipes on
// another: a Redis outage that hits the charge of carried swipes only.
type splitLimiter struct {
	requests *ratelimit.Pipelined
	units    *ratelimit.Limiter
}

func (s splitLimiter) Allow(ctx context.Context, g ratelimit.Group, key string) (ratelimit.Decision, error) {
	return s.requests.Allow(ctx, g, key)
}

func (s splitLimiter) AllowN(ctx context.Context, g ratelimit.Group, key string, n int) (ratelimit.Decision, error) {
	return s.units.AllowN(ctx, g, key, n)
}

func (s splitLimiter) AllowAtMost(ctx context.Context, g ratelimit.Group, key string, n int) (ratelimit.Decision, error) {
	return s.units.AllowAtMost(ctx, g, key, n)
}

// withUnitsOnUnreachableRedis counts requests on rdb and carried swipes on
// a Redis that never answers.
func withUnitsOnUnreachableRedis(t *testing.T, rdb redis.UniversalClient, failClosed bool) apiOption {
	t.Helper()
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = down.Close() })
	return func(d *httpapi.Deps) {
		d.RateLimits = swipeRates(config.Rate{N: 2, Period: time.Minute})
		d.RateLimits.CommentBytes = 100
		d.RateLimits.FailClosed = failClosed
		d.Limiter = splitLimiter{requests: ratelimit.NewPipelined(rdb, d.RateLimits), units: ratelimit.New(down, d.RateLimits)}
	}
}

// When Redis cannot count the carried swipes, the middleware's policy
// applies: they are counted in the replica's memory at the same rate, the
// continuous feed all or none (429) and the push in order while the
// allowance lasts; or, with RATE_LIMIT_FAIL_CLOSED, 503 with nothing
// recorded.
func TestCarriedSwipesWhenTheLimiterCannotCount(t *testing.T) {
	t.Run("in memory", func(t *testing.T) {
		api := newTestAPI(t, withUnitsOnUnreachableRedis(t, redisClient(t), false))
		schools := api.seedSchools(t, 20)
		student, tok := api.newStudent(t, completeProfile())
		swipes := make([]any, 3)
		for i := range swipes {
			swipes[i] = map[string]any{"school_id": schools[i].ID, "direction": "left"}
		}
		start := time.Now()
		res := api.do(t, "POST", "/continuous-feed", tok, map[string]any{"student_id": student, "swipes": swipes})
		details := requireErrorBody(t, res, http.StatusTooManyRequests, "RATE_LIMITED")
		assert.Equal(t, "swipes", details["group"])
		assert.NotEmpty(t, res.Header.Get("Retry-After"))
		changes := []map[string]any{swipeChange(schools[5], "left"), swipeChange(schools[6], "right"), swipeChange(schools[7], "left")}
		res = api.do(t, "POST", "/m/sync/push", tok, map[string]any{"student_id": student, "changes": changes})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		assert.Equal(t, ids(changes[:2]), strs(res.Body["accepted"]))
		assert.Equal(t, map[string]string{changes[2]["id"].(string): "rate_limited"}, rejectedErrors(res.Body))
		assert.NotEmpty(t, res.Header.Get("Retry-After"))
		assert.Less(t, time.Since(start), 2*time.Second, "an unreachable Redis does not stall the requests")
		assert.Equal(t, 2, api.countedSwipes(t, student), "the allowance of 2 holds while Redis cannot count")

		// The comment budget too.
		res = api.do(t, "POST", "/feedback", tok, map[string]any{"student_id": student, "school_id": schools[8].ID,
			"reason": "too_expensive", "comment": strings.Repeat("x", 90)})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		res = api.do(t, "POST", "/feedback", tok, map[string]any{"student_id": student, "school_id": schools[9].ID,
			"reason": "too_expensive", "comment": strings.Repeat("x", 20)})
		details = requireErrorBody(t, res, http.StatusTooManyRequests, "RATE_LIMITED")
		assert.Equal(t, "comment_bytes", details["group"])

		assert.EqualValues(t, 2, counterValue(t, api.Registry, "matching_rate_limit_errors_total",
			map[string]string{"group": "swipes", "outcome": "fallback"}))
		assert.Zero(t, counterValue(t, api.Registry, "matching_rate_limit_errors_total",
			map[string]string{"group": "swipes", "outcome": "allowed"}))
		assert.EqualValues(t, 2, counterValue(t, api.Registry, "matching_rate_limit_fallback_total",
			map[string]string{"group": "swipes", "decision": "refused"}))
		assert.EqualValues(t, 1, counterValue(t, api.Registry, "matching_rate_limit_fallback_total",
			map[string]string{"group": "comment_bytes", "decision": "refused"}))
	})
	t.Run("fail closed", func(t *testing.T) {
		api := newTestAPI(t, withUnitsOnUnreachableRedis(t, redisClient(t), true))
		schools := api.seedSchools(t, 20)
		student, tok := api.newStudent(t, completeProfile())
		res := api.do(t, "POST", "/continuous-feed", tok, map[string]any{"student_id": student,
			"swipes": []any{map[string]any{"school_id": schools[0].ID, "direction": "left"}}})
		requireErrorBody(t, res, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
		assert.NotEmpty(t, res.Header.Get("Retry-After"))
		res = api.do(t, "POST", "/m/sync/push", tok, map[string]any{"student_id": student,
			"changes": []map[string]any{swipeChange(schools[1], "left")}})
		requireErrorBody(t, res, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
		assert.NotEmpty(t, res.Header.Get("Retry-After"))
		assert.Zero(t, api.countedSwipes(t, student), "nothing is recorded")
		// Without swipes to count, nothing depends on the outage.
		res = api.do(t, "POST", "/continuous-feed", tok, map[string]any{"student_id": student})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		assert.EqualValues(t, 2, counterValue(t, api.Registry, "matching_rate_limit_errors_total",
			map[string]string{"group": "swipes", "outcome": "denied"}))
	})
}

// A push counts as rate-limited (matching_rate_limited_total) only when one
// of its changes was refused for the allowance: a push whose changes
// beyond the allowance are invalid anyway refuses nothing for it.
func TestSyncPushCountsRateLimitedOnlyWhenAChangeWasRefused(t *testing.T) {
	api := newTestAPI(t, withRates(redisClient(t), swipeRates(config.Rate{N: 2, Period: time.Minute})))
	schools := api.seedSchools(t, 10)
	student, tok := api.newStudent(t, completeProfile())
	bad := swipeChange(schools[3], "left")
	bad["direction"] = "sideways"
	changes := []map[string]any{swipeChange(schools[1], "left"), swipeChange(schools[2], "right"), bad}
	res := api.do(t, "POST", "/m/sync/push", tok, map[string]any{"student_id": student, "changes": changes})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	rejected := rejectedErrors(res.Body)
	require.Len(t, rejected, 1, "%s", res.Raw)
	limited := 0
	for _, code := range rejected {
		if code == "rate_limited" {
			limited = 1
		}
	}
	assert.EqualValues(t, limited, counterValue(t, api.Registry, "matching_rate_limited_total", map[string]string{"group": "swipes"}),
		"counted when, and only when, a change was refused for the allowance (%v)", rejected)
	assert.Equal(t, limited == 1, res.Header.Get("Retry-After") != "")
}
