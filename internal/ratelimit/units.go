package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/go-redis/redis_rate/v10"
)

// Requests that carry several units of a group's allowance (the swipes of
// a continuous-feed request or of a sync push, each a unit of the swipes
// allowance) are counted with AllowN or AllowAtMost, on the same keys and
// GCRA state as Allow: a unit spent one way is gone for every other.

// AllowN counts n units of group for key at once: all of them or none.
// When the allowance cannot cover n now, nothing is spent and RetryAfter
// is how long until it can; when n is more than the whole allowance it
// never can, and RetryAfter is how long until the allowance is full.
func (l *Limiter) AllowN(ctx context.Context, group Group, key string, n int) (Decision, error) {
	return l.units(ctx, group, key, n, false)
}

// AllowAtMost counts up to n units of group for key: as many as the
// allowance covers now, reported in Granted. When it covers fewer than n,
// Allowed is false and RetryAfter is how long until the rest (at most the
// whole allowance) is covered.
func (l *Limiter) AllowAtMost(ctx context.Context, group Group, key string, n int) (Decision, error) {
	return l.units(ctx, group, key, n, true)
}

func (l *Limiter) units(ctx context.Context, group Group, key string, n int, atMost bool) (Decision, error) {
	lim, ok := l.limits[group]
	if !ok {
		return Decision{}, fmt.Errorf("ratelimit: unknown group %q", group)
	}
	if n <= 0 {
		return Decision{Allowed: true, Limit: lim.Rate}, nil // nothing to count
	}
	interval := lim.Period / time.Duration(lim.Rate)
	if !atMost && n > lim.Burst {
		// The script would answer a wait after which n still does not
		// fit; spend nothing and say when the allowance is full.
		res, local, err := l.call(ctx, group, key, lim, 0, false)
		if err != nil {
			return Decision{}, err
		}
		return Decision{Limit: lim.Rate, Remaining: remaining(lim, res.ResetAfter), ResetAt: l.now().Add(res.ResetAfter),
			RetryAfter: max(res.ResetAfter, interval), Local: local}, nil
	}
	res, local, err := l.call(ctx, group, key, lim, n, atMost)
	if err != nil {
		return Decision{}, err
	}
	d := Decision{
		Granted:    res.Allowed,
		Allowed:    res.Allowed == n,
		Limit:      lim.Rate,
		ResetAt:    l.now().Add(res.ResetAfter),
		RetryAfter: max(res.RetryAfter, 0),
		Local:      local,
	}
	d.Remaining = remaining(lim, res.ResetAfter) // refused: what is left now
	if atMost && !d.Allowed {
		// The rest fits once that many units are back (one every
		// interval), or at most once the whole allowance is.
		need := min(n-d.Granted, lim.Burst)
		full := res.ResetAfter
		d.RetryAfter = max(full-time.Duration(lim.Burst-need)*interval, interval)
	}
	return d, nil
}

// call runs redis_rate's script for n units (0 only reads), bounded by the
// limiter's breaker; when Redis fails it counts in memory instead (local
// true), unless the limiter fails closed or the caller has gone.
func (l *Limiter) call(ctx context.Context, group Group, key string, lim redis_rate.Limit, n int, atMost bool) (*redis_rate.Result, bool, error) {
	var res *redis_rate.Result
	err := l.breaker.Do(ctx, func(ctx context.Context) (err error) {
		if atMost {
			res, err = l.rl.AllowAtMost(ctx, Key(group, key), lim, n)
		} else {
			res, err = l.rl.AllowN(ctx, Key(group, key), lim, n)
		}
		return err
	}, nil)
	if err != nil {
		if res, ok := l.fallback(ctx, group, key, lim, n, atMost, err); ok {
			return res, true, nil
		}
		return nil, false, fmt.Errorf("ratelimit %s: %w", group, err)
	}
	l.counted()
	return res, false, nil
}
