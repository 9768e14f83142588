package handover_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/testutil"
)

// markDrain marks member pending in the drain name of queue "critical" at
// version score, as a write does.
func markDrain(t *testing.T, rdb redis.UniversalClient, name, member string, score int64) {
	t.Helper()
	ctx := context.Background()
	q := handover.NewQueuer()
	require.NoError(t, handover.Exec(ctx, rdb, nil, func(pipe redis.Pipeliner) error {
		_, err := q.Queue(ctx, pipe, handover.Job{ID: fmt.Sprintf("drain:%s:%s:%d", name, member, score), Type: "test:drain",
			Queue: "critical", Drain: &handover.DrainMark{Name: name, Member: member, Score: score, ArmFor: time.Minute}})
		return err
	}))
}

func members(batch []handover.Pending) []string {
	out := make([]string, len(batch))
	for i, p := range batch {
		out[i] = p.Member
	}
	return out
}

// A drain's batches take the members that have waited longest, whatever
// their versions: a member marked again and again (an active student, its
// version climbing) is not pushed behind everyone marked after it.
func TestDrainBatchesTakeThoseWaitingLongest(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBHandover)
	ctx := context.Background()
	d := handover.NewDrain(rdb, "critical", "order", time.Minute)
	markDrain(t, rdb, "order", "busy", 90) // a high version, marked first
	time.Sleep(2 * time.Millisecond)
	markDrain(t, rdb, "order", "quiet", 1)
	time.Sleep(2 * time.Millisecond)
	markDrain(t, rdb, "order", "new", 5)

	batch, err := d.Next(ctx, nil, 1)
	require.NoError(t, err)
	require.Equal(t, []handover.Pending{{Member: "busy", Score: 90}}, batch, "first marked, first taken")

	// busy is marked again while its batch runs: the batch covers version
	// 90 only, so busy stays pending, and now waits behind the others.
	time.Sleep(2 * time.Millisecond)
	markDrain(t, rdb, "order", "busy", 91)
	batch, err = d.Next(ctx, batch, 2)
	require.NoError(t, err)
	assert.Equal(t, []string{"quiet", "new"}, members(batch))
	batch, err = d.Next(ctx, batch, 5)
	require.NoError(t, err)
	assert.Equal(t, []handover.Pending{{Member: "busy", Score: 91}}, batch)
	batch, err = d.Next(ctx, batch, 5)
	require.NoError(t, err)
	assert.Empty(t, batch, "all covered: the drain disarms")
	pending, armed := handover.DrainKeys("critical", "order")
	n, err := rdb.Exists(ctx, pending, armed, handover.DrainOrder(pending)).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "nothing left behind")
}

// Under a load the drain cannot keep up with, every member is taken within
// one pass over those pending: a member marked again after each of its
// batches still comes round, behind only the members already waiting.
func TestDrainServesEveryMemberUnderALoadItCannotKeepUpWith(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBHandover)
	ctx := context.Background()
	d := handover.NewDrain(rdb, "critical", "load", time.Minute)
	version := map[string]int64{}
	mark := func(m string) {
		version[m]++
		markDrain(t, rdb, "load", m, version[m])
	}
	const students = 20
	for i := range students {
		mark(fmt.Sprintf("s%02d", i))
	}
	waited := map[string]int{} // batches since the member was last taken
	var batch []handover.Pending
	for round := range 60 {
		var err error
		batch, err = d.Next(ctx, batch, 3)
		require.NoError(t, err)
		require.NotEmpty(t, batch, "round %d", round)
		taken := map[string]bool{}
		for _, p := range batch {
			taken[p.Member] = true
		}
		for i := range students {
			m := fmt.Sprintf("s%02d", i)
			if taken[m] {
				waited[m] = 0
			} else {
				waited[m]++
				require.LessOrEqual(t, waited[m], students/3+1, "round %d: %s waits behind members marked after it", round, m)
			}
		}
		// Every student swipes again before the batch is done, the
		// lowest-numbered ones (lowest versions no longer) most.
		for i := range students {
			mark(fmt.Sprintf("s%02d", i))
		}
		mark("s00")
		mark("s01")
	}
}

// A member pending without an order entry, as a write of an earlier
// release marks it, is still drained (once the members in order are, or
// at once when fewer are in order than pending); an order entry whose
// member is no longer pending (an erased student's) is dropped.
func TestDrainTakesMarksWithoutAnOrderAndDropsOrdersWithoutAMark(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBHandover)
	ctx := context.Background()
	d := handover.NewDrain(rdb, "critical", "mixed", time.Minute)
	pending, _ := handover.DrainKeys("critical", "mixed")
	order := handover.DrainOrder(pending)
	markDrain(t, rdb, "mixed", "current", 3)
	require.NoError(t, rdb.ZAdd(ctx, pending, redis.Z{Score: 7, Member: "earlier"}).Err())
	require.NoError(t, rdb.ZAdd(ctx, order, redis.Z{Score: 1, Member: "erased"}).Err())

	batch, err := d.Next(ctx, nil, 10)
	require.NoError(t, err)
	assert.Equal(t, []handover.Pending{{Member: "current", Score: 3}}, batch)
	batch, err = d.Next(ctx, batch, 10)
	require.NoError(t, err)
	assert.Equal(t, []handover.Pending{{Member: "earlier", Score: 7}}, batch, "given an order when nothing else is left")
	batch, err = d.Next(ctx, batch, 10)
	require.NoError(t, err)
	assert.Empty(t, batch)
	n, err := rdb.Exists(ctx, pending, order).Result()
	require.NoError(t, err)
	assert.Zero(t, n)
}

// Order entries whose member is no longer pending are dropped wherever
// they stand, and the members behind them taken; past four batches' worth
// of them in one call, the batch takes the lowest versions pending rather
// than come back empty (which would disarm a drain with members pending).
// The order set keeps its time to live.
func TestDrainSkipsStaleOrderEntries(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBHandover)
	ctx := context.Background()
	d := handover.NewDrain(rdb, "critical", "stale", time.Minute)
	pending, armed := handover.DrainKeys("critical", "stale")
	order := handover.DrainOrder(pending)
	markDrain(t, rdb, "stale", "a", 1)
	markDrain(t, rdb, "stale", "b", 2)
	// A stale entry between a and b, then a's and b's times set around it.
	require.NoError(t, rdb.ZAdd(ctx, order, redis.Z{Score: 10, Member: "a"}, redis.Z{Score: 20, Member: "gone"},
		redis.Z{Score: 30, Member: "b"}).Err())
	batch, err := d.Next(ctx, nil, 2)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, members(batch))
	ttl, err := rdb.PTTL(ctx, order).Result()
	require.NoError(t, err)
	assert.Positive(t, ttl, "the order set expires with the pending set")
	_, err = rdb.ZScore(ctx, order, "gone").Result()
	assert.ErrorIs(t, err, redis.Nil, "the stale entry is dropped")

	// Twenty stale entries ahead of c, a batch of 2 drops at most 8 of
	// them: it takes the lowest versions pending instead, and stays armed.
	batch, err = d.Next(ctx, batch, 2)
	require.NoError(t, err)
	assert.Empty(t, batch)
	markDrain(t, rdb, "stale", "c", 5)
	stale := make([]redis.Z, 20)
	for i := range stale {
		stale[i] = redis.Z{Score: float64(i + 1), Member: fmt.Sprint("old", i)}
	}
	require.NoError(t, rdb.ZAdd(ctx, order, stale...).Err())
	batch, err = d.Next(ctx, nil, 2)
	require.NoError(t, err)
	assert.Equal(t, []handover.Pending{{Member: "c", Score: 5}}, batch)
	n, err := rdb.Exists(ctx, armed).Result()
	require.NoError(t, err)
	assert.EqualValues(t, 1, n, "still armed")
	left, err := rdb.ZCard(ctx, order).Result()
	require.NoError(t, err)
	assert.EqualValues(t, 20-8+1, left, "eight stale entries dropped, c's kept")
}

// Marks of an earlier release (pending, no order entry) are all taken, a
// bounded share of them given an order entry at each batch.
func TestDrainTakesEveryMarkOfAnEarlierRelease(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBHandover)
	ctx := context.Background()
	d := handover.NewDrain(rdb, "critical", "earlier", time.Minute)
	pending, _ := handover.DrainKeys("critical", "earlier")
	const marks = 50
	for i := range marks {
		require.NoError(t, rdb.ZAdd(ctx, pending, redis.Z{Score: float64(i + 1), Member: fmt.Sprint("m", i)}).Err())
	}
	seen := map[string]bool{}
	var batch []handover.Pending
	for range marks {
		var err error
		batch, err = d.Next(ctx, batch, 4)
		require.NoError(t, err)
		require.LessOrEqual(t, len(batch), 4)
		for _, p := range batch {
			seen[p.Member] = true
		}
		if len(batch) == 0 {
			break
		}
	}
	assert.Len(t, seen, marks, "every mark taken, the drain disarmed only after")
	n, err := rdb.Exists(ctx, pending).Result()
	require.NoError(t, err)
	assert.Zero(t, n)
}

// Marks an earlier release left at the lowest versions are taken within
// a bounded number of batches while new marks keep coming faster than
// batches clear them: the cursor that gives them an order entry sweeps
// the whole pending set.
func TestDrainTakesAnEarlierReleasesMarksWhileNewOnesKeepComing(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBHandover)
	ctx := context.Background()
	d := handover.NewDrain(rdb, "critical", "steady", time.Minute)
	pending, _ := handover.DrainKeys("critical", "steady")
	old := map[string]bool{}
	for i := range 40 {
		m := fmt.Sprint("old", i)
		old[m] = true
		require.NoError(t, rdb.ZAdd(ctx, pending, redis.Z{Score: 1, Member: m}).Err())
	}
	version := map[string]int64{}
	next := 0
	var batch []handover.Pending
	for call := range 120 {
		for range 10 { // new marks, more than a batch of 8 clears
			m := fmt.Sprint("new", next%200)
			next++
			version[m] += 100
			markDrain(t, rdb, "steady", m, version[m])
		}
		var err error
		batch, err = d.Next(ctx, batch, 8)
		require.NoError(t, err)
		for _, p := range batch {
			delete(old, p.Member)
		}
		if len(old) == 0 {
			t.Logf("the earlier release's 40 marks taken within %d batches", call+1)
			return
		}
	}
	t.Fatalf("%d of the earlier release's marks still waiting after 120 batches", len(old))
}
