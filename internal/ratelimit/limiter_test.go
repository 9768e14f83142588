package ratelimit_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/config"
	"github.com/collegematch/matching/internal/ratelimit"
	"github.com/collegematch/matching/internal/testutil"
)

// specLimits are the defaults of the configuration (the spec's figures).
func specLimits(t *testing.T) config.RateLimits {
	t.Helper()
	c, err := config.Load(func(string) string { return "" }, config.RoleCLI)
	require.NoError(t, err)
	require.Equal(t, config.Rate{N: 60, Period: time.Minute}, c.RateLimits.Recommendations)
	return c.RateLimits
}

// secondClient is another connection pool on the same Redis DB, as a second
// API process would have.
func secondClient(t *testing.T) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(testutil.RedisURLFor(t, testutil.RedisDBRateLimit))
	require.NoError(t, err)
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	require.NoError(t, rdb.Ping(t.Context()).Err())
	return rdb
}

// regained is how many requests GCRA has given back since start at rate r:
// one every period/N. Tests allow for them so a slow run (-race, a loaded
// machine) does not fail; on a normal run it is 0.
func regained(start time.Time, r config.Rate) int {
	return int(time.Since(start) / (r.Period / time.Duration(r.N)))
}

// requireRemaining asserts remaining is want, or up to the requests
// regained since start above it; never below. Once any time has been
// regained, one more is allowed for: the limiter counts regained time in
// fractions of a request, the test in whole ones, and a slow run can end a
// fraction past the test's count.
func requireRemaining(t *testing.T, want int, d ratelimit.Decision, start time.Time, r config.Rate, msgAndArgs ...any) {
	t.Helper()
	require.GreaterOrEqual(t, d.Remaining, want, msgAndArgs...)
	slack := regained(start, r)
	if slack > 0 {
		slack++
	}
	require.LessOrEqual(t, d.Remaining, min(want+slack, r.N), msgAndArgs...)
}

// requireDeniedSoon asserts the next request is refused, or, on a run slow
// enough to have regained some, that it is refused once those are spent.
func requireDeniedSoon(t *testing.T, l *ratelimit.Limiter, g ratelimit.Group, key string, start time.Time, r config.Rate) ratelimit.Decision {
	t.Helper()
	extra := regained(start, r)
	for i := 0; ; i++ {
		d := allow(t, l, g, key)
		if !d.Allowed {
			return d
		}
		require.Less(t, i, extra, "request over the allowance is refused")
	}
}

func allow(t *testing.T, l *ratelimit.Limiter, g ratelimit.Group, key string) ratelimit.Decision {
	t.Helper()
	d, err := l.Allow(t.Context(), g, key)
	require.NoError(t, err)
	return d
}

func TestRecommendationsBudget(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBRateLimit)
	l := ratelimit.New(rdb, specLimits(t))
	student, other := uuid.NewString(), uuid.NewString()

	rate := config.Rate{N: 60, Period: time.Minute}
	start := time.Now()
	for i := 1; i <= 60; i++ {
		d := allow(t, l, ratelimit.GroupRecommendations, student)
		require.True(t, d.Allowed, "request %d of 60 is allowed", i)
		require.Equal(t, 60, d.Limit)
		requireRemaining(t, 60-i, d, start, rate, "remaining after request %d", i)
		require.Zero(t, d.RetryAfter)
		// Each request pushes full recovery one emission interval (1 s) later.
		require.WithinDuration(t, start.Add(time.Duration(i)*time.Second), d.ResetAt, time.Second)
	}
	d := requireDeniedSoon(t, l, ratelimit.GroupRecommendations, student, start, rate)
	require.False(t, d.Allowed, "the 61st request in a minute is refused")
	require.Equal(t, 60, d.Limit)
	require.Zero(t, d.Remaining)
	require.Greater(t, d.RetryAfter, time.Duration(0))
	require.LessOrEqual(t, d.RetryAfter, time.Second, "GCRA gives one request back every period/N")
	require.True(t, d.ResetAt.After(time.Now()), "reset is in the future")
	require.LessOrEqual(t, time.Until(d.ResetAt), time.Minute)
	require.Greater(t, time.Until(d.ResetAt), 58*time.Second)

	// Refused requests do not consume budget: the next one is still refused
	// with a similar wait, not a growing one.
	d2 := allow(t, l, ratelimit.GroupRecommendations, student)
	require.False(t, d2.Allowed)
	require.LessOrEqual(t, d2.RetryAfter, d.RetryAfter)

	// Another student, and another group of the same student, are unaffected.
	d = allow(t, l, ratelimit.GroupRecommendations, other)
	require.True(t, d.Allowed)
	require.Equal(t, 59, d.Remaining)
	d = allow(t, l, ratelimit.GroupSwipes, student)
	require.True(t, d.Allowed)
	require.Equal(t, 300, d.Limit)
	require.Equal(t, 299, d.Remaining)

	// One request comes back after period/N.
	time.Sleep(d2.RetryAfter + 50*time.Millisecond)
	d = allow(t, l, ratelimit.GroupRecommendations, student)
	require.True(t, d.Allowed, "a request is allowed again after Retry-After")
	require.Zero(t, d.Remaining)
}

// Two API processes (two limiters on two Redis connections) share one budget.
func TestBudgetSharedAcrossProcesses(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBRateLimit)
	limits := specLimits(t)
	a, b := ratelimit.New(rdb, limits), ratelimit.New(secondClient(t), limits)
	student := uuid.NewString()
	start := time.Now()
	for i := 1; i <= 60; i++ {
		l := a
		if i%2 == 0 {
			l = b
		}
		d := allow(t, l, ratelimit.GroupRecommendations, student)
		require.True(t, d.Allowed, "request %d", i)
		requireRemaining(t, 60-i, d, start, limits.Recommendations, "request %d", i)
	}
	requireDeniedSoon(t, a, ratelimit.GroupRecommendations, student, start, limits.Recommendations)
	require.False(t, allow(t, b, ratelimit.GroupRecommendations, student).Allowed)
}

// Concurrent requests from two processes never let more than the allowance through.
func TestBudgetUnderConcurrency(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBRateLimit)
	limits := specLimits(t)
	limiters := []*ratelimit.Limiter{ratelimit.New(rdb, limits), ratelimit.New(secondClient(t), limits)}
	student := uuid.NewString()
	var mu sync.Mutex
	allowed := 0
	var wg sync.WaitGroup
	for g := range 10 {
		wg.Go(func() {
			for range 10 {
				d, err := limiters[g%2].Allow(context.Background(), ratelimit.GroupBatch, student)
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	require.Equal(t, 20, allowed, "exactly the batch allowance of 20 passes")
}

func TestCustomAllowances(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBRateLimit)
	rates := map[ratelimit.Group]config.Rate{
		ratelimit.GroupRecommendations: {N: 3, Period: time.Second},
		ratelimit.GroupSwipes:          {N: 5, Period: time.Minute},
		ratelimit.GroupBatch:           {N: 1, Period: time.Minute},
		ratelimit.GroupDefault:         {N: 2, Period: time.Minute},
	}
	l := ratelimit.New(rdb, config.RateLimits{
		Recommendations: rates[ratelimit.GroupRecommendations],
		Swipes:          rates[ratelimit.GroupSwipes],
		Batch:           rates[ratelimit.GroupBatch],
		Default:         rates[ratelimit.GroupDefault],
	})
	student := uuid.NewString()
	for g, r := range rates {
		start := time.Now()
		for i := 1; i <= r.N; i++ {
			d := allow(t, l, g, student)
			require.True(t, d.Allowed, "%s request %d", g, i)
			require.Equal(t, r.N, d.Limit)
			requireRemaining(t, r.N-i, d, start, r, "%s request %d", g, i)
		}
		d := requireDeniedSoon(t, l, g, student, start, r)
		require.Equal(t, r.N, d.Limit)
	}
	// 3/s: the whole allowance is back within a second.
	time.Sleep(1100 * time.Millisecond)
	start := time.Now()
	for i := range 3 {
		require.True(t, allow(t, l, ratelimit.GroupRecommendations, student).Allowed, "request %d after a second", i+1)
	}
	requireDeniedSoon(t, l, ratelimit.GroupRecommendations, student, start, rates[ratelimit.GroupRecommendations])
	require.False(t, allow(t, l, ratelimit.GroupBatch, student).Allowed, "1/min is not back after a second")
}

// A zero allowance (an unset field) falls back to the spec's default for
// that group instead of dividing by zero in the script.
func TestZeroAllowanceUsesDefaults(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBRateLimit)
	l := ratelimit.New(rdb, config.RateLimits{Swipes: config.Rate{N: 7, Period: time.Minute}})
	for g, n := range map[ratelimit.Group]int{
		ratelimit.GroupRecommendations: 60,
		ratelimit.GroupSwipes:          7,
		ratelimit.GroupBatch:           20,
		ratelimit.GroupDefault:         600,
	} {
		d := allow(t, l, g, uuid.NewString())
		require.True(t, d.Allowed)
		require.Equal(t, n, d.Limit, "group %s", g)
		require.Equal(t, n-1, d.Remaining, "group %s", g)
	}
}

func TestEveryKeyHasTTL(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBRateLimit)
	l := ratelimit.New(rdb, config.RateLimits{
		Recommendations: config.Rate{N: 60, Period: time.Minute},
		Swipes:          config.Rate{N: 300, Period: time.Minute},
		Batch:           config.Rate{N: 20, Period: time.Minute},
		Default:         config.Rate{N: 10, Period: 10 * time.Second},
	})
	groups := []ratelimit.Group{ratelimit.GroupRecommendations, ratelimit.GroupSwipes, ratelimit.GroupBatch, ratelimit.GroupDefault}
	for range 3 {
		student := uuid.NewString()
		for _, g := range groups {
			for range 25 { // past the batch allowance too
				_, err := l.Allow(t.Context(), g, student)
				require.NoError(t, err)
			}
		}
	}
	keys, err := rdb.Keys(t.Context(), "*").Result()
	require.NoError(t, err)
	require.Len(t, keys, 3*len(groups))
	for _, k := range keys {
		require.True(t, strings.HasPrefix(k, "rate:v1:"), "key %q", k)
		ttl, err := rdb.PTTL(t.Context(), k).Result()
		require.NoError(t, err)
		require.Greater(t, ttl, time.Duration(0), "key %q has a TTL", k)
		require.LessOrEqual(t, ttl, time.Minute, "key %q lives no longer than the period", k)
	}
}

func TestUnknownGroup(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBRateLimit)
	l := ratelimit.New(rdb, specLimits(t))
	_, err := l.Allow(t.Context(), ratelimit.Group("nope"), uuid.NewString())
	require.Error(t, err)
}

// After RetryAfterFailure the limiter tries Redis again and counts as usual
// once it answers; meanwhile it counted in memory, and it logs both
// changes once.
func TestRedisComesBack(t *testing.T) {
	testutil.NewRedis(t, testutil.RedisDBRateLimit) // flushed now and at the end
	// Reserve a port with nothing listening on it; later a proxy to the
	// real Redis listens there, as if Redis had come back.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	rdb := redis.NewClient(&redis.Options{Addr: addr, DB: testutil.RedisDBRateLimit, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	l := ratelimit.New(rdb, specLimits(t))
	var logs syncBuffer
	l.SetLog(slog.New(slog.NewTextHandler(&logs, nil)))
	student := uuid.NewString()
	d, err := l.Allow(t.Context(), ratelimit.GroupRecommendations, student)
	require.NoError(t, err)
	require.True(t, d.Local, "counted in memory")

	target, err := redis.ParseURL(testutil.RedisURL())
	require.NoError(t, err)
	proxy, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	go func() {
		for {
			c, err := proxy.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", target.Addr)
				if err != nil {
					return
				}
				defer up.Close()
				go func() { _, _ = io.Copy(up, c) }()
				_, _ = io.Copy(c, up)
			}()
		}
	}()

	d, err = l.Allow(t.Context(), ratelimit.GroupRecommendations, student)
	require.NoError(t, err)
	require.True(t, d.Local, "still within RetryAfterFailure")
	require.Equal(t, 58, d.Remaining)
	time.Sleep(ratelimit.RetryAfterFailure + 100*time.Millisecond)
	d, err = l.Allow(t.Context(), ratelimit.GroupRecommendations, student)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.False(t, d.Local)
	require.Equal(t, 59, d.Remaining, "Redis counts from its own state")
	require.Equal(t, 1, strings.Count(logs.String(), "rate limiter cannot reach Redis"), logs.String())
	require.Equal(t, 1, strings.Count(logs.String(), "rate limiter reaches Redis again"), logs.String())
}

// A caller that gives up (its context ends) does not mark Redis as down.
func TestCallerCancellationIsNotAnOutage(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBRateLimit)
	l := ratelimit.New(rdb, specLimits(t))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := l.Allow(ctx, ratelimit.GroupRecommendations, uuid.NewString())
	require.Error(t, err)
	d, err := l.Allow(t.Context(), ratelimit.GroupRecommendations, uuid.NewString())
	require.NoError(t, err)
	require.True(t, d.Allowed)
}

func TestKey(t *testing.T) {
	id := uuid.NewString()
	k := ratelimit.Key(ratelimit.GroupRecommendations, id)
	require.Equal(t, "v1:recommendations:{student:"+id+"}", k)
	// The spellings of one UUID that a student token may use for itself
	// (MayActFor compares case-insensitively) count against one budget.
	require.Equal(t, k, ratelimit.Key(ratelimit.GroupRecommendations, strings.ToUpper(id)))
	require.NotEqual(t, k, ratelimit.Key(ratelimit.GroupSwipes, id))
	require.NotEqual(t, k, ratelimit.Key(ratelimit.GroupRecommendations, uuid.NewString()))
}

func TestCaseVariantsShareBudget(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBRateLimit)
	l := ratelimit.New(rdb, config.RateLimits{
		Recommendations: config.Rate{N: 4, Period: time.Minute},
		Swipes:          config.Rate{N: 4, Period: time.Minute},
		Batch:           config.Rate{N: 4, Period: time.Minute},
		Default:         config.Rate{N: 4, Period: time.Minute},
	})
	id := uuid.NewString()
	for _, k := range []string{id, strings.ToUpper(id), id, strings.ToUpper(id[:8]) + id[8:]} {
		require.True(t, allow(t, l, ratelimit.GroupRecommendations, k).Allowed)
	}
	require.False(t, allow(t, l, ratelimit.GroupRecommendations, strings.ToUpper(id)).Allowed)
	require.False(t, allow(t, l, ratelimit.GroupRecommendations, id).Allowed)
}

// Remaining counts down by exactly one per request, from N-1 on a fresh
// key, also for allowances whose emission interval is not exact in binary
// floating point (600/min is 0.1 s, 7/min is 60/7 s).
func TestRemainingCountsDownExactly(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBRateLimit)
	for _, n := range []int{7, 20, 60, 300, 600} {
		r := config.Rate{N: n, Period: time.Minute}
		l := ratelimit.New(rdb, config.RateLimits{Recommendations: r, Swipes: r, Batch: r, Default: r})
		for trial := range 20 {
			d := allow(t, l, ratelimit.GroupDefault, uuid.NewString())
			require.Equal(t, n-1, d.Remaining, "%d/min: remaining after the first request (trial %d)", n, trial)
		}
		student := uuid.NewString()
		start := time.Now()
		for i := 1; i <= n; i++ {
			d := allow(t, l, ratelimit.GroupDefault, student)
			require.True(t, d.Allowed, "%d/min request %d", n, i)
			requireRemaining(t, n-i, d, start, r, "%d/min remaining after request %d", n, i)
		}
		d := requireDeniedSoon(t, l, ratelimit.GroupDefault, student, start, r)
		require.Zero(t, d.Remaining)
	}
}
