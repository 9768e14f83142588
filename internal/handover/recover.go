package handover

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/encoding/protowire"
)

// A task left "active" by a worker that can no longer finish it is
// recovered by asynq's own recoverer once its lease is 30 s past its end,
// looking once a minute: up to two minutes after the lease began. A
// worker leaves such tasks behind more often than one might think: when
// Redis fails the write that ends a task (Done, Retry) asynq retries that
// write with a context it has already cancelled, so the task stays active
// whatever becomes of Redis (every task ended during a Redis blip). The
// work is not lost, but a webhook's attempt or a learn drain waits those
// two minutes, and nothing else can queue the task meanwhile, since its id
// is taken. RecoverExpired does the recoverer's work as soon as a lease is
// safely over.

// leaseExpired lists up to ARGV[2] tasks of a queue whose lease ended at
// or before ARGV[1], each as its id and its message (false when the task
// hash has none).
var leaseExpired = redis.NewScript(`
local ids = redis.call("ZRANGEBYSCORE", KEYS[1], "-inf", ARGV[1], "LIMIT", 0, tonumber(ARGV[2]))
local out = {}
for _, id in ipairs(ids) do
	table.insert(out, id)
	table.insert(out, redis.call("HGET", ARGV[3] .. id, "msg") or "")
end
return out
`)

// requeueExpired moves one task whose lease ended at or before ARGV[2]
// from active back to pending with the message ARGV[3] (its retry
// counted), or to the archive when ARGV[5] is 1 (its retries are used
// up). A task whose lease was renewed meanwhile is left alone (0); a
// lease whose task already left active is dropped (0); a task whose
// message is missing or unreadable cannot run and is deleted (0). KEYS:
// active, lease, task hash, pending, archived.
var requeueExpired = redis.NewScript(`
local s = redis.call("ZSCORE", KEYS[2], ARGV[1])
if not s or tonumber(s) > tonumber(ARGV[2]) then
	return 0
end
local taken = redis.call("LREM", KEYS[1], 0, ARGV[1])
redis.call("ZREM", KEYS[2], ARGV[1])
if taken == 0 then
	return 0
end
if ARGV[3] == "" then
	redis.call("DEL", KEYS[3])
	return 0
end
if ARGV[5] == "1" then
	redis.call("HSET", KEYS[3], "msg", ARGV[3], "state", "archived")
	redis.call("ZADD", KEYS[5], ARGV[4], ARGV[1])
	return -1
end
redis.call("HSET", KEYS[3], "msg", ARGV[3], "state", "pending", "pending_since", ARGV[6])
redis.call("LPUSH", KEYS[4], ARGV[1])
return 1
`)

// Recovered counts what RecoverExpired did.
type Recovered struct {
	Requeued int // tasks put back in the pending list, their retry counted
	Archived int // tasks whose retries were used up, archived as asynq does
}

// RecoverExpired puts back in queue's pending list, at most limit at a
// time, the active tasks whose lease ended at or before cutoff: their
// worker stopped renewing it (it died, or lost the task when Redis failed
// the write that would have ended it), and a task whose lease is over is
// no longer run by anyone (asynq's worker cancels a handler whose lease
// it could not renew, at its next heartbeat, up to 5 s after the lease
// ended). As asynq's recoverer does, the run counts as a failed one: the
// task's retry count goes up and the error says why, and a task whose
// retries are used up is archived (without asynq's processed and failed
// counts, and left to asynq's own trimming of the archive). The task goes
// back to pending at once, not after its retry delay: it has waited out
// its lease already. cutoff must leave a margin under now for that
// heartbeat and for clocks apart: a lease is set by the clock of the
// worker that holds it.
func RecoverExpired(ctx context.Context, rdb redis.UniversalClient, queue string, cutoff time.Time, limit int) (Recovered, error) {
	var out Recovered
	prefix := "asynq:{" + queue + "}:"
	var list *redis.Cmd
	err := Exec(ctx, rdb, []*redis.Script{leaseExpired}, func(pipe redis.Pipeliner) error {
		list = leaseExpired.EvalSha(ctx, pipe, []string{prefix + "lease"}, cutoff.Unix(), limit, prefix+"t:")
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("list expired leases of queue %s: %w", queue, err)
	}
	pairs, err := list.StringSlice()
	if err != nil {
		return out, fmt.Errorf("list expired leases of queue %s: %w", queue, err)
	}
	if len(pairs) == 0 {
		return out, nil
	}
	now := time.Now()
	cmds := make([]*redis.Cmd, 0, len(pairs)/2)
	err = Exec(ctx, rdb, []*redis.Script{requeueExpired}, func(pipe redis.Pipeliner) error {
		cmds = cmds[:0]
		for i := 0; i+1 < len(pairs); i += 2 {
			id, msg := pairs[i], pairs[i+1]
			var next []byte // empty: the task cannot run, and is deleted
			archive := "0"
			if msg != "" {
				var exhausted, ok bool
				next, exhausted, ok = failedRun([]byte(msg), "lease expired: the worker running the task stopped renewing it", now)
				switch {
				case !ok:
					next = nil
				case exhausted:
					archive = "1"
				}
			}
			cmds = append(cmds, requeueExpired.EvalSha(ctx, pipe,
				[]string{prefix + "active", prefix + "lease", prefix + "t:" + id, prefix + "pending", prefix + "archived"},
				id, cutoff.Unix(), next, now.Unix(), archive, strconv.FormatInt(now.UnixNano(), 10)))
		}
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("recover expired tasks of queue %s: %w", queue, err)
	}
	for _, c := range cmds {
		n, err := c.Int()
		if err != nil {
			return out, fmt.Errorf("recover expired tasks of queue %s: %w", queue, err)
		}
		switch {
		case n > 0:
			out.Requeued++
		case n < 0:
			out.Archived++
		}
	}
	return out, nil
}

// failedRun rewrites asynq's task message msg as asynq records a failed
// run: the error and the time of the failure set and, unless its retries
// were used up already (exhausted: it is archived, as asynq's Archive
// leaves the count), retried one more. ok is false when msg is not a
// message this code can read (asynq could not either).
func failedRun(msg []byte, why string, now time.Time) (out []byte, exhausted, ok bool) {
	var retry, retried uint64
	out = make([]byte, 0, len(msg)+len(why)+16)
	for b := msg; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, false, false
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil, false, false
		}
		field := b[:n+m]
		b = b[n+m:]
		switch num {
		case 5, 6: // retry, retried
			v, k := protowire.ConsumeVarint(field[n:])
			if typ != protowire.VarintType || k < 0 {
				return nil, false, false
			}
			if num == 5 {
				retry = v
				out = append(out, field...)
			} else {
				retried = v
			}
		case 7, 11: // error_msg, last_failed_at: set below
		default:
			out = append(out, field...)
		}
	}
	exhausted = int32(retried) >= int32(retry) // asynq's recoverer: no retry left before this run
	if !exhausted {
		retried++
	}
	out = protowire.AppendTag(out, 6, protowire.VarintType)
	out = protowire.AppendVarint(out, retried)
	out = protowire.AppendTag(out, 7, protowire.BytesType)
	out = protowire.AppendString(out, why)
	out = protowire.AppendTag(out, 11, protowire.VarintType)
	out = protowire.AppendVarint(out, uint64(now.Unix()))
	return out, exhausted, true
}
