package testutil

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// takeTask does to a pending task what asynq's dequeue does (its script):
// the task moves to the active list, its state says so, and its lease ends
// at ARGV[2]. A worker that then loses the task leaves it so.
var takeTask = redis.NewScript(`
redis.call("LREM", KEYS[1], 0, ARGV[1])
redis.call("LPUSH", KEYS[2], ARGV[1])
redis.call("HSET", KEYS[3], "state", "active")
redis.call("HDEL", KEYS[3], "pending_since")
redis.call("ZADD", KEYS[4], ARGV[2], ARGV[1])
return 1
`)

// AbandonTask leaves the pending task id of queue as a worker leaves a
// task it took and then lost: active, its lease ending at leaseEnd.
func AbandonTask(t testing.TB, rdb redis.UniversalClient, queue, id string, leaseEnd time.Time) {
	t.Helper()
	p := "asynq:{" + queue + "}:"
	if err := takeTask.Run(context.Background(), rdb, []string{p + "pending", p + "active", p + "t:" + id, p + "lease"},
		id, leaseEnd.Unix()).Err(); err != nil {
		t.Fatalf("abandon task %s: %v", id, err)
	}
}
