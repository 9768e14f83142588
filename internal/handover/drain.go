package handover

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// A drain is work that many writes ask for and one task does for all of
// them: each write marks its member (a student) as pending in the drain's
// sorted set, with a score (the student version it produced), and queues
// the drain's task only when no drain task is armed. The task takes the
// pending members in batches, does their work, and clears each member
// whose score its work covered; when the set is empty it disarms, in the
// same script that found it empty, so a write that comes after finds the
// drain disarmed and queues a new task, and a write that comes before is in
// the set the task is still draining. A burst of writes is so one task and
// a few batches, not one task per write.
//
// Batches take the members that have waited longest: a second sorted set
// (the order) keeps, for each pending member, when its wait began (the
// first mark not covered yet, in microseconds of the Redis server's
// clock, so that API and worker hosts' clocks do not matter). The
// versions cannot order them: a member marked again keeps the higher
// version, so under a load the drain cannot keep up with, the most active
// members would wait behind everyone else's for as long as the load
// lasts. A member a batch covered only in part (marked again meanwhile)
// waits from that batch on. What a release without the order set leaves
// behind costs each batch a bounded amount of work: pending members
// without an order entry (its marks) are given one as a cursor sweeps the
// pending set, a batch's worth of it per batch (so each within about as
// many batches as the set holds batches), and at once when no member in
// order is left; order entries whose member is no longer pending (cleared
// by its drains, or erased) are dropped, about four batches' worth per
// batch, after which the batch takes the lowest versions pending, so the
// drain never stalls or disarms while members are pending. The order
// follows the Redis server's clock: a clock stepped back lets new marks
// ahead of those waiting by as much.
//
// The pending set, the order set, the cursor and the arm key live in the
// drain queue's hash slot ({queue}, as asynq's own keys), so that marking,
// arming and queueing are one script on a Redis Cluster as well.

// DrainMark makes a Job the mark of one member of a drain: Queuer.Queue
// adds Member to the drain's pending set with Score (kept when higher
// already) and queues the Job (the drain's task, under a fresh id) only
// when it arms the drain.
type DrainMark struct {
	Name   string        // the drain: its pending set and arm key (DrainKeys)
	Member string        // what is pending
	Score  int64         // how far the member's work must go (higher wins)
	ArmFor time.Duration // how long the arm lasts without a drain renewing it
}

// DrainKeys are the pending set and the arm key of the drain named name
// whose task is queued to queue.
func DrainKeys(queue, name string) (pending, armed string) {
	base := "drain:{" + queue + "}:" + name
	return base + ":pending", base + ":armed"
}

// DrainOrder is the order set of the drain whose pending set is pending:
// when each pending member's wait began.
func DrainOrder(pending string) string {
	return strings.TrimSuffix(pending, ":pending") + ":order"
}

// drainMend is the cursor of the drain whose pending set is pending: how
// far its batches have gone through the pending set giving members
// without an order entry one.
func drainMend(pending string) string {
	return strings.TrimSuffix(pending, ":pending") + ":mend"
}

// PendingTTL is how long a drain's pending set lives after its last mark
// or batch: a drain that nobody runs for that long (no worker) lets its
// marks go, which are hints only (see the learn sweep).
const PendingTTL = time.Hour

// mark is a DrainMark: KEYS pending set, arm key, the task's hash, the
// queue's pending list, the order set; ARGV member, score, arm ms, task
// message, task id, now (ns), the pending set's TTL (ms). 1 when it armed
// the drain and queued the task, 0 otherwise. A member that was not
// pending starts its wait now in the order set (the server's time, in
// microseconds, written as digits: a Lua number would be formatted with 14
// significant digits); a member already pending keeps its place, and the
// mark costs no more than before the order set.
var mark = redis.NewScript(`
local cur = redis.call("ZSCORE", KEYS[1], ARGV[1])
if not cur then
	redis.call("ZADD", KEYS[1], ARGV[2], ARGV[1])
	local t = redis.call("TIME")
	redis.call("ZADD", KEYS[5], t[1] .. string.format("%06d", tonumber(t[2])), ARGV[1])
	redis.call("PEXPIRE", KEYS[5], ARGV[7])
elseif tonumber(cur) < tonumber(ARGV[2]) then
	redis.call("ZADD", KEYS[1], ARGV[2], ARGV[1])
end
redis.call("PEXPIRE", KEYS[1], ARGV[7])
if not redis.call("SET", KEYS[2], ARGV[5], "NX", "PX", ARGV[3]) then
	return 0
end
if redis.call("EXISTS", KEYS[3]) == 0 then
	redis.call("HSET", KEYS[3], "msg", ARGV[4], "state", "pending", "pending_since", ARGV[6])
	redis.call("LPUSH", KEYS[4], ARGV[5])
end
return 1
`)

// queueMark adds j's drain mark to pipe (see DrainMark).
func queueMark(ctx context.Context, pipe redis.Pipeliner, j Job) *redis.Cmd {
	d := j.Drain
	pending, armed := DrainKeys(j.Queue, d.Name)
	return mark.EvalSha(ctx, pipe, []string{pending, armed, taskKey(j.Queue, j.ID), pendingKey(j.Queue), DrainOrder(pending)},
		d.Member, d.Score, max(d.ArmFor.Milliseconds(), 1), message(j), j.ID,
		strconv.FormatInt(time.Now().UnixNano(), 10), PendingTTL.Milliseconds())
}

// Pending is a member of a drain's pending set and the score it had when
// read.
type Pending struct {
	Member string
	Score  int64
}

// Drain is the worker's side of a drain: it reads the pending members and
// clears those whose work is done.
type Drain struct {
	rdb            redis.UniversalClient
	pending, armed string
	armFor         time.Duration
}

// NewDrain is the drain named name whose task is queued to queue; armFor
// is how long each batch renews the arm for.
func NewDrain(rdb redis.UniversalClient, queue, name string, armFor time.Duration) *Drain {
	pending, armed := DrainKeys(queue, name)
	return &Drain{rdb: rdb, pending: pending, armed: armed, armFor: armFor}
}

// next clears the members ARGV[4..] whose score is at most the score that
// follows each (their work covered it); a member marked again meanwhile
// waits from now in the order set. It then returns the ARGV[1] members
// that have waited longest, with their scores, and renews the arm for
// ARGV[2] ms (and the sets for ARGV[3] ms); when none is pending it
// disarms. What a release without the order set left is mended a bounded
// share at a time (see the top of this file). KEYS pending set, arm key,
// order set, the mending cursor.
var next = redis.NewScript(`
local t = redis.call("TIME")
local now = t[1] .. string.format("%06d", tonumber(t[2]))
for i = 4, #ARGV, 2 do
	local cur = redis.call("ZSCORE", KEYS[1], ARGV[i])
	if cur and tonumber(cur) <= tonumber(ARGV[i + 1]) then
		redis.call("ZREM", KEYS[1], ARGV[i])
		redis.call("ZREM", KEYS[3], ARGV[i])
	elseif cur then
		redis.call("ZADD", KEYS[3], now, ARGV[i])
	else
		redis.call("ZREM", KEYS[3], ARGV[i])
	end
end
local n = tonumber(ARGV[1])
local card = redis.call("ZCARD", KEYS[1])
if card > 0 and redis.call("ZCARD", KEYS[3]) < card then
	local start = tonumber(redis.call("GET", KEYS[4]) or "0")
	if start >= card then
		start = 0
	end
	for _, m in ipairs(redis.call("ZRANGE", KEYS[1], start, start + n - 1)) do
		redis.call("ZADD", KEYS[3], "NX", now, m)
	end
	redis.call("SET", KEYS[4], start + n, "PX", ARGV[3])
end
local batch, taken, budget = {}, 0, 4 * n
while taken < n and budget > 0 do
	local ids = redis.call("ZRANGE", KEYS[3], taken, n - 1)
	if #ids == 0 then
		break
	end
	local gone = 0
	for _, m in ipairs(ids) do
		local v = redis.call("ZSCORE", KEYS[1], m)
		if v then
			batch[#batch + 1] = m
			batch[#batch + 1] = v
			taken = taken + 1
		else
			redis.call("ZREM", KEYS[3], m)
			gone = gone + 1
		end
	end
	if gone == 0 then
		break
	end
	budget = budget - gone
end
if #batch == 0 and card > 0 then
	local low = redis.call("ZRANGE", KEYS[1], 0, n - 1, "WITHSCORES")
	for i = 1, #low, 2 do
		redis.call("ZADD", KEYS[3], "NX", now, low[i])
		batch[#batch + 1] = low[i]
		batch[#batch + 1] = low[i + 1]
	end
end
if #batch == 0 then
	redis.call("UNLINK", KEYS[2], KEYS[3], KEYS[4])
else
	redis.call("PEXPIRE", KEYS[2], ARGV[2])
	redis.call("PEXPIRE", KEYS[1], ARGV[3])
	redis.call("PEXPIRE", KEYS[3], ARGV[3])
end
return batch
`)

// Next clears done (each member whose score is still at most the one
// given: a member marked again meanwhile stays, and waits from now) and
// returns up to n pending members, those that have waited longest first.
// When it returns none the drain is disarmed: the caller's task must end,
// since the next mark queues a new one. Otherwise the arm is renewed.
func (d *Drain) Next(ctx context.Context, done []Pending, n int) ([]Pending, error) {
	args := make([]any, 0, 3+2*len(done))
	args = append(args, max(n, 1), max(d.armFor.Milliseconds(), 1), PendingTTL.Milliseconds())
	for _, p := range done {
		args = append(args, p.Member, p.Score)
	}
	var cmd *redis.Cmd
	err := Exec(ctx, d.rdb, []*redis.Script{next}, func(pipe redis.Pipeliner) error {
		cmd = next.EvalSha(ctx, pipe, []string{d.pending, d.armed, DrainOrder(d.pending), drainMend(d.pending)}, args...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("drain %s: %w", d.pending, err)
	}
	flat, err := cmd.StringSlice()
	if err != nil {
		return nil, fmt.Errorf("drain %s: %w", d.pending, err)
	}
	out := make([]Pending, 0, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		score, err := strconv.ParseFloat(flat[i+1], 64)
		if err != nil {
			return nil, fmt.Errorf("drain %s: score %q: %w", d.pending, flat[i+1], err)
		}
		out = append(out, Pending{Member: flat[i], Score: int64(score)})
	}
	return out, nil
}
