package cache

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Feeds stores students' precomputed feeds (FeedKey). Every write sets the
// TTL (FEED_CACHE_TTL); Redis is a cache here and PostgreSQL the truth, so
// a missing feed is rebuilt by the reader.
//
// Reads and writes are on the request path, so an unreachable Redis must
// cost little: each call is bounded by CallTimeout, and after a failure
// the store answers ErrUnavailable at once for RetryAfterFailure.
type Feeds struct {
	rdb       redis.UniversalClient
	ttl       time.Duration
	now       func() time.Time
	downUntil atomic.Int64 // Unix nanoseconds; Redis is not tried before then
}

const (
	// CallTimeout bounds one round trip to Redis.
	CallTimeout = 300 * time.Millisecond
	// RetryAfterFailure is how long Redis is left alone after a failed call.
	RetryAfterFailure = time.Second
)

// ErrUnavailable is returned, without trying Redis, shortly after a call failed.
var ErrUnavailable = errors.New("cache unavailable after a recent Redis failure")

// NewFeeds builds the feed store; ttl is FEED_CACHE_TTL.
func NewFeeds(rdb redis.UniversalClient, ttl time.Duration) *Feeds {
	if rdb == nil || ttl <= 0 {
		panic("cache.NewFeeds: nil client or non-positive TTL")
	}
	return &Feeds{rdb: rdb, ttl: ttl, now: time.Now}
}

// TTL is the lifetime of a stored feed.
func (s *Feeds) TTL() time.Duration { return s.ttl }

// CompactLocation is where the compact first page of a student's feed is
// stored (an HGET of field on key), for callers that fetch it in a
// pipeline of their own; ParseCompact reads what they get.
func (s *Feeds) CompactLocation(studentID string) (key, field string) {
	return FeedKey(studentID), FieldCompact
}

// call runs fn with the per-call timeout and the failure breaker.
func (s *Feeds) call(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	if until := s.downUntil.Load(); until != 0 && s.now().UnixNano() < until {
		return fmt.Errorf("cache %s: %w", op, ErrUnavailable)
	}
	callCtx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	err := fn(callCtx)
	switch {
	case err == nil, errors.Is(err, redis.Nil), errors.Is(err, ErrNotBuilt):
		return err
	case ctx.Err() == nil: // Redis failed, not the caller (who may have gone)
		s.downUntil.Store(s.now().Add(RetryAfterFailure).UnixNano())
	}
	return fmt.Errorf("cache %s: %w", op, err)
}

// Feed reads a student's feed without its compact page. ErrNotBuilt when
// there is none (or only a tombstone).
func (s *Feeds) Feed(ctx context.Context, studentID string) (Feed, error) {
	var f Feed
	err := s.call(ctx, "get feed", func(ctx context.Context) error {
		vals, err := s.rdb.HMGet(ctx, FeedKey(studentID), fieldHeader, fieldItems).Result()
		if err != nil {
			return err
		}
		h, ok1 := vals[0].(string)
		items, ok2 := vals[1].(string)
		if !ok1 || !ok2 {
			return ErrNotBuilt
		}
		if err := decodeHeader([]byte(h), &f); err != nil {
			return err
		}
		if len(items)%itemSize != 0 {
			return fmt.Errorf("feed items: %d bytes is not a whole number of %d-byte records", len(items), itemSize)
		}
		f.encoded = []byte(items)
		return nil
	})
	f.StudentID = studentID
	return f, err
}

// Header reads a student's feed without its items or compact page: the
// versions, phase, counts, weights and profile. ErrNotBuilt when there is none.
func (s *Feeds) Header(ctx context.Context, studentID string) (Feed, error) {
	var f Feed
	err := s.call(ctx, "get feed header", func(ctx context.Context) error {
		h, err := s.rdb.HGet(ctx, FeedKey(studentID), fieldHeader).Bytes()
		if errors.Is(err, redis.Nil) {
			return ErrNotBuilt
		}
		if err != nil {
			return err
		}
		return decodeHeader(h, &f)
	})
	f.StudentID = studentID
	return f, err
}

// CompactRaw reads the stored compact page of a student's feed, to be read
// with ParseCompact. ErrNotBuilt when there is none.
func (s *Feeds) CompactRaw(ctx context.Context, studentID string) ([]byte, error) {
	var raw []byte
	err := s.call(ctx, "get compact feed", func(ctx context.Context) error {
		var err error
		raw, err = s.rdb.HGet(ctx, FeedKey(studentID), FieldCompact).Bytes()
		if errors.Is(err, redis.Nil) {
			return ErrNotBuilt
		}
		return err
	})
	return raw, err
}

// putFeed replaces the feed unless the stored one (or tombstone) is newer:
// a higher student version, or the same student version and a higher
// catalogue version. Equal versions overwrite (a rebuild of the same state).
// Returns 1 when written, 0 when a newer one is kept.
var putFeed = redis.NewScript(`
local cur = redis.call('HMGET', KEYS[1], 'sv', 'cv')
local sv, cv = tonumber(ARGV[1]), tonumber(ARGV[2])
if cur[1] then
  local osv, ocv = tonumber(cur[1]), tonumber(cur[2] or '0') or 0
  if osv > sv or (osv == sv and ocv > cv) then
    return 0
  end
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'sv', ARGV[1], 'cv', ARGV[2], 'h', ARGV[4], 'i', ARGV[5], 'm', ARGV[6])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`)

// Put stores a feed with the TTL, newer version wins: it reports false,
// and changes nothing, when the stored feed or tombstone was built from a
// newer student version (or the same one and a newer catalogue).
func (s *Feeds) Put(ctx context.Context, f Feed) (bool, error) {
	var stored bool
	err := s.call(ctx, "put feed", func(ctx context.Context) error {
		n, err := putFeed.Run(ctx, s.rdb, []string{FeedKey(f.StudentID)},
			strconv.FormatInt(f.StudentVersion, 10), strconv.FormatInt(f.CatalogVersion, 10),
			s.ttl.Milliseconds(), encodeHeader(&f), encodeItems(f.Items), encodeCompact(&f)).Int()
		stored = n == 1
		return err
	})
	return stored, err
}

// tombstone drops the feed and remembers the student version that made it
// stale, so that a build from an older version that finishes later cannot
// store its result. An older tombstone or feed is replaced; a newer one is kept.
var tombstone = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], 'sv')
if cur and tonumber(cur) > tonumber(ARGV[1]) then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'sv', ARGV[1], 'cv', '0')
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)

// Invalidate drops a student's feed after their state changed to version:
// later reads rebuild it, and a build from an older version is refused.
func (s *Feeds) Invalidate(ctx context.Context, studentID string, version int64) error {
	return s.call(ctx, "invalidate feed", func(ctx context.Context) error {
		return tombstone.Run(ctx, s.rdb, []string{FeedKey(studentID)},
			strconv.FormatInt(version, 10), s.ttl.Milliseconds()).Err()
	})
}

// Delete drops a student's feed outright.
func (s *Feeds) Delete(ctx context.Context, studentID string) error {
	return s.call(ctx, "delete feed", func(ctx context.Context) error {
		return s.rdb.Del(ctx, FeedKey(studentID)).Err()
	})
}
