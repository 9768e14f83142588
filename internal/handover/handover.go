// Package handover hands work to the worker fleet: it puts tasks in the
// asynq queues in the same Redis pipeline as other commands, so a writer
// that must also update a read model after its commit (the write side
// patching a student's feed) makes one round trip for both, and a relay
// hands over a whole batch in one.
//
// asynq's client enqueues one task per round trip, so the enqueue is done
// here, in asynq's own layout: the task hash asynq:{queue}:t:<id> (msg,
// state, pending_since) and the pending list asynq:{queue}:pending, with
// the task message encoded as asynq's TaskMessage protocol buffer. Those
// are internals of the asynq version go.mod pins (v0.26); the tests
// enqueue through here and run the tasks with a real asynq server and read
// them back with asynq's Inspector, so an upgrade that changes the layout
// fails them.
package handover

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/encoding/protowire"
)

// Job is one task to hand over, with the options asynq would take.
type Job struct {
	// ID is the task id: enqueueing an id the queue holds (pending,
	// scheduled, running, retrying, or completed within its retention)
	// does nothing.
	ID        string
	Type      string
	Payload   []byte
	Queue     string
	MaxRetry  int
	Timeout   time.Duration // asynq's per-task timeout; 0 means asynq's default (30 min)
	Retention time.Duration // how long a completed task (and so its id) is kept
	// Drain, when set, makes the job a drain's mark: its member joins the
	// drain's pending set, and the task (ID a fresh one) is queued only
	// when no drain task is armed (see DrainMark).
	Drain *DrainMark
	// ProcessAt, when set (and Drain is not), schedules the task: it waits
	// in the queue's scheduled set until then (asynq moves it to pending,
	// to the second).
	ProcessAt time.Time
}

// enqueue is asynq's enqueue script: a task whose id exists is left alone.
var enqueue = redis.NewScript(`
if redis.call("EXISTS", KEYS[1]) == 1 then
	return 0
end
redis.call("HSET", KEYS[1], "msg", ARGV[1], "state", "pending", "pending_since", ARGV[3])
redis.call("LPUSH", KEYS[2], ARGV[2])
return 1
`)

// schedule is asynq's schedule script: a task whose id exists is left
// alone.
var schedule = redis.NewScript(`
if redis.call("EXISTS", KEYS[1]) == 1 then
	return 0
end
redis.call("HSET", KEYS[1], "msg", ARGV[1], "state", "scheduled")
redis.call("ZADD", KEYS[2], ARGV[2], ARGV[3])
return 1
`)

// allQueues is asynq's set of queue names, which its Inspector lists.
const allQueues = "asynq:queues"

func taskKey(queue, id string) string { return "asynq:{" + queue + "}:t:" + id }
func pendingKey(queue string) string  { return "asynq:{" + queue + "}:pending" }
func scheduledKey(queue string) string {
	return "asynq:{" + queue + "}:scheduled"
}

// defaultTimeout is asynq's timeout for a task without one.
const defaultTimeout = 30 * time.Minute

// message encodes j as asynq's TaskMessage.
func message(j Job) []byte {
	timeout := j.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	b := make([]byte, 0, 64+len(j.Type)+len(j.Payload)+len(j.ID)+len(j.Queue))
	b = protowire.AppendTag(b, 1, protowire.BytesType) // type
	b = protowire.AppendString(b, j.Type)
	if len(j.Payload) > 0 {
		b = protowire.AppendTag(b, 2, protowire.BytesType) // payload
		b = protowire.AppendBytes(b, j.Payload)
	}
	b = protowire.AppendTag(b, 3, protowire.BytesType) // id
	b = protowire.AppendString(b, j.ID)
	b = protowire.AppendTag(b, 4, protowire.BytesType) // queue
	b = protowire.AppendString(b, j.Queue)
	if j.MaxRetry > 0 {
		b = protowire.AppendTag(b, 5, protowire.VarintType) // retry
		b = protowire.AppendVarint(b, uint64(int32(j.MaxRetry)))
	}
	b = protowire.AppendTag(b, 8, protowire.VarintType) // timeout, seconds
	b = protowire.AppendVarint(b, uint64(int64(timeout.Seconds())))
	if j.Retention > 0 {
		b = protowire.AppendTag(b, 12, protowire.VarintType) // retention, seconds
		b = protowire.AppendVarint(b, uint64(int64(j.Retention.Seconds())))
	}
	return b
}

// Queuer puts jobs in the queue within pipelines.
type Queuer struct {
	published sync.Map // queue name -> true once added to allQueues by this process
}

// NewQueuer makes a Queuer.
func NewQueuer() *Queuer { return &Queuer{} }

// Queue adds j's enqueue to pipe; the command's result, once the pipeline
// ran, says whether j was queued (1) or its id was there already (0): see
// Queued.
func (q *Queuer) Queue(ctx context.Context, pipe redis.Pipeliner, j Job) (*redis.Cmd, error) {
	if j.ID == "" || j.Type == "" || j.Queue == "" {
		return nil, fmt.Errorf("handover: job without id, type or queue: %+v", j)
	}
	if _, done := q.published.Load(j.Queue); !done {
		pipe.SAdd(ctx, allQueues, j.Queue)
		q.published.Store(j.Queue, true)
	}
	if j.Drain != nil {
		if j.Drain.Name == "" || j.Drain.Member == "" {
			return nil, fmt.Errorf("handover: drain mark without a name or member: %+v", j)
		}
		return queueMark(ctx, pipe, j), nil
	}
	if !j.ProcessAt.IsZero() {
		return schedule.EvalSha(ctx, pipe, []string{taskKey(j.Queue, j.ID), scheduledKey(j.Queue)},
			message(j), j.ProcessAt.Unix(), j.ID), nil
	}
	return enqueue.EvalSha(ctx, pipe, []string{taskKey(j.Queue, j.ID), pendingKey(j.Queue)},
		message(j), j.ID, strconv.FormatInt(time.Now().UnixNano(), 10)), nil
}

// Queued reads what Queue's command answered: queued is false when the id
// was in the queue already (a duplicate, which is success too), or, for a
// drain's mark, when a drain task was armed already.
func Queued(cmd *redis.Cmd) (queued bool, err error) {
	n, err := cmd.Int()
	return n == 1, err
}

// IsNoScript reports whether err says Redis did not know a script (its
// script cache is empty after a restart); Exec reruns such pipelines once
// with the scripts loaded.
func IsNoScript(err error) bool {
	return err != nil && len(err.Error()) >= 8 && err.Error()[:8] == "NOSCRIPT"
}

// Exec runs fill's commands as one pipeline. Scripts are sent by their
// hash (EVALSHA); when Redis answers that it does not know one (after a
// restart), the scripts are loaded and the pipeline runs again once, so
// a pipeline must be safe to run twice (every script here is), and fill
// may be called twice: it must set what it captures, not append to it.
func Exec(ctx context.Context, rdb redis.UniversalClient, scripts []*redis.Script, fill func(pipe redis.Pipeliner) error) error {
	return exec(ctx, rdb, rdb.Pipeline, scripts, fill)
}

// ExecTx is Exec with fill's commands in one MULTI/EXEC: no other client's
// command runs between them.
func ExecTx(ctx context.Context, rdb redis.UniversalClient, scripts []*redis.Script, fill func(pipe redis.Pipeliner) error) error {
	return exec(ctx, rdb, rdb.TxPipeline, scripts, fill)
}

func exec(ctx context.Context, rdb redis.UniversalClient, pipeline func() redis.Pipeliner, scripts []*redis.Script,
	fill func(pipe redis.Pipeliner) error) error {
	for attempt := 0; ; attempt++ {
		pipe := pipeline()
		if err := fill(pipe); err != nil {
			return err
		}
		cmds, err := pipe.Exec(ctx)
		noScript := false
		for _, c := range cmds {
			if IsNoScript(c.Err()) {
				noScript = true
			}
		}
		if !noScript || attempt > 0 {
			if errors.Is(err, redis.Nil) {
				err = nil // a read that found nothing: each command says so itself
			}
			return err
		}
		for _, s := range append(scripts, enqueue, mark, schedule) {
			if err := s.Load(ctx, rdb).Err(); err != nil {
				return err
			}
		}
	}
}

// Client queues jobs in one round trip (a relay's batch, a sweep's finds).
type Client struct {
	rdb    redis.UniversalClient
	queuer *Queuer
}

// NewClient makes a Client on rdb.
func NewClient(rdb redis.UniversalClient, queuer *Queuer) *Client {
	if rdb == nil || queuer == nil {
		panic("handover.NewClient: nil dependency")
	}
	return &Client{rdb: rdb, queuer: queuer}
}

// Queue queues jobs in one pipeline and reports how many were new (the
// others' ids were in the queue already). An error means Redis failed:
// some of the jobs may be queued, and queueing them again is harmless.
func (c *Client) Queue(ctx context.Context, jobs ...Job) (queued int, err error) {
	if len(jobs) == 0 {
		return 0, nil
	}
	cmds := make([]*redis.Cmd, len(jobs))
	err = Exec(ctx, c.rdb, nil, func(pipe redis.Pipeliner) error {
		for i, j := range jobs {
			cmd, err := c.queuer.Queue(ctx, pipe, j)
			if err != nil {
				return err
			}
			cmds[i] = cmd
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("queue %d tasks: %w", len(jobs), err)
	}
	for _, cmd := range cmds {
		ok, err := Queued(cmd)
		if err != nil {
			return queued, fmt.Errorf("queue %d tasks: %w", len(jobs), err)
		}
		if ok {
			queued++
		}
	}
	return queued, nil
}

// RegisterQueues puts queue names in asynq's list of queues (the set its
// Inspector reads). asynq's client and Queuer add a queue there once per
// process, on its first task; a Redis that lost its data (a restart without
// persistence, a failover to an empty replica) forgets them while those
// processes keep queueing, so the queues' tasks would be invisible to
// anything that lists the queues. Adding a name that is there does
// nothing.
func (c *Client) RegisterQueues(ctx context.Context, queues ...string) error {
	if len(queues) == 0 {
		return nil
	}
	members := make([]any, len(queues))
	for i, q := range queues {
		members[i] = q
	}
	if err := c.rdb.SAdd(ctx, allQueues, members...).Err(); err != nil {
		return fmt.Errorf("register queues %v: %w", queues, err)
	}
	return nil
}

// Leader keeps one replica in charge of a periodic job with a Redis lock
// that expires on its own unless renewed (periodic.Lease).
type Leader struct {
	rdb redis.UniversalClient
	id  string
}

// NewLeader makes a Leader; id names this replica in the lock's value.
func NewLeader(rdb redis.UniversalClient, id string) *Leader {
	return &Leader{rdb: rdb, id: id}
}

// hold takes the lock (KEYS[1]) for ARGV[1] ms when nobody holds it, or
// extends it when ARGV[2] holds it; 1 when the caller holds it after.
var hold = redis.NewScript(`
if redis.call("SET", KEYS[1], ARGV[2], "NX", "PX", ARGV[1]) then return 1 end
if redis.call("GET", KEYS[1]) == ARGV[2] then
  redis.call("PEXPIRE", KEYS[1], ARGV[1])
  return 1
end
return 0`)

// release drops the lock (KEYS[1]) when ARGV[1] holds it.
var release = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end
return 0`)

// Hold takes the lock named name for ttl when nobody holds it, or extends it
// by ttl when this replica holds it: the lock stays with one replica for as
// long as it calls Hold within ttl, and passes to another only when it
// stops.
func (l *Leader) Hold(ctx context.Context, name string, ttl time.Duration) (bool, error) {
	n, err := hold.Run(ctx, l.rdb, []string{"lead:" + name}, ttl.Milliseconds(), l.id).Int()
	return n == 1, err
}

// Release gives up the lock named name when this replica holds it, so
// another can take it at once.
func (l *Leader) Release(ctx context.Context, name string) error {
	return release.Run(ctx, l.rdb, []string{"lead:" + name}, l.id).Err()
}
