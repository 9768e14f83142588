package cache

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// ShownKey is the sorted set of schools the continuous feed showed a
// student, scored by when (Unix milliseconds). A member whose score is
// within the cooldown is cooling down; older members are pruned on write.
func ShownKey(studentID string) string { return prefix + studentTag(studentID) + ":shown" }

// SwipedKey is the sorted set of schools a student swiped recently, scored
// by when (Unix milliseconds). It covers the time between a swipe and the
// rebuilt feed that excludes the school: until then the stored feed, built
// before the swipe, still lists it.
func SwipedKey(studentID string) string { return prefix + studentTag(studentID) + ":swiped" }

// Caps of the continuous feed's sets. They bound memory per student however
// fast a client asks; past a cap the oldest members go first.
const (
	// MaxShown is larger than any catalogue the service serves (about 6,500
	// schools), so a school leaves its cooldown early only for a student who
	// was shown more than 10,000 schools within one cooldown.
	MaxShown = 10000
	// MaxRecentSwipes holds every swipe of a student at the highest rate the
	// rate limits allow within SwipedTTL's default window (300 swipes a
	// minute plus 50 per continuous-feed request).
	MaxRecentSwipes = 2000
	// recentSwipesMargin is added to FEED_CACHE_TTL for SwipedTTL: it covers
	// a feed whose build started before the swipe and was stored after it
	// (a build takes at most 10 seconds).
	recentSwipesMargin = time.Minute
)

// Cooldowns is the continuous feed's memory in Redis: what it showed each
// student (ShownKey) and what each student swiped recently (SwipedKey).
// Both are capped sorted sets with a TTL, pruned on every write. A
// student's feed, shown set and recent swipes share a hash tag, so one
// pipeline reads them together.
type Cooldowns struct {
	feeds    *Feeds // the feed hash is read in the same pipeline; its breaker is shared
	rdb      redis.UniversalClient
	cooldown time.Duration
	swipedMs int64
}

// NewCooldowns builds the cooldown store over the feed store; cooldown is
// FEED_COOLDOWN.
func NewCooldowns(feeds *Feeds, cooldown time.Duration) *Cooldowns {
	if feeds == nil || cooldown <= 0 {
		panic("cache.NewCooldowns: nil feed store or non-positive cooldown")
	}
	return &Cooldowns{feeds: feeds, rdb: feeds.rdb, cooldown: cooldown,
		swipedMs: (feeds.ttl + recentSwipesMargin).Milliseconds()}
}

// Cooldown is FEED_COOLDOWN.
func (c *Cooldowns) Cooldown() time.Duration { return c.cooldown }

// SwipedTTL is how long a recent swipe is remembered: FEED_CACHE_TTL plus
// a minute, longer than any feed built before the swipe can be served.
func (c *Cooldowns) SwipedTTL() time.Duration { return time.Duration(c.swipedMs) * time.Millisecond }

// shownTTL is the shown set's TTL: its newest member cools down for the
// cooldown, and a second more keeps the key until then.
func (c *Cooldowns) shownTTL() time.Duration { return c.cooldown + time.Second }

// ContinuousState is what the continuous feed reads for a student in one
// round trip.
type ContinuousState struct {
	// Feed is the stored feed when FeedErr is nil; FeedErr is ErrNotBuilt
	// when there is none (or a tombstone), or a decoding error.
	Feed    Feed
	FeedErr error
	// Shown maps each school still cooling down to when it was shown.
	Shown map[uuid.UUID]time.Time
	// Swiped holds the schools swiped within SwipedTTL.
	Swiped map[uuid.UUID]struct{}
}

// Read remembers swiped (the request's own swipes, already recorded) as
// swiped now, then reads the student's stored feed, the schools still
// cooling down at now and the recent swipes: one MULTI/EXEC.
func (c *Cooldowns) Read(ctx context.Context, studentID string, now time.Time, swiped []string) (ContinuousState, error) {
	var st ContinuousState
	err := c.feeds.call(ctx, "read continuous feed", func(ctx context.Context) error {
		var (
			feed         *redis.SliceCmd
			shown, swipe *redis.ZSliceCmd
		)
		_, err := c.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
			c.addSwiped(ctx, pipe, studentID, now, swiped)
			feed = pipe.HMGet(ctx, FeedKey(studentID), feedFields...)
			shown = pipe.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: ShownKey(studentID), ByScore: true,
				Start: "(" + strconv.FormatInt(now.Add(-c.cooldown).UnixMilli(), 10), Stop: "+inf"})
			swipe = pipe.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: SwipedKey(studentID), ByScore: true,
				Start: "(" + strconv.FormatInt(now.UnixMilli()-c.swipedMs, 10), Stop: "+inf"})
			return nil
		})
		if err != nil {
			return err
		}
		st.Feed, st.FeedErr = feedFromHash(studentID, feed.Val())
		st.Shown = make(map[uuid.UUID]time.Time, len(shown.Val()))
		for _, z := range shown.Val() {
			if id, ok := member(z); ok {
				st.Shown[id] = time.UnixMilli(int64(z.Score))
			}
		}
		st.Swiped = make(map[uuid.UUID]struct{}, len(swipe.Val()))
		for _, z := range swipe.Val() {
			if id, ok := member(z); ok {
				st.Swiped[id] = struct{}{}
			}
		}
		return nil
	})
	return st, err
}

func member(z redis.Z) (uuid.UUID, bool) {
	s, _ := z.Member.(string)
	id, err := uuid.Parse(s)
	return id, err == nil
}

// Show records schoolIDs as shown to the student at now: each cools down
// for the cooldown from now. Members whose cooldown has ended are pruned,
// the set is capped at MaxShown (oldest first) and its TTL renewed, in one
// MULTI/EXEC.
func (c *Cooldowns) Show(ctx context.Context, studentID string, now time.Time, schoolIDs []string) error {
	if len(schoolIDs) == 0 {
		return nil
	}
	return c.feeds.call(ctx, "record shown schools", func(ctx context.Context) error {
		key := ShownKey(studentID)
		_, err := c.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
			pipe.ZAdd(ctx, key, members(schoolIDs, now)...)
			pipe.ZRemRangeByScore(ctx, key, "-inf", strconv.FormatInt(now.Add(-c.cooldown).UnixMilli(), 10))
			pipe.ZRemRangeByRank(ctx, key, 0, -MaxShown-1)
			pipe.PExpire(ctx, key, c.shownTTL())
			return nil
		})
		return err
	})
}

// RememberSwiped records schoolIDs as swiped by the student at now, so the
// continuous feed skips them until its stored feed has been rebuilt
// without them. POST /swipe calls it after a swipe is committed; the
// continuous feed does the same for the swipes sent along (inside Read).
func (c *Cooldowns) RememberSwiped(ctx context.Context, studentID string, now time.Time, schoolIDs ...string) error {
	if len(schoolIDs) == 0 {
		return nil
	}
	return c.feeds.call(ctx, "remember swipes", func(ctx context.Context) error {
		_, err := c.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
			c.addSwiped(ctx, pipe, studentID, now, schoolIDs)
			return nil
		})
		return err
	})
}

// addSwiped queues the writes of RememberSwiped on pipe: add, prune what
// is older than SwipedTTL, cap, renew the TTL.
func (c *Cooldowns) addSwiped(ctx context.Context, pipe redis.Pipeliner, studentID string, now time.Time, schoolIDs []string) {
	if len(schoolIDs) == 0 {
		return
	}
	key := SwipedKey(studentID)
	pipe.ZAdd(ctx, key, members(schoolIDs, now)...)
	pipe.ZRemRangeByScore(ctx, key, "-inf", strconv.FormatInt(now.UnixMilli()-c.swipedMs, 10))
	pipe.ZRemRangeByRank(ctx, key, 0, -MaxRecentSwipes-1)
	pipe.PExpire(ctx, key, c.SwipedTTL())
}

func members(ids []string, at time.Time) []redis.Z {
	out := make([]redis.Z, len(ids))
	score := float64(at.UnixMilli())
	for i, id := range ids {
		out[i] = redis.Z{Score: score, Member: strings.ToLower(id)}
	}
	return out
}
