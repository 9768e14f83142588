package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/command"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
)

// The worker works through PgBouncer in transaction pooling mode (two
// server connections, default_query_exec_mode=cache_describe as the README
// says): swipes recorded through it, some while the API could not reach
// Redis, are handed over by the relay, learned, and delivered to a webhook
// subscriber, each exactly as without a pooler.
func TestWorkerThroughPgBouncer(t *testing.T) {
	direct := testutil.NewDBURL(t) // created before PgBouncer, so dropped after it stops
	pgb, err := testutil.StartPgBouncer(context.Background(), 2)
	testutil.SkipOrFail(t, err)
	t.Cleanup(func() { assert.NoError(t, pgb.Stop()) })
	dbURL := pgb.DatabaseURL(direct)
	ctx := context.Background()

	pool, err := store.Open(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	db := store.New(pool)
	schools, students := seedWorld(t, db, 200, 6)
	rdb := testutil.NewRedis(t, testutil.RedisDBCmdWorker)
	rc := newReceiver(t, nil)
	file := endpointsFile(t, endpointEntry{rc: rc, path: "/hook", allowPrivate: true})
	up := newWriteSide(t, db, rdb, testutil.Logger(t))
	down := newWriteSide(t, db, unreachable(t), testutil.Logger(t))

	const perStudent = 6
	var wg sync.WaitGroup
	for i, s := range students {
		wg.Go(func() {
			for k := range perStudent {
				w := up
				if k%2 == 1 {
					w = down // the API could not queue it: the relay must
				}
				_, err := w.swipes.Record(ctx, command.SwipeInput{StudentID: s, SchoolID: schools[i*perStudent+k].ID,
					Direction: []string{"left", "right"}[k%2], ClientID: uuid.NewString()})
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()

	w := start(t, map[string]string{
		"DATABASE_URL":           dbURL,
		"REDIS_URL":              testutil.RedisURLFor(t, testutil.RedisDBCmdWorker),
		"OPS_ADDR":               "127.0.0.1:0",
		"WEBHOOK_ENDPOINTS_FILE": file,
	})

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var unpublished, unlearned int
		require.NoError(c, pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE published_at IS NULL`).Scan(&unpublished))
		require.NoError(c, pool.QueryRow(ctx, `
SELECT count(*) FROM students s
WHERE (SELECT max(id) FROM swipes WHERE student_id = s.id) >
	coalesce((SELECT last_swipe_id FROM learning_state WHERE student_id = s.id), 0)`).Scan(&unlearned))
		assert.Zero(c, unpublished, "every event handed over")
		assert.Zero(c, unlearned, "every swipe learned")
		assert.Len(c, rc.delivered(), len(students)*perStudent, "every swipe delivered")
	}, 30*time.Second, 100*time.Millisecond)
	for _, r := range rc.requests() {
		assert.True(t, r.Signed, r.ID)
	}
	w.stop(t, 15*time.Second)
	assert.NotContains(t, w.logs.String(), "prepared statement")
}
