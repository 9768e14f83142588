package httpapi_test

import (
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
	"github.com/collegematch/matching/internal/testutil"
)

// rateHeaders checks the X-RateLimit-* headers of a limited response and
// returns Remaining and Reset.
func rateHeaders(t *testing.T, res result, limit int) (remaining int, reset int64) {
	t.Helper()
	l, err := strconv.Atoi(res.Header.Get("X-RateLimit-Limit"))
	require.NoError(t, err, "X-RateLimit-Limit is an integer: %q", res.Header.Get("X-RateLimit-Limit"))
	require.Equal(t, limit, l)
	remaining, err = strconv.Atoi(res.Header.Get("X-RateLimit-Remaining"))
	require.NoError(t, err, "X-RateLimit-Remaining is an integer")
	require.GreaterOrEqual(t, remaining, 0)
	require.LessOrEqual(t, remaining, limit)
	reset, err = strconv.ParseInt(res.Header.Get("X-RateLimit-Reset"), 10, 64)
	require.NoError(t, err, "X-RateLimit-Reset is an integer")
	// Unix epoch seconds, rounded up, of the moment the allowance is full
	// again: in the future, and at most one period (a minute) away.
	now := float64(time.Now().UnixMicro()) / 1e6
	require.Greater(t, float64(reset), now, "reset %d is in the future", reset)
	require.LessOrEqual(t, float64(reset), now+61, "reset %d is within a minute", reset)
	return remaining, reset
}

// regained is how many requests GCRA has given back since start at 60/min
// (one a second). Tests allow for them so a slow run (-race, a loaded
// machine) does not fail; on a normal run it is 0.
func regained(start time.Time) int { return int(time.Since(start) / time.Second) }

// requireRemaining asserts remaining is want, or up to the requests
// regained since start above it; never below.
func requireRemaining(t *testing.T, want, remaining int, start time.Time, msgAndArgs ...any) {
	t.Helper()
	require.GreaterOrEqual(t, remaining, want, msgAndArgs...)
	require.LessOrEqual(t, remaining, want+regained(start), msgAndArgs...)
}

// deniedSoon sends the request until it is refused: at once on a normal
// run, after the regained requests on a slow one.
func deniedSoon(t *testing.T, send func() result, start time.Time) result {
	t.Helper()
	extra := regained(start)
	for i := 0; ; i++ {
		res := send()
		if res.Status == http.StatusTooManyRequests {
			return res
		}
		require.Equal(t, http.StatusNotFound, res.Status, "%s", res.Raw)
		require.Less(t, i, extra, "the request over the allowance is refused")
	}
}

// redisClient is another connection to this package's Redis DB (not flushed).
func redisClient(t testing.TB) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(testutil.RedisURLFor(t, testutil.RedisDBHTTPAPI))
	require.NoError(t, err)
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func TestRecommendationsRateLimit(t *testing.T) {
	api := newTestAPI(t)
	me, other := uuid.NewString(), uuid.NewString()
	mine := token(t, me, false)
	path := "/m/recommendations/" + me

	start := time.Now()
	for i := 1; i <= 60; i++ {
		res := api.do(t, "GET", path, mine, nil)
		requireErrorBody(t, res, http.StatusNotFound, "INVALID_STUDENT_ID")
		remaining, _ := rateHeaders(t, res, 60)
		requireRemaining(t, 60-i, remaining, start, "remaining after request %d", i)
		require.Empty(t, res.Header.Get("Retry-After"))
	}
	res := deniedSoon(t, func() result { return api.do(t, "GET", path, mine, nil) }, start)
	details := requireErrorBody(t, res, http.StatusTooManyRequests, "RATE_LIMITED")
	assert.Equal(t, "recommendations", details["group"])
	assert.EqualValues(t, 60, details["limit"])
	remaining, reset := rateHeaders(t, res, 60)
	assert.Zero(t, remaining)
	assert.Greater(t, float64(reset), float64(time.Now().Unix())+55, "the full allowance is about a minute away")
	retry, err := strconv.Atoi(res.Header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After is whole seconds: %q", res.Header.Get("Retry-After"))
	assert.GreaterOrEqual(t, retry, 1)
	assert.LessOrEqual(t, retry, 2, "GCRA gives a request back every second at 60/min")
	assert.EqualValues(t, retry, details["retry_after_seconds"])
	assert.EqualValues(t, 1, counterValue(t, api.Registry, "matching_rate_limited_total", map[string]string{"group": "recommendations"}))

	// Every endpoint of the group shares the budget; other groups do not.
	res = api.do(t, "GET", "/match/"+me+"/"+uuid.NewString(), mine, nil)
	requireErrorBody(t, res, http.StatusTooManyRequests, "RATE_LIMITED")
	res = api.do(t, "POST", "/recommendations", mine, map[string]any{"student_id": me})
	requireErrorBody(t, res, http.StatusTooManyRequests, "RATE_LIMITED")
	res = api.do(t, "GET", "/m/recommendations/"+strings.ToUpper(me), mine, nil)
	requireErrorBody(t, res, http.StatusTooManyRequests, "RATE_LIMITED")
	res = api.do(t, "POST", "/swipe", mine, map[string]any{"student_id": me})
	requireErrorBody(t, res, http.StatusBadRequest, "INVALID_REQUEST")
	remaining, _ = rateHeaders(t, res, 300)
	assert.Equal(t, 299, remaining)

	// Another student is unaffected.
	res = api.do(t, "GET", "/m/recommendations/"+other, token(t, other, false), nil)
	requireErrorBody(t, res, http.StatusNotFound, "INVALID_STUDENT_ID")
	remaining, _ = rateHeaders(t, res, 60)
	assert.Equal(t, 59, remaining)

	// After Retry-After a request is allowed again.
	time.Sleep(time.Duration(retry) * time.Second)
	res = api.do(t, "GET", path, mine, nil)
	requireErrorBody(t, res, http.StatusNotFound, "INVALID_STUDENT_ID")
}

// Every response of a limited endpoint carries the headers, whatever its
// status, with its group's allowance.
func TestRateLimitHeadersOnEveryLimitedResponse(t *testing.T) {
	api := newTestAPI(t)
	me := uuid.NewString()
	tok := token(t, me, false)
	profile := map[string]any{"name": "Ada", "email": "ada@example.com", "graduation_year": "2027"}
	cases := []struct {
		method, path string
		body         any
		status       int
		limit        int
	}{
		{"GET", "/health", nil, 200, 600},
		{"POST", "/v2/onboarding/minimal", profile, 201, 600},
		{"POST", "/v2/onboarding/minimal", profile, 200, 600},
		{"POST", "/v2/onboarding/minimal", map[string]any{"gpa": "high"}, 400, 600},
		{"GET", "/v2/onboarding/category-schools", nil, 200, 600},
		{"POST", "/recommendations", map[string]any{"student_id": me}, 422, 60},
		{"POST", "/recommendations", map[string]any{"student_id": me, "limit": 0}, 400, 60},
		{"POST", "/v2/recommendations", map[string]any{"student_id": me}, 200, 60},
		{"POST", "/v2/recommendations", map[string]any{"student_id": me, "offset": -1}, 400, 60},
		{"POST", "/continuous-feed", map[string]any{"student_id": me}, 200, 60},
		{"POST", "/continuous-feed", map[string]any{"student_id": me, "limit": 51}, 400, 60},
		{"GET", "/match/" + me + "/" + uuid.NewString(), nil, 404, 60},
		{"GET", "/m/recommendations/" + me, nil, 422, 60},
		{"POST", "/swipe", map[string]any{"student_id": me}, 400, 300},
		{"POST", "/feedback", map[string]any{"student_id": me}, 400, 300},
		{"POST", "/v2/onboarding/category-swipe", map[string]any{"student_id": me}, 400, 300},
		{"POST", "/v2/onboarding/category-swipe", map[string]any{"student_id": me, "category_id": "liberal-arts", "direction": "right"}, 200, 300},
		{"POST", "/m/batch/schools", map[string]any{"school_ids": []string{uuid.NewString()}}, 200, 20},
		{"POST", "/m/batch/schools", map[string]any{"student_id": me}, 400, 20},
		{"POST", "/m/sync/pull", map[string]any{"student_id": me}, 200, 20},
		{"POST", "/m/sync/push", map[string]any{"student_id": me}, 400, 20},
	}
	spent, start := map[int]int{}, map[int]time.Time{}
	for _, c := range cases {
		if start[c.limit].IsZero() {
			start[c.limit] = time.Now()
		}
		res := api.do(t, c.method, c.path, tok, c.body)
		require.Equal(t, c.status, res.Status, "%s %s: %s", c.method, c.path, res.Raw)
		spent[c.limit]++
		remaining, _ := rateHeaders(t, res, c.limit)
		// One request comes back every minute/limit; allow for those.
		back := int(time.Since(start[c.limit]) / (time.Minute / time.Duration(c.limit)))
		assert.GreaterOrEqual(t, remaining, c.limit-spent[c.limit], "%s %s", c.method, c.path)
		assert.LessOrEqual(t, remaining, min(c.limit-spent[c.limit]+back, c.limit-1), "%s %s", c.method, c.path)
	}
	// The first request of a group reports limit-1 exactly.
	res := api.do(t, "GET", "/health", token(t, "", false), nil)
	remaining, _ := rateHeaders(t, res, 600)
	assert.Equal(t, 599, remaining)
}

// Two API replicas (two servers, two Redis connections, one Redis) share
// one budget per student.
func TestRateLimitSharedAcrossReplicas(t *testing.T) {
	a, b := newTestAPI(t), newTestAPI(t)
	require.NotEqual(t, a.URL, b.URL)
	me := uuid.NewString()
	tok := token(t, me, false)
	path := "/m/recommendations/" + me
	start := time.Now()
	for i := 1; i <= 60; i++ {
		api := a
		if i%2 == 0 {
			api = b
		}
		res := api.do(t, "GET", path, tok, nil)
		require.Equal(t, http.StatusNotFound, res.Status, "request %d: %s", i, res.Raw)
		remaining, _ := rateHeaders(t, res, 60)
		requireRemaining(t, 60-i, remaining, start, "request %d", i)
	}
	res := deniedSoon(t, func() result { return a.do(t, "GET", path, tok, nil) }, start)
	requireErrorBody(t, res, http.StatusTooManyRequests, "RATE_LIMITED")
	requireErrorBody(t, b.do(t, "GET", path, tok, nil), http.StatusTooManyRequests, "RATE_LIMITED")
}

// The key is the request's student: a service token gets each student's
// allowance, and without a student id the token's subject is counted.
func TestRateLimitKeyIsTheStudent(t *testing.T) {
	small := config.Rate{N: 3, Period: time.Minute}
	api := newTestAPI(t, withRates(redisClient(t), config.RateLimits{
		Recommendations: small, Swipes: small, Batch: small, Default: small,
	}))
	svc := token(t, "", true)
	s1, s2 := uuid.NewString(), uuid.NewString()

	for i := 1; i <= 3; i++ {
		res := api.do(t, "GET", "/m/recommendations/"+s1, svc, nil)
		require.Equal(t, http.StatusNotFound, res.Status, "%s", res.Raw)
	}
	requireErrorBody(t, api.do(t, "GET", "/m/recommendations/"+s1, svc, nil), http.StatusTooManyRequests, "RATE_LIMITED")
	res := api.do(t, "GET", "/m/recommendations/"+s2, svc, nil)
	require.Equal(t, http.StatusNotFound, res.Status, "a second student has a budget of their own: %s", res.Raw)
	remaining, _ := rateHeaders(t, res, 3)
	assert.Equal(t, 2, remaining)

	// Body ids count the same way (default group: onboarding).
	for _, id := range []string{s1, s2} {
		for i := 1; i <= 3; i++ {
			res := api.do(t, "POST", "/v2/onboarding/minimal", svc, map[string]any{"student_id": id, "name": "Ada", "email": "ada@example.com", "graduation_year": "2027"})
			require.Contains(t, []int{200, 201}, res.Status, "%s", res.Raw)
			remaining, _ := rateHeaders(t, res, 3)
			assert.Equal(t, 3-i, remaining)
		}
	}
	// The service token's own budget (no student named) is separate again.
	res = api.do(t, "GET", "/health", svc, nil)
	require.Equal(t, http.StatusOK, res.Status)
	remaining, _ = rateHeaders(t, res, 3)
	assert.Equal(t, 2, remaining)

	// A student token's subject and its own id, in any spelling, are one budget.
	me := uuid.NewString()
	mine := token(t, me, false)
	profile := map[string]any{"name": "Ada", "email": "ada@example.com", "graduation_year": "2027"}
	res = api.do(t, "POST", "/v2/onboarding/minimal", mine, profile)
	require.Equal(t, http.StatusCreated, res.Status, "%s", res.Raw)
	profile["student_id"] = strings.ToUpper(me)
	res = api.do(t, "POST", "/v2/onboarding/minimal", mine, profile)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	res = api.do(t, "GET", "/health", mine, nil)
	require.Equal(t, http.StatusOK, res.Status)
	requireErrorBody(t, api.do(t, "GET", "/health", mine, nil), http.StatusTooManyRequests, "RATE_LIMITED")
	requireErrorBody(t, api.do(t, "POST", "/v2/onboarding/minimal", mine, profile), http.StatusTooManyRequests, "RATE_LIMITED")
}

// While Redis cannot count, limits do not vanish: the replica counts each
// student's allowance in memory at the same rate, refuses beyond it with
// 429 and Retry-After, and says so in the metrics.
func TestRateLimitFallsBackToMemory(t *testing.T) {
	rates := config.RateLimits{Recommendations: config.Rate{N: 3, Period: time.Minute},
		Swipes: config.Rate{N: 300, Period: time.Minute}, Batch: config.Rate{N: 20, Period: time.Minute},
		Default: config.Rate{N: 2, Period: time.Minute}}
	api := newTestAPI(t, withUnreachableRedisRates(t, rates))
	me := uuid.NewString()
	tok := token(t, me, false)
	start := time.Now()
	for i := range 3 {
		res := api.do(t, "GET", "/m/recommendations/"+me, tok, nil)
		requireErrorBody(t, res, http.StatusNotFound, "INVALID_STUDENT_ID")
		remaining, _ := rateHeaders(t, res, 3)
		assert.Equal(t, 2-i, remaining, "counted in memory, and the figures say so")
	}
	res := api.do(t, "GET", "/m/recommendations/"+me, tok, nil)
	details := requireErrorBody(t, res, http.StatusTooManyRequests, "RATE_LIMITED")
	assert.Equal(t, "recommendations", details["group"])
	assert.Equal(t, "20", res.Header.Get("Retry-After"), "one request back every 20 s")
	other := uuid.NewString()
	res = api.do(t, "GET", "/m/recommendations/"+other, token(t, other, false), nil)
	requireErrorBody(t, res, http.StatusNotFound, "INVALID_STUDENT_ID")

	profile := map[string]any{"name": "Ada", "email": "ada@example.com", "graduation_year": "2027"}
	res = api.do(t, "POST", "/v2/onboarding/minimal", tok, profile)
	require.Equal(t, http.StatusCreated, res.Status, "%s", res.Raw)
	res = api.do(t, "POST", "/v2/onboarding/minimal", tok, profile)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	requireErrorBody(t, api.do(t, "POST", "/v2/onboarding/minimal", tok, profile), http.StatusTooManyRequests, "RATE_LIMITED")
	assert.Less(t, time.Since(start), 2*time.Second, "an unreachable Redis does not stall requests")

	assert.EqualValues(t, 5, counterValue(t, api.Registry, "matching_rate_limit_errors_total",
		map[string]string{"group": "recommendations", "outcome": "fallback"}))
	assert.EqualValues(t, 3, counterValue(t, api.Registry, "matching_rate_limit_errors_total",
		map[string]string{"group": "default", "outcome": "fallback"}))
	assert.Zero(t, counterValue(t, api.Registry, "matching_rate_limit_errors_total",
		map[string]string{"group": "recommendations", "outcome": "allowed"}), "nothing passes uncounted")
	assert.EqualValues(t, 4, counterValue(t, api.Registry, "matching_rate_limit_fallback_total",
		map[string]string{"group": "recommendations", "decision": "allowed"}))
	assert.EqualValues(t, 1, counterValue(t, api.Registry, "matching_rate_limit_fallback_total",
		map[string]string{"group": "recommendations", "decision": "refused"}))
	assert.EqualValues(t, 1, counterValue(t, api.Registry, "matching_rate_limit_fallback_total",
		map[string]string{"group": "default", "decision": "refused"}))
	assert.EqualValues(t, 2, counterValue(t, api.Registry, "matching_rate_limited_total",
		map[string]string{"group": "recommendations"})+counterValue(t, api.Registry, "matching_rate_limited_total",
		map[string]string{"group": "default"}))
}

func TestRateLimitFailClosed(t *testing.T) {
	api := newTestAPI(t, withUnreachableRedis(t), withFailClosed())
	me := uuid.NewString()
	tok := token(t, me, false)
	for range 3 {
		res := api.do(t, "GET", "/m/recommendations/"+me, tok, nil)
		details := requireErrorBody(t, res, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
		assert.Empty(t, details)
		assert.NotEmpty(t, res.Header.Get("Retry-After"))
		msg := res.Body["error"].(map[string]any)["message"].(string)
		assert.NotContains(t, msg, "127.0.0.1", "the message does not leak internals")
	}
	res := api.do(t, "POST", "/v2/onboarding/minimal", tok, map[string]any{"name": "Ada", "email": "ada@example.com", "graduation_year": "2027"})
	requireErrorBody(t, res, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")

	assert.EqualValues(t, 3, counterValue(t, api.Registry, "matching_rate_limit_errors_total",
		map[string]string{"group": "recommendations", "outcome": "denied"}))
	assert.EqualValues(t, 1, counterValue(t, api.Registry, "matching_rate_limit_errors_total",
		map[string]string{"group": "default", "outcome": "denied"}))
	assert.Zero(t, counterValue(t, api.Registry, "matching_rate_limit_errors_total",
		map[string]string{"group": "recommendations", "outcome": "allowed"}))

	// Authentication still comes first.
	res = api.do(t, "GET", "/m/recommendations/"+me, "garbage", nil)
	requireErrorBody(t, res, http.StatusUnauthorized, "UNAUTHORIZED")
}
