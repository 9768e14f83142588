package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/config"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/testutil"
)

type worker struct {
	ops    string // ops address
	logs   *testutil.Buffer
	cancel context.CancelFunc
	done   chan struct{} // closed when run has returned err
	err    error
}

// start runs the worker with env until the test ends or stop is called.
func start(t *testing.T, env map[string]string) *worker {
	t.Helper()
	return startWith(t, env, options{})
}

// startWith is start with the worker's options set.
func startWith(t *testing.T, env map[string]string, opt options) *worker {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &worker{logs: &testutil.Buffer{}, cancel: cancel, done: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		defer close(w.done)
		w.err = runWith(ctx, func(k string) string { return env[k] }, w.logs, ready, opt)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-w.done:
		case <-time.After(30 * time.Second):
			// Left running, it would take the next test's tasks from the
			// shared Redis DB: say so here rather than there.
			t.Errorf("worker still running 30 s after its context ended")
		}
		if t.Failed() {
			t.Log(w.logs.String())
		}
	})
	select {
	case w.ops = <-ready:
	case <-w.done:
		t.Fatalf("worker stopped at start: %v\n%s", w.err, w.logs.String())
	case <-time.After(15 * time.Second):
		t.Fatal("worker did not get ready")
	}
	return w
}

// stop cancels the worker and requires it to return cleanly within limit.
func (w *worker) stop(t *testing.T, limit time.Duration) {
	t.Helper()
	began := time.Now()
	w.cancel()
	select {
	case <-w.done:
		require.NoError(t, w.err)
		t.Logf("stopped in %v", time.Since(began).Round(time.Millisecond))
	case <-time.After(limit):
		t.Fatalf("worker did not stop within %v", limit)
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func writeEvent(t *testing.T, dbURL, topic string) int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var id int64
	require.NoError(t, pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		id, err = store.InsertOutbox(ctx, tx, topic, "", map[string]int{"n": 1})
		return err
	}))
	return id
}

func published(t *testing.T, dbURL string, id int64) bool {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var ok bool
	require.NoError(t, conn.QueryRow(ctx, `SELECT published_at IS NOT NULL FROM outbox WHERE id = $1`, id).Scan(&ok))
	return ok
}

func exec(t *testing.T, dbURL, sql string, args ...any) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql, args...)
	require.NoError(t, err)
}

func exists(t *testing.T, dbURL string, id int64) bool {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var ok bool
	require.NoError(t, conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM outbox WHERE id = $1)`, id).Scan(&ok))
	return ok
}

func TestRunServesOpsRelaysAndStopsOnCancel(t *testing.T) {
	dbURL := testutil.NewDBURL(t)
	rdb := testutil.NewRedis(t, testutil.RedisDBCmdWorker)
	// Written before the worker starts; no route of this worker serves the
	// topic (a newer build's, say), so it must stay for a worker that does.
	early := writeEvent(t, dbURL, "mystery.happened")
	// Handed over eight days ago: past the retention.
	expired := writeEvent(t, dbURL, "mystery.happened")
	exec(t, dbURL, `UPDATE outbox SET published_at = now() - interval '8 days' WHERE id = $1`, expired)

	w := start(t, map[string]string{
		"DATABASE_URL": dbURL,
		"REDIS_URL":    testutil.RedisURLFor(t, testutil.RedisDBCmdWorker),
		"OPS_ADDR":     "127.0.0.1:0",
		"LOG_LEVEL":    "debug",
	})
	base := "http://" + w.ops

	code, body := get(t, base+"/livez")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\n", body)
	code, body = get(t, base+"/readyz")
	assert.Equal(t, http.StatusOK, code, body)
	assert.JSONEq(t, `{"status":"ready","dependencies":{"postgres":"ok","redis":"ok"}}`, body)

	// The relay's pass at start leaves the row unpublished and reports it;
	// the retention pass at start deletes the expired row.
	require.Eventually(t, func() bool {
		_, m := get(t, base+"/metrics")
		return strings.Contains(m, "matching_outbox_backlog 1") &&
			strings.Contains(m, "matching_outbox_deleted_total 1")
	}, 5*time.Second, 50*time.Millisecond)
	assert.False(t, published(t, dbURL, early))
	assert.False(t, exists(t, dbURL, expired))
	// And keeps running: a later row is counted within a tick or two, and
	// left unpublished as well.
	later := writeEvent(t, dbURL, "mystery.happened")
	require.Eventually(t, func() bool {
		_, m := get(t, base+"/metrics")
		return strings.Contains(m, "matching_outbox_backlog 2")
	}, 5*time.Second, 50*time.Millisecond)
	assert.False(t, published(t, dbURL, early))
	assert.False(t, published(t, dbURL, later))

	_, m := get(t, base+"/metrics")
	for _, name := range []string{
		"matching_outbox_relay_errors_total", "matching_outbox_oldest_unpublished_age_seconds",
		"go_goroutines", "process_cpu_seconds_total",
	} {
		assert.Contains(t, m, name)
	}

	// The task server runs the relay task from the queue.
	queue := asynq.NewClientFromRedisClient(rdb)
	defer queue.Close()
	_, err := queue.Enqueue(tasks.NewOutboxRelayTask())
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, m := get(t, base+"/metrics")
		return strings.Contains(m, `matching_tasks_processed_total{result="ok",type="outbox:relay"} 1`)
	}, 10*time.Second, 50*time.Millisecond)

	w.stop(t, 5*time.Second)
	_, err = net.DialTimeout("tcp", w.ops, time.Second)
	assert.Error(t, err, "the ops port is closed after stop")

	// Every log line is JSON from the worker.
	sc := bufio.NewScanner(strings.NewReader(w.logs.String()))
	lines := 0
	for sc.Scan() {
		var rec map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec), "log line %q", sc.Text())
		assert.Equal(t, "worker", rec["service"])
		lines++
	}
	assert.Positive(t, lines)
}

func TestRunStartsWithoutRedisAndReportsIt(t *testing.T) {
	dbURL := testutil.NewDBURL(t)
	w := start(t, map[string]string{
		"DATABASE_URL": dbURL,
		"REDIS_URL":    "redis://127.0.0.1:1/0",
		"OPS_ADDR":     "127.0.0.1:0",
	})
	// Ready all the same (its task servers started and keep retrying): a
	// Redis outage shows in the body, the metrics and the log, and does not
	// take the worker out of rotation.
	code, body := get(t, "http://"+w.ops+"/readyz")
	assert.Equal(t, http.StatusOK, code, body)
	var readyz struct {
		Status       string
		Dependencies map[string]string
	}
	require.NoError(t, json.Unmarshal([]byte(body), &readyz))
	assert.Equal(t, "ready", readyz.Status)
	assert.Equal(t, "ok", readyz.Dependencies["postgres"])
	assert.True(t, strings.HasPrefix(readyz.Dependencies["redis"], "down"), readyz.Dependencies["redis"])
	_, m := get(t, "http://"+w.ops+"/metrics")
	assert.Contains(t, m, `matching_dependency_up{dependency="postgres"} 1`)
	assert.Contains(t, m, `matching_dependency_up{dependency="redis"} 0`)
	w.stop(t, 15*time.Second)
	assert.Regexp(t, `"msg":"dependency is down",[^\n]*"dependency":"redis"`, w.logs.String())
}

func TestRunRejectsBadConfig(t *testing.T) {
	env := map[string]string{"REDIS_URL": "http://127.0.0.1:6379", "OPS_ADDR": "127.0.0.1:0"}
	err := run(context.Background(), func(k string) string { return env[k] }, io.Discard, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "REDIS_URL")
}

// A bad subscriber stops the worker at start, with an error naming it.
func TestRunRejectsBadEndpointsFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "endpoints.yaml")
	doc := "- url: https://ok.example/hook\n  secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n  events: [swipe.recorded]\n" +
		"- url: ftp://bad.example/x\n  secret: nope\n  events: [swipe.deleted]\n"
	require.NoError(t, os.WriteFile(p, []byte(doc), 0o600))
	env := map[string]string{"OPS_ADDR": "127.0.0.1:0", "WEBHOOK_ENDPOINTS_FILE": p}
	err := run(context.Background(), func(k string) string { return env[k] }, io.Discard, nil)
	require.Error(t, err)
	for _, want := range []string{"endpoint 2 (ftp://bad.example/x)", `scheme "ftp"`, "whsec_", `unknown event "swipe.deleted"`} {
		assert.Contains(t, err.Error(), want)
	}
	assert.NotContains(t, err.Error(), "endpoint 1")

	env["WEBHOOK_ENDPOINTS_FILE"] = filepath.Join(t.TempDir(), "missing.yaml")
	err = run(context.Background(), func(k string) string { return env[k] }, io.Discard, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "WEBHOOK_ENDPOINTS_FILE")
}

// WORKER_CONCURRENCY and WEBHOOK_CONCURRENCY set the slots of the worker's
// two task servers, as asynq registers them in Redis.
// LEARN_SHARDS' default (config) is the shard count tasks spreads
// students over before SetLearnShards: the two packages cannot share the
// constant (config imports nothing of the service), so they are held equal
// here, where both are imported.
func TestLearnShardsDefaultIsConfigs(t *testing.T) {
	assert.Equal(t, config.DefaultLearnShards, tasks.DefaultLearnShards)
}

func TestRunTaskSlotsFromConfig(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBCmdWorker)
	w := start(t, map[string]string{
		"DATABASE_URL":        testutil.NewDBURL(t),
		"REDIS_URL":           testutil.RedisURLFor(t, testutil.RedisDBCmdWorker),
		"OPS_ADDR":            "127.0.0.1:0",
		"WORKER_CONCURRENCY":  "3",
		"WEBHOOK_CONCURRENCY": "7",
	})
	insp := asynq.NewInspectorFromRedisClient(rdb)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		servers, err := insp.Servers()
		require.NoError(c, err)
		slots := map[int][]string{}
		for _, s := range servers {
			slots[s.Concurrency] = slices.Sorted(maps.Keys(s.Queues))
		}
		assert.Equal(c, map[int][]string{
			3: slices.Sorted(maps.Keys(tasks.QueuePriorities())),
			7: slices.Sorted(maps.Keys(tasks.WebhookQueues())),
		}, slots)
	}, 10*time.Second, 100*time.Millisecond)
	w.stop(t, 15*time.Second)
}

// The factor cache is WORKER_FACTOR_CACHE_MB when set, else a quarter of
// the memory limit the worker runs under, never less than the default.
func TestFactorCacheBytes(t *testing.T) {
	assert.Equal(t, 768<<20, factorCacheBytes(768, 512<<20), "set: as set, whatever the limit")
	assert.Equal(t, 128<<20, factorCacheBytes(0, 512<<20), "a quarter of a 512 MiB limit")
	assert.Equal(t, query.DefaultFactorCacheBytes, factorCacheBytes(0, 128<<20), "never below the default")
	assert.Equal(t, query.DefaultFactorCacheBytes, factorCacheBytes(0, 0), "no limit")
	assert.Equal(t, query.DefaultFactorCacheBytes, factorCacheBytes(0, math.MaxInt64), "the runtime's no limit")
}
