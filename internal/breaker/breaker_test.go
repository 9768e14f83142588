package breaker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var errDown = errors.New("connection refused")

func TestBreakerOpensForTheCoolDownAfterAFailure(t *testing.T) {
	now := time.Unix(1000, 0)
	b := New(50*time.Millisecond, time.Second)
	b.SetClock(func() time.Time { return now })
	ctx := context.Background()

	calls := 0
	fail := func(context.Context) error { calls++; return errDown }
	ok := func(context.Context) error { calls++; return nil }

	require.ErrorIs(t, b.Do(ctx, fail, nil), errDown)
	assert.True(t, b.Open())
	require.ErrorIs(t, b.Do(ctx, ok, nil), ErrOpen, "skipped during the cool-down")
	assert.Equal(t, 1, calls)

	now = now.Add(time.Second)
	require.NoError(t, b.Do(ctx, ok, nil), "tried again after it")
	assert.Equal(t, 2, calls)
	assert.False(t, b.Open())
}

func TestBreakerLeavesExpectedErrorsAndTheCallersOwnEnd(t *testing.T) {
	b := New(50*time.Millisecond, time.Second)
	missing := errors.New("nil")
	require.ErrorIs(t, b.Do(context.Background(), func(context.Context) error { return missing },
		func(err error) bool { return errors.Is(err, missing) }), missing)
	assert.False(t, b.Open(), "an expected answer is not a failure")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, b.Do(ctx, func(ctx context.Context) error { return ctx.Err() }, nil), context.Canceled)
	assert.False(t, b.Open(), "the caller went away: the dependency is not to blame")
}

func TestBreakerBoundsTheCall(t *testing.T) {
	b := New(30*time.Millisecond, time.Second)
	start := time.Now()
	err := b.Do(context.Background(), func(ctx context.Context) error {
		<-ctx.Done() // a dependency that never answers
		return ctx.Err()
	}, nil)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), time.Second)
	assert.True(t, b.Open(), "a timeout is the dependency's failure")
}
