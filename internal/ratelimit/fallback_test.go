package ratelimit_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/ratelimit"
	"github.com/collegematch/matching/internal/testutil"
)

// downRedis is a client of a Redis that is not there: nothing listens on
// the port, and the client does not retry.
func downRedis(t *testing.T) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// syncBuffer is a log destination tests read while the limiter writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// While Redis cannot count, limits do not vanish: each group's allowance is
// counted in the replica's memory at the same rate, per student, for
// requests (Allow, AllowFetch) and units (AllowN, AllowAtMost) alike, and
// the limiter says so once in its log.
func TestRedisDownCountsTheAllowancesInMemory(t *testing.T) {
	rl := tenPerMinute()
	rl.CommentBytes = 100
	l := ratelimit.NewPipelined(downRedis(t), rl)
	var logs syncBuffer
	l.SetLog(slog.New(slog.NewTextHandler(&logs, nil)))
	ctx := t.Context()
	student, other := uuid.NewString(), uuid.NewString()

	for i := range 10 {
		d, err := l.Allow(ctx, ratelimit.GroupRecommendations, student)
		require.NoError(t, err, "request %d: counted in memory, not an error", i)
		require.True(t, d.Allowed, "request %d is within the allowance", i)
		assert.True(t, d.Local)
		assert.Equal(t, 9-i, d.Remaining)
		assert.Equal(t, 10, d.Limit)
	}
	d, _, err := l.AllowFetch(ctx, ratelimit.GroupRecommendations, student, ratelimit.Fetch{Key: "k"})
	require.NoError(t, err)
	assert.False(t, d.Allowed, "the pipelined count shares the budget")
	assert.True(t, d.Local)
	assert.InDelta(t, 6*time.Second, d.RetryAfter, float64(200*time.Millisecond), "one request back every 6 s")
	d, err = l.Allow(ctx, ratelimit.GroupRecommendations, strings.ToUpper(student))
	require.NoError(t, err)
	assert.False(t, d.Allowed, "every spelling of the id counts against one budget")

	d, err = l.Allow(ctx, ratelimit.GroupRecommendations, other)
	require.NoError(t, err)
	assert.True(t, d.Allowed, "another student has an allowance of their own")
	d, err = l.Allow(ctx, ratelimit.GroupBatch, student)
	require.NoError(t, err)
	assert.True(t, d.Allowed, "and so has another group")

	// Units: a push's changes and carried swipes, all or none or as many
	// as are left; comment bytes likewise.
	d, err = l.AllowN(ctx, ratelimit.GroupSwipes, student, 7)
	require.NoError(t, err)
	assert.True(t, d.Allowed && d.Local)
	d, err = l.AllowN(ctx, ratelimit.GroupSwipes, student, 4)
	require.NoError(t, err)
	assert.False(t, d.Allowed, "4 do not fit in the 3 left")
	assert.Zero(t, d.Granted)
	d, err = l.AllowAtMost(ctx, ratelimit.GroupSwipes, student, 500)
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.Equal(t, 3, d.Granted, "the 3 left, no more")
	assert.True(t, d.Local)
	d, err = l.AllowAtMost(ctx, ratelimit.GroupSwipes, student, 500)
	require.NoError(t, err)
	assert.Zero(t, d.Granted, "nothing left")
	assert.Positive(t, d.RetryAfter)
	d, err = l.AllowN(ctx, ratelimit.GroupCommentBytes, student, 80)
	require.NoError(t, err)
	assert.True(t, d.Allowed && d.Local)
	d, err = l.AllowN(ctx, ratelimit.GroupCommentBytes, student, 30)
	require.NoError(t, err)
	assert.False(t, d.Allowed, "30 bytes more than the 100 a minute")

	assert.Equal(t, 1, strings.Count(logs.String(), "rate limiter cannot reach Redis"), "logged once: %s", logs.String())
}

// Counted in memory, the decisions are the ones Redis gives for the same
// calls: the same GCRA, the same limits.
func TestMemoryCountsAsRedisDoes(t *testing.T) {
	rl := tenPerMinute()
	rl.CommentBytes = 1000
	inRedis := ratelimit.New(testutil.NewRedis(t, testutil.RedisDBRateLimit), rl)
	inMemory := ratelimit.New(downRedis(t), rl)
	type call struct {
		group  ratelimit.Group
		n      int
		atMost bool
	}
	calls := []call{
		{ratelimit.GroupSwipes, 1, false}, {ratelimit.GroupSwipes, 4, false}, {ratelimit.GroupSwipes, 6, false},
		{ratelimit.GroupSwipes, 3, true}, {ratelimit.GroupSwipes, 5, true}, {ratelimit.GroupSwipes, 1, false},
		{ratelimit.GroupSwipes, 11, false}, {ratelimit.GroupDefault, 11, false}, {ratelimit.GroupDefault, 10, false},
		{ratelimit.GroupDefault, 1, true}, {ratelimit.GroupCommentBytes, 999, false}, {ratelimit.GroupCommentBytes, 5, true},
		{ratelimit.GroupCommentBytes, 1, false},
	}
	student := uuid.NewString()
	for i, c := range calls {
		var want, got ratelimit.Decision
		var errR, errM error
		if c.atMost {
			want, errR = inRedis.AllowAtMost(t.Context(), c.group, student, c.n)
			got, errM = inMemory.AllowAtMost(t.Context(), c.group, student, c.n)
		} else {
			want, errR = inRedis.AllowN(t.Context(), c.group, student, c.n)
			got, errM = inMemory.AllowN(t.Context(), c.group, student, c.n)
		}
		require.NoError(t, errR)
		require.NoError(t, errM)
		assert.False(t, want.Local)
		assert.True(t, got.Local)
		assert.Equal(t, want.Allowed, got.Allowed, "call %d %+v", i, c)
		assert.Equal(t, want.Granted, got.Granted, "call %d %+v", i, c)
		assert.Equal(t, want.Remaining, got.Remaining, "call %d %+v", i, c)
		assert.InDelta(t, want.RetryAfter, got.RetryAfter, float64(time.Second), "call %d %+v", i, c)
	}
}

// RATE_LIMIT_FAIL_CLOSED: nothing is counted in memory; the caller gets the
// error (and refuses), at once during the cool-down after a failure.
func TestRedisDownFailingClosed(t *testing.T) {
	rl := specLimits(t)
	rl.FailClosed = true
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // the client's default retries
	t.Cleanup(func() { _ = rdb.Close() })
	l := ratelimit.NewPipelined(rdb, rl)

	start := time.Now()
	_, err := l.Allow(t.Context(), ratelimit.GroupRecommendations, uuid.NewString())
	require.Error(t, err)
	require.Less(t, time.Since(start), ratelimit.CallTimeout+200*time.Millisecond, "one call is bounded")

	start = time.Now()
	for range 100 {
		_, err = l.Allow(t.Context(), ratelimit.GroupSwipes, uuid.NewString())
		require.ErrorIs(t, err, ratelimit.ErrUnavailable)
	}
	require.Less(t, time.Since(start), 50*time.Millisecond, "calls after a failure do not wait on Redis")
	_, err = l.AllowN(t.Context(), ratelimit.GroupSwipes, uuid.NewString(), 3)
	require.ErrorIs(t, err, ratelimit.ErrUnavailable)
	_, err = l.AllowAtMost(t.Context(), ratelimit.GroupCommentBytes, uuid.NewString(), 3)
	require.ErrorIs(t, err, ratelimit.ErrUnavailable)
	_, _, err = l.AllowFetch(t.Context(), ratelimit.GroupRecommendations, uuid.NewString(), ratelimit.Fetch{})
	require.ErrorIs(t, err, ratelimit.ErrUnavailable)
}

// A caller whose context has ended (a client that went away) gets its
// context's error, not a count in memory: Redis is not to blame.
func TestGoneCallerTakesNoFallback(t *testing.T) {
	l := ratelimit.NewPipelined(downRedis(t), tenPerMinute())
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := l.Allow(ctx, ratelimit.GroupRecommendations, uuid.NewString())
	require.ErrorIs(t, err, context.Canceled)
	_, err = l.AllowN(ctx, ratelimit.GroupSwipes, uuid.NewString(), 2)
	require.ErrorIs(t, err, context.Canceled)
	_, _, err = l.AllowFetch(ctx, ratelimit.GroupRecommendations, uuid.NewString(), ratelimit.Fetch{})
	require.Error(t, err)
}
