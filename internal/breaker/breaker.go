// Package breaker bounds the calls a request makes to a shared dependency
// (Redis): each call gets a deadline, and after a call fails for a reason
// the caller did not cause, the breaker answers ErrOpen at once for a
// cool-down instead of letting every request wait out its own timeout.
// The cache's read models, the swipe's round trips and the rate limiters
// each hold one.
package breaker

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// ErrOpen is returned, without calling the dependency, during the
// cool-down after a failure.
var ErrOpen = errors.New("skipped after a recent failure")

// Breaker bounds calls: see the package comment. The zero value is not
// usable; use New.
type Breaker struct {
	timeout   time.Duration
	coolDown  time.Duration
	now       func() time.Time
	openUntil atomic.Int64 // Unix nanoseconds; calls are skipped before then
}

// New builds a breaker that gives each call timeout and, after a failure,
// skips calls for coolDown.
func New(timeout, coolDown time.Duration) *Breaker {
	if timeout <= 0 || coolDown < 0 {
		panic("breaker.New: non-positive timeout or negative cool-down")
	}
	return &Breaker{timeout: timeout, coolDown: coolDown, now: time.Now}
}

// Timeout is the deadline each call gets.
func (b *Breaker) Timeout() time.Duration { return b.timeout }

// Open reports whether calls are being skipped now.
func (b *Breaker) Open() bool {
	until := b.openUntil.Load()
	return until != 0 && b.now().UnixNano() < until
}

// Do runs fn with the call's deadline, unless the breaker is open (then it
// answers ErrOpen without calling fn). An error of fn opens the breaker
// unless expected says it is an answer rather than a failure (a missing
// key), or the caller's own context ended (the client went away: the
// dependency is not to blame). fn's error is returned as it is.
func (b *Breaker) Do(ctx context.Context, fn func(ctx context.Context) error, expected func(error) bool) error {
	if b.Open() {
		return ErrOpen
	}
	callCtx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	err := fn(callCtx)
	if err != nil && (expected == nil || !expected(err)) {
		b.Failed(ctx)
	}
	return err
}

// Failed opens the breaker for the cool-down, unless ctx (the caller's)
// has ended: for callers that run a call of their own with Timeout.
func (b *Breaker) Failed(ctx context.Context) {
	if ctx.Err() == nil {
		b.openUntil.Store(b.now().Add(b.coolDown).UnixNano())
	}
}

// SetClock replaces the breaker's clock (tests).
func (b *Breaker) SetClock(now func() time.Time) { b.now = now }
