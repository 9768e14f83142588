// Package erasure carries out `matchctl students delete`: PostgreSQL's part
// (store.DeleteStudent) and then Redis's, so that after it no event about
// the student is sent and nothing in PostgreSQL or Redis holds their id or
// events. Like inspect, it is an operator's use case that wires adapters;
// the tests drive it beside a running worker.
package erasure

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/ratelimit"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/tasks"
)

// TombstoneTTL is how long the feed tombstone an erasure leaves lives: two
// version numbers under the student's feed key, so that a feed build that
// loaded the student before the erasure cannot store its result after it.
// A build ends within its deadline (a request's 20 s, a learn task's
// 30 s), so the tombstone outlives every build that can still be running,
// and then nothing of the student is left in Redis.
const TombstoneTTL = 45 * time.Second

// Redis is what Purge did in Redis.
type Redis struct {
	Keys  int               // read-model and rate-limit keys dropped
	Tasks tasks.PurgedTasks // queued tasks deleted, and those found running
}

// Erase erases student id in PostgreSQL (store.DeleteStudent), then purges
// Redis (Purge) when rdb is not nil. The PostgreSQL part is final on its
// own; an error from the Redis part (redisErr) leaves what Redis holds to
// expire or to be dropped by running the erasure again.
func Erase(ctx context.Context, st *store.Store, rdb redis.UniversalClient, id string) (er store.StudentErasure, rd Redis, redisErr, err error) {
	er, err = st.DeleteStudent(ctx, id)
	if err != nil || rdb == nil {
		return er, rd, nil, err
	}
	rd, redisErr = Purge(ctx, rdb, er)
	return er, rd, redisErr, nil
}

// Purge drops what Redis holds about an erased student:
//
//   - the read models and rate-limit counts, by name (cache.StudentKeys,
//     ratelimit.StudentKeys: one hash tag, one UNLINK; nothing scans the
//     keyspace);
//   - every queued task about them (tasks.PurgeStudentTasks): learn tasks
//     and webhook deliveries by id, derived from er, in any state, and
//     the archived tasks holding their id, found by reading the archives
//     (at most tasks.MaxArchivedScan per queue);
//   - and it leaves a feed tombstone for TombstoneTTL (only when er
//     reports an erasure: er.Version > 0).
//
// Tasks a worker is running are not deleted: a delivery's handler checks
// that its event still exists right before its attempt starts, and drops
// the task when it does not; a learn task for an unknown student folds
// nothing. Purge is safe to run again.
func Purge(ctx context.Context, rdb redis.UniversalClient, er store.StudentErasure) (Redis, error) {
	var out Redis
	id := strings.ToLower(er.StudentID)
	n, err := rdb.Unlink(ctx, StudentKeys(id)...).Result()
	if err != nil {
		return out, fmt.Errorf("drop read models: %w", err)
	}
	out.Keys = int(n)
	st := tasks.StudentTasks{StudentID: id, Version: er.Version, FeedbackIDs: er.FeedbackIDs}
	for _, d := range er.Deliveries {
		st.Deliveries = append(st.Deliveries, tasks.StudentDelivery{OutboxID: d.OutboxID, Endpoint: d.Endpoint, Replays: d.Replays})
	}
	out.Tasks, err = tasks.PurgeStudentTasks(ctx, rdb, st)
	if err != nil {
		return out, fmt.Errorf("delete queued tasks: %w", err)
	}
	if er.Version > 0 {
		if err := cache.NewFeeds(rdb, TombstoneTTL).Invalidate(ctx, id, er.Version); err != nil {
			return out, fmt.Errorf("feed tombstone: %w", err)
		}
	}
	return out, nil
}

// StudentKeys names every Redis key the service writes for a student.
func StudentKeys(id string) []string {
	return append(cache.StudentKeys(id), ratelimit.StudentKeys(id)...)
}
