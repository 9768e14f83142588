package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/erasure"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/testutil"
)

// A student with 50 swipes is erased while the first attempts of their
// webhook deliveries are backed up behind a subscriber that holds every
// request (the relay's one sender for the endpoint and the worker's two
// webhook slots busy with it: the rest handed to the queue), and while an
// archived task from earlier still names them. Once the erasure has
// completed, no attempt about them starts (the three on the wire at the
// time may land); and once the worker is quiet, no Redis key or value and
// no PostgreSQL row holds the student's id, but for the feed tombstone,
// which holds two version numbers under the student's feed key and expires
// within erasure.TombstoneTTL. The other student's deliveries go on.
func TestErasureReachesTheQueue(t *testing.T) {
	ctx := context.Background()
	release := make(chan struct{})
	var held atomic.Int32
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, _ int) int {
		held.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusOK)
		return http.StatusOK
	})
	world := newHookWorld(t, 60, 2, "", endpointEntry{rc: rc, allowPrivate: true})
	world.env["WEBHOOK_CONCURRENCY"] = "2"
	rdb := testutil.NewRedis(t, testutil.RedisDBCmdWorker)
	start(t, world.env)
	student, other := world.students[0], world.students[1]

	for k := range 50 {
		world.swipe(t, 0, k)
	}
	// Every event relayed, three of their first attempts held at the
	// subscriber (the relay's and the two slots'): the rest wait in the
	// queue.
	require.Eventually(t, func() bool {
		var unpublished int
		require.NoError(t, world.pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE published_at IS NULL`).Scan(&unpublished))
		return unpublished == 0 && held.Load() == 3
	}, 20*time.Second, 20*time.Millisecond)

	// An archived task that names the student under an id nothing derives
	// (a task of an older build that failed for good).
	insp := asynq.NewInspectorFromRedisClient(rdb)
	legacy := "legacy-learn-" + uuid.NewString()
	_, err := asynq.NewClientFromRedisClient(rdb).Enqueue(asynq.NewTask(tasks.TypeStudentLearn,
		[]byte(`{"student_id":"`+student+`"}`)), asynq.TaskID(legacy), asynq.Queue(tasks.QueueLow), asynq.ProcessIn(time.Hour))
	require.NoError(t, err)
	require.NoError(t, insp.ArchiveTask(tasks.QueueLow, legacy))

	er, rd, redisErr, err := erasure.Erase(ctx, world.db, rdb, student)
	require.NoError(t, err)
	require.NoError(t, redisErr)
	erased := time.Now()
	t.Logf("erasure: %d events, %d deliveries; queue: %+v", er.OutboxEvents, er.WebhookDeliveries, rd.Tasks)
	assert.Equal(t, 50, er.OutboxEvents)
	assert.Equal(t, 50, er.WebhookDeliveries)
	assert.GreaterOrEqual(t, rd.Tasks.Deleted, 47-2, "the queued first attempts, and the archived task")

	// The other student swipes after the erasure: their events still go out.
	otherEvent := world.swipe(t, 1, 0)
	close(release)

	// The other student's event delivered; then quiet: no task running or
	// waiting to run (or 20 s, and what is left is looked at).
	require.Eventually(t, func() bool { return len(rc.delivered()[otherEvent]) > 0 }, 20*time.Second, 20*time.Millisecond)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		busy := 0
		for _, q := range []string{tasks.QueueWebhooks, tasks.QueueCritical, tasks.QueueDefault, tasks.QueueLow} {
			if info, err := insp.GetQueueInfo(q); err == nil {
				busy += info.Active + info.Pending + info.Retry
			}
		}
		if busy == 0 {
			break
		}
	}
	time.Sleep(500 * time.Millisecond) // a last record of the two in flight

	late := 0
	for _, r := range rc.requests() {
		if r.Data["student_id"] == student && r.At.After(erased) {
			late++
			t.Errorf("an attempt about the erased student started after the erasure: event %d at +%v", r.OutboxID, r.At.Sub(erased))
		}
	}
	t.Logf("requests about the erased student: %d in all, %d after the erasure", countFor(rc.requests(), student), late)

	assertNothingInRedis(t, rdb, student)
	assertNothingInPostgres(t, world.pool, student)
	_, err = world.db.Student(ctx, other)
	require.NoError(t, err, "the other student is untouched")
}

func countFor(reqs []received, student string) int {
	n := 0
	for _, r := range reqs {
		if r.Data["student_id"] == student {
			n++
		}
	}
	return n
}

// assertNothingInRedis reads every key of the test's Redis database and
// every value under it (strings, hashes, lists, sets, sorted sets) and
// fails on any that holds the student's id, but for the feed tombstone.
func assertNothingInRedis(t *testing.T, rdb redis.UniversalClient, student string) {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "*").Result()
	require.NoError(t, err)
	tombstone := cache.FeedKey(student)
	for _, k := range keys {
		var values []string
		typ, err := rdb.Type(ctx, k).Result()
		require.NoError(t, err)
		switch typ {
		case "string":
			v, _ := rdb.Get(ctx, k).Result()
			values = []string{v}
		case "hash":
			m, _ := rdb.HGetAll(ctx, k).Result()
			for f, v := range m {
				values = append(values, f, v)
			}
		case "list":
			values, _ = rdb.LRange(ctx, k, 0, -1).Result()
		case "set":
			values, _ = rdb.SMembers(ctx, k).Result()
		case "zset":
			values, _ = rdb.ZRange(ctx, k, 0, -1).Result()
		}
		if k == tombstone {
			m, _ := rdb.HGetAll(ctx, k).Result()
			assert.ElementsMatch(t, []string{"sv", "lv", "cv"}, mapKeys(m), "the tombstone holds versions only")
			ttl, _ := rdb.PTTL(ctx, k).Result()
			assert.True(t, ttl > 0 && ttl <= erasure.TombstoneTTL, "the tombstone expires within %v (ttl %v)", erasure.TombstoneTTL, ttl)
			continue
		}
		if strings.Contains(strings.ToLower(k), student) {
			t.Errorf("redis key %q names the erased student", k)
		}
		for _, v := range values {
			if strings.Contains(strings.ToLower(v), student) {
				t.Errorf("redis key %q (%s) holds the erased student's id: %.200q", k, typ, v)
			}
		}
	}
	t.Logf("redis: %d keys read", len(keys))
}

func mapKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// assertNothingInPostgres looks in every text-like column of every table
// for the student's id.
func assertNothingInPostgres(t *testing.T, pool interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}, student string) {
	t.Helper()
	ctx := context.Background()
	rows, err := pool.Query(ctx, `
SELECT c.table_name, c.column_name, c.data_type FROM information_schema.columns c
JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'
	AND c.data_type IN ('uuid', 'text', 'character varying', 'jsonb', 'json', 'bytea', 'ARRAY')`)
	require.NoError(t, err)
	type col struct{ table, column, typ string }
	cols, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (col, error) {
		var c col
		return c, r.Scan(&c.table, &c.column, &c.typ)
	})
	require.NoError(t, err)
	require.NotEmpty(t, cols)
	for _, c := range cols {
		expr := fmt.Sprintf("%q::text", c.column)
		if c.typ == "bytea" {
			expr = fmt.Sprintf("encode(%q, 'escape')", c.column)
		}
		var n int
		require.NoError(t, pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %q WHERE lower(%s) LIKE '%%' || $1 || '%%'`,
			c.table, expr), student).Scan(&n))
		if n > 0 {
			t.Errorf("postgres: %d rows of %s.%s hold the erased student's id", n, c.table, c.column)
		}
	}
	t.Logf("postgres: %d columns read", len(cols))
}
