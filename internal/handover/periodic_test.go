package handover_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/periodic"
	"github.com/collegematch/matching/internal/testutil"
)

// The worker's periodic jobs run under handover.Leader (periodic.Lease);
// these tests run periodic.Runner on it against a real Redis. They live
// here because this package's Redis DB is the one for the leader's keys.

// replica runs one job under its own leader until stopped, counting its
// passes.
type replica struct {
	passes  atomic.Int64
	stop    context.CancelFunc
	stopped chan struct{}
}

func startReplica(t *testing.T, lease periodic.Lease, cfg periodic.Config, pass func(ctx context.Context) error) *replica {
	t.Helper()
	cfg.Lease, cfg.Log = lease, testutil.Logger(t)
	r := periodic.New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	rep := &replica{stop: cancel, stopped: make(chan struct{})}
	go func() {
		defer close(rep.stopped)
		r.Run(ctx, func(ctx context.Context) error {
			_, err := r.Do(ctx, func(ctx context.Context) error {
				rep.passes.Add(1)
				if pass != nil {
					return pass(ctx)
				}
				return nil
			})
			return err
		})
	}()
	t.Cleanup(func() { rep.halt(t) })
	return rep
}

// halt stops the replica and waits for Run to return.
func (r *replica) halt(t *testing.T) {
	t.Helper()
	r.stop()
	select {
	case <-r.stopped:
	case <-time.After(2 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

// Of two replicas running the same job, one runs every pass and the other
// none; when the holder stops, it releases the lease and the other takes
// over at its next pass, long before the lease would have expired.
func TestPeriodicJobRunsInOneReplicaAndPassesOnWhenItStops(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBHandover)
	cfg := periodic.Config{Name: "job", Interval: 30 * time.Millisecond, TTL: 10 * time.Second}
	a := startReplica(t, handover.NewLeader(rdb, "a"), cfg, nil)
	require.Eventually(t, func() bool { return a.passes.Load() > 0 }, 2*time.Second, 5*time.Millisecond)
	b := startReplica(t, handover.NewLeader(rdb, "b"), cfg, nil)

	time.Sleep(300 * time.Millisecond) // about ten passes
	assert.GreaterOrEqual(t, a.passes.Load(), int64(5), "the holder runs every pass")
	assert.Zero(t, b.passes.Load(), "the other runs none")
	assert.Equal(t, "a", rdb.Get(context.Background(), "lead:job").Val())

	stopped := time.Now()
	a.halt(t)
	require.Eventually(t, func() bool { return b.passes.Load() > 0 }, 2*time.Second, 5*time.Millisecond)
	assert.Less(t, time.Since(stopped), time.Second, "released on stop: taken over at once, not after the 10 s TTL")
	b.halt(t)
	assert.Zero(t, rdb.Exists(context.Background(), "lead:job").Val(), "released when the last one stops")
}

// A holder that dies (it stops renewing without releasing) keeps the job
// until its lease expires; then another replica takes it over.
func TestPeriodicJobTakenOverWhenTheLeaseExpires(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBHandover)
	const ttl = 400 * time.Millisecond
	held, err := handover.NewLeader(rdb, "dead").Hold(context.Background(), "job", ttl)
	require.NoError(t, err)
	require.True(t, held)
	since := time.Now()

	b := startReplica(t, handover.NewLeader(rdb, "b"), periodic.Config{Name: "job", Interval: 20 * time.Millisecond, TTL: ttl}, nil)
	require.Eventually(t, func() bool { return b.passes.Load() > 0 }, 3*time.Second, 5*time.Millisecond)
	took := time.Since(since)
	assert.GreaterOrEqual(t, took, ttl-50*time.Millisecond, "not before the dead holder's lease expired")
	assert.Less(t, took, ttl+500*time.Millisecond, "soon after")
}

// A pass that fails does not stop the loop; the next pass runs on time.
func TestPeriodicJobGoesOnAfterAFailedPass(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBHandover)
	fail := errors.New("the database is down")
	a := startReplica(t, handover.NewLeader(rdb, "a"), periodic.Config{Name: "job", Interval: 20 * time.Millisecond},
		func(context.Context) error { return fail })
	require.Eventually(t, func() bool { return a.passes.Load() >= 5 }, 2*time.Second, 5*time.Millisecond)
}

// A pass that outlives a third of the TTL keeps the lease (it is renewed
// while the pass runs); a pass whose lease another replica took ends, its
// context cancelled with ErrLeaseLost.
func TestPeriodicPassRenewsItsLeaseAndEndsWhenItIsLost(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBHandover)
	ctx := context.Background()
	const ttl = 300 * time.Millisecond
	r := periodic.New(periodic.Config{Name: "job", Interval: ttl / 2, TTL: ttl, Lease: handover.NewLeader(rdb, "a"),
		Log: testutil.Logger(t)})
	other := handover.NewLeader(rdb, "b")

	ran, err := r.Do(ctx, func(ctx context.Context) error {
		time.Sleep(3 * ttl) // three TTLs: without renewal the lease would lapse
		held, err := other.Hold(ctx, "job", ttl)
		require.NoError(t, err)
		assert.False(t, held, "renewed while the pass runs")
		return nil
	})
	require.NoError(t, err)
	require.True(t, ran)

	ran, err = r.Do(ctx, func(ctx context.Context) error {
		// Another replica takes the lease (this one's renewals did not
		// reach Redis in time).
		require.NoError(t, rdb.Set(ctx, "lead:job", "b", time.Minute).Err())
		select {
		case <-ctx.Done():
			assert.ErrorIs(t, context.Cause(ctx), periodic.ErrLeaseLost)
			return context.Cause(ctx)
		case <-time.After(3 * ttl):
			return errors.New("the pass went on after its lease was lost")
		}
	})
	require.True(t, ran)
	assert.ErrorIs(t, err, periodic.ErrLeaseLost)

	ran, err = r.Do(ctx, func(context.Context) error { panic("another replica holds the lease") })
	require.NoError(t, err)
	assert.False(t, ran)
}

// Without a lease every replica runs every pass (the outbox relay: its
// replicas share the work).
func TestPeriodicJobWithoutALeaseRunsEverywhere(t *testing.T) {
	cfg := periodic.Config{Name: "job", Interval: 20 * time.Millisecond}
	a := startReplica(t, nil, cfg, nil)
	b := startReplica(t, nil, cfg, nil)
	require.Eventually(t, func() bool { return a.passes.Load() >= 3 && b.passes.Load() >= 3 }, 2*time.Second, 5*time.Millisecond)
}
