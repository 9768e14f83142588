package cache_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/testutil"
)

const ttl = 5 * time.Minute

// sampleFeed is a feed of n items built from student version sv and
// catalogue version cv.
func sampleFeed(student string, sv, cv int64, n int) cache.Feed {
	f := cache.Feed{
		StudentID: student, StudentVersion: sv, CatalogVersion: cv,
		BuiltAt:          time.UnixMilli(1_790_000_000_123).UTC(),
		AlgorithmVersion: "1.0.0", TotalSwipes: 17, TotalCount: 6500, LearningVersion: 4, LearnedVersion: 2,
		Weights: map[string]float64{"cost_weight": 0.6, "size_preference": 0.2, "academic_selectivity": 0.5},
		Profile: []byte(`{"SAT":1380,"HasHome":true}`),
		Compact: cache.NewCompact([][]byte{[]byte(`{"i":"x","n":"A \"quoted\" name\nwith a newline","s":87}`)}),
	}
	for i := range n {
		f.Items = append(f.Items, cache.FeedItem{
			SchoolID: uuid.New(),
			Score:    float64(9000-i) / 1e4, Academic: 0.1234, Financial: 1, Campus: 0, Outcomes: 0.5,
			Distance: float64(i) / 10, Probe: i%4 == 3, Exploration: i%5 == 1,
		})
	}
	if n > 2 {
		f.Items[2].Distance = -1
		f.Items[1].Distance = 5000.3
	}
	return f
}

func TestFeedRoundTrip(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBCache)
	feeds := cache.NewFeeds(rdb, ttl)
	ctx := context.Background()
	student := uuid.NewString()

	_, err := feeds.Feed(ctx, student)
	require.ErrorIs(t, err, cache.ErrNotBuilt, "a feed never built is not an error, it is not built")
	_, err = feeds.Header(ctx, student)
	require.ErrorIs(t, err, cache.ErrNotBuilt)
	_, err = feeds.ReadCompact(ctx, student, nil)
	require.ErrorIs(t, err, cache.ErrNotBuilt)

	want := sampleFeed(student, 3, 42, 1000)
	stored, err := feeds.Put(ctx, want)
	require.NoError(t, err)
	require.True(t, stored)

	got, err := feeds.Feed(ctx, student)
	require.NoError(t, err)
	require.Equal(t, 1000, got.Len())
	assert.Equal(t, want.Items, got.Range(0, 1000))
	assert.Equal(t, want.Items[10:30], got.Range(10, 30), "a range decodes just those items")
	assert.Equal(t, want.Items[990:], got.Range(990, 2000), "clamped to the items there are")
	assert.Empty(t, got.Range(1000, 1020))
	assert.Empty(t, got.Range(5, 5))
	items := want.Items
	want.Compact = cache.Compact{} // Feed does not read the compact page
	want.Items = nil
	got = cache.Feed{StudentID: got.StudentID, StudentVersion: got.StudentVersion, CatalogVersion: got.CatalogVersion,
		LearningVersion: got.LearningVersion, LearnedVersion: got.LearnedVersion, BuiltAt: got.BuiltAt,
		AlgorithmVersion: got.AlgorithmVersion, TotalSwipes: got.TotalSwipes, TotalCount: got.TotalCount,
		Weights: got.Weights, Profile: got.Profile}
	assert.Equal(t, want, got)
	want.Items = items

	h, err := feeds.Header(ctx, student)
	require.NoError(t, err)
	want.Items = nil
	assert.Equal(t, want, h)
	assert.Zero(t, h.Len())

	c, err := feeds.ReadCompact(ctx, student, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(42), c.CatalogVersion)
	assert.Equal(t, "1.0.0", c.AlgorithmVersion)
	built := sampleFeed(student, 3, 42, 0).Compact
	assert.Equal(t, cache.Compact{ETag: built.ETag, Body: built.Body}, c.Compact,
		"the page comes back byte for byte with its ETag (its offsets and patched ETags are read once schools are taken off it)")

	// Any spelling of the id is one key.
	key := cache.FeedKey(student)
	assert.Equal(t, "rm:v2:{student:"+student+"}:feed", key)
	assert.Equal(t, key, cache.FeedKey(strings.ToUpper(student)))
	upper, err := feeds.ReadCompact(ctx, strings.ToUpper(student), nil)
	require.NoError(t, err)
	assert.Equal(t, c, upper)
}

func TestFeedRoundsToStoredPrecision(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBCache)
	feeds := cache.NewFeeds(rdb, ttl)
	ctx := context.Background()
	f := sampleFeed(uuid.NewString(), 1, 1, 1)
	f.Items[0].Score, f.Items[0].Distance = 0.123456, 12.34
	_, err := feeds.Put(ctx, f)
	require.NoError(t, err)
	got, err := feeds.Feed(ctx, f.StudentID)
	require.NoError(t, err)
	it := got.Range(0, 1)[0]
	assert.Equal(t, 0.1235, it.Score, "scores are kept to 1e-4")
	assert.Equal(t, 12.3, it.Distance, "distances to 0.1 mile")
}

func TestFeedNewerVersionWins(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBCache)
	feeds := cache.NewFeeds(rdb, ttl)
	ctx := context.Background()
	student := uuid.NewString()
	put := func(sv, lv, cv int64) bool {
		t.Helper()
		f := sampleFeed(student, sv, cv, 3)
		f.LearningVersion = lv
		f.AlgorithmVersion = fmt.Sprintf("sv%d-lv%d-cv%d", sv, lv, cv)
		ok, err := feeds.Put(ctx, f)
		require.NoError(t, err)
		return ok
	}
	built := func() string {
		t.Helper()
		f, err := feeds.Feed(ctx, student)
		require.NoError(t, err)
		return f.AlgorithmVersion
	}

	require.True(t, put(5, 3, 10))
	assert.False(t, put(4, 9, 99), "an older student version never overwrites a newer one, whatever else")
	assert.Equal(t, "sv5-lv3-cv10", built())
	assert.False(t, put(5, 2, 99), "same student version, older learned state: kept")
	assert.False(t, put(5, 3, 9), "same student version and learned state, older catalogue: kept")
	assert.Equal(t, "sv5-lv3-cv10", built())
	assert.True(t, put(5, 3, 10), "the same versions again (a rebuild) are written")
	assert.True(t, put(5, 4, 1), "a newer learned state wins")
	assert.Equal(t, "sv5-lv4-cv1", built())
	assert.True(t, put(5, 4, 11), "a newer catalogue wins")
	assert.True(t, put(6, 1, 1), "a newer student version wins")
	assert.Equal(t, "sv6-lv1-cv1", built())
}

// Put writes a feed to a staged key and moves it into place in one
// MULTI/EXEC: whether the move is made or refused, and after Redis forgot
// its scripts (a restart), nothing staged is left behind and the stored
// feed is whole.
func TestPutLeavesNothingStaged(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBCache)
	feeds := cache.NewFeeds(rdb, ttl)
	ctx := context.Background()
	student := uuid.NewString()
	keys := func() []string {
		t.Helper()
		k, err := rdb.Keys(ctx, "*"+student+"*").Result()
		require.NoError(t, err)
		return k
	}

	want := sampleFeed(student, 3, 1, 12)
	want.Described = []cache.Described{cache.NewDescribed(want.Items[0].SchoolID.String(), false, []byte(`{"a":1}`))}
	require.NoError(t, rdb.ScriptFlush(ctx).Err())
	ok, err := feeds.Put(ctx, want)
	require.NoError(t, err)
	require.True(t, ok, "stored after the script was loaded again")
	assert.Equal(t, []string{cache.FeedKey(student)}, keys())
	got, err := feeds.Feed(ctx, student)
	require.NoError(t, err)
	assert.Equal(t, want.Items, got.Range(0, 12))
	c, err := feeds.ReadCompact(ctx, student, nil)
	require.NoError(t, err)
	assert.Equal(t, want.Compact.ETag, c.ETag)

	ok, err = feeds.Put(ctx, sampleFeed(student, 2, 9, 5))
	require.NoError(t, err)
	require.False(t, ok, "older")
	assert.Equal(t, []string{cache.FeedKey(student)}, keys(), "a refused feed is not left staged")
	got, err = feeds.Feed(ctx, student)
	require.NoError(t, err)
	assert.Equal(t, want.Items, got.Range(0, 12), "the stored feed is untouched")
	d, err := rdb.PTTL(ctx, cache.FeedKey(student)).Result()
	require.NoError(t, err)
	assert.Greater(t, d, ttl-5*time.Second, "the moved feed keeps the TTL it was staged with")
}

// refuseScriptLoad makes every SCRIPT LOAD fail, as a Redis that went away
// between a Put's two tries would.
type refuseScriptLoad struct{}

func (refuseScriptLoad) DialHook(next redis.DialHook) redis.DialHook { return next }
func (refuseScriptLoad) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 1 && strings.EqualFold(fmt.Sprint(args[0], " ", args[1]), "script load") {
			err := errors.New("script load refused")
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}
func (refuseScriptLoad) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A Put whose script Redis had forgotten, and which cannot load it again,
// fails and leaves no copy of the feed behind: the staged key is unlinked
// in the same transaction whatever the script did.
func TestFailedPutLeavesNothingStaged(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBCache)
	rdb.AddHook(refuseScriptLoad{})
	feeds := cache.NewFeeds(rdb, ttl)
	ctx := context.Background()
	student := uuid.NewString()
	require.NoError(t, rdb.ScriptFlush(ctx).Err())
	_, err := feeds.Put(ctx, sampleFeed(student, 1, 1, 5))
	require.ErrorContains(t, err, "script load refused")
	n, err := rdb.Exists(ctx, cache.StagedFeedKey(student), cache.FeedKey(student)).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "neither staged nor stored")
}

func TestInvalidateLeavesAVersionedTombstone(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBCache)
	feeds := cache.NewFeeds(rdb, ttl)
	ctx := context.Background()
	student := uuid.NewString()

	ok, err := feeds.Put(ctx, sampleFeed(student, 2, 1, 3))
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, feeds.Invalidate(ctx, student, 3))
	_, err = feeds.Feed(ctx, student)
	require.ErrorIs(t, err, cache.ErrNotBuilt)
	_, err = feeds.ReadCompact(ctx, student, nil)
	require.ErrorIs(t, err, cache.ErrNotBuilt)
	_, err = feeds.Header(ctx, student)
	require.ErrorIs(t, err, cache.ErrNotBuilt)

	// A build that read version 2 before the change finishes late: refused.
	ok, err = feeds.Put(ctx, sampleFeed(student, 2, 1, 3))
	require.NoError(t, err)
	assert.False(t, ok, "a feed of the old version cannot be stored over the tombstone")
	ok, err = feeds.Put(ctx, sampleFeed(student, 3, 1, 3))
	require.NoError(t, err)
	assert.True(t, ok, "a feed of the new version is")

	// An older invalidation does not drop a newer feed.
	ok, err = feeds.Put(ctx, sampleFeed(student, 7, 1, 3))
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, feeds.Invalidate(ctx, student, 6))
	_, err = feeds.Feed(ctx, student)
	require.NoError(t, err)

	require.NoError(t, feeds.Delete(ctx, student))
	_, err = feeds.Feed(ctx, student)
	require.ErrorIs(t, err, cache.ErrNotBuilt)
}

func TestEveryKeyHasTheTTL(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBCache)
	feeds := cache.NewFeeds(rdb, 90*time.Second)
	ctx := context.Background()
	a, b := uuid.NewString(), uuid.NewString()
	_, err := feeds.Put(ctx, sampleFeed(a, 1, 1, 10))
	require.NoError(t, err)
	require.NoError(t, feeds.Invalidate(ctx, b, 4))

	keys, err := rdb.Keys(ctx, "*").Result()
	require.NoError(t, err)
	require.Len(t, keys, 2)
	for _, k := range keys {
		d, err := rdb.PTTL(ctx, k).Result()
		require.NoError(t, err)
		assert.Greater(t, d, 85*time.Second, "%s has the TTL", k)
		assert.LessOrEqual(t, d, 90*time.Second, "%s has the TTL", k)
	}
}

// TestFeedSize measures the stored document: the top 200 of a 6,500-school
// catalogue is what the service keeps per student (query.DefaultFeedSize),
// 1,000 what it kept before, 6,500 the whole catalogue.
func TestFeedSize(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBCache)
	feeds := cache.NewFeeds(rdb, ttl)
	ctx := context.Background()
	for _, n := range []int{200, 1000, 6500} {
		f := sampleFeed(uuid.NewString(), 1, 1, n)
		_, err := feeds.Put(ctx, f)
		require.NoError(t, err)
		var total int64
		for _, field := range []string{"h", "ib", "mb"} {
			l, err := rdb.HStrLen(ctx, cache.FeedKey(f.StudentID), field).Result()
			require.NoError(t, err)
			total += l
		}
		mem, err := rdb.MemoryUsage(ctx, cache.FeedKey(f.StudentID)).Result()
		require.NoError(t, err)
		t.Logf("feed of %d items: %d bytes of fields, %d bytes in Redis", n, total, mem)
		assert.Less(t, total, int64(n*30+1024), "about 29 bytes an item")
	}
}

func TestUnreachableRedisFailsFast(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	feeds := cache.NewFeeds(rdb, ttl)
	ctx := context.Background()
	start := time.Now()
	_, err := feeds.Feed(ctx, uuid.NewString())
	require.Error(t, err)
	require.False(t, errors.Is(err, cache.ErrNotBuilt), "an outage is not a miss")
	_, err = feeds.Put(ctx, sampleFeed(uuid.NewString(), 1, 1, 1))
	require.ErrorIs(t, err, cache.ErrUnavailable, "after a failure Redis is left alone for a while")
	_, err = feeds.ReadCompact(ctx, uuid.NewString(), nil)
	require.ErrorIs(t, err, cache.ErrUnavailable)
	assert.Less(t, time.Since(start), time.Second)
}

func TestParseCompactRejectsGarbage(t *testing.T) {
	for _, raw := range []string{"", "no header line", "1 1.0.0\n6\n\n{}", "x 1.0.0 \"e\"\n6\n\n{\"r\":[]}",
		"7 1.2.3 \"e\"\n{\"r\":[]}", "7 1.2.3 \"e\"\n5\n\n{\"r\":[]}", "7 1.2.3 \"e\"\nsix\n\n{\"r\":[]}",
		"7 1.2.3 \"e\"\n6 9 8\n\n{\"r\":[1,2]}", "7 1.2.3 \"e\"\n6\n\"f\"\n{\"r\":[]}"} {
		_, err := cache.ParseCompact([]byte(raw))
		assert.Error(t, err, "%q", raw)
	}
	c, err := cache.ParseCompact([]byte("7 1.2.3 \"e\"\n6\n\n{\"r\":[]}"))
	require.NoError(t, err)
	assert.Equal(t, cache.StoredCompact{CatalogVersion: 7, AlgorithmVersion: "1.2.3",
		Compact: cache.Compact{ETag: `"e"`, Body: []byte(`{"r":[]}`), Starts: []int{6}}}, c)
}

// A page left once swipes took its first items off is the page of the
// items left, byte for byte, with that page's ETag: made with the page for
// the first PatchedETags, hashed by the read past them.
func TestCompactAfterIsThePageOfTheItemsLeft(t *testing.T) {
	items := [][]byte{[]byte(`{"i":"a","s":90}`), []byte(`{"i":"b","n":"x, y","s":80}`), []byte(`{"i":"c"}`),
		[]byte(`{"i":"d","p":true}`)}
	c := cache.NewCompact(items)
	require.Len(t, c.Next, cache.PatchedETags)
	for k := range len(items) + 3 {
		left := cache.NewCompact(items[min(k, len(items)):])
		after := c.After(k)
		assert.Equal(t, string(left.Body), string(after.Body), "%d taken off", k)
		assert.Equal(t, left.ETag, after.ETag, "%d taken off", k)
	}
	assert.Equal(t, c, c.After(0))
	empty := cache.NewCompact(nil)
	assert.Equal(t, `{"r":[]}`, string(empty.Body))
	assert.Equal(t, empty.ETag, empty.After(3).ETag)
}

// failNthTransaction fails the n-th transaction a client sends (1 is the
// first), as a Redis that stops answering in the middle of a PutMany
// would; sent counts them.
type failNthTransaction struct {
	n    int
	sent *int
}

func (failNthTransaction) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (failNthTransaction) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (f failNthTransaction) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) == 0 || cmds[0].Name() != "multi" {
			return next(ctx, cmds)
		}
		*f.sent++
		if *f.sent == f.n {
			err := errors.New("connection reset")
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		return next(ctx, cmds)
	}
}

// PutMany stores many feeds eight to a transaction (a learn drain's batch
// of 64 in one held Redis for tens of milliseconds), with the other writes
// in the last; a transaction that fails leaves the ones before it stored
// and says so, and the ones after it unwritten.
func TestPutManyStoresEightFeedsATransaction(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBCache)
	feeds := cache.NewFeeds(rdb, ttl)
	ctx := context.Background()
	var batch []cache.Feed
	for range 20 {
		batch = append(batch, sampleFeed(uuid.NewString(), 3, 1, 10))
	}
	also := func(ctx context.Context, pipe redis.Pipeliner) { pipe.Set(ctx, "also", "1", time.Minute) }
	_, err := feeds.Put(ctx, sampleFeed(uuid.NewString(), 1, 1, 1)) // the script loaded
	require.NoError(t, err)
	var sent int
	rdb.AddHook(failNthTransaction{n: 0, sent: &sent})
	stored, err := feeds.PutMany(ctx, batch, also)
	require.NoError(t, err)
	assert.Equal(t, slices.Repeat([]bool{true}, 20), stored)
	assert.Equal(t, 3, sent, "20 feeds in three transactions")
	for _, f := range batch {
		got, err := feeds.Feed(ctx, f.StudentID)
		require.NoError(t, err)
		assert.Equal(t, f.Items, got.Range(0, 10))
	}
	assert.Equal(t, int64(1), rdb.Exists(ctx, "also").Val())

	require.NoError(t, rdb.FlushDB(ctx).Err())
	failing := redis.NewClient(rdb.Options())
	t.Cleanup(func() { _ = failing.Close() })
	sent = 0
	failing.AddHook(failNthTransaction{n: 2, sent: &sent})
	stored, err = cache.NewFeeds(failing, ttl).PutMany(ctx, batch, also)
	require.ErrorContains(t, err, "connection reset")
	assert.Equal(t, append(slices.Repeat([]bool{true}, 8), slices.Repeat([]bool{false}, 12)...), stored)
	for i, f := range batch {
		_, err := feeds.Feed(ctx, f.StudentID)
		if i < 8 {
			assert.NoError(t, err, "feed %d, in the transaction before the failure", i)
		} else {
			assert.ErrorIs(t, err, cache.ErrNotBuilt, "feed %d", i)
		}
	}
	assert.Zero(t, rdb.Exists(ctx, "also").Val(), "the other writes go with the last feeds")
}
