package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/metrics"
)

func TestRecovererTurnsPanicsInto500(t *testing.T) {
	m := metrics.NewHTTP(prometheus.NewRegistry())
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := begin(recoverer(log, m)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("boom: secret internals")
	})))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/x", nil))

	require.Equal(t, 500, rec.Code)
	var body errorBody
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	assert.Equal(t, "INTERNAL_ERROR", body.Error.Code)
	assert.NotContains(t, body.Error.Message, "secret", "internals never leak")
	assert.Contains(t, body.Error.Message, rec.Header().Get("X-Request-ID"), "the message quotes the request id")
	var mm dto.Metric
	require.NoError(t, m.Panics.Write(&mm))
	assert.Equal(t, 1.0, mm.GetCounter().GetValue())
}

func TestCORS(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) })

	t.Run("off by default", func(t *testing.T) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/health", nil)
		req.Header.Set("Origin", "https://evil.example.com")
		cors(nil)(ok).ServeHTTP(rec, req)
		assert.Empty(t, rec.Header().Get("Access-Control-Allow-Origin"))
	})
	t.Run("allowed origin and preflight", func(t *testing.T) {
		h := cors([]string{"https://app.example.com"})(ok)
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("OPTIONS", "/swipe", nil)
		req.Header.Set("Origin", "https://app.example.com")
		req.Header.Set("Access-Control-Request-Method", "POST")
		h.ServeHTTP(rec, req)
		assert.Equal(t, 204, rec.Code)
		assert.Equal(t, "https://app.example.com", rec.Header().Get("Access-Control-Allow-Origin"))
		assert.Contains(t, rec.Header().Get("Access-Control-Allow-Headers"), "Authorization")

		rec = httptest.NewRecorder()
		req = httptest.NewRequest("GET", "/health", nil)
		req.Header.Set("Origin", "https://other.example.com")
		h.ServeHTTP(rec, req)
		assert.Empty(t, rec.Header().Get("Access-Control-Allow-Origin"), "other origins get nothing")
	})
}

func TestRequestIDAcceptsSaneIncomingIDs(t *testing.T) {
	h := begin(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, RequestIDFrom(r.Context()))
	}))
	for in, keep := range map[string]bool{"abc-123": true, "": false, "has space": false, string(make([]byte, 200)): false} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("X-Request-ID", in)
		h.ServeHTTP(rec, req)
		if keep {
			assert.Equal(t, in, rec.Header().Get("X-Request-ID"))
		} else {
			assert.NotEqual(t, in, rec.Header().Get("X-Request-ID"))
			assert.Len(t, rec.Header().Get("X-Request-ID"), 24)
		}
		assert.Equal(t, rec.Header().Get("X-Request-ID"), rec.Body.String())
	}
}

func TestCancelledRequestIsNotAServerError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/x", nil).WithContext(ctx)
	respondErr(rec, req, slog.New(slog.NewTextHandler(io.Discard, nil)), fmt.Errorf("load: %w", context.Canceled))
	assert.Equal(t, statusClientClosed, rec.Code)

	// A cancellation the request did not ask for is still a server error.
	rec = httptest.NewRecorder()
	respondErr(rec, httptest.NewRequest("GET", "/x", nil), slog.New(slog.NewTextHandler(io.Discard, nil)), context.Canceled)
	assert.Equal(t, 500, rec.Code)
}

// Every request gets its deadline; what ends at a deadline (the request's,
// a call's) answers 503 SERVICE_UNAVAILABLE with Retry-After, not 500.
func TestDeadlines(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cases := []struct {
		method, path string
		want         time.Duration
	}{
		{"POST", "/swipe", RequestDeadline},
		{"GET", "/m/recommendations/x", RequestDeadline},
		{"POST", "/continuous-feed", LongRequestDeadline},
		{"POST", "/m/sync/push", LongRequestDeadline},
		{"POST", "/m/sync/pull", RequestDeadline},
	}
	for _, c := range cases {
		h := begin(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			d, ok := r.Context().Deadline()
			require.True(t, ok, "%s %s has no deadline", c.method, c.path)
			assert.InDelta(t, c.want.Seconds(), time.Until(d).Seconds(), 1, "%s %s", c.method, c.path)
			respondErr(w, r, log, fmt.Errorf("read the feed: %w", context.DeadlineExceeded))
		}))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		require.Equal(t, http.StatusServiceUnavailable, rec.Code, rec.Body.String())
		assert.Equal(t, "1", rec.Header().Get("Retry-After"))
		var body errorBody
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
		assert.Equal(t, "SERVICE_UNAVAILABLE", body.Error.Code)
		assert.NotContains(t, body.Error.Message, "read the feed", "internals never leak")
	}
}

// A request's log line is written at the level its answer calls for: a
// request answered 2xx or 3xx only at debug (the metrics count it), a
// client's mistake at info, a dependency down at warn, a fault at error.
func TestRequestLogLevels(t *testing.T) {
	for status, want := range map[int]slog.Level{
		200: slog.LevelDebug, 204: slog.LevelDebug, 304: slog.LevelDebug,
		400: slog.LevelInfo, 404: slog.LevelInfo, 429: slog.LevelInfo, 499: slog.LevelInfo, 501: slog.LevelInfo,
		503: slog.LevelWarn, 500: slog.LevelError, 502: slog.LevelError,
	} {
		assert.Equal(t, want, requestLevel(status), "%d", status)
	}
	for _, c := range []struct {
		level  slog.Level
		status int
		lines  int
	}{
		{slog.LevelInfo, 200, 0}, {slog.LevelDebug, 200, 1}, {slog.LevelInfo, 404, 1}, {slog.LevelWarn, 404, 0},
	} {
		var buf bytes.Buffer
		log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: c.level}))
		h := begin(observe(log, metrics.NewHTTP(prometheus.NewRegistry()))(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(c.status)
		})))
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/x", nil))
		assert.Equal(t, c.lines, bytes.Count(buf.Bytes(), []byte(`"msg":"request"`)), "%d at %s: %s", c.status, c.level, buf.String())
	}
}
