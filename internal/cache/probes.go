package cache

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ProbesKey is the set of schools recently served to a student as probes,
// so a swipe on one is known as a probe swipe. Members are school ids.
func ProbesKey(studentID string) string { return prefix + studentTag(studentID) + ":probes" }

// maxProbes caps the set: a student is served at most one probe in four
// items, and only recent ones matter.
const maxProbes = 256

// Probes remembers what was served as a probe for a TTL (FEED_CACHE_TTL).
type Probes struct {
	rdb redis.UniversalClient
	ttl time.Duration
}

// NewProbes builds the probe memory.
func NewProbes(rdb redis.UniversalClient, ttl time.Duration) *Probes {
	if rdb == nil || ttl <= 0 {
		panic("cache.NewProbes: nil client or non-positive ttl")
	}
	return &Probes{rdb: rdb, ttl: ttl}
}

// Remember records schoolIDs as served to studentID as probes now. Each
// school's entry lives for the TTL from its latest serving; the key itself
// expires two TTLs after the last write (see RememberUntil), and the set
// never holds more than maxProbes members (the oldest go first).
func (p *Probes) Remember(ctx context.Context, studentID string, schoolIDs ...string) error {
	return p.RememberUntil(ctx, studentID, time.Now(), schoolIDs...)
}

// RememberUntil records schoolIDs as served to studentID as probes up to
// until, the latest time they may still be served: a stored feed's probes,
// which its pages serve from stored bytes without writing anything, are
// remembered when it is stored, until it expires (at most a TTL ahead).
// Each entry then lives for the TTL after until.
func (p *Probes) RememberUntil(ctx context.Context, studentID string, until time.Time, schoolIDs ...string) error {
	if len(schoolIDs) == 0 {
		return nil
	}
	_, err := p.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		p.queueRememberUntil(ctx, pipe, studentID, until, schoolIDs...)
		return nil
	})
	if err != nil {
		return fmt.Errorf("cache: remember probes: %w", err)
	}
	return nil
}

// RememberUntilWrite is RememberUntil as commands for a caller's pipeline
// (a batch of feeds stored with their probes in one round trip: PutMany).
func (p *Probes) RememberUntilWrite(studentID string, until time.Time, schoolIDs ...string) Write {
	if len(schoolIDs) == 0 {
		return nil
	}
	return func(ctx context.Context, pipe redis.Pipeliner) {
		p.queueRememberUntil(ctx, pipe, studentID, until, schoolIDs...)
	}
}

func (p *Probes) queueRememberUntil(ctx context.Context, pipe redis.Pipeliner, studentID string, until time.Time, schoolIDs ...string) {
	key := ProbesKey(studentID)
	now := time.Now()
	switch {
	case until.Before(now):
		until = now
	case until.After(now.Add(p.ttl)):
		until = now.Add(p.ttl)
	}
	members := make([]redis.Z, len(schoolIDs))
	for i, id := range schoolIDs {
		members[i] = redis.Z{Score: float64(until.UnixMilli()), Member: strings.ToLower(id)}
	}
	// GT: a school served again now does not cut short what a stored
	// feed remembered until its expiry.
	pipe.ZAddArgs(ctx, key, redis.ZAddArgs{GT: true, Members: members})
	pipe.ZRemRangeByScore(ctx, key, "-inf", fmt.Sprint(now.Add(-p.ttl).UnixMilli()))
	pipe.ZRemRangeByRank(ctx, key, 0, -maxProbes-1)
	pipe.PExpire(ctx, key, 2*p.ttl) // the longest an entry lives (until is at most a TTL ahead)
}

// WasProbe reports whether schoolID was served to studentID as a probe
// within the TTL.
func (p *Probes) WasProbe(ctx context.Context, studentID, schoolID string) (bool, error) {
	score, err := p.rdb.ZScore(ctx, ProbesKey(studentID), strings.ToLower(schoolID)).Result()
	switch {
	case err == redis.Nil:
		return false, nil
	case err != nil:
		return false, fmt.Errorf("cache: probe lookup: %w", err)
	}
	return time.Since(time.UnixMilli(int64(score))) <= p.ttl, nil
}
