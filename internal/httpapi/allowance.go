package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/collegematch/matching/internal/command"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/metrics"
	"github.com/collegematch/matching/internal/ratelimit"
)

// SwipeAllowance charges the swipes a request carries to the student's
// swipes allowance, one unit each, on the budget POST /swipe counts
// against (ratelimit.Limiter). The Limiter of Deps must implement it.
type SwipeAllowance interface {
	// AllowN spends n units or none.
	AllowN(ctx context.Context, group ratelimit.Group, key string, n int) (ratelimit.Decision, error)
	// AllowAtMost spends as many of n units as are left (Granted).
	AllowAtMost(ctx context.Context, group ratelimit.Group, key string, n int) (ratelimit.Decision, error)
}

// carriedAllowance charges the writes carried by POST /continuous-feed and
// POST /m/sync/push to the student's swipes allowance, and feedback
// comments (POST /feedback's and a push's) to the student's comment budget
// (docs/decisions.md, "Rate limiting"; docs/security.md). While Redis
// cannot count, the limiter counts the same allowances in the replica's
// memory (the decision says so, and is counted as the middleware's are),
// or, with RATE_LIMIT_FAIL_CLOSED, the request is 503 with nothing
// recorded.
type carriedAllowance struct {
	log        *slog.Logger
	limiter    SwipeAllowance
	m          *metrics.HTTP
	failClosed bool
}

// newCarriedAllowance charges with d.Limiter, which NewServer has checked
// implements SwipeAllowance.
func newCarriedAllowance(d Deps) carriedAllowance {
	l, _ := d.Limiter.(SwipeAllowance)
	return carriedAllowance{log: d.Log, limiter: l, m: d.Metrics, failClosed: d.RateLimits.FailClosed}
}

// all spends n units for the request's student, all or none. It reports
// whether the request may go on; otherwise it has answered: 429 with
// Retry-After when the allowance cannot cover n now, 503 when failing
// closed.
func (a carriedAllowance) all(w http.ResponseWriter, r *http.Request, n int) bool {
	if n <= 0 {
		return true
	}
	d, err := a.limiter.AllowN(r.Context(), ratelimit.GroupSwipes, studentFrom(r.Context()), n)
	if err = closedPolicy(d, err, a.failClosed); err != nil {
		return a.failed(w, r, ratelimit.GroupSwipes, err)
	}
	countFallback(a.m, ratelimit.GroupSwipes, d)
	if d.Allowed {
		return true
	}
	a.m.RateLimited.WithLabelValues(string(ratelimit.GroupSwipes)).Inc()
	secs := retrySeconds(d.RetryAfter)
	setRateHeaders(w.Header(), d)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	msg := fmt.Sprintf("the %d swipes sent along need %d of the swipes allowance, %d is left; retry in %d s",
		n, n, d.Remaining, secs)
	if n > d.Limit {
		msg = fmt.Sprintf("%d swipes sent along are more than the whole swipes allowance (%d); send at most %d at a time",
			n, d.Limit, d.Limit)
	}
	respondErr(w, r, a.log, &domain.Error{Kind: domain.KindRateLimited, Code: domain.CodeRateLimited, Message: msg,
		Details: map[string]any{"group": string(ratelimit.GroupSwipes), "limit": d.Limit, "swipes": n,
			"retry_after_seconds": secs}})
	return false
}

// atMost spends up to n units of group for the request's student and
// returns how many may be used (-1: no limit, the limiter could not count)
// and, when fewer than n, how long until the rest may be. ok is false when
// it has answered (503, failing closed).
func (a carriedAllowance) atMost(w http.ResponseWriter, r *http.Request, group ratelimit.Group, n int) (allowance int, retryAfter time.Duration, ok bool) {
	if n <= 0 {
		return 0, 0, true
	}
	d, err := a.limiter.AllowAtMost(r.Context(), group, studentFrom(r.Context()), n)
	if err = closedPolicy(d, err, a.failClosed); err != nil {
		return -1, 0, a.failed(w, r, group, err)
	}
	countFallback(a.m, group, d)
	if !d.Allowed {
		// Counted as rate-limited by the caller, once a change was refused:
		// the ones beyond the allowance may have been invalid anyway.
		return d.Granted, d.RetryAfter, true
	}
	return d.Granted, 0, true
}

// pushLimits is what a sync push's allowances left out.
type pushLimits struct {
	limited    []bool // by change: refused for an allowance
	retryAfter time.Duration
	// groups whose allowance refused a change, for the rate-limited count
	units, bytes bool
}

// push charges a sync push's changes (command.Charges, in the order sent):
// one unit of the swipes allowance each, while it lasts; then, for the
// feedback changes that got their unit, their comments' bytes of the
// comment budget, each comment whole or not at all. A change either
// allowance refuses is marked limited. ok is false when it has answered
// (503, failing closed). A feedback refused for its comment has spent its
// unit: that happens only to a student past the comment budget.
func (a carriedAllowance) push(w http.ResponseWriter, r *http.Request, n int, charges []command.Charge) (pushLimits, bool) {
	var out pushLimits
	if len(charges) == 0 {
		return out, true
	}
	units, wait, ok := a.atMost(w, r, ratelimit.GroupSwipes, len(charges))
	if !ok {
		return out, false
	}
	out.limited = make([]bool, n)
	bytes := 0
	for k, c := range charges {
		if units >= 0 && k >= units {
			out.limited[c.Index], out.units = true, true
			continue
		}
		bytes += c.CommentBytes
	}
	out.retryAfter = wait
	granted, wait, ok := a.atMost(w, r, ratelimit.GroupCommentBytes, bytes)
	if !ok {
		return out, false
	}
	if granted < 0 || granted >= bytes {
		return out, true
	}
	used := 0
	for _, c := range charges {
		if out.limited[c.Index] || c.CommentBytes == 0 {
			continue
		}
		if used+c.CommentBytes > granted {
			out.limited[c.Index], out.bytes = true, true
			continue
		}
		used += c.CommentBytes
	}
	out.retryAfter = max(out.retryAfter, wait)
	return out, true
}

// comment charges a comment of n bytes (POST /feedback) to the student's
// comment budget, all or none. It reports whether the request may go on;
// otherwise it has answered: 429 with Retry-After, or 503 when failing
// closed.
func (a carriedAllowance) comment(w http.ResponseWriter, r *http.Request, n int) bool {
	if n <= 0 {
		return true
	}
	group := ratelimit.GroupCommentBytes
	d, err := a.limiter.AllowN(r.Context(), group, studentFrom(r.Context()), n)
	if err = closedPolicy(d, err, a.failClosed); err != nil {
		return a.failed(w, r, group, err)
	}
	countFallback(a.m, group, d)
	if d.Allowed {
		return true
	}
	a.m.RateLimited.WithLabelValues(string(group)).Inc()
	secs := retrySeconds(d.RetryAfter)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	respondErr(w, r, a.log, &domain.Error{Kind: domain.KindRateLimited, Code: domain.CodeRateLimited,
		Message: fmt.Sprintf("the comment's %d bytes are more than the %d bytes of comments left this minute; retry in %d s",
			n, d.Remaining, secs),
		Details: map[string]any{"group": string(group), "limit": d.Limit, "comment_bytes": n, "retry_after_seconds": secs}})
	return false
}

// limited counts a request some of whose changes an allowance refused.
func (a carriedAllowance) limited(l pushLimits) {
	if l.units {
		a.m.RateLimited.WithLabelValues(string(ratelimit.GroupSwipes)).Inc()
	}
	if l.bytes {
		a.m.RateLimited.WithLabelValues(string(ratelimit.GroupCommentBytes)).Inc()
	}
}

// failed applies the fail-open/closed policy to a limiter error and
// reports whether the request may go on.
func (a carriedAllowance) failed(w http.ResponseWriter, r *http.Request, g ratelimit.Group, err error) bool {
	if domain.ClientGone(r.Context(), err) {
		respondErr(w, r, a.log, err) // the client left; see admit
		return false
	}
	group := string(g)
	if a.failClosed {
		a.m.RateLimitFailure.WithLabelValues(group, "denied").Inc()
		respondErr(w, r, a.log, domain.Unavailable("rate limiting", err))
		return false
	}
	a.m.RateLimitFailure.WithLabelValues(group, "allowed").Inc()
	if !errors.Is(err, ratelimit.ErrUnavailable) {
		a.log.WarnContext(r.Context(), "rate limiter unavailable, recording carried writes without a limit",
			"group", group, "request_id", RequestIDFrom(r.Context()), "err", err)
	}
	return true
}

// retrySeconds is a Retry-After in whole seconds, rounded up, at least 1.
func retrySeconds(d time.Duration) int {
	return max(int(math.Ceil(d.Seconds())), 1)
}
