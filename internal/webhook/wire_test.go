package webhook_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/testutil"
	"github.com/collegematch/matching/internal/webhook"
)

// wire counts what the worker sends to PostgreSQL (a pgx tracer: every
// statement, BEGIN and COMMIT included) and to Redis (a go-redis hook: a
// command or a pipeline is one round trip).
type wire struct {
	statements, redisTrips atomic.Int64
}

func (w *wire) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	w.statements.Add(1)
	return ctx
}
func (w *wire) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (w *wire) DialHook(next redis.DialHook) redis.DialHook                     { return next }
func (w *wire) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		w.redisTrips.Add(1)
		return next(ctx, cmd)
	}
}
func (w *wire) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		w.redisTrips.Add(1)
		return next(ctx, cmds)
	}
}

// rowWrites are the row versions a run wrote to a table: inserted, updated
// (HOT updates among them).
type rowWrites struct{ inserted, updated, hot int64 }

// tableWrites reads what the closed pools' backends wrote to table (their
// statistics are flushed when they exit).
func tableWrites(t *testing.T, pool *pgxpool.Pool, table string) rowWrites {
	t.Helper()
	var w rowWrites
	require.Eventually(t, func() bool {
		_, err := pool.Exec(context.Background(), `SELECT pg_stat_clear_snapshot()`)
		require.NoError(t, err)
		require.NoError(t, pool.QueryRow(context.Background(), `SELECT n_tup_ins, n_tup_upd, n_tup_hot_upd
FROM pg_stat_user_tables WHERE relname = $1`, table).Scan(&w.inserted, &w.updated, &w.hot))
		return w.inserted > 0
	}, 10*time.Second, 50*time.Millisecond)
	return w
}

// deliveryCost is what delivering events cost, per delivery.
type deliveryCost struct {
	statements, redisTrips, redisWithPolling float64
	deliveries, attempts                     rowWrites
}

// TestWhatADeliverySends delivers 300 events to one subscriber that answers
// 204 at once, with a worker wired as cmd/worker wires it (the relay
// sending first attempts) and with one whose relay hands every first
// attempt to the webhook queue (as the queue's tasks made them before),
// and counts per delivery the statements sent to PostgreSQL (BEGIN and
// COMMIT included), the Redis round trips (a pipeline is one; asynq's
// polling during the run is measured over an idle spell first and taken
// out) and the row versions written.
func TestWhatADeliverySends(t *testing.T) {
	const events = 300
	relaySends := measureDeliveries(t, events, true)
	queued := measureDeliveries(t, events, false)
	for _, c := range []struct {
		name string
		c    deliveryCost
	}{{"the relay sends", relaySends}, {"the queue sends", queued}} {
		t.Logf("%s: %.3f statements and %.3f Redis round trips per delivery (%.3f with asynq's polling); "+
			"rows per delivery: deliveries %.2f inserted, %.2f updated (%.2f HOT), attempts %.2f inserted", c.name,
			c.c.statements, c.c.redisTrips, c.c.redisWithPolling, float64(c.c.deliveries.inserted)/events,
			float64(c.c.deliveries.updated)/events, float64(c.c.deliveries.hot)/events, float64(c.c.attempts.inserted)/events)
	}
	// A batch is BEGIN, the claim, the write and COMMIT (and the backlog's
	// count after a pass): a share of a statement per delivery, no Redis.
	assert.Less(t, relaySends.statements, 0.05)
	assert.Less(t, relaySends.redisWithPolling, 0.05)
	assert.Equal(t, rowWrites{inserted: events}, relaySends.deliveries, "each delivery written once, never updated")
	assert.Equal(t, int64(events), relaySends.attempts.inserted, "every attempt logged")
	assert.Greater(t, queued.statements, 1.0, "a task's first attempt checks its event and records itself")
}

func measureDeliveries(t *testing.T, events int, relaySends bool) deliveryCost {
	ctx := context.Background()
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		got.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	eps, err := webhook.Parse([]byte(`[{"name": "crm", "url": "` + srv.URL + `/hook", "secret": "` + testSecret +
		`", "events": ["swipe.recorded"], "allow_private": true}]`))
	require.NoError(t, err)

	w := &wire{}
	url := testutil.NewDBURL(t)
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.ConnConfig.Tracer = w
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	defer pool.Close()
	db := store.New(pool)
	plainPool, err := store.Open(ctx, url) // the test's own reads and writes, not counted
	require.NoError(t, err)
	defer plainPool.Close()
	plain := store.New(plainPool)
	rdb := testutil.NewRedis(t, testutil.RedisDBWebhook)
	rdb.AddHook(w)

	reg := prometheus.NewRegistry()
	queue := handover.NewClient(rdb, handover.NewQueuer())
	subs := []domain.Subscription{{URL: eps[0].URL, Key: tasks.EndpointKey(eps[0].URL), Events: eps[0].Events}}
	relay := webhook.NewRelay(testutil.Logger(t), db, queue, subs, webhook.NewRelayMetrics(reg), webhook.RelayConfig{})
	mux := asynq.NewServeMux()
	h := webhook.NewHandler(webhook.Deps{Log: testutil.Logger(t), Relay: relay, Store: db,
		Poster: webhook.NewSender(eps, webhook.Config{}), Metrics: webhook.NewMetrics(reg)})
	h.Register(mux)
	if relaySends {
		relay.SendFirstAttempts(h)
	}
	hookSrv := asynq.NewServerFromRedisClient(rdb, asynq.Config{Concurrency: 50, Queues: tasks.WebhookQueues(),
		TaskCheckInterval: 50 * time.Millisecond, DelayedTaskCheckInterval: time.Second, LogLevel: asynq.FatalLevel})
	require.NoError(t, hookSrv.Start(mux))

	// The events are written as the write side writes them.
	require.NoError(t, pgx.BeginFunc(ctx, plain.Pool(), func(tx pgx.Tx) error {
		for i := range events {
			if _, err := store.InsertOutbox(ctx, tx, tasks.TopicSwipeRecorded, uuid.NewString(),
				map[string]any{"n": i, "school_id": uuid.NewString(), "direction": "right", "timestamp": "2026-11-25T10:00:00.000Z"}); err != nil {
				return err
			}
		}
		return nil
	}))

	// asynq's polling while idle, over a spell as long as the run below.
	time.Sleep(500 * time.Millisecond) // the servers settle
	idleFrom, idleTrips := time.Now(), w.redisTrips.Load()
	time.Sleep(2 * time.Second)
	idleRate := float64(w.redisTrips.Load()-idleTrips) / time.Since(idleFrom).Seconds()

	start, s0, r0 := time.Now(), w.statements.Load(), w.redisTrips.Load()
	n, err := relay.Drain(ctx)
	require.NoError(t, err)
	require.Equal(t, events, n)
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, plain.Pool().QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries d
JOIN webhook_attempts a ON a.delivery_id = d.id WHERE d.status = 'succeeded'`).Scan(&n))
		return n == events
	}, 30*time.Second, 10*time.Millisecond)
	took := time.Since(start)
	statements, trips := w.statements.Load()-s0, w.redisTrips.Load()-r0
	hookSrv.Shutdown()
	pool.Close() // its backends flush their statistics as they exit
	require.EqualValues(t, events, got.Load())
	return deliveryCost{statements: float64(statements) / float64(events),
		redisTrips:       max(float64(trips)-idleRate*took.Seconds(), 0) / float64(events),
		redisWithPolling: float64(trips) / float64(events),
		deliveries:       tableWrites(t, plainPool, "webhook_deliveries"),
		attempts:         tableWrites(t, plainPool, "webhook_attempts")}
}
