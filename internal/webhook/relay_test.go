package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"
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

// The relay runs against a fresh PostgreSQL database and this package's
// Redis DB, which every test flushes: these tests do not run in parallel.

var hookURLs = []string{"https://a.example/hook", "https://b.example/hook"}

func subscriptions() []domain.Subscription {
	out := make([]domain.Subscription, len(hookURLs))
	for i, ep := range hookURLs {
		out[i] = domain.Subscription{URL: ep, Key: tasks.EndpointKey(ep), Events: []string{tasks.TopicSwipeRecorded}}
	}
	return out
}

type env struct {
	db      *store.Store
	rdb     *redis.Client
	queue   *handover.Client
	insp    *asynq.Inspector
	reg     *prometheus.Registry
	metrics *webhook.RelayMetrics
}

func newEnv(t *testing.T) *env {
	t.Helper()
	rdb := testutil.NewRedis(t, testutil.RedisDBWebhook)
	e := &env{
		db:    store.New(testutil.NewDB(t)),
		rdb:   rdb,
		queue: handover.NewClient(rdb, handover.NewQueuer()),
		insp:  asynq.NewInspectorFromRedisClient(rdb),
		reg:   prometheus.NewRegistry(),
	}
	e.metrics = webhook.NewRelayMetrics(e.reg)
	return e
}

func (e *env) relay(t *testing.T, q webhook.Queue, cfg webhook.RelayConfig) *webhook.Relay {
	return webhook.NewRelay(testutil.Logger(t), e.db, q, subscriptions(), e.metrics, cfg)
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
			id, err := store.InsertOutbox(context.Background(), tx, ev.topic, ev.student,
				map[string]string{"school_id": uuid.NewString(), "direction": "right", "timestamp": "2026-11-25T10:00:00.000Z"})
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

// The relay publishes each event once: its deliveries written, one per
// subscribed endpoint, and their first attempts queued with the event, so
// the attempt reads nothing.
func TestRelayWritesDeliveriesAndQueuesTheirFirstAttempts(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ids := e.write(t, swipes(5)...)
	n, err := e.relay(t, e.queue, webhook.RelayConfig{BatchSize: 2}).Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 5, n)
	assert.Empty(t, e.unpublished(t))

	hooks := e.queued(t, tasks.QueueWebhooks, "pending")
	require.Len(t, hooks, 10)
	for _, id := range ids {
		for _, ep := range hookURLs {
			ti, ok := hooks[tasks.WebhookTaskID(id, ep, 0)]
			require.True(t, ok, "event %d to %s", id, ep)
			var p tasks.WebhookDeliverPayload
			require.NoError(t, json.Unmarshal(ti.Payload, &p))
			assert.Equal(t, id, p.OutboxID)
			require.NotNil(t, p.First, "the first attempt carries the event")
			assert.Equal(t, tasks.TopicSwipeRecorded, p.First.Topic)
			assert.Positive(t, p.First.DeliveryID)
			assert.Greater(t, p.First.LeasedUntil, time.Now().UnixMilli())
		}
	}
	var deliveries int
	require.NoError(t, e.db.Pool().QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries`).Scan(&deliveries))
	assert.Equal(t, 10, deliveries)
	assert.Equal(t, 5.0, value(t, e.reg, "matching_outbox_relayed_total", "topic", tasks.TopicSwipeRecorded))
	assert.Zero(t, value(t, e.reg, "matching_outbox_backlog"))

	// Again: nothing left to publish.
	n, err = e.relay(t, e.queue, webhook.RelayConfig{}).Drain(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.Len(t, e.queued(t, tasks.QueueWebhooks, "pending"), 10)
}

// failingLease is a lease whose Redis is down.
type failingLease struct{}

func (failingLease) Hold(context.Context, string, time.Duration) (bool, error) {
	return false, errors.New("dial tcp 127.0.0.1:6379: connection refused")
}
func (failingLease) Release(context.Context, string) error { return nil }

// failingQueue is a queue whose Redis is down.
type failingQueue struct{}

func (failingQueue) Queue(context.Context, ...handover.Job) (int, error) {
	return 0, errors.New("dial tcp 127.0.0.1:6379: connection refused")
}

// While Redis is down nothing is published and no delivery is written;
// once it answers, every row is.
func TestRelayKeepsRowsWhileRedisIsDown(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ids := e.write(t, swipes(3)...)
	_, err := e.relay(t, failingQueue{}, webhook.RelayConfig{}).Drain(ctx)
	require.Error(t, err)
	assert.Equal(t, ids, e.unpublished(t))
	var deliveries int
	require.NoError(t, e.db.Pool().QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries`).Scan(&deliveries))
	assert.Zero(t, deliveries)
	assert.Equal(t, 1.0, value(t, e.reg, "matching_outbox_relay_errors_total", "stage", "relay"))
	assert.Equal(t, 3.0, value(t, e.reg, "matching_outbox_backlog"))

	n, err := e.relay(t, e.queue, webhook.RelayConfig{}).Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.Len(t, e.queued(t, tasks.QueueWebhooks, "pending"), 6)
}

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
	e.setAge(t, 30*day, nil, ids[7]) // never published: never deleted
	// ids[8] is new and unpublished. A delivery record still needs ids[5].
	_, err := e.db.Pool().Exec(ctx, `
INSERT INTO webhook_deliveries (outbox_id, endpoint_url, webhook_id, event)
VALUES ($1, $2, 'msg_1', 'swipe.recorded')`, ids[5], hookURLs[0])
	require.NoError(t, err)

	// Default retention (7 days), two rows per statement: five rows in three
	// statements.
	relay := e.relay(t, e.queue, webhook.RelayConfig{PruneBatchSize: 2})
	deleted, err := relay.Prune(ctx)
	require.NoError(t, err)
	assert.Equal(t, 5, deleted)
	assert.Equal(t, []int64{ids[3], ids[5], ids[7], ids[8]}, e.outboxIDs(t))
	assert.Equal(t, 5.0, value(t, e.reg, "matching_outbox_deleted_total"))

	// Below the floor the retention is raised to 2 days.
	a, b := 3*day, 1*day
	e.setAge(t, 4*day, &a, ids[8])
	fresh := e.write(t, swipes(1)...)
	e.setAge(t, 2*day, &b, fresh...)
	deleted, err = e.relay(t, e.queue, webhook.RelayConfig{Retention: time.Minute}).Prune(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, deleted, "the rows published 6 and 3 days ago, not the one published a day ago")
	assert.Equal(t, []int64{ids[5], ids[7], fresh[0]}, e.outboxIDs(t))
}

func TestRelayRunDrainsAtStartAndOnEveryTickAndPrunes(t *testing.T) {
	e := newEnv(t)
	e.write(t, swipes(2)...)
	const day = 24 * time.Hour
	expired := 10 * day
	old := e.write(t, swipes(1)...)
	e.setAge(t, 11*day, &expired, old...)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.relay(t, e.queue, webhook.RelayConfig{Interval: 50 * time.Millisecond, PruneInterval: time.Hour}).Run(ctx)
	}()
	require.Eventually(t, func() bool { return len(e.unpublished(t)) == 0 }, 5*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { return len(e.outboxIDs(t)) == 2 }, 5*time.Second, 20*time.Millisecond,
		"the expired row is pruned at start")
	later := e.write(t, swipes(1)...)
	require.Eventually(t, func() bool { return len(e.unpublished(t)) == 0 }, 5*time.Second, 20*time.Millisecond)
	assert.Contains(t, e.queued(t, tasks.QueueWebhooks, "pending"), tasks.WebhookTaskID(later[0], hookURLs[0], 0))
	cancel()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestHandlerRegistersTheRelayTask(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ids := e.write(t, swipes(2)...)
	mux := asynq.NewServeMux()
	webhook.NewHandler(webhook.Deps{Log: testutil.Logger(t), Relay: e.relay(t, e.queue, webhook.RelayConfig{})}).Register(mux)

	require.NoError(t, mux.ProcessTask(ctx, tasks.NewOutboxRelayTask()))
	assert.Empty(t, e.unpublished(t))
	assert.Contains(t, e.queued(t, tasks.QueueWebhooks, "pending"), tasks.WebhookTaskID(ids[0], hookURLs[0], 0))

	// Handlers not wired are not registered.
	learn, err := tasks.NewStudentLearnTask(uuid.NewString(), 0)
	require.NoError(t, err)
	assert.Error(t, mux.ProcessTask(ctx, learn))

	// A failing pass fails the task, so asynq reports it.
	e.write(t, swipes(1)...)
	broken := asynq.NewServeMux()
	webhook.NewHandler(webhook.Deps{Log: testutil.Logger(t), Relay: e.relay(t, failingQueue{}, webhook.RelayConfig{})}).Register(broken)
	assert.Error(t, broken.ProcessTask(ctx, tasks.NewOutboxRelayTask()))
	assert.Len(t, e.unpublished(t), 1)
}

// Redis loses every queued task (a restart without persistence): the
// monitor finds the pending deliveries from their rows and queues them
// again under their ids, a page at a time, going on where the last page
// ended; tasks that still exist are left alone, and a pass that finds
// Redis down resumes where it started.
func TestWebhookMonitorQueuesLostDeliveriesAgain(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ids := e.write(t, swipes(3)...) // 6 deliveries
	_, err := e.relay(t, e.queue, webhook.RelayConfig{}).Drain(ctx)
	require.NoError(t, err)
	require.Len(t, e.queued(t, tasks.QueueWebhooks, "pending"), 6)
	require.NoError(t, e.rdb.FlushDB(ctx).Err(), "Redis comes back empty")
	_, err = e.db.Pool().Exec(ctx, `UPDATE webhook_deliveries SET next_attempt_at = now() - interval '1 hour'
WHERE outbox_id = ANY($1)`, ids)
	require.NoError(t, err)

	reg := prometheus.NewRegistry()
	m := webhook.NewMetrics(reg)
	cfg := webhook.MonitorConfig{Overdue: time.Minute, Batch: 4, Pages: 1}
	// A queuer of its own: it registers a queue's name in Redis once per
	// process, and the flush forgot e.queue's.
	q := handover.NewClient(e.rdb, handover.NewQueuer())

	down := webhook.NewMonitor(testutil.Logger(t), e.db, failingQueue{}, nil, m, cfg)
	assert.Equal(t, 0, down.Pass(ctx), "Redis is down: nothing queued")

	mon := webhook.NewMonitor(testutil.Logger(t), e.db, q, handover.NewLeader(e.rdb, "a"), m, cfg)
	assert.Equal(t, 4, mon.Pass(ctx), "the first page of 4")
	// Another replica's monitor makes no pass while this one holds the
	// lease, and exports a backlog of 0 (the fleet's max is the holder's).
	otherReg := prometheus.NewRegistry()
	other := webhook.NewMonitor(testutil.Logger(t), e.db, q, handover.NewLeader(e.rdb, "b"), webhook.NewMetrics(otherReg), cfg)
	assert.Equal(t, 0, other.Pass(ctx))
	assert.Zero(t, value(t, otherReg, "matching_webhook_backlog"))
	// Redis does not answer (the lease cannot be read): nothing is queued,
	// and the backlog is measured all the same.
	blindReg := prometheus.NewRegistry()
	blind := webhook.NewMonitor(testutil.Logger(t), e.db, q, failingLease{}, webhook.NewMetrics(blindReg), cfg)
	assert.Equal(t, 0, blind.Pass(ctx))
	assert.Equal(t, 6.0, value(t, blindReg, "matching_webhook_backlog"))
	assert.Equal(t, 2, mon.Pass(ctx), "the rest")
	assert.Equal(t, 0, mon.Pass(ctx), "from the start again: every task exists now")
	hooks := e.queued(t, tasks.QueueWebhooks, "pending")
	require.Len(t, hooks, 6)
	for _, id := range ids {
		for _, ep := range hookURLs {
			ti, ok := hooks[tasks.WebhookTaskID(id, ep, 0)]
			require.True(t, ok)
			var p tasks.WebhookDeliverPayload
			require.NoError(t, json.Unmarshal(ti.Payload, &p))
			assert.Nil(t, p.First, "a repair claims its attempt")
		}
	}
	assert.Equal(t, 6.0, value(t, reg, "matching_webhook_requeued_total"))
	assert.Equal(t, 6.0, value(t, reg, "matching_webhook_backlog"))

	// Redis empty again: a pass of several pages finds them all at once.
	require.NoError(t, e.rdb.FlushDB(ctx).Err())
	cfg.Pages = 3
	assert.Equal(t, 6, webhook.NewMonitor(testutil.Logger(t), e.db, handover.NewClient(e.rdb, handover.NewQueuer()), nil, m, cfg).Pass(ctx))

	// A delivery that is due but not yet overdue is not the monitor's.
	_, err = e.db.Pool().Exec(ctx, `UPDATE webhook_deliveries SET next_attempt_at = now()`)
	require.NoError(t, err)
	require.NoError(t, e.rdb.FlushDB(ctx).Err())
	assert.Equal(t, 0, mon.Pass(ctx))
}
