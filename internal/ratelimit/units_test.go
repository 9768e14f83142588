package ratelimit_test

import (
	"sync"
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

// tenPerMinute gives every group 10 a minute: one unit back every 6 s, so a
// test that runs for less than that sees no unit come back.
func tenPerMinute() config.RateLimits {
	r := config.Rate{N: 10, Period: time.Minute}
	return config.RateLimits{Recommendations: r, Swipes: r, Batch: r, Default: r}
}

func TestAllowNIsAllOrNothing(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBRateLimit)
	l := ratelimit.New(rdb, tenPerMinute())
	student := uuid.NewString()
	ctx := t.Context()

	d, err := l.AllowN(ctx, ratelimit.GroupSwipes, student, 7)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, 7, d.Granted)
	assert.Equal(t, 3, d.Remaining)
	assert.Equal(t, 10, d.Limit)

	d, err = l.AllowN(ctx, ratelimit.GroupSwipes, student, 4)
	require.NoError(t, err)
	assert.False(t, d.Allowed, "4 do not fit in the 3 left")
	assert.Zero(t, d.Granted)
	assert.Equal(t, 3, d.Remaining)
	assert.InDelta(t, 6*time.Second, d.RetryAfter, float64(500*time.Millisecond), "one more unit is back in 6 s")

	// Nothing was spent: the 3 left are still there, for Allow too.
	d, err = l.AllowN(ctx, ratelimit.GroupSwipes, student, 2)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, 1, d.Remaining)
	require.True(t, allow(t, l, ratelimit.GroupSwipes, student).Allowed)
	require.False(t, allow(t, l, ratelimit.GroupSwipes, student).Allowed)

	// More than the whole allowance never fits: nothing is spent.
	other := uuid.NewString()
	d, err = l.AllowN(ctx, ratelimit.GroupSwipes, other, 11)
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.Zero(t, d.Granted)
	assert.Positive(t, d.RetryAfter)
	d, err = l.AllowN(ctx, ratelimit.GroupSwipes, other, 10)
	require.NoError(t, err)
	assert.True(t, d.Allowed, "the refused 11 spent nothing")

	// Zero units count nothing and need no Redis.
	d, err = l.AllowN(ctx, ratelimit.GroupSwipes, student, 0)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
}

func TestAllowAtMostGrantsWhatIsLeft(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBRateLimit)
	l := ratelimit.New(rdb, tenPerMinute())
	student := uuid.NewString()
	ctx := t.Context()

	require.True(t, allow(t, l, ratelimit.GroupSwipes, student).Allowed) // 9 left
	d, err := l.AllowAtMost(ctx, ratelimit.GroupSwipes, student, 4)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, 4, d.Granted)
	assert.Equal(t, 5, d.Remaining)

	d, err = l.AllowAtMost(ctx, ratelimit.GroupSwipes, student, 8)
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.Equal(t, 5, d.Granted, "the 5 left")
	assert.Zero(t, d.Remaining)
	// The 3 not granted are back after 3 intervals of 6 s.
	assert.InDelta(t, 18*time.Second, d.RetryAfter, float64(time.Second))

	d, err = l.AllowAtMost(ctx, ratelimit.GroupSwipes, student, 3)
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.Zero(t, d.Granted)
	assert.InDelta(t, 18*time.Second, d.RetryAfter, float64(time.Second))
	require.False(t, allow(t, l, ratelimit.GroupSwipes, student).Allowed)

	// More than the allowance: at most the whole allowance's wait.
	d, err = l.AllowAtMost(ctx, ratelimit.GroupSwipes, student, 500)
	require.NoError(t, err)
	assert.Zero(t, d.Granted)
	assert.InDelta(t, time.Minute, d.RetryAfter, float64(time.Second))
}

// Concurrent callers of every kind never spend more than the allowance.
func TestUnitsUnderConcurrency(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBRateLimit)
	limits := tenPerMinute()
	limits.Swipes = config.Rate{N: 100, Period: time.Minute}
	l := ratelimit.New(rdb, limits)
	student := uuid.NewString()
	var (
		mu    sync.Mutex
		spent int
		wg    sync.WaitGroup
	)
	add := func(n int) {
		mu.Lock()
		spent += n
		mu.Unlock()
	}
	for g := range 12 {
		wg.Go(func() {
			for range 10 {
				switch g % 3 {
				case 0:
					d, err := l.Allow(t.Context(), ratelimit.GroupSwipes, student)
					if err != nil {
						t.Error(err)
						return
					}
					if d.Allowed {
						add(1)
					}
				case 1:
					d, err := l.AllowN(t.Context(), ratelimit.GroupSwipes, student, 3)
					if err != nil {
						t.Error(err)
						return
					}
					add(d.Granted)
				default:
					d, err := l.AllowAtMost(t.Context(), ratelimit.GroupSwipes, student, 5)
					if err != nil {
						t.Error(err)
						return
					}
					add(d.Granted)
				}
			}
		})
	}
	wg.Wait()
	// 360 units asked for in well under the 0.6 s a unit takes to come back.
	assert.LessOrEqual(t, spent, 101)
	assert.GreaterOrEqual(t, spent, 98, "the allowance is spent, not lost (AllowAtMost rounds a partial unit down)")
}

// Failing closed, units Redis cannot count are an error, cheap after the
// first (in memory otherwise: TestRedisDownCountsTheAllowancesInMemory).
func TestUnitsWithRedisDown(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = rdb.Close() })
	rl := tenPerMinute()
	rl.FailClosed = true
	l := ratelimit.New(rdb, rl)
	start := time.Now()
	_, err := l.AllowN(t.Context(), ratelimit.GroupSwipes, uuid.NewString(), 3)
	require.Error(t, err)
	_, err = l.AllowAtMost(t.Context(), ratelimit.GroupSwipes, uuid.NewString(), 3)
	require.ErrorIs(t, err, ratelimit.ErrUnavailable, "the breaker is open after the failure")
	assert.Less(t, time.Since(start), ratelimit.CallTimeout+200*time.Millisecond)
}

// The comment budget is a group of its own, a unit per byte, sized by
// FEEDBACK_COMMENT_BYTES_PER_MIN (64 KiB when unset), and its key is among
// the student's keys that erasure drops.
func TestCommentBytesGroup(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBRateLimit)
	rl := tenPerMinute()
	rl.CommentBytes = 2500
	l := ratelimit.New(rdb, rl)
	student := uuid.NewString()
	d, err := l.AllowAtMost(t.Context(), ratelimit.GroupCommentBytes, student, 3000)
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.Equal(t, 2500, d.Granted)
	assert.Equal(t, 2500, d.Limit)
	assert.Positive(t, d.RetryAfter)
	d, err = l.AllowN(t.Context(), ratelimit.GroupSwipes, student, 10)
	require.NoError(t, err)
	assert.True(t, d.Allowed, "the swipes allowance is counted apart")

	d, err = ratelimit.New(rdb, tenPerMinute()).AllowN(t.Context(), ratelimit.GroupCommentBytes, uuid.NewString(), 64<<10)
	require.NoError(t, err)
	assert.True(t, d.Allowed, "64 KiB by default")
	assert.Contains(t, ratelimit.StudentKeys(student), "rate:"+ratelimit.Key(ratelimit.GroupCommentBytes, student))
}
