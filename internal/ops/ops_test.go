package ops_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/ops"
)

type readyz struct {
	Status       string            `json:"status"`
	Dependencies map[string]string `json:"dependencies"`
}

func getReadyz(t *testing.T, h http.Handler) (int, readyz) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	var body readyz
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body), rec.Body.String())
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	return rec.Code, body
}

// syncLog collects log lines written from the monitor's goroutines.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// /readyz follows the replica's own state (starting, ready, stopping) and
// not its dependencies: a dependency that is down, or one that hangs,
// shows in the body, the gauge and the log, and /readyz stays 200.
func TestReadyzFollowsTheReplicaNotItsDependencies(t *testing.T) {
	var redisDown, pgHangs atomic.Bool
	checks := []ops.Check{
		{Name: "postgres", Check: func(ctx context.Context) error {
			if pgHangs.Load() {
				time.Sleep(ops.CheckTimeout + time.Second) // ignores its context
			}
			return nil
		}},
		{Name: "redis", Check: func(ctx context.Context) error {
			if redisDown.Load() {
				return errors.New("dial tcp 127.0.0.1:6379: connection refused")
			}
			return nil
		}},
	}
	reg := prometheus.NewRegistry()
	var logs syncLog
	deps := ops.NewMonitor(reg, slog.New(slog.NewJSONHandler(&logs, nil)), checks)
	ready := &ops.Readiness{}
	h := ops.Handler(reg, ready, deps, false)
	ctx := context.Background()

	code, body := getReadyz(t, h)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, readyz{Status: "starting", Dependencies: map[string]string{"postgres": "not checked yet", "redis": "not checked yet"}}, body)

	deps.CheckNow(ctx)
	ready.Ready()
	code, body = getReadyz(t, h)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, readyz{Status: "ready", Dependencies: map[string]string{"postgres": "ok", "redis": "ok"}}, body)
	assert.Equal(t, 1.0, up(t, reg, "redis"))

	// Redis goes down and PostgreSQL stops answering: still ready.
	redisDown.Store(true)
	pgHangs.Store(true)
	start := time.Now()
	deps.CheckNow(ctx)
	assert.Less(t, time.Since(start), ops.CheckTimeout+500*time.Millisecond, "a hanging check is not waited for")
	deps.CheckNow(ctx) // a second failure is not logged again
	start = time.Now()
	code, body = getReadyz(t, h)
	assert.Less(t, time.Since(start), 100*time.Millisecond, "the probe never waits on a dependency")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ready", body.Status)
	assert.Equal(t, "down: dial tcp 127.0.0.1:6379: connection refused", body.Dependencies["redis"])
	assert.Equal(t, "down: no answer within 2s", body.Dependencies["postgres"])
	assert.Equal(t, 0.0, up(t, reg, "redis"))
	assert.Equal(t, 0.0, up(t, reg, "postgres"))
	assert.Equal(t, 1, strings.Count(logs.String(), `"msg":"dependency is down","dependency":"redis"`), logs.String())

	redisDown.Store(false)
	pgHangs.Store(false)
	deps.CheckNow(ctx)
	_, body = getReadyz(t, h)
	assert.Equal(t, map[string]string{"postgres": "ok", "redis": "ok"}, body.Dependencies)
	assert.Contains(t, logs.String(), `"msg":"dependency is back","dependency":"redis","down_for"`)
	assert.Equal(t, 1.0, up(t, reg, "redis"))

	// Draining: not ready, and never ready again.
	ready.Stopping()
	ready.Ready()
	code, body = getReadyz(t, h)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "stopping", body.Status)

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/livez", nil))
	assert.Equal(t, http.StatusOK, rec.Code, "alive while it drains")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	assert.Contains(t, string(b), `matching_dependency_up{dependency="redis"} 1`)
}

// Start checks at once, then every interval, until its context ends.
func TestMonitorStart(t *testing.T) {
	var calls atomic.Int32
	deps := ops.NewMonitor(prometheus.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)),
		[]ops.Check{{Name: "redis", Check: func(context.Context) error { calls.Add(1); return nil }}})
	ctx, cancel := context.WithCancel(context.Background())
	deps.Start(ctx)
	assert.Equal(t, int32(1), calls.Load(), "the first check is done before Start returns")
	assert.Equal(t, map[string]string{"redis": "ok"}, deps.Status())
	cancel()
}

// up reads matching_dependency_up{dependency=dep} from reg.
func up(t *testing.T, reg *prometheus.Registry, dep string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "matching_dependency_up" {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetLabel()[0].GetValue() == dep {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no matching_dependency_up for %s", dep)
	return 0
}
