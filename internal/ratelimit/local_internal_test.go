package ratelimit

import (
	"strconv"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The in-memory allowance refills at the group's rate: one unit every
// period/N after the burst is spent, the whole burst after a period.
func TestLocalRefillsAtTheRate(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	l := newLocal(func() time.Time { return now })
	lim := redis_rate.Limit{Rate: 300, Burst: 300, Period: time.Minute}
	res := l.take("k", lim, 300, false)
	require.Equal(t, 300, res.Allowed)
	res = l.take("k", lim, 1, false)
	require.Zero(t, res.Allowed)
	assert.Equal(t, 200*time.Millisecond, res.RetryAfter)
	now = now.Add(200 * time.Millisecond)
	require.Equal(t, 1, l.take("k", lim, 1, false).Allowed, "one unit back every 200 ms")
	require.Zero(t, l.take("k", lim, 1, false).Allowed)
	now = now.Add(time.Second)
	res = l.take("k", lim, 500, true)
	assert.Equal(t, 5, res.Allowed, "as many as are back")
	now = now.Add(time.Minute)
	assert.Equal(t, 300, l.take("k", lim, 300, false).Allowed, "the whole allowance after a period")

	// Over a minute of steady pressure a student gets the burst plus the
	// refill, as from Redis: twice the allowance at most.
	now = now.Add(time.Minute)
	got := 0
	for range 600 {
		got += l.take("flood", lim, 500, true).Allowed
		now = now.Add(100 * time.Millisecond)
	}
	assert.InDelta(t, 600, got, 1)
}

// However many students are seen, the table holds a bounded number of
// states; states whose allowance is full again go first.
func TestLocalMemoryIsBounded(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	l := newLocal(func() time.Time { return now })
	lim := redis_rate.Limit{Rate: 60, Burst: 60, Period: time.Minute}
	for i := range 300_000 {
		l.take("student-"+strconv.Itoa(i), lim, 1, false)
	}
	assert.LessOrEqual(t, l.size(), localShards*localShardCap)
	assert.Greater(t, l.size(), localShards*localShardCap/2)

	// A student spends the allowance; 30 s later the flood's states are
	// full again and make room before a live state does, and a second
	// flood's states (1 s from full each) go before one 30 s from it.
	now = now.Add(2 * time.Second)
	require.Equal(t, 60, l.take("busy", lim, 60, false).Allowed)
	now = now.Add(30 * time.Second)
	for i := range 300_000 {
		l.take("next-"+strconv.Itoa(i), lim, 1, false)
	}
	assert.Zero(t, l.take("busy", lim, 31, false).Allowed, "a live state survives a flood of others: 30 back, not 60")
	assert.Equal(t, 30, l.take("busy", lim, 30, false).Allowed)
	assert.LessOrEqual(t, l.size(), localShards*localShardCap)
}
