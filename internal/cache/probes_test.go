package cache_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/testutil"
)

func TestProbesRememberedForTheTTL(t *testing.T) {
	ctx := context.Background()
	rdb := testutil.NewRedis(t, testutil.RedisDBCache)
	p := cache.NewProbes(rdb, time.Minute)
	student, school, other := uuid.NewString(), uuid.NewString(), uuid.NewString()

	was, err := p.WasProbe(ctx, student, school)
	require.NoError(t, err)
	assert.False(t, was)

	require.NoError(t, p.Remember(ctx, student, school))
	was, err = p.WasProbe(ctx, student, school)
	require.NoError(t, err)
	assert.True(t, was)
	was, err = p.WasProbe(ctx, student, other)
	require.NoError(t, err)
	assert.False(t, was, "only what was served")
	was, err = p.WasProbe(ctx, uuid.NewString(), school)
	require.NoError(t, err)
	assert.False(t, was, "per student")

	ttl, err := rdb.PTTL(ctx, cache.ProbesKey(student)).Result()
	require.NoError(t, err)
	assert.True(t, ttl > 0 && ttl <= 2*time.Minute, "key has a TTL: %v", ttl)
}

func TestProbesExpireAndAreCapped(t *testing.T) {
	ctx := context.Background()
	rdb := testutil.NewRedis(t, testutil.RedisDBCache)
	p := cache.NewProbes(rdb, 300*time.Millisecond)
	student, school := uuid.NewString(), uuid.NewString()
	require.NoError(t, p.Remember(ctx, student, school))
	time.Sleep(400 * time.Millisecond)
	was, err := p.WasProbe(ctx, student, school)
	require.NoError(t, err)
	assert.False(t, was)

	long := cache.NewProbes(rdb, time.Hour)
	ids := make([]string, 300)
	for i := range ids {
		ids[i] = uuid.NewString()
	}
	require.NoError(t, long.Remember(ctx, student, ids...))
	n, err := rdb.ZCard(ctx, cache.ProbesKey(student)).Result()
	require.NoError(t, err)
	assert.EqualValues(t, 256, n, "capped")
}

// A stored feed's probes are remembered until it expires: they are still
// probes a TTL after that, and no longer after it.
func TestProbesRememberedUntilTheFeedExpires(t *testing.T) {
	ctx := context.Background()
	rdb := testutil.NewRedis(t, testutil.RedisDBCache)
	ttl := 300 * time.Millisecond
	p := cache.NewProbes(rdb, ttl)
	student, school := uuid.NewString(), uuid.NewString()
	require.NoError(t, p.RememberUntil(ctx, student, time.Now().Add(ttl), school))
	time.Sleep(ttl + 100*time.Millisecond)
	was, err := p.WasProbe(ctx, student, school)
	require.NoError(t, err)
	assert.True(t, was, "served until the feed expired, a TTL ago at most")
	time.Sleep(ttl + 50*time.Millisecond)
	was, err = p.WasProbe(ctx, student, school)
	require.NoError(t, err)
	assert.False(t, was)

	// A school served again now does not cut short what was remembered
	// until later.
	require.NoError(t, p.RememberUntil(ctx, student, time.Now().Add(ttl), school))
	before, err := rdb.ZScore(ctx, cache.ProbesKey(student), school).Result()
	require.NoError(t, err)
	require.NoError(t, p.Remember(ctx, student, school))
	after, err := rdb.ZScore(ctx, cache.ProbesKey(student), school).Result()
	require.NoError(t, err)
	assert.Equal(t, before, after)

	// until is never more than a TTL ahead.
	require.NoError(t, p.RememberUntil(ctx, student, time.Now().Add(time.Hour), school))
	pttl, err := rdb.PTTL(ctx, cache.ProbesKey(student)).Result()
	require.NoError(t, err)
	assert.LessOrEqual(t, pttl, 2*ttl)
}
