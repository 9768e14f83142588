package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/collegematch/matching/internal/config"
)

// Limiter counts requests with redis_rate's GCRA script. The burst equals
// the allowance, so a student may spend a whole minute's budget at once and
// then gets one request back every period/N.
type Limiter struct {
	rl     *redis_rate.Limiter
	limits map[Group]redis_rate.Limit
	now    func() time.Time
}

// New builds a limiter on rdb with the configured allowances.
func New(rdb redis.UniversalClient, rl config.RateLimits) *Limiter {
	lim := func(r config.Rate) redis_rate.Limit {
		return redis_rate.Limit{Rate: r.N, Burst: r.N, Period: r.Period}
	}
	return &Limiter{
		rl: redis_rate.NewLimiter(rdb),
		limits: map[Group]redis_rate.Limit{
			GroupRecommendations: lim(rl.Recommendations),
			GroupSwipes:          lim(rl.Swipes),
			GroupBatch:           lim(rl.Batch),
			GroupDefault:         lim(rl.Default),
		},
		now: time.Now,
	}
}

// Key is the Redis key (after redis_rate's "rate:" prefix) counting group
// for key; the hash tag keeps a student's keys on one cluster slot.
func Key(group Group, key string) string {
	return "v1:" + string(group) + ":{student:" + key + "}"
}

// Allow counts one request of group for key (the acting student).
func (l *Limiter) Allow(ctx context.Context, group Group, key string) (Decision, error) {
	lim, ok := l.limits[group]
	if !ok {
		return Decision{}, fmt.Errorf("ratelimit: unknown group %q", group)
	}
	res, err := l.rl.Allow(ctx, Key(group, key), lim)
	if err != nil {
		return Decision{}, fmt.Errorf("ratelimit %s: %w", group, err)
	}
	return Decision{
		Allowed:    res.Allowed > 0,
		Limit:      lim.Rate,
		Remaining:  res.Remaining,
		ResetAt:    l.now().Add(res.ResetAfter),
		RetryAfter: max(res.RetryAfter, 0),
	}, nil
}
