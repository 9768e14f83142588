package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/collegematch/matching/internal/breaker"
	"github.com/collegematch/matching/internal/handover"
)

// Feeds stores students' precomputed feeds (FeedKey). Every write sets the
// TTL (FEED_CACHE_TTL); Redis is a cache here and PostgreSQL the truth, so
// a missing feed is rebuilt by the reader.
//
// Reads and writes are on the request path, so an unreachable Redis must
// cost little: each call is bounded by CallTimeout, and after a failure
// the store answers ErrUnavailable at once for RetryAfterFailure.
type Feeds struct {
	rdb     redis.UniversalClient
	ttl     time.Duration
	breaker *breaker.Breaker
}

const (
	// CallTimeout bounds one round trip to Redis.
	CallTimeout = 300 * time.Millisecond
	// RetryAfterFailure is how long Redis is left alone after a failed call.
	RetryAfterFailure = time.Second
)

// ErrUnavailable is returned, without trying Redis, shortly after a call failed.
var ErrUnavailable = breaker.ErrOpen

// NewFeeds builds the feed store; ttl is FEED_CACHE_TTL.
func NewFeeds(rdb redis.UniversalClient, ttl time.Duration) *Feeds {
	if rdb == nil || ttl <= 0 {
		panic("cache.NewFeeds: nil client or non-positive TTL")
	}
	return &Feeds{rdb: rdb, ttl: ttl, breaker: breaker.New(CallTimeout, RetryAfterFailure)}
}

// TTL is the lifetime of a stored feed.
func (s *Feeds) TTL() time.Duration { return s.ttl }

// call runs fn with the per-call timeout and the failure breaker.
func (s *Feeds) call(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	err := s.breaker.Do(ctx, fn, expectedAnswer)
	if err == nil || expectedAnswer(err) {
		return err
	}
	return fmt.Errorf("cache %s: %w", op, err)
}

// expectedAnswer tells the answers of Redis that are not failures: a
// missing key or feed, or one that cannot be read.
func expectedAnswer(err error) bool {
	return errors.Is(err, redis.Nil) || errors.Is(err, ErrNotBuilt) || errors.Is(err, ErrMalformed)
}

// feedFields are the fields a read of a whole feed (without the compact
// page) takes, in feedFromHash's order.
var feedFields = []string{fieldStudentVersion, fieldLearningVersion, fieldCatalogVersion, fieldSwipes,
	fieldTotal, fieldLearned, fieldHeader, fieldItems, fieldRemoved, fieldModel}

// Feed reads a student's feed without its compact page, with the model it
// was ranked with (whose learned preferences its items' reasons name; nil
// for a feed stored without one).
// ErrNotBuilt when there is none (or only a tombstone).
func (s *Feeds) Feed(ctx context.Context, studentID string) (Feed, error) {
	var f Feed
	err := s.call(ctx, "get feed", func(ctx context.Context) error {
		vals, err := s.rdb.HMGet(ctx, FeedKey(studentID), feedFields...).Result()
		if err != nil {
			return err
		}
		f, err = feedFromHash(studentID, vals)
		return err
	})
	f.StudentID = studentID
	return f, err
}

// feedFromHash decodes the feedFields of a feed hash.
func feedFromHash(studentID string, vals []any) (Feed, error) {
	f := Feed{StudentID: studentID}
	if len(vals) != len(feedFields) {
		return f, ErrNotBuilt
	}
	str := make([]string, len(vals))
	for i, v := range vals {
		s, ok := v.(string)
		if !ok && i < 8 {
			return f, ErrNotBuilt // a tombstone, or nothing
		}
		str[i] = s
	}
	if len(str[8])%16 != 0 {
		return f, fmt.Errorf("feed removed schools: %d bytes is not a whole number of UUIDs", len(str[8]))
	}
	for j := 0; j < len(str[8]); j += 16 {
		f.Removed = append(f.Removed, uuid.UUID([]byte(str[8][j:j+16])))
	}
	var err error
	ints := make([]int64, 6)
	for i := range ints {
		if ints[i], err = strconv.ParseInt(str[i], 10, 64); err != nil {
			return f, fmt.Errorf("feed field %s: %w", feedFields[i], err)
		}
	}
	f.StudentVersion, f.LearningVersion, f.CatalogVersion = ints[0], ints[1], ints[2]
	f.TotalSwipes, f.TotalCount, f.LearnedVersion = int(ints[3]), int(ints[4]), ints[5]
	if err := decodeHeader([]byte(str[6]), &f); err != nil {
		return f, err
	}
	if len(str[7])%itemSize != 0 {
		return f, fmt.Errorf("feed items: %d bytes is not a whole number of %d-byte records", len(str[7]), itemSize)
	}
	// The items as built, less the schools swipes took off the top.
	f.encoded = []byte(str[7][min(len(str[7]), len(f.Removed)*itemSize):])
	if str[9] != "" {
		f.Model = []byte(str[9])
	}
	return f, nil
}

// LearnedVersion reads the student version the stored feed's learned
// state covers (Feed.LearnedVersion); found is false when there is no feed.
func (s *Feeds) LearnedVersion(ctx context.Context, studentID string) (version int64, found bool, err error) {
	err = s.call(ctx, "get the learned version", func(ctx context.Context) error {
		vals, err := s.rdb.HMGet(ctx, FeedKey(studentID), fieldLearned, fieldHeader).Result()
		if err != nil {
			return err
		}
		ls, ok1 := vals[0].(string)
		_, ok2 := vals[1].(string)
		if !ok1 || !ok2 {
			return nil
		}
		version, err = strconv.ParseInt(ls, 10, 64)
		found = err == nil
		return err
	})
	return version, found, err
}

// Header reads a student's feed without its items or compact page: the
// versions, counts, weights and profile. ErrNotBuilt when there is none.
func (s *Feeds) Header(ctx context.Context, studentID string) (Feed, error) {
	var f Feed
	err := s.call(ctx, "get feed header", func(ctx context.Context) error {
		vals, err := s.rdb.HMGet(ctx, FeedKey(studentID), feedFields[:7]...).Result()
		if err != nil {
			return err
		}
		f, err = feedFromHash(studentID, append(vals, "", "", ""))
		f.encoded = nil // no items were read
		return err
	})
	f.StudentID = studentID
	return f, err
}

// HeaderModel is Header with the learned model the feed was ranked with
// (Feed.Model, its binary form; empty for a feed stored without one).
func (s *Feeds) HeaderModel(ctx context.Context, studentID string) (Feed, error) {
	var f Feed
	err := s.call(ctx, "get feed header", func(ctx context.Context) error {
		fields := append(slices.Clone(feedFields[:7]), fieldModel)
		vals, err := s.rdb.HMGet(ctx, FeedKey(studentID), fields...).Result()
		if err != nil {
			return err
		}
		f, err = feedFromHash(studentID, append(vals[:7], "", "", vals[7]))
		f.encoded = nil // no items were read
		return err
	})
	f.StudentID = studentID
	return f, err
}

// CompactRead is a read of the compact first page of a student's feed in
// one plain command (an HMGET of the page as built and the schools swipes
// took off the top since), for a caller that queues it on a pipeline of
// its own (Queue, with the request's rate-limit count) and reads its
// answer after the pipeline ran (Result).
type CompactRead struct {
	key string
	cmd *redis.StringSliceCmd // an absent field reads ""
}

// CompactRead is the read of studentID's compact first page.
func (s *Feeds) CompactRead(studentID string) *CompactRead {
	return &CompactRead{key: FeedKey(studentID)}
}

// Queue adds the read's command to pipe.
func (r *CompactRead) Queue(ctx context.Context, pipe redis.Pipeliner) {
	r.cmd = redis.NewStringSliceCmd(ctx, "hmget", r.key, FieldCompact, fieldRemoved)
	_ = pipe.Process(ctx, r.cmd) // a pipeline queues; its Exec reports
}

// Result is the page the read found, as it is served: the page as built
// past the schools swipes took off (Compact.After), its catalogue and
// algorithm versions for the reader to check. ErrNotBuilt when there is
// none (no feed, a tombstone, a feed without a compact page), ErrMalformed
// when what is stored cannot be read.
func (r *CompactRead) Result() (StoredCompact, error) {
	if r.cmd == nil {
		return StoredCompact{}, errors.New("compact feed: read not made")
	}
	vals, err := r.cmd.Result()
	if err != nil {
		return StoredCompact{}, err
	}
	if vals[0] == "" {
		return StoredCompact{}, ErrNotBuilt
	}
	// The page is served as it was read: its body aliases the string the
	// reply was read into rather than a copy of it (aliasBytes), and what
	// only a page made again past removed schools needs is read only then.
	removed := len(vals[1]) / 16 // absent: none taken off
	c, err := parseCompact(aliasBytes(vals[0]), removed > 0)
	if err != nil {
		return c, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	c.Compact = c.After(removed)
	return c, nil
}

// ReadCompact reads a student's compact first page (CompactRead.Result),
// in one round trip. r, when not nil, is a read already made: when it
// answered, its answer is used.
func (s *Feeds) ReadCompact(ctx context.Context, studentID string, r *CompactRead) (StoredCompact, error) {
	if r != nil && r.cmd != nil && r.key == FeedKey(studentID) {
		c, err := r.Result()
		if err == nil || errors.Is(err, ErrNotBuilt) || !isRedisFailure(r.cmd.Err()) {
			return c, err
		}
		// The read did not answer: make it here.
	}
	read := s.CompactRead(studentID)
	var c StoredCompact
	err := s.call(ctx, "read the compact feed", func(ctx context.Context) error {
		if _, err := s.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			read.Queue(ctx, pipe)
			return nil
		}); err != nil {
			return err
		}
		var err error
		c, err = read.Result()
		return err
	})
	return c, err
}

// isRedisFailure reports whether err is Redis not answering a command
// (rather than an answer, or no command at all).
func isRedisFailure(err error) bool { return err != nil && !errors.Is(err, redis.Nil) }

// Put stores a feed with the TTL, newer versions winning: it reports
// false, and changes nothing, when the stored feed or tombstone is newer:
// built from a higher student version; or the same one and a higher
// learned-state version; or both the same and a higher catalogue version.
// Equal versions overwrite (a rebuild of the same state). The compact page
// is stored only when it has an ETag, the described items (pages.go) only
// when there are some.
//
// A stored feed is about 70 kB, and Redis copies every argument of a
// script into Lua: a script given the feed cost about 130 us of Redis's
// one thread per rebuild for the copying alone, ten times what writing it
// costs. So the feed is written with plain commands to a key of its own
// (StagedFeedKey) and a script given only the versions moves it into place
// or drops it (swapFeed), all in one MULTI/EXEC: one round trip, and no
// other client sees the staged key.
func (s *Feeds) Put(ctx context.Context, f Feed) (bool, error) {
	stored, err := s.PutMany(ctx, []Feed{f})
	if err != nil {
		return false, err
	}
	return stored[0], nil
}

// PutMany is Put for several feeds (of different students): each feed's
// staging and swap in a MULTI/EXEC, so each is stored or kept out exactly
// as Put would, feedsPerTransaction feeds a transaction and a round trip;
// also's commands (other writes that belong with the feeds, such as their
// probes) run in the last one. stored[i] says whether feeds[i] was stored;
// after an error, the feeds of the transactions before it may be stored.
func (s *Feeds) PutMany(ctx context.Context, feeds []Feed, also ...Write) (stored []bool, err error) {
	stored = make([]bool, len(feeds))
	for from := 0; from < len(feeds); from += feedsPerTransaction {
		to := min(from+feedsPerTransaction, len(feeds))
		var last []Write
		if to == len(feeds) {
			last = also
		}
		if err := s.putChunk(ctx, feeds[from:to], stored[from:to], last); err != nil {
			return stored, err
		}
	}
	return stored, nil
}

// feedsPerTransaction is how many feeds one transaction of PutMany
// holds. A feed is about 65 kB: a learn drain's batch of 64 in one
// transaction (4 MB) held Redis's one thread for tens of milliseconds and,
// on a loaded machine, ran past CallTimeout, which failed the batch and,
// through the breaker, every feed write of the next second.
const feedsPerTransaction = 8

// putChunk stores feeds (at most feedsPerTransaction) and runs also in
// one transaction, setting stored.
func (s *Feeds) putChunk(ctx context.Context, feeds []Feed, stored []bool, also []Write) error {
	swaps := make([]*redis.Cmd, len(feeds))
	return s.call(ctx, "put feed", func(ctx context.Context) error {
		err := handover.ExecTx(ctx, s.rdb, []*redis.Script{swapFeed}, func(pipe redis.Pipeliner) error {
			for i := range feeds {
				f := &feeds[i]
				key, staged := FeedKey(f.StudentID), StagedFeedKey(f.StudentID)
				pipe.Del(ctx, staged)
				pipe.HSet(ctx, staged, FeedFields(f)...)
				pipe.PExpire(ctx, staged, s.ttl)
				swaps[i] = swapFeed.EvalSha(ctx, pipe, []string{key, staged}, f.StudentVersion, f.LearningVersion, f.CatalogVersion)
				// Nothing once the script moved or dropped it; the staged feed
				// when the script did not run (Redis had forgotten it), so that
				// no copy outlives a Put whose retry fails.
				pipe.Unlink(ctx, staged)
			}
			for _, w := range also {
				if w != nil {
					w(ctx, pipe)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		for i, swap := range swaps {
			n, err := swap.Int()
			if err != nil {
				return err
			}
			stored[i] = n == 1
		}
		return nil
	})
}

// A Write is commands that belong in a caller's pipeline or transaction
// (PutMany's), such as a stored feed's probes (Probes.RememberUntilWrite).
type Write func(ctx context.Context, pipe redis.Pipeliner)

// StagedFeedKey is where Put writes a feed before swapFeed moves it into
// place. It exists only inside Put's MULTI/EXEC, which unlinks it last
// whatever the script did.
func StagedFeedKey(studentID string) string { return FeedKey(studentID) + ":next" }

// swapFeed moves the feed staged at KEYS[2] onto KEYS[1] unless the feed
// (or tombstone) there is newer than the versions ARGV (sv, lv, cv), as
// Put says; then it drops the staged one. Returns 1 when moved, 0 when a
// newer one is kept.
var swapFeed = redis.NewScript(`
local cur = redis.call('HMGET', KEYS[1], 'sv', 'lv', 'cv')
local sv, lv, cv = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if cur[1] then
  local osv, olv, ocv = tonumber(cur[1]), tonumber(cur[2] or '0') or 0, tonumber(cur[3] or '0') or 0
  if osv > sv or (osv == sv and (olv > lv or (olv == lv and ocv > cv))) then
    redis.call('DEL', KEYS[2])
    return 0
  end
end
redis.call('RENAME', KEYS[2], KEYS[1])
return 1
`)

// FeedFields is the hash Put stores for f, as field-value pairs: the
// versions (sv, lv, cv), the counts, header, items, model, compact page
// and described items.
func FeedFields(f *Feed) []any {
	out := make([]any, 0, 26+2*len(f.Described))
	out = append(out,
		fieldStudentVersion, strconv.FormatInt(f.StudentVersion, 10),
		fieldLearningVersion, strconv.FormatInt(f.LearningVersion, 10),
		fieldCatalogVersion, strconv.FormatInt(f.CatalogVersion, 10),
		fieldSwipes, strconv.Itoa(f.TotalSwipes),
		fieldTotal, strconv.Itoa(f.TotalCount),
		fieldLearned, strconv.FormatInt(f.LearnedVersion, 10),
		fieldHeader, encodeHeader(f),
		fieldItems, encodeItems(f.Items),
		fieldModel, f.Model)
	if f.Compact.ETag != "" {
		out = append(out, FieldCompact, encodeCompact(f))
	}
	if len(f.Described) > 0 {
		out = append(out, fieldEnvelope, encodeEnvelope(f))
		out = append(out, describedFields(f.Described)...)
	}
	return out
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
redis.call('HSET', KEYS[1], 'sv', ARGV[1], 'lv', '0', 'cv', '0')
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

// Model reads the serialised learned model a student's stored feed was
// ranked with; ErrNotBuilt when there is none.
func (s *Feeds) Model(ctx context.Context, studentID string) ([]byte, error) {
	var b []byte
	err := s.call(ctx, "get the feed's model", func(ctx context.Context) error {
		var err error
		b, err = s.rdb.HGet(ctx, FeedKey(studentID), fieldModel).Bytes()
		if errors.Is(err, redis.Nil) {
			return ErrNotBuilt
		}
		return err
	})
	return b, err
}
