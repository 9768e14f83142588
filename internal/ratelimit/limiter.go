package ratelimit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strings"
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
// little: each call is bounded by CallTimeout, and after a failure the
// limiter answers ErrUnavailable at once for RetryAfterFailure before it
// tries Redis again. The caller decides whether that lets requests through.
type Limiter struct {
	rl      *redis_rate.Limiter
	limits  map[Group]redis_rate.Limit
	now     func() time.Time
	breaker *breaker.Breaker
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
	return &Limiter{rl: redis_rate.NewLimiter(rdb), limits: limits, now: time.Now,
		breaker: breaker.New(CallTimeout, RetryAfterFailure)}
}

// Key is the Redis key (after redis_rate's "rate:" prefix) counting group
// for key; the hash tag keeps a student's keys on one cluster slot.
//
// key is canonicalised first: a student token may name its own id in any
// letter case (ids compare case-insensitively), and every spelling of one
// UUID must count against one budget. Keys that are not UUIDs are
// lower-cased, and long ones hashed so a caller cannot make huge keys.
func Key(group Group, key string) string {
	if id, err := uuid.Parse(key); err == nil {
		key = id.String()
	} else {
		key = strings.ToLower(key)
		if len(key) > 64 {
			sum := sha256.Sum256([]byte(key))
			key = "sha256-" + hex.EncodeToString(sum[:])
		}
	}
	return "v1:" + string(group) + ":{student:" + key + "}"
}

// Allow counts one request of group for key (the acting student).
func (l *Limiter) Allow(ctx context.Context, group Group, key string) (Decision, error) {
	lim, ok := l.limits[group]
	if !ok {
		return Decision{}, fmt.Errorf("ratelimit: unknown group %q", group)
	}
	var res *redis_rate.Result
	err := l.breaker.Do(ctx, func(ctx context.Context) (err error) {
		res, err = l.rl.Allow(ctx, Key(group, key), lim)
		return err
	}, nil)
	if err != nil {
		return Decision{}, fmt.Errorf("ratelimit %s: %w", group, err)
	}
	d := Decision{
		Allowed:    res.Allowed > 0,
		Limit:      lim.Rate,
		ResetAt:    l.now().Add(res.ResetAfter),
		RetryAfter: max(res.RetryAfter, 0),
	}
	if d.Allowed {
		d.Remaining = remaining(lim, res.ResetAfter)
	}
	return d, nil
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
