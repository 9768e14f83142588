package cache

import (
	"context"
	"net"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// RoundTrips counts the calls a client makes to Redis as the network sees
// them: a command sent alone is one, and so is a pipeline or a transaction
// (MULTI ... EXEC), whatever it holds. Everything the client sends counts,
// the task queue's polling included when asynq was handed the client. A
// command go-redis retries counts once; on a Redis Cluster a pipeline
// whose keys live on several nodes counts once, though it makes a round
// trip to each.
type RoundTrips struct{ n atomic.Uint64 }

// CountRoundTrips adds a hook to rdb that counts its round trips from now
// on.
func CountRoundTrips(rdb redis.UniversalClient) *RoundTrips {
	rt := &RoundTrips{}
	rdb.AddHook(roundTripHook{rt})
	return rt
}

// Count is the number of round trips counted so far.
func (rt *RoundTrips) Count() uint64 { return rt.n.Load() }

type roundTripHook struct{ rt *RoundTrips }

func (h roundTripHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (h roundTripHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.rt.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h roundTripHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.rt.n.Add(1)
		return next(ctx, cmds)
	}
}
