package handover

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// deleteTask is asynq's own task deletion (its Inspector's DeleteTask),
// without the check that the queue exists: a task in any state but active
// leaves the state's list or sorted set and its hash is deleted; its
// uniqueness lock goes too. 1: deleted; 0: no such task; -1: the task is
// running (a worker holds it), and stays.
var deleteTask = redis.NewScript(`
if redis.call("EXISTS", KEYS[1]) == 0 then
	return 0
end
local state, group = unpack(redis.call("HMGET", KEYS[1], "state", "group"))
if state == "active" then
	return -1
end
if state == "pending" then
	redis.call("LREM", ARGV[2] .. state, 0, ARGV[1])
elseif state == "aggregating" then
	redis.call("ZREM", ARGV[3] .. group, ARGV[1])
	if redis.call("ZCARD", ARGV[3] .. group) == 0 then
		redis.call("SREM", KEYS[2], group)
	end
else
	redis.call("ZREM", ARGV[2] .. state, ARGV[1])
end
local unique_key = redis.call("HGET", KEYS[1], "unique_key")
if unique_key and unique_key ~= "" and redis.call("GET", unique_key) == ARGV[1] then
	redis.call("DEL", unique_key)
end
return redis.call("DEL", KEYS[1])
`)

// deleteChunk is how many deletions go in one pipeline.
const deleteChunk = 500

// Deleted counts what Delete did.
type Deleted struct {
	Deleted int // tasks deleted, whatever state they were in
	Active  int // tasks found running: a worker holds them, and they stay
}

// Delete deletes the tasks with the given ids from queue, in whatever state
// each is (pending, scheduled, retry, archived, completed), by id: no
// listing, deleteChunk deletions per round trip. Ids the queue does not
// hold are skipped. A running task cannot be deleted (its worker would put
// it back): it is counted in Active, and its handler decides what becomes
// of it.
func Delete(ctx context.Context, rdb redis.UniversalClient, queue string, ids []string) (Deleted, error) {
	var out Deleted
	prefix := "asynq:{" + queue + "}:"
	for start := 0; start < len(ids); start += deleteChunk {
		chunk := ids[start:min(start+deleteChunk, len(ids))]
		cmds := make([]*redis.Cmd, len(chunk))
		err := Exec(ctx, rdb, []*redis.Script{deleteTask}, func(pipe redis.Pipeliner) error {
			for i, id := range chunk {
				cmds[i] = deleteTask.EvalSha(ctx, pipe, []string{taskKey(queue, id), prefix + "groups"},
					id, prefix, prefix+"g:")
			}
			return nil
		})
		if err != nil {
			return out, fmt.Errorf("delete tasks from queue %s: %w", queue, err)
		}
		for _, c := range cmds {
			n, err := c.Int()
			if err != nil {
				return out, fmt.Errorf("delete tasks from queue %s: %w", queue, err)
			}
			switch {
			case n > 0:
				out.Deleted++
			case n < 0:
				out.Active++
			}
		}
	}
	return out, nil
}
