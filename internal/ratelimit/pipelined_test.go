package ratelimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/config"
	"github.com/collegematch/matching/internal/ratelimit"
	"github.com/collegematch/matching/internal/testutil"
)

// The pipelined limiter and redis_rate's count one budget: they run the same
// script on the same key.
func TestPipelinedSharesTheBudgetWithAllow(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBRateLimit)
	small := config.Rate{N: 6, Period: time.Minute}
	rl := config.RateLimits{Recommendations: small, Swipes: small, Batch: small, Default: small}
	plain, piped := ratelimit.New(rdb, rl), ratelimit.NewPipelined(secondClient(t), rl)
	ctx := context.Background()
	student := uuid.NewString()
	start := time.Now()

	for i := 1; i <= 6; i++ {
		var d ratelimit.Decision
		var err error
		if i%2 == 0 {
			d, _, err = piped.AllowFetch(ctx, ratelimit.GroupRecommendations, student, ratelimit.Fetch{Key: "absent"})
		} else {
			d, err = plain.Allow(ctx, ratelimit.GroupRecommendations, student)
		}
		require.NoError(t, err)
		require.True(t, d.Allowed, "request %d", i)
		assert.Equal(t, 6, d.Limit)
		requireRemaining(t, 6-i, d, start, small, "request %d", i)
	}
	d, _, err := piped.AllowFetch(ctx, ratelimit.GroupRecommendations, student, ratelimit.Fetch{Key: "absent"})
	require.NoError(t, err)
	if !d.Allowed { // a very slow run may have regained one
		assert.Greater(t, d.RetryAfter, time.Duration(0))
		assert.Zero(t, d.Remaining)
	}
	d, err = plain.Allow(ctx, ratelimit.GroupRecommendations, student)
	require.NoError(t, err)
	assert.False(t, d.Allowed, "the budget spent through one is spent for the other")

	// The key is redis_rate's, so both limiters see the same state.
	n, err := rdb.Exists(ctx, "rate:"+ratelimit.Key(ratelimit.GroupRecommendations, student)).Result()
	require.NoError(t, err)
	assert.EqualValues(t, 1, n)
}

func TestPipelinedFetchesInTheSameRoundTrip(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBRateLimit)
	piped := ratelimit.NewPipelined(rdb, specLimits(t))
	ctx := context.Background()
	require.NoError(t, rdb.HSet(ctx, "h", "m", "hello").Err())
	require.NoError(t, rdb.Set(ctx, "s", "plain", time.Minute).Err())
	student := uuid.NewString()

	d, got, err := piped.AllowFetch(ctx, ratelimit.GroupRecommendations, student, ratelimit.Fetch{Key: "h", Field: "m"})
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, 59, d.Remaining)
	assert.Equal(t, ratelimit.Fetched{Done: true, Found: true, Value: []byte("hello")}, got)

	_, got, err = piped.AllowFetch(ctx, ratelimit.GroupRecommendations, student, ratelimit.Fetch{Key: "h", Field: "other"})
	require.NoError(t, err)
	assert.Equal(t, ratelimit.Fetched{Done: true}, got, "a missing field is an answer: not found")

	_, got, err = piped.AllowFetch(ctx, ratelimit.GroupRecommendations, student, ratelimit.Fetch{Key: "s"})
	require.NoError(t, err)
	assert.Equal(t, ratelimit.Fetched{Done: true, Found: true, Value: []byte("plain")}, got)

	// Wrong type: the read fails, the count does not.
	d, got, err = piped.AllowFetch(ctx, ratelimit.GroupRecommendations, student, ratelimit.Fetch{Key: "s", Field: "m"})
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.False(t, got.Done)

	_, _, err = piped.AllowFetch(ctx, ratelimit.Group("nope"), student, ratelimit.Fetch{Key: "s"})
	assert.Error(t, err)
}

// After Redis loses its script cache (a restart), the pipeline loads the
// script and counts as before.
func TestPipelinedReloadsAFlushedScript(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBRateLimit)
	piped := ratelimit.NewPipelined(rdb, specLimits(t))
	ctx := context.Background()
	student := uuid.NewString()
	_, _, err := piped.AllowFetch(ctx, ratelimit.GroupSwipes, student, ratelimit.Fetch{Key: "x"})
	require.NoError(t, err)
	require.NoError(t, rdb.ScriptFlush(ctx).Err())
	d, got, err := piped.AllowFetch(ctx, ratelimit.GroupSwipes, student, ratelimit.Fetch{Key: "x"})
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, 298, d.Remaining)
	assert.True(t, got.Done)
}

// An unreachable Redis costs little: one bounded call, then none during the
// cool-down (failing closed, the errors reach the caller; failing open the
// counts are made in memory: TestRedisDownCountsTheAllowancesInMemory).
func TestPipelinedUnreachableRedis(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = rdb.Close() })
	rl := specLimits(t)
	rl.FailClosed = true
	piped := ratelimit.NewPipelined(rdb, rl)
	ctx := context.Background()
	start := time.Now()
	_, got, err := piped.AllowFetch(ctx, ratelimit.GroupRecommendations, uuid.NewString(), ratelimit.Fetch{Key: "x"})
	require.Error(t, err)
	assert.False(t, got.Done)
	_, _, err = piped.AllowFetch(ctx, ratelimit.GroupRecommendations, uuid.NewString(), ratelimit.Fetch{Key: "x"})
	require.ErrorIs(t, err, ratelimit.ErrUnavailable, "Redis is left alone after a failure")
	_, err = piped.Allow(ctx, ratelimit.GroupRecommendations, uuid.NewString())
	require.ErrorIs(t, err, ratelimit.ErrUnavailable, "for plain counts too")
	assert.Less(t, time.Since(start), time.Second)

	open := ratelimit.NewPipelined(rdb, specLimits(t))
	d, got, err := open.AllowFetch(ctx, ratelimit.GroupRecommendations, uuid.NewString(), ratelimit.Fetch{Key: "x"})
	require.NoError(t, err)
	assert.True(t, d.Allowed && d.Local, "failing open: counted in memory")
	assert.False(t, got.Done, "the read did not answer")
}
