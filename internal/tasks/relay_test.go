package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/testutil"
	"github.com/collegematch/matching/internal/wire"
)

// The relay runs against a fresh PostgreSQL database and this package's
// Redis DB, which every test flushes: these tests do not run in parallel.

var endpoints = []string{"https://a.example/hook", "https://b.example/hook"}

// storeSource is the adapter cmd/worker uses.
type storeSource = wire.Outbox

type env struct {
	db      *store.Store
	rdb     *redis.Client
	queue   *asynq.Client
	insp    *asynq.Inspector
	router  *tasks.Router
	reg     *prometheus.Registry
	metrics *tasks.RelayMetrics
}

// newEnv routes swipe.recorded to the student's student:learn task and one
// webhook:deliver task per endpoint, as the service will.
func newEnv(t *testing.T) *env {
	t.Helper()
	rdb := testutil.NewRedis(t, testutil.RedisDBTasks)
	e := &env{
		db:     store.New(testutil.NewDB(t)),
		rdb:    rdb,
		queue:  asynq.NewClientFromRedisClient(rdb),
		insp:   asynq.NewInspectorFromRedisClient(rdb),
		router: tasks.NewRouter(),
		reg:    prometheus.NewRegistry(),
	}
	e.metrics = tasks.NewRelayMetrics(e.reg)
	e.router.Add(tasks.TopicSwipeRecorded, tasks.LearnRoute)
	var subs []tasks.WebhookSubscription
	for _, ep := range endpoints {
		subs = append(subs, tasks.WebhookSubscription{URL: ep, Events: []string{tasks.TopicSwipeRecorded}})
	}
	tasks.AddWebhookRoutes(e.router, subs, wire.Webhooks{Store: e.db})
	return e
}

func webhookID(outboxID int64, endpoint string) string {
	return tasks.OutboxTaskID(outboxID, tasks.TypeWebhookDeliver, tasks.EndpointKey(endpoint))
}

func (e *env) relay(t *testing.T, q tasks.Enqueuer, cfg tasks.RelayConfig) *tasks.Relay {
	return tasks.NewRelay(testutil.Logger(t), storeSource{Store: e.db}, q, e.router, e.metrics, cfg)
}

type event struct {
	topic, student string
}

// write records events as the write side does, in one transaction.
func (e *env) write(t *testing.T, events ...event) []int64 {
	t.Helper()
	var ids []int64
	err := pgx.BeginFunc(context.Background(), e.db.Pool(), func(tx pgx.Tx) error {
		for _, ev := range events {
			id, err := store.InsertOutbox(context.Background(), tx, ev.topic, ev.student, map[string]string{"school_id": uuid.NewString()})
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return nil
	})
	require.NoError(t, err)
	return ids
}

func swipes(n int) []event {
	evs := make([]event, n)
	for i := range evs {
		evs[i] = event{tasks.TopicSwipeRecorded, uuid.NewString()}
	}
	return evs
}

func (e *env) unpublished(t *testing.T) []int64 {
	t.Helper()
	rows, err := e.db.Pool().Query(context.Background(), `SELECT id FROM outbox WHERE published_at IS NULL ORDER BY id`)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	return ids
}

// queued returns the tasks of queue in the given state, by id.
func (e *env) queued(t *testing.T, queue, state string) map[string]*asynq.TaskInfo {
	t.Helper()
	list := e.insp.ListPendingTasks
	if state == "completed" {
		list = e.insp.ListCompletedTasks
	}
	infos, err := list(queue, asynq.PageSize(1000))
	if errors.Is(err, asynq.ErrQueueNotFound) {
		return map[string]*asynq.TaskInfo{}
	}
	require.NoError(t, err)
	out := make(map[string]*asynq.TaskInfo, len(infos))
	for _, ti := range infos {
		out[ti.ID] = ti
	}
	return out
}

// value reads one sample of a counter or gauge from reg.
func value(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue metrics
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

func TestRelayHandsOverEachRowOnceUnderItsDerivedID(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	evs := swipes(5)
	ids := e.write(t, evs...)
	relay := e.relay(t, e.queue, tasks.RelayConfig{BatchSize: 2})

	handed, err := relay.Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 5, handed)
	assert.Empty(t, e.unpublished(t))

	learn := e.queued(t, tasks.QueueCritical, "pending")
	hooks := e.queued(t, tasks.QueueWebhooks, "pending")
	require.Len(t, learn, 5)
	require.Len(t, hooks, 10)
	for i, id := range ids {
		ti := learn[tasks.OutboxTaskID(id, tasks.TypeStudentLearn)]
		require.NotNil(t, ti, "learn task of row %d", id)
		assert.Equal(t, tasks.TypeStudentLearn, ti.Type)
		var p tasks.StudentLearnPayload
		require.NoError(t, json.Unmarshal(ti.Payload, &p))
		assert.Equal(t, tasks.StudentLearnPayload{StudentID: evs[i].student, OutboxID: id}, p)
		assert.Equal(t, tasks.Retention, ti.Retention)
		assert.Equal(t, 10, ti.MaxRetry)
		for _, ep := range endpoints {
			hi := hooks[webhookID(id, ep)]
			require.NotNil(t, hi, "webhook task of row %d for %s", id, ep)
			var wp tasks.WebhookDeliverPayload
			require.NoError(t, json.Unmarshal(hi.Payload, &wp))
			assert.Equal(t, tasks.WebhookDeliverPayload{OutboxID: id, Endpoint: ep}, wp)
			assert.Greater(t, hi.MaxRetry, 1000, "the queue never archives a delivery still owed: the handler parks it")
			var status, msgID string
			require.NoError(t, e.db.Pool().QueryRow(ctx,
				`SELECT status, webhook_id FROM webhook_deliveries WHERE outbox_id = $1 AND endpoint_url = $2`, id, ep).
				Scan(&status, &msgID), "the delivery's row is written before its task is queued")
			assert.Equal(t, tasks.DeliveryPending, status)
			assert.Equal(t, tasks.WebhookMessageID(id, ep), msgID)
		}
	}
	assert.Equal(t, 5.0, value(t, e.reg, "matching_outbox_relayed_total", "topic", tasks.TopicSwipeRecorded))
	assert.Equal(t, 5.0, value(t, e.reg, "matching_outbox_tasks_total", "type", tasks.TypeStudentLearn, "result", "enqueued"))
	assert.Equal(t, 10.0, value(t, e.reg, "matching_outbox_tasks_total", "type", tasks.TypeWebhookDeliver, "result", "enqueued"))
	assert.Zero(t, value(t, e.reg, "matching_outbox_backlog"))

	// A second pass finds nothing to do.
	handed, err = relay.Drain(ctx)
	require.NoError(t, err)
	assert.Zero(t, handed)
	assert.Len(t, e.queued(t, tasks.QueueCritical, "pending"), 5)

	// Let a worker complete every task, then hand the rows over again, as
	// after a crash between enqueue and marking: the completed tasks, kept
	// for Retention, refuse their ids, so nothing runs twice.
	queues := tasks.QueuePriorities()
	maps.Copy(queues, tasks.WebhookQueues())
	srv := asynq.NewServerFromRedisClient(e.rdb, asynq.Config{
		Concurrency: 4, Queues: queues, Logger: quietLogger{}, LogLevel: asynq.FatalLevel,
	})
	t.Cleanup(srv.Shutdown) // before the Redis client closes, even when the test fails (asynq panics otherwise)
	var mu sync.Mutex
	ran := map[string]int{}
	require.NoError(t, srv.Start(asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		mu.Lock()
		ran[id]++
		mu.Unlock()
		return nil
	})))
	require.Eventually(t, func() bool {
		return len(e.queued(t, tasks.QueueCritical, "completed")) == 5 && len(e.queued(t, tasks.QueueWebhooks, "completed")) == 10
	}, 15*time.Second, 50*time.Millisecond)

	_, err = e.db.Pool().Exec(ctx, `UPDATE outbox SET published_at = NULL`)
	require.NoError(t, err)
	handed, err = relay.Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 5, handed)
	assert.Empty(t, e.unpublished(t))
	assert.Equal(t, 5.0, value(t, e.reg, "matching_outbox_tasks_total", "type", tasks.TypeStudentLearn, "result", "duplicate"))
	assert.Equal(t, 10.0, value(t, e.reg, "matching_outbox_tasks_total", "type", tasks.TypeWebhookDeliver, "result", "duplicate"))

	time.Sleep(300 * time.Millisecond) // room for a wrongly queued task to run
	srv.Shutdown()
	mu.Lock()
	defer mu.Unlock()
	assert.Len(t, ran, 15)
	for id, n := range ran {
		assert.Equal(t, 1, n, "task %s ran %d times", id, n)
	}
	assert.Empty(t, e.queued(t, tasks.QueueCritical, "pending"))
}

// recorder counts every enqueue attempt per task id.
type recorder struct {
	next tasks.Enqueuer
	mu   sync.Mutex
	ids  map[string]int
}

func (r *recorder) EnqueueContext(ctx context.Context, task *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error) {
	for _, o := range opts {
		if o.Type() == asynq.TaskIDOpt {
			r.mu.Lock()
			r.ids[o.Value().(string)]++
			r.mu.Unlock()
		}
	}
	return r.next.EnqueueContext(ctx, task, opts...)
}

func TestConcurrentRelaysHandOverEachRowOnce(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ids := e.write(t, swipes(120)...)
	rec := &recorder{next: e.queue, ids: map[string]int{}}

	const relays = 4
	start := make(chan struct{})
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		total int
	)
	for range relays {
		relay := e.relay(t, rec, tasks.RelayConfig{BatchSize: 7})
		wg.Go(func() {
			<-start
			n, err := relay.Drain(ctx)
			assert.NoError(t, err)
			mu.Lock()
			total += n
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()

	assert.Equal(t, len(ids), total, "every row handed over by exactly one relay")
	assert.Empty(t, e.unpublished(t))
	assert.Len(t, rec.ids, 3*len(ids))
	for id, n := range rec.ids {
		assert.Equal(t, 1, n, "task %s was enqueued %d times", id, n)
	}
	assert.Len(t, e.queued(t, tasks.QueueCritical, "pending"), len(ids))
	assert.Len(t, e.queued(t, tasks.QueueWebhooks, "pending"), 2*len(ids))
	assert.Zero(t, value(t, e.reg, "matching_outbox_tasks_total", "type", tasks.TypeStudentLearn, "result", "duplicate"))
}

// failAfter passes n enqueues through, then fails like an unreachable Redis.
type failAfter struct {
	next tasks.Enqueuer
	n    int
}

func (f *failAfter) EnqueueContext(ctx context.Context, task *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error) {
	if f.n == 0 {
		return nil, errors.New("dial tcp: connection refused")
	}
	f.n--
	return f.next.EnqueueContext(ctx, task, opts...)
}

func TestRelayKeepsRowsWhileRedisIsDown(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	opt, err := asynq.ParseRedisURI("redis://127.0.0.1:1/0")
	require.NoError(t, err)
	down := asynq.NewClient(opt)
	t.Cleanup(func() { _ = down.Close() })

	ids := e.write(t, swipes(3)...)
	time.Sleep(20 * time.Millisecond) // so the backlog has an age
	handed, err := e.relay(t, down, tasks.RelayConfig{}).Drain(ctx)
	require.Error(t, err)
	assert.Zero(t, handed)
	assert.Equal(t, ids, e.unpublished(t), "nothing is marked while Redis cannot take the tasks")
	assert.Equal(t, 1.0, value(t, e.reg, "matching_outbox_relay_errors_total", "stage", "enqueue"))
	assert.Equal(t, 3.0, value(t, e.reg, "matching_outbox_backlog"))
	assert.Greater(t, value(t, e.reg, "matching_outbox_oldest_unpublished_age_seconds"), 0.0)
	queues, err := e.insp.Queues()
	require.NoError(t, err)
	assert.Empty(t, queues)

	// Redis answers for four enqueues, then fails again: the first row (its
	// three tasks) is handed over, the second is not although its first
	// task made it, and the third is not tried.
	_, err = e.relay(t, &failAfter{next: e.queue, n: 4}, tasks.RelayConfig{}).Drain(ctx)
	require.Error(t, err)
	assert.Equal(t, ids[1:], e.unpublished(t))
	assert.Equal(t, 2.0, value(t, e.reg, "matching_outbox_relay_errors_total", "stage", "enqueue"))
	assert.Equal(t, 1.0, value(t, e.reg, "matching_outbox_relayed_total", "topic", tasks.TopicSwipeRecorded))

	// Redis is back.
	handed, err = e.relay(t, e.queue, tasks.RelayConfig{}).Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, handed)
	assert.Empty(t, e.unpublished(t))
	assert.Len(t, e.queued(t, tasks.QueueCritical, "pending"), 3)
	assert.Len(t, e.queued(t, tasks.QueueWebhooks, "pending"), 6)
	assert.Equal(t, 1.0, value(t, e.reg, "matching_outbox_tasks_total", "type", tasks.TypeStudentLearn, "result", "duplicate"),
		"the second row's learn task went in before the failure and is not queued again")
	assert.Zero(t, value(t, e.reg, "matching_outbox_backlog"))
	assert.Zero(t, value(t, e.reg, "matching_outbox_oldest_unpublished_age_seconds"))
}

// failingLedgerSource claims rows as the store does, but its ledger cannot
// write webhook deliveries (the statement fails).
type failingLedgerSource struct{ tasks.OutboxSource }

func (f failingLedgerSource) RelayOutbox(ctx context.Context, topics []string, limit int,
	hand func(context.Context, []tasks.OutboxRow, tasks.DeliveryLedger) ([]int64, error)) (int, error) {
	return f.OutboxSource.RelayOutbox(ctx, topics, limit, func(ctx context.Context, rows []tasks.OutboxRow, _ tasks.DeliveryLedger) ([]int64, error) {
		return hand(ctx, rows, tasks.LedgerFunc(func(context.Context, []tasks.WebhookDeliveryKey) ([]int64, error) {
			return nil, errors.New("database down")
		}))
	})
}

// When a batch's webhook deliveries cannot be written, none of its tasks is
// queued and its rows stay unpublished: a task in Redis always has its
// delivery row in PostgreSQL. The relay writes them in its claiming
// transaction, whatever ledger its router has.
func TestRelayQueuesNothingWhenDeliveriesCannotBeRecorded(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ids := e.write(t, swipes(3)...)

	_, err := tasks.NewRelay(testutil.Logger(t), failingLedgerSource{storeSource{Store: e.db}}, e.queue, e.router, e.metrics,
		tasks.RelayConfig{}).Drain(ctx)
	require.Error(t, err)
	assert.Equal(t, ids, e.unpublished(t))
	assert.Empty(t, e.queued(t, tasks.QueueCritical, "pending"))
	assert.Empty(t, e.queued(t, tasks.QueueWebhooks, "pending"))
	assert.Equal(t, 1.0, value(t, e.reg, "matching_outbox_relay_errors_total", "stage", "record"))

	// With the database back, the same rows go through with their rows.
	handed, err := e.relay(t, e.queue, tasks.RelayConfig{}).Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, handed)
	var n int
	require.NoError(t, e.db.Pool().QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'`).Scan(&n))
	assert.Equal(t, 3*len(endpoints), n)
}

// A relay whose Redis fails mid-batch still commits the deliveries of the
// rows it marked, and leaves the others' rows unpublished; nothing is
// recorded twice when they are handed over again.
func TestRelayRecordsDeliveriesInItsTransaction(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.write(t, swipes(2)...)
	// 3 tasks per row: the first row's go in, the second row's first fails.
	_, err := e.relay(t, &failAfter{next: e.queue, n: 3}, tasks.RelayConfig{}).Drain(ctx)
	require.Error(t, err)
	count := func() (n int) {
		require.NoError(t, e.db.Pool().QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries`).Scan(&n))
		return n
	}
	assert.Equal(t, 2*len(endpoints), count(), "written for the whole batch, before any task was queued")
	_, err = e.relay(t, e.queue, tasks.RelayConfig{}).Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2*len(endpoints), count())
	assert.Empty(t, e.unpublished(t))
}

// logRecorder keeps the relay's log records so tests can count them.
type logRecorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r)
	return nil
}

// count returns how many records of level have a message containing msg.
func (l *logRecorder) count(level slog.Level, msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.recs {
		if r.Level == level && strings.Contains(r.Message, msg) {
			n++
		}
	}
	return n
}

const unroutedWarning = "no route for"

func TestRelayLeavesUnroutedRowsForARelayThatRoutesThem(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	student := uuid.NewString()
	ids := e.write(t,
		event{"mystery.happened", student},  // a topic a newer build writes and routes
		event{tasks.TopicSwipeRecorded, ""}, // no student: the learn route refuses it
		event{tasks.TopicSwipeRecorded, student},
		event{"mystery.happened", student},
	)

	// An older worker: it routes swipe.recorded only. One row per batch, so
	// the unrouted row at the head must not stop it from reaching the rest.
	logs := &logRecorder{}
	old := tasks.NewRelay(slog.New(logs), storeSource{Store: e.db}, e.queue, e.router, e.metrics, tasks.RelayConfig{BatchSize: 1})
	handed, err := old.Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, handed, "the invalid row and the routed one")
	assert.Equal(t, []int64{ids[0], ids[3]}, e.unpublished(t), "rows of a topic without a route stay unpublished")
	assert.Equal(t, 1.0, value(t, e.reg, "matching_outbox_unroutable_total", "reason", "invalid"))
	assert.Equal(t, 1.0, value(t, e.reg, "matching_outbox_relayed_total", "topic", tasks.TopicSwipeRecorded))
	assert.Equal(t, 2.0, value(t, e.reg, "matching_outbox_unrouted_backlog"))
	assert.Equal(t, 2.0, value(t, e.reg, "matching_outbox_backlog"), "the backlog counts every unpublished row")
	assert.Positive(t, value(t, e.reg, "matching_outbox_oldest_unpublished_age_seconds"))
	learn := e.queued(t, tasks.QueueCritical, "pending")
	assert.Len(t, learn, 1)
	assert.Contains(t, learn, tasks.OutboxTaskID(ids[2], tasks.TypeStudentLearn))
	assert.Len(t, e.queued(t, tasks.QueueWebhooks, "pending"), 2)
	assert.Equal(t, 1, logs.count(slog.LevelWarn, unroutedWarning))

	// Later passes leave them alone too, and do not warn again.
	for range 3 {
		handed, err = old.Drain(ctx)
		require.NoError(t, err)
		assert.Zero(t, handed)
	}
	assert.Equal(t, []int64{ids[0], ids[3]}, e.unpublished(t))
	assert.Equal(t, 1, logs.count(slog.LevelWarn, unroutedWarning), "warned once, not on every pass")

	// A newer worker routes the topic and hands the rows over.
	newer := tasks.NewRouter()
	newer.Add("mystery.happened", tasks.LearnRoute)
	newReg := prometheus.NewRegistry()
	handed, err = tasks.NewRelay(testutil.Logger(t), storeSource{Store: e.db}, e.queue, newer, tasks.NewRelayMetrics(newReg), tasks.RelayConfig{}).Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, handed)
	assert.Empty(t, e.unpublished(t))
	assert.Equal(t, 2.0, value(t, newReg, "matching_outbox_relayed_total", "topic", "mystery.happened"))
	learn = e.queued(t, tasks.QueueCritical, "pending")
	assert.Contains(t, learn, tasks.OutboxTaskID(ids[0], tasks.TypeStudentLearn))
	assert.Contains(t, learn, tasks.OutboxTaskID(ids[3], tasks.TypeStudentLearn))
	assert.Zero(t, value(t, newReg, "matching_outbox_unrouted_backlog"))

	// The older worker sees them gone, says so once, and warns again when
	// a new one arrives.
	_, err = old.Drain(ctx)
	require.NoError(t, err)
	assert.Zero(t, value(t, e.reg, "matching_outbox_unrouted_backlog"))
	assert.Zero(t, value(t, e.reg, "matching_outbox_backlog"))
	assert.Equal(t, 1, logs.count(slog.LevelInfo, "no outbox rows of unrouted topics left"))
	e.write(t, event{"mystery.happened", student})
	_, err = old.Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1.0, value(t, e.reg, "matching_outbox_unrouted_backlog"))
	assert.Equal(t, 2, logs.count(slog.LevelWarn, unroutedWarning))
}

// countingSource counts the claims a relay makes.
type countingSource struct {
	tasks.OutboxSource
	claims atomic.Int32
}

func (c *countingSource) RelayOutbox(ctx context.Context, topics []string, limit int, hand func(context.Context, []tasks.OutboxRow, tasks.DeliveryLedger) ([]int64, error)) (int, error) {
	c.claims.Add(1)
	return c.OutboxSource.RelayOutbox(ctx, topics, limit, hand)
}

func TestRelayWithoutRoutesClaimsNothing(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ids := e.write(t, swipes(3)...)
	src := &countingSource{OutboxSource: storeSource{Store: e.db}}

	handed, err := tasks.NewRelay(testutil.Logger(t), src, e.queue, tasks.NewRouter(), e.metrics, tasks.RelayConfig{}).Drain(ctx)
	require.NoError(t, err)
	assert.Zero(t, handed)
	assert.Zero(t, src.claims.Load(), "no topic, no claiming transaction")
	assert.Equal(t, ids, e.unpublished(t))
	assert.Equal(t, 3.0, value(t, e.reg, "matching_outbox_backlog"))
	assert.Equal(t, 3.0, value(t, e.reg, "matching_outbox_unrouted_backlog"))
	queues, err := e.insp.Queues()
	require.NoError(t, err)
	assert.Empty(t, queues)
}

// allTopics claims rows of extra topics too, as if the router had lost a
// route between the claim and the hand-over.
type allTopics struct {
	storeSource
	extra []string
}

func (a allTopics) RelayOutbox(ctx context.Context, topics []string, limit int, hand func(context.Context, []tasks.OutboxRow, tasks.DeliveryLedger) ([]int64, error)) (int, error) {
	return a.storeSource.RelayOutbox(ctx, append(slices.Clone(topics), a.extra...), limit, hand)
}

func TestRelayNeverMarksARowItCannotRoute(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	student := uuid.NewString()
	ids := e.write(t, event{"mystery.happened", student}, event{tasks.TopicSwipeRecorded, student})

	src := allTopics{storeSource{Store: e.db}, []string{"mystery.happened"}}
	handed, err := tasks.NewRelay(testutil.Logger(t), src, e.queue, e.router, e.metrics, tasks.RelayConfig{}).Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, handed)
	assert.Equal(t, ids[:1], e.unpublished(t), "the row without a route stays, the one behind it goes")
	assert.Zero(t, value(t, e.reg, "matching_outbox_unroutable_total", "reason", "invalid"))
}

// setAge backdates rows in the database's clock; a nil publishedAgo leaves
// them unpublished.
func (e *env) setAge(t *testing.T, createdAgo time.Duration, publishedAgo *time.Duration, ids ...int64) {
	t.Helper()
	var pub *float64
	if publishedAgo != nil {
		s := publishedAgo.Seconds()
		pub = &s
	}
	_, err := e.db.Pool().Exec(context.Background(), `
UPDATE outbox SET
	created_at = now() - make_interval(secs => $1),
	published_at = now() - make_interval(secs => $2)
WHERE id = ANY($3)`, createdAgo.Seconds(), pub, ids)
	require.NoError(t, err)
}

func (e *env) outboxIDs(t *testing.T) []int64 {
	t.Helper()
	rows, err := e.db.Pool().Query(context.Background(), `SELECT id FROM outbox ORDER BY id`)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	return ids
}

func TestRelayPrunesOnlyExpiredUnreferencedPublishedRows(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	const day = 24 * time.Hour
	ids := e.write(t, swipes(9)...)
	expired, kept := 8*day, 6*day
	e.setAge(t, 9*day, &expired, ids[0], ids[1], ids[2], ids[4], ids[5], ids[6])
	e.setAge(t, 9*day, &kept, ids[3])
	e.setAge(t, 30*day, nil, ids[7]) // never handed over: never deleted
	// ids[8] is new and unpublished. A delivery record still needs ids[5].
	_, err := e.db.Pool().Exec(ctx, `
INSERT INTO webhook_deliveries (outbox_id, endpoint_url, webhook_id, event)
VALUES ($1, $2, 'msg_1', 'swipe.recorded')`, ids[5], endpoints[0])
	require.NoError(t, err)

	// Default retention (7 days), two rows per statement: five rows in three
	// statements.
	relay := e.relay(t, e.queue, tasks.RelayConfig{PruneBatchSize: 2})
	deleted, err := relay.Prune(ctx)
	require.NoError(t, err)
	assert.Equal(t, 5, deleted)
	assert.Equal(t, []int64{ids[3], ids[5], ids[7], ids[8]}, e.outboxIDs(t))
	assert.Equal(t, 5.0, value(t, e.reg, "matching_outbox_deleted_total"))

	deleted, err = relay.Prune(ctx)
	require.NoError(t, err)
	assert.Zero(t, deleted)

	// Retention is configurable: at 5 days the row published 6 days ago
	// goes too. Below the floor it is raised to 2 days, so a row published
	// a day ago is kept.
	a, b := 3*day, 1*day
	e.setAge(t, 4*day, &a, ids[8])
	fresh := e.write(t, swipes(1)...)
	e.setAge(t, 2*day, &b, fresh...)
	deleted, err = e.relay(t, e.queue, tasks.RelayConfig{Retention: 5 * day}).Prune(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, deleted)
	assert.Equal(t, []int64{ids[5], ids[7], ids[8], fresh[0]}, e.outboxIDs(t))
	deleted, err = e.relay(t, e.queue, tasks.RelayConfig{Retention: time.Minute}).Prune(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, deleted, "the row published 3 days ago, not the one published a day ago")
	assert.Equal(t, []int64{ids[5], ids[7], fresh[0]}, e.outboxIDs(t))
	assert.Equal(t, 7.0, value(t, e.reg, "matching_outbox_deleted_total"))
}

func TestRelayRunPrunesAtStartAndEveryPruneInterval(t *testing.T) {
	e := newEnv(t)
	const day = 24 * time.Hour
	expired := 10 * day
	first := e.write(t, swipes(2)...)
	e.setAge(t, 11*day, &expired, first...)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.relay(t, e.queue, tasks.RelayConfig{Interval: time.Hour, PruneInterval: 100 * time.Millisecond}).Run(ctx)
	}()
	require.Eventually(t, func() bool { return len(e.outboxIDs(t)) == 0 }, 5*time.Second, 20*time.Millisecond)

	later := e.write(t, swipes(1)...)
	e.setAge(t, 11*day, &expired, later...)
	require.Eventually(t, func() bool { return len(e.outboxIDs(t)) == 0 }, 5*time.Second, 20*time.Millisecond)
	assert.Equal(t, 3.0, value(t, e.reg, "matching_outbox_deleted_total"))
	cancel()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestRelayRunDrainsAtStartAndOnEveryTick(t *testing.T) {
	e := newEnv(t)
	e.write(t, swipes(2)...)

	// An hour between ticks: only the pass at start can hand these over.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.relay(t, e.queue, tasks.RelayConfig{Interval: time.Hour}).Run(ctx) }()
	require.Eventually(t, func() bool { return len(e.unpublished(t)) == 0 }, 5*time.Second, 20*time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Run did not return after cancel")
	}

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	done = make(chan struct{})
	go func() {
		defer close(done)
		e.relay(t, e.queue, tasks.RelayConfig{Interval: 50 * time.Millisecond}).Run(ctx)
	}()
	time.Sleep(100 * time.Millisecond)
	later := e.write(t, swipes(1)...)
	require.Eventually(t, func() bool { return len(e.unpublished(t)) == 0 }, 5*time.Second, 20*time.Millisecond)
	assert.Contains(t, e.queued(t, tasks.QueueCritical, "pending"), tasks.OutboxTaskID(later[0], tasks.TypeStudentLearn))
	cancel()
	<-done
}

func TestHandlerRegistersTheRelayTask(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ids := e.write(t, swipes(2)...)
	mux := asynq.NewServeMux()
	tasks.NewHandler(tasks.Deps{Log: testutil.Logger(t), Relay: e.relay(t, e.queue, tasks.RelayConfig{})}).Register(mux)

	require.NoError(t, mux.ProcessTask(ctx, tasks.NewOutboxRelayTask()))
	assert.Empty(t, e.unpublished(t))
	assert.Contains(t, e.queued(t, tasks.QueueCritical, "pending"), tasks.OutboxTaskID(ids[0], tasks.TypeStudentLearn))

	// Handlers not written yet are not registered.
	learn, err := tasks.NewStudentLearnTask(uuid.NewString(), ids[0])
	require.NoError(t, err)
	assert.Error(t, mux.ProcessTask(ctx, learn))

	// A failing pass fails the task, so asynq reports it.
	opt, err := asynq.ParseRedisURI("redis://127.0.0.1:1/0")
	require.NoError(t, err)
	down := asynq.NewClient(opt)
	t.Cleanup(func() { _ = down.Close() })
	e.write(t, swipes(1)...)
	broken := asynq.NewServeMux()
	tasks.NewHandler(tasks.Deps{Log: testutil.Logger(t), Relay: e.relay(t, down, tasks.RelayConfig{})}).Register(broken)
	assert.Error(t, broken.ProcessTask(ctx, tasks.NewOutboxRelayTask()))
	assert.Len(t, e.unpublished(t), 1)
}

type quietLogger struct{}

func (quietLogger) Debug(...any) {}
func (quietLogger) Info(...any)  {}
func (quietLogger) Warn(...any)  {}
func (quietLogger) Error(...any) {}
func (quietLogger) Fatal(args ...any) {
	panic(fmt.Sprint(args...))
}

// Redis loses every queued task (a restart without persistence): the
// monitor finds the pending deliveries from their rows and queues them
// again under their ids, a page at a time, going on where the last page
// ended; tasks that still exist are left alone, and a pass that finds
// Redis down resumes where it failed.
func TestWebhookMonitorQueuesLostDeliveriesAgain(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ids := e.write(t, swipes(3)...) // 6 deliveries
	_, err := e.relay(t, e.queue, tasks.RelayConfig{}).Drain(ctx)
	require.NoError(t, err)
	require.Len(t, e.queued(t, tasks.QueueWebhooks, "pending"), 6)
	require.NoError(t, e.rdb.FlushDB(ctx).Err(), "Redis comes back empty")
	_, err = e.db.Pool().Exec(ctx, `UPDATE webhook_deliveries SET next_attempt_at = now() - interval '1 hour'
WHERE outbox_id = ANY($1)`, ids)
	require.NoError(t, err)

	reg := prometheus.NewRegistry()
	m := tasks.NewWebhookMetrics(reg)
	cfg := tasks.WebhookMonitorConfig{Overdue: time.Minute, Batch: 4, Pages: 1}
	// A client of its own: an asynq client registers a queue's name in
	// Redis once per process, so after the flush e.queue's tasks would run
	// but not be listed by the inspector.
	q := asynq.NewClientFromRedisClient(e.rdb)

	// Redis is down for the first pass: nothing queued, nothing skipped.
	down := tasks.NewWebhookMonitor(testutil.Logger(t), wire.Webhooks{Store: e.db}, &failAfter{next: q, n: 1}, m, cfg)
	assert.Equal(t, 1, down.Pass(ctx))
	assert.Equal(t, 0, down.Pass(ctx), "resumes at the delivery that failed, and Redis is still down")

	mon := tasks.NewWebhookMonitor(testutil.Logger(t), wire.Webhooks{Store: e.db}, q, m, cfg)
	assert.Equal(t, 3, mon.Pass(ctx), "the first page of 4: one of them was queued by the failing pass")
	assert.Equal(t, 2, mon.Pass(ctx), "the rest")
	assert.Equal(t, 0, mon.Pass(ctx), "from the start again: every task exists now")
	hooks := e.queued(t, tasks.QueueWebhooks, "pending")
	require.Len(t, hooks, 6)
	for _, id := range ids {
		for _, ep := range endpoints {
			assert.Contains(t, hooks, tasks.WebhookTaskID(id, ep, 0))
		}
	}
	assert.Equal(t, 6.0, value(t, reg, "matching_webhook_requeued_total"))
	assert.Equal(t, 6.0, value(t, reg, "matching_webhook_backlog"))

	// Redis empty again: a pass of several pages finds them all at once.
	require.NoError(t, e.rdb.FlushDB(ctx).Err())
	q = asynq.NewClientFromRedisClient(e.rdb)
	cfg.Pages = 3
	assert.Equal(t, 6, tasks.NewWebhookMonitor(testutil.Logger(t), wire.Webhooks{Store: e.db}, q, m, cfg).Pass(ctx))

	// A delivery that is due but not yet overdue is not the monitor's.
	_, err = e.db.Pool().Exec(ctx, `UPDATE webhook_deliveries SET next_attempt_at = now()`)
	require.NoError(t, err)
	require.NoError(t, e.rdb.FlushDB(ctx).Err())
	assert.Equal(t, 0, mon.Pass(ctx))
}

// A writer's hand-over: rows it cannot route and rows a relay holds are
// left unmarked, the others are queued in order until the queue fails.
func TestHandOver(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ids := e.write(t, swipes(3)...)
	l := &ledger{skip: []int64{ids[1]}}
	router := tasks.NewRouter()
	router.Add(tasks.TopicSwipeRecorded, tasks.LearnRoute)
	tasks.AddWebhookRoutes(router, []tasks.WebhookSubscription{{URL: endpoints[0], Events: []string{tasks.TopicSwipeRecorded}}}, l)
	rows := []tasks.OutboxRow{
		{ID: ids[0], Topic: tasks.TopicSwipeRecorded, StudentID: "s0"},
		{ID: ids[1], Topic: tasks.TopicSwipeRecorded, StudentID: "s1"},
		{ID: 999, Topic: "mystery.happened"},
		{ID: ids[2], Topic: tasks.TopicSwipeRecorded, StudentID: "s2"},
	}

	handed, err := tasks.HandOver(ctx, e.queue, router, rows)
	assert.ErrorIs(t, err, tasks.ErrUnknownTopic, "reported, not fatal")
	assert.NotErrorIs(t, err, tasks.ErrNotQueued)
	assert.Equal(t, []int64{ids[0], ids[2]}, handed, "the relay's row and the unroutable one are left")
	assert.Len(t, l.keys, 3, "deliveries written for every routed row, in one call")
	assert.Len(t, e.queued(t, tasks.QueueWebhooks, "pending"), 2)

	// The queue fails after the first row's two tasks.
	l.skip = nil
	handed, err = tasks.HandOver(ctx, &failAfter{next: e.queue, n: 2}, router, rows[:2])
	assert.ErrorIs(t, err, tasks.ErrNotQueued)
	assert.Equal(t, []int64{ids[0]}, handed)

	// The time runs out while the deliveries are written (a slow
	// database): nothing queued, and it is not the queue's failure.
	done, cancel := context.WithCancel(ctx)
	cancel()
	handed, err = tasks.HandOver(done, e.queue, router, rows[:1])
	assert.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, tasks.ErrNotQueued)
	assert.Empty(t, handed)

	// The deliveries cannot be written: nothing is queued.
	l.err = errors.New("database down")
	require.NoError(t, e.rdb.FlushDB(ctx).Err())
	handed, err = tasks.HandOver(ctx, asynq.NewClientFromRedisClient(e.rdb), router, rows[:1])
	assert.ErrorIs(t, err, l.err)
	assert.NotErrorIs(t, err, tasks.ErrNotQueued)
	assert.Empty(t, handed)
	assert.Empty(t, e.queued(t, tasks.QueueCritical, "pending"))
}
