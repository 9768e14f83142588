package cache_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/testutil"
)

func TestCooldownsShowAndRead(t *testing.T) {
	ctx := context.Background()
	rdb := testutil.NewRedis(t, testutil.RedisDBCache)
	feeds := cache.NewFeeds(rdb, time.Minute)
	c := cache.NewCooldowns(feeds, 10*time.Second)
	student := uuid.NewString()
	a, b, x := uuid.New(), uuid.New(), uuid.New()
	t0 := time.UnixMilli(time.Now().UnixMilli())

	st, err := c.Read(ctx, student, t0, nil)
	require.NoError(t, err)
	assert.ErrorIs(t, st.FeedErr, cache.ErrNotBuilt, "no feed yet")
	assert.Empty(t, st.Shown)
	assert.Empty(t, st.Swiped)

	require.NoError(t, c.Show(ctx, student, t0, []string{a.String()}))
	require.NoError(t, c.Show(ctx, student, t0.Add(4*time.Second), []string{b.String()}))

	st, err = c.Read(ctx, student, t0.Add(5*time.Second), []string{x.String()})
	require.NoError(t, err)
	assert.Equal(t, map[uuid.UUID]time.Time{a: t0, b: t0.Add(4 * time.Second)}, st.Shown)
	assert.Equal(t, map[uuid.UUID]struct{}{x: {}}, st.Swiped, "the swipes passed to Read are remembered before the read")

	st, err = c.Read(ctx, student, t0.Add(10*time.Second), nil)
	require.NoError(t, err)
	assert.Equal(t, map[uuid.UUID]time.Time{b: t0.Add(4 * time.Second)}, st.Shown,
		"a school shown exactly one cooldown ago is free again")
	assert.Contains(t, st.Swiped, x, "recent swipes outlive the cooldown")

	// A write prunes what no longer cools down and renews the TTL.
	require.NoError(t, c.Show(ctx, student, t0.Add(12*time.Second), []string{a.String()}))
	n, err := rdb.ZCard(ctx, cache.ShownKey(student)).Result()
	require.NoError(t, err)
	assert.EqualValues(t, 2, n)
	require.NoError(t, c.Show(ctx, student, t0.Add(15*time.Second), []string{x.String()}))
	members, err := rdb.ZRange(ctx, cache.ShownKey(student), 0, -1).Result()
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{a.String(), x.String()}, members, "b's cooldown ended: pruned")

	ttl, err := rdb.PTTL(ctx, cache.ShownKey(student)).Result()
	require.NoError(t, err)
	assert.True(t, ttl > 10*time.Second && ttl <= 11*time.Second, "shown set lives a cooldown and a second: %v", ttl)
	ttl, err = rdb.PTTL(ctx, cache.SwipedKey(student)).Result()
	require.NoError(t, err)
	assert.Equal(t, 2*time.Minute, c.SwipedTTL(), "FEED_CACHE_TTL and a minute")
	assert.True(t, ttl > time.Minute && ttl <= 2*time.Minute, "recent swipes have a TTL: %v", ttl)

	// Keys are per student, with the student's hash tag.
	assert.Equal(t, "rm:v2:{student:"+student+"}:shown", cache.ShownKey(student))
	assert.Equal(t, "rm:v2:{student:"+student+"}:swiped", cache.SwipedKey(student))
	other, err := c.Read(ctx, uuid.NewString(), t0.Add(13*time.Second), nil)
	require.NoError(t, err)
	assert.Empty(t, other.Shown)
	assert.Empty(t, other.Swiped)
}

func TestCooldownsReadTheStoredFeed(t *testing.T) {
	ctx := context.Background()
	rdb := testutil.NewRedis(t, testutil.RedisDBCache)
	feeds := cache.NewFeeds(rdb, time.Minute)
	c := cache.NewCooldowns(feeds, time.Minute)
	f := sampleFeed(uuid.NewString(), 3, 42, 50)
	_, err := feeds.Put(ctx, f)
	require.NoError(t, err)

	st, err := c.Read(ctx, f.StudentID, time.Now(), nil)
	require.NoError(t, err)
	require.NoError(t, st.FeedErr)
	want, err := feeds.Feed(ctx, f.StudentID)
	require.NoError(t, err)
	assert.Equal(t, want, st.Feed, "the same feed Feeds.Feed reads")

	require.NoError(t, feeds.Invalidate(ctx, f.StudentID, f.StudentVersion+1))
	st, err = c.Read(ctx, f.StudentID, time.Now(), nil)
	require.NoError(t, err)
	assert.ErrorIs(t, st.FeedErr, cache.ErrNotBuilt, "a tombstone is no feed")
}

func TestCooldownsAreCapped(t *testing.T) {
	ctx := context.Background()
	rdb := testutil.NewRedis(t, testutil.RedisDBCache)
	c := cache.NewCooldowns(cache.NewFeeds(rdb, time.Minute), time.Hour)
	student := uuid.NewString()
	now := time.Now()
	ids := make([]string, 0, 1000)
	for i := range cache.MaxShown + 1000 {
		ids = append(ids, fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
		if len(ids) == cap(ids) {
			require.NoError(t, c.Show(ctx, student, now.Add(time.Duration(i)*time.Millisecond), ids))
			require.NoError(t, c.RememberSwiped(ctx, student, now.Add(time.Duration(i)*time.Millisecond), ids...))
			ids = ids[:0]
		}
	}
	n, err := rdb.ZCard(ctx, cache.ShownKey(student)).Result()
	require.NoError(t, err)
	assert.EqualValues(t, cache.MaxShown, n)
	n, err = rdb.ZCard(ctx, cache.SwipedKey(student)).Result()
	require.NoError(t, err)
	assert.EqualValues(t, cache.MaxRecentSwipes, n)
	st, err := c.Read(ctx, student, now.Add(11*time.Second), nil)
	require.NoError(t, err)
	_, oldest := st.Shown[uuid.MustParse("00000000-0000-4000-8000-000000000000")]
	_, newest := st.Shown[uuid.MustParse(fmt.Sprintf("00000000-0000-4000-8000-%012d", cache.MaxShown+999))]
	assert.False(t, oldest, "the oldest go first")
	assert.True(t, newest)
}

func TestCooldownsWithoutRedis(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	c := cache.NewCooldowns(cache.NewFeeds(rdb, time.Minute), time.Minute)
	_, err := c.Read(context.Background(), uuid.NewString(), time.Now(), []string{uuid.NewString()})
	require.Error(t, err)
	start := time.Now()
	err = c.Show(context.Background(), uuid.NewString(), time.Now(), []string{uuid.NewString()})
	require.ErrorIs(t, err, cache.ErrUnavailable, "after a failure Redis is left alone for a while")
	assert.Less(t, time.Since(start), 50*time.Millisecond)
}
