package cache_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/testutil"
)

// A command sent alone is one round trip, a pipeline or a transaction is
// one whatever it holds, and a script that Redis did not have yet is two
// (EVALSHA refused, then EVAL). Opening a connection makes round trips of
// its own (HELLO, SELECT, CLIENT SETINFO), counted too: the test counts
// the connections the client opens and what one costs.
func TestRoundTripsCountWhatGoesOnTheWire(t *testing.T) {
	ctx := context.Background()
	rdb, _, err := cache.Open(ctx, testutil.RedisURLFor(t, testutil.RedisDBCache))
	require.NoError(t, err)
	defer rdb.Close()
	dials := &dialCounter{}
	rdb.AddHook(dials)
	rt := cache.CountRoundTrips(rdb)
	key := "{roundtrips-test}:k"
	t.Cleanup(func() { rdb.Del(context.Background(), key) })

	require.NoError(t, rdb.Ping(ctx).Err())
	require.EqualValues(t, 1, dials.n.Load())
	perDial := rt.Count() - 1
	assert.Positive(t, perDial, "a new connection's set-up is counted")
	sent := uint64(1) // the PING
	want := func() uint64 { return sent + perDial*dials.n.Load() }

	for range 3 {
		require.NoError(t, rdb.Set(ctx, key, "v", 0).Err())
	}
	sent += 3
	assert.Equal(t, want(), rt.Count(), "one per command")

	_, err = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for range 5 {
			p.Incr(ctx, key+"n")
		}
		p.Del(ctx, key+"n")
		return nil
	})
	require.NoError(t, err)
	sent++
	assert.Equal(t, want(), rt.Count(), "a pipeline is one")

	_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, key)
		p.Get(ctx, key)
		return nil
	})
	require.NoError(t, err)
	sent++
	assert.Equal(t, want(), rt.Count(), "a transaction is one")

	script := redis.NewScript(`return redis.call('GET', KEYS[1]) .. ARGV[1]`)
	require.NoError(t, rdb.ScriptFlush(ctx).Err())
	require.Equal(t, "vx", script.Run(ctx, rdb, []string{key}, "x").Val())
	sent += 3
	assert.Equal(t, want(), rt.Count(), "SCRIPT FLUSH, then EVALSHA refused and EVAL")
	require.Equal(t, "vy", script.Run(ctx, rdb, []string{key}, "y").Val())
	sent++
	assert.Equal(t, want(), rt.Count(), "a script Redis holds is one")
}

type dialCounter struct{ n atomic.Uint64 }

func (d *dialCounter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		d.n.Add(1)
		return next(ctx, network, addr)
	}
}
func (d *dialCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (d *dialCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
