package cache_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/testutil"
)

// feedWithPage is a stored feed of n items whose compact page holds the
// first m of them.
func feedWithPage(student string, n, m int) cache.Feed {
	f := sampleFeed(student, 10, 1, n)
	f.Model = []byte(`{"model":1}`)
	f.Compact = cache.NewCompact(compactItems(f, m))
	return f
}

// compactItems are the compact page's items of f's first m items.
func compactItems(f cache.Feed, m int) [][]byte {
	var items [][]byte
	for i := range min(m, len(f.Items)) {
		b, _ := json.Marshal(map[string]any{"i": f.Items[i].SchoolID.String(), "n": fmt.Sprintf("School %d", i), "s": 90 - i})
		items = append(items, b)
	}
	return items
}

func compactPage(t *testing.T, feeds *cache.Feeds, student string) cache.StoredCompact {
	t.Helper()
	c, err := feeds.ReadCompact(context.Background(), student, nil)
	require.NoError(t, err)
	return c
}

// After a swipe the stored feed is patched, not dropped: the count and
// version move, the swiped school leaves the items and the compact page
// (whose ETag changes with it), and the learn task is queued, in one round
// trip. The next read is a cache hit.
func TestAfterWritePatchesTheStoredFeed(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBCache)
	feeds := cache.NewFeeds(rdb, ttl)
	trips := cache.NewSwipeTrips(feeds, handover.NewQueuer())
	ctx := context.Background()
	student := uuid.NewString()
	f := feedWithPage(student, 50, 20)
	ok, err := feeds.Put(ctx, f)
	require.NoError(t, err)
	require.True(t, ok)
	before := compactPage(t, feeds, student)
	require.Equal(t, f.Compact.ETag, before.ETag)

	// The client swiped its first two items (in any order).
	first, second := f.Items[0].SchoolID.String(), f.Items[1].SchoolID.String()
	job := handover.Job{ID: "learn:x", Type: "student:learn", Queue: "critical"}
	patch := func(p cache.FeedPatch, jobs ...handover.Job) cache.PatchResult {
		t.Helper()
		r, err := trips.AfterWrite(ctx, p, jobs...)
		require.NoError(t, err)
		return r
	}
	assert.Equal(t, cache.PatchPatched, patch(cache.FeedPatch{StudentID: student, Version: 11, SwipeCount: 19,
		Swiped: []string{second, first}}, job))

	got, err := feeds.Feed(ctx, student)
	require.NoError(t, err)
	assert.Equal(t, int64(11), got.StudentVersion)
	assert.Equal(t, 19, got.TotalSwipes)
	assert.Equal(t, f.TotalCount-2, got.TotalCount)
	assert.Equal(t, f.LearnedVersion, got.LearnedVersion, "the learned state covers what it covered")
	require.Equal(t, 48, got.Len())
	assert.Equal(t, f.Items[2:], got.Range(0, 48), "every later item moved up two places, as the count moved two")
	after := compactPage(t, feeds, student)
	assert.NotEqual(t, before.ETag, after.ETag)
	assert.Equal(t, cache.ETag(after.Body), after.ETag, "the patch's ETag is the one a build gives the same body")
	var page struct {
		R []struct {
			I string `json:"i"`
		} `json:"r"`
	}
	require.NoError(t, json.Unmarshal(after.Body, &page))
	require.Len(t, page.R, 18)
	assert.Equal(t, f.Items[2].SchoolID.String(), page.R[0].I)

	info, err := asynq.NewInspectorFromRedisClient(rdb).GetTaskInfo("critical", "learn:x")
	require.NoError(t, err)
	assert.Equal(t, "student:learn", info.Type)

	// A patch of an older version, and one of a student without a feed,
	// change nothing.
	assert.Equal(t, cache.PatchStale, patch(cache.FeedPatch{StudentID: student, Version: 11, SwipeCount: 99,
		Swiped: []string{f.Items[2].SchoolID.String()}}))
	got, err = feeds.Feed(ctx, student)
	require.NoError(t, err)
	assert.Equal(t, 19, got.TotalSwipes)
	assert.Equal(t, 48, got.Len())
	other := uuid.NewString()
	assert.Equal(t, cache.PatchNone, patch(cache.FeedPatch{StudentID: other, Version: 3, SwipeCount: 1}))
	n, err := rdb.Exists(ctx, cache.FeedKey(other)).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "no feed is made up by a patch")

	// A weak signal moves the version only.
	assert.Equal(t, cache.PatchPatched, patch(cache.FeedPatch{StudentID: student, Version: 12, SwipeCount: 19}))
	got, err = feeds.Feed(ctx, student)
	require.NoError(t, err)
	assert.Equal(t, int64(12), got.StudentVersion)
	assert.Equal(t, 48, got.Len())

	// A swipe on a school further down (or one no longer listed) would
	// leave the probes in the wrong places: the feed is dropped for a
	// tombstone, and a build from before the swipe cannot come back.
	assert.Equal(t, cache.PatchDropped, patch(cache.FeedPatch{StudentID: student, Version: 13, SwipeCount: 20,
		Swiped: []string{f.Items[10].SchoolID.String()}}))
	_, err = feeds.Feed(ctx, student)
	require.ErrorIs(t, err, cache.ErrNotBuilt)
	_, err = feeds.Header(ctx, student)
	require.ErrorIs(t, err, cache.ErrNotBuilt)
	_, found, err := feeds.LearnedVersion(ctx, student)
	require.NoError(t, err)
	assert.False(t, found)
	// The tombstone keeps the profile and the model: the next swipe is
	// still predicted from Redis.
	v, err := trips.BeforeSwipe(ctx, student, f.Items[11].SchoolID.String())
	require.NoError(t, err)
	assert.True(t, v.Found)
	assert.Equal(t, f.Profile, v.Profile)
	assert.Equal(t, f.Model, v.Model)
	assert.Equal(t, []string{""}, v.Slots, "but no items")
	stale := feedWithPage(student, 5, 2)
	stale.StudentVersion = 12
	ok, err = feeds.Put(ctx, stale)
	require.NoError(t, err)
	assert.False(t, ok)

	// The next writes find the tombstone: it takes their version, whether
	// they swiped or not, and an older write leaves it alone.
	assert.Equal(t, cache.PatchTombstone, patch(cache.FeedPatch{StudentID: student, Version: 14, SwipeCount: 21,
		Swiped: []string{f.Items[11].SchoolID.String()}}))
	assert.Equal(t, cache.PatchTombstone, patch(cache.FeedPatch{StudentID: student, Version: 15, SwipeCount: 21}))
	assert.Equal(t, cache.PatchStale, patch(cache.FeedPatch{StudentID: student, Version: 15, SwipeCount: 21}))
	stale.StudentVersion = 14
	ok, err = feeds.Put(ctx, stale)
	require.NoError(t, err)
	assert.False(t, ok, "a build from before the last write is still refused")
	v, err = trips.BeforeSwipe(ctx, student, f.Items[12].SchoolID.String())
	require.NoError(t, err)
	assert.Equal(t, f.Model, v.Model, "the tombstone still keeps the model")
}

// Before a swipe one round trip reads the stored feed's profile and model,
// each school's slot in it and the probe memory.
func TestBeforeSwipeReadsTheModelSlotsAndProbes(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBCache)
	feeds := cache.NewFeeds(rdb, ttl)
	trips := cache.NewSwipeTrips(feeds, handover.NewQueuer())
	ctx := context.Background()
	student := uuid.NewString()

	v, err := trips.BeforeSwipe(ctx, student, uuid.NewString())
	require.NoError(t, err)
	assert.False(t, v.Found, "no feed stored")
	assert.Equal(t, []string{""}, v.Slots)

	f := feedWithPage(student, 12, 5)
	_, err = feeds.Put(ctx, f)
	require.NoError(t, err)
	probe, explore, ranked := f.Items[3].SchoolID.String(), f.Items[1].SchoolID.String(), f.Items[0].SchoolID.String()
	require.NoError(t, cache.NewProbes(rdb, ttl).Remember(ctx, student, probe))
	absent := uuid.NewString()
	v, err = trips.BeforeSwipe(ctx, student, probe, explore, ranked, absent)
	require.NoError(t, err)
	assert.True(t, v.Found)
	assert.Equal(t, f.Profile, v.Profile)
	assert.Equal(t, f.Model, v.Model)
	assert.Equal(t, []string{cache.SlotProbe, cache.SlotExploration, cache.SlotRanked, ""}, v.Slots)
	assert.Equal(t, []bool{true, false, false, false}, v.WasProbe)
}

// A swipe's patch writes only the small fields: the items, the compact
// page and the described items stay as built, byte for byte, and every
// read skips the schools taken off the top. Swipe after swipe, the page
// read is the page of the items left, with that page's ETag (made with
// the page for the first swipes, hashed by the read after them), and the
// feed's items are the ones left.
func TestPatchesLeaveThePagesAsBuilt(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBCache)
	feeds := cache.NewFeeds(rdb, ttl)
	trips := cache.NewSwipeTrips(feeds, handover.NewQueuer())
	ctx := context.Background()
	student := uuid.NewString()
	f := feedWithPage(student, 30, 20)
	f.Described = []cache.Described{cache.NewDescribed(f.Items[0].SchoolID.String(), false, []byte(`{"a":0}`)),
		cache.NewDescribed(f.Items[1].SchoolID.String(), true, []byte(`{"a":1}`))}
	_, err := feeds.Put(ctx, f)
	require.NoError(t, err)
	key := cache.FeedKey(student)
	asBuilt, err := rdb.HMGet(ctx, key, "ib", cache.FieldCompact, "j:0", "j:1", "h", "l").Result()
	require.NoError(t, err)

	for k := 1; k <= cache.PatchedETags+2; k++ {
		swiped := f.Items[k-1].SchoolID.String()
		requirePatched(t)(trips.AfterWrite(ctx, cache.FeedPatch{StudentID: student, Version: int64(10 + k),
			SwipeCount: 17 + k, Swiped: []string{swiped}}))
		now, err := rdb.HMGet(ctx, key, "ib", cache.FieldCompact, "j:0", "j:1", "h", "l").Result()
		require.NoError(t, err)
		assert.Equal(t, asBuilt, now, "after %d swipes the pages are as built", k)

		left := cache.NewCompact(compactItems(f, 20)[k:])
		page := compactPage(t, feeds, student)
		assert.Equal(t, string(left.Body), string(page.Body), "after %d swipes", k)
		assert.Equal(t, left.ETag, page.ETag, "after %d swipes", k)
		got, err := feeds.Feed(ctx, student)
		require.NoError(t, err)
		assert.Equal(t, f.Items[k:], got.Range(0, 30), "after %d swipes", k)
		assert.Equal(t, f.TotalCount-k, got.TotalCount)
		assert.Len(t, got.Removed, k)

		v, err := trips.BeforeSwipe(ctx, student, swiped, f.Items[k].SchoolID.String())
		require.NoError(t, err)
		assert.Equal(t, "", v.Slots[0], "a school taken off is no longer listed")
		assert.NotEmpty(t, v.Slots[1], "the next one is")
	}
}

// A feed of the layout whose patch cut the items and the page in place
// ("i", "m", "mi") is neither read nor patched as this one: its reads find
// nothing (the reader builds the feed), and a swipe drops it for a
// tombstone.
func TestAFeedOfTheEarlierLayoutIsNotReadAsThisOne(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBCache)
	feeds := cache.NewFeeds(rdb, ttl)
	trips := cache.NewSwipeTrips(feeds, handover.NewQueuer())
	ctx := context.Background()
	student := uuid.NewString()
	f := feedWithPage(student, 10, 5)
	_, err := feeds.Put(ctx, f)
	require.NoError(t, err)
	key := cache.FeedKey(student)
	fields, err := rdb.HGetAll(ctx, key).Result()
	require.NoError(t, err)
	require.NoError(t, rdb.HDel(ctx, key, "ib", cache.FieldCompact).Err())
	require.NoError(t, rdb.HSet(ctx, key, "i", fields["ib"], "m", "10 1.0.0 \"e\"\n{\"r\":[]}", "mi", "{}").Err())

	_, err = feeds.Feed(ctx, student)
	require.ErrorIs(t, err, cache.ErrNotBuilt)
	_, err = feeds.ReadCompact(ctx, student, nil)
	require.ErrorIs(t, err, cache.ErrNotBuilt)
	requirePatched(t)(trips.AfterWrite(ctx, cache.FeedPatch{StudentID: student, Version: 11, SwipeCount: 18,
		Swiped: []string{f.Items[0].SchoolID.String()}}))
	left, err := rdb.HKeys(ctx, key).Result()
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"sv", "lv", "cv", "h", "l"}, left, "a tombstone that keeps the prediction's header and model")
}

// BenchmarkReadBeforeSwipe is the read a swipe is predicted from, on a
// stored feed of 200 items with a 1.7 kB model, for a school not among
// them (every item looked at). Beside the client's time it reports
// Redis's own (redis-µs/op, from INFO commandstats), the figure the read
// costs the Redis a fleet shares.
func BenchmarkReadBeforeSwipe(b *testing.B) {
	rdb := testutil.NewRedis(b, testutil.RedisDBCache)
	feeds := cache.NewFeeds(rdb, ttl)
	trips := cache.NewSwipeTrips(feeds, handover.NewQueuer())
	ctx := context.Background()
	student := uuid.NewString()
	f := feedWithPage(student, 200, 20)
	f.Model = make([]byte, 1700)
	_, err := feeds.Put(ctx, f)
	require.NoError(b, err)
	school := uuid.NewString()
	_, err = trips.BeforeSwipe(ctx, student, school)
	require.NoError(b, err)
	require.NoError(b, rdb.ConfigResetStat(ctx).Err())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := trips.BeforeSwipe(ctx, student, school); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	stats, err := rdb.Info(ctx, "commandstats").Result()
	require.NoError(b, err)
	var usec float64
	for _, line := range strings.Split(stats, "\n") {
		if _, rest, ok := strings.Cut(line, ",usec="); ok && strings.HasPrefix(line, "cmdstat_") &&
			!strings.HasPrefix(line, "cmdstat_config") && !strings.HasPrefix(line, "cmdstat_info") {
			n, _ := strconv.ParseFloat(rest[:strings.IndexByte(rest, ',')], 64)
			usec += n
		}
	}
	b.ReportMetric(usec/float64(b.N), "redis-µs/op")
}

// requirePatched is a check, for t, that a patch answered without an error.
func requirePatched(t *testing.T) func(cache.PatchResult, error) {
	return func(_ cache.PatchResult, err error) {
		t.Helper()
		require.NoError(t, err)
	}
}
