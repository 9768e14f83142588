package ratelimit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/collegematch/matching/internal/breaker"
	"github.com/collegematch/matching/internal/config"
)

// Limiter counts requests with redis_rate's GCRA script. The burst equals
// the allowance, so a student may spend a whole minute's budget at once and
// then gets one request back every period/N.
//
// Counting is on every request's path, so an unreachable Redis must cost
// little: each call is bounded by CallTimeout, and after a failure Redis is
// left alone for RetryAfterFailure before it is tried again.
//
// While Redis cannot count, limits do not vanish: unless the allowances
// fail closed (RATE_LIMIT_FAIL_CLOSED), the limiter counts them in the
// replica's own memory at the same rates (local), and its decisions say so
// (Decision.Local); a fleet of N replicas then lets a student through at
// most N times the allowance. It logs once when it starts counting in
// memory and once when Redis counts again. Failing closed, it answers the
// error (ErrUnavailable during the cool-down) and the caller refuses. A
// caller whose context has ended (a client that went away) gets its
// context's error, never a fallback: Redis is not to blame.
type Limiter struct {
	rl      *redis_rate.Limiter
	limits  map[Group]redis_rate.Limit
	now     func() time.Time
	breaker *breaker.Breaker
	local   *local // nil when failing closed
	log     *slog.Logger
	inLocal atomic.Bool // the last count was made in memory
}

const (
	// CallTimeout bounds one round trip to Redis.
	CallTimeout = 250 * time.Millisecond
	// RetryAfterFailure is how long Redis is left alone after a failed call.
	RetryAfterFailure = time.Second
)

// ErrUnavailable is returned, without trying Redis, shortly after a call failed.
var ErrUnavailable = breaker.ErrOpen

// Default allowances of each group (the specification's figures), used for
// any group whose configured allowance is unset.
var defaults = map[Group]config.Rate{
	GroupRecommendations: {N: 60, Period: time.Minute},
	GroupSwipes:          {N: 300, Period: time.Minute},
	GroupBatch:           {N: 20, Period: time.Minute},
	GroupDefault:         {N: 600, Period: time.Minute},
	GroupCommentBytes:    {N: config.DefaultCommentBytesPerMin, Period: time.Minute},
}

// New builds a limiter on rdb with the configured allowances. A group left
// unset (zero N or Period) gets its default allowance.
func New(rdb redis.UniversalClient, rl config.RateLimits) *Limiter {
	configured := map[Group]config.Rate{
		GroupRecommendations: rl.Recommendations,
		GroupSwipes:          rl.Swipes,
		GroupBatch:           rl.Batch,
		GroupDefault:         rl.Default,
		GroupCommentBytes:    {N: rl.CommentBytes, Period: time.Minute},
	}
	limits := make(map[Group]redis_rate.Limit, len(configured))
	for g, r := range configured {
		if r.N <= 0 || r.Period <= 0 {
			r = defaults[g]
		}
		limits[g] = redis_rate.Limit{Rate: r.N, Burst: r.N, Period: r.Period}
	}
	l := &Limiter{rl: redis_rate.NewLimiter(rdb), limits: limits, now: time.Now,
		breaker: breaker.New(CallTimeout, RetryAfterFailure), log: slog.New(slog.DiscardHandler)}
	if !rl.FailClosed {
		l.local = newLocal(func() time.Time { return l.now() })
	}
	return l
}

// SetLog gives the limiter the logger that says when it counts in memory.
func (l *Limiter) SetLog(log *slog.Logger) {
	if log != nil {
		l.log = log
	}
}

// fallback counts n units in memory after Redis failed with err, unless the
// limiter fails closed or the caller has gone (ok false: the caller gets
// the error).
func (l *Limiter) fallback(ctx context.Context, group Group, key string, lim redis_rate.Limit, n int, atMost bool, err error) (res *redis_rate.Result, ok bool) {
	if l.local == nil || ctx.Err() != nil {
		return nil, false
	}
	if l.inLocal.CompareAndSwap(false, true) {
		l.log.WarnContext(ctx, "rate limiter cannot reach Redis: each student's allowances are counted in this replica's memory "+
			"until Redis answers (a fleet of N replicas lets through up to N times the allowance)", "group", string(group), "err", err)
	}
	return l.local.take(Key(group, key), lim, n, atMost), true
}

// counted notes a count Redis made: the limiter left memory if it was
// there.
func (l *Limiter) counted() {
	if l.inLocal.Load() && l.inLocal.CompareAndSwap(true, false) {
		l.log.Info("rate limiter reaches Redis again: allowances are counted in Redis, shared by every replica")
	}
}

// Key is the Redis key (after redis_rate's "rate:" prefix) counting group
// for key; the hash tag keeps a student's keys on one cluster slot.
//
// key is canonicalised first: a student token may name its own id in any
// letter case (ids compare case-insensitively), and every spelling of one
// UUID must count against one budget. Keys that are not UUIDs are
// lower-cased, and long ones hashed so a caller cannot make huge keys.
func Key(group Group, key string) string {
	return "v1:" + string(group) + ":{student:" + canonicalKey(key) + "}"
}

// canonicalKey is key as Key counts it: a UUID in its canonical form (one
// already in it, the usual case, as it is), anything else lower-cased and,
// when long, hashed.
func canonicalKey(key string) string {
	if canonicalUUID(key) {
		return key
	}
	if id, err := uuid.Parse(key); err == nil {
		return id.String()
	}
	key = strings.ToLower(key)
	if len(key) > 64 {
		sum := sha256.Sum256([]byte(key))
		key = "sha256-" + hex.EncodeToString(sum[:])
	}
	return key
}

// Allow counts one request of group for key (the acting student).
func (l *Limiter) Allow(ctx context.Context, group Group, key string) (Decision, error) {
	lim, ok := l.limits[group]
	if !ok {
		return Decision{}, fmt.Errorf("ratelimit: unknown group %q", group)
	}
	res, local, err := l.call(ctx, group, key, lim, 1, false)
	if err != nil {
		return Decision{}, err
	}
	return decision(lim, res, local, l.now()), nil
}

// decision reads the answer of a count of one unit.
func decision(lim redis_rate.Limit, res *redis_rate.Result, local bool, now time.Time) Decision {
	d := Decision{
		Allowed:    res.Allowed > 0,
		Limit:      lim.Rate,
		ResetAt:    now.Add(res.ResetAfter),
		RetryAfter: max(res.RetryAfter, 0),
		Local:      local,
	}
	if d.Allowed {
		d.Remaining = remaining(lim, res.ResetAfter)
	}
	return d
}

// remaining is how many requests may still be made at once, derived from
// how long until the allowance is full again: each spent request holds
// back one emission interval (period/N). The script computes the same
// figure in floating point on a timestamp of about 2^28 s and truncates it,
// so where period/N is not exact in binary (600/min) it reports one too few
// on a fresh key; the small tolerance here absorbs that rounding.
func remaining(lim redis_rate.Limit, resetAfter time.Duration) int {
	interval := lim.Period.Seconds() / float64(lim.Rate)
	held := math.Ceil(resetAfter.Seconds()/interval - 1e-3)
	return min(max(lim.Burst-int(held), 0), lim.Burst)
}

// StudentKeys names the Redis keys counting a student's requests, one per
// group, as redis_rate stores them (with its "rate:" prefix). They carry
// the student's hash tag.
func StudentKeys(studentID string) []string {
	keys := make([]string, 0, len(defaults))
	for g := range defaults { // every group has a default allowance
		keys = append(keys, redisRatePrefix+Key(g, studentID))
	}
	slices.Sort(keys)
	return keys
}

// canonicalUUID reports whether s is a UUID in its canonical form, lower
// case 8-4-4-4-12 hex, as uuid.UUID.String writes it.
func canonicalUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}
