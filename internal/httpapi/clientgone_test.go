package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/httpapi"
	"github.com/collegematch/matching/internal/testutil"
)

// leaveAt is the Redis call of a request during which its client leaves.
type leaveAt int

const (
	atCount       leaveAt = iota // the request's first call: the rate limiter's count
	atSecondCount                // the second count: the allowance of the swipes a request carries
	afterCounts                  // the first call that counts nothing: a read model
)

// leaving cancels its request's context (as net/http does when the client
// closes its connection) as the chosen Redis call starts; the call then
// runs on the canceled context, as it would have.
type leaving struct {
	at     leaveAt
	cancel context.CancelFunc
	counts atomic.Int32
	left   atomic.Bool
}

type leavingKey struct{}

func (l *leaving) see(cmds []redis.Cmder) {
	if l.left.Load() {
		return
	}
	counting := slices.ContainsFunc(cmds, func(c redis.Cmder) bool { return c.Name() == "evalsha" || c.Name() == "eval" })
	now := false
	switch l.at {
	case atCount:
		now = true
	case atSecondCount:
		now = counting && l.counts.Add(1) == 2
	case afterCounts:
		now = !counting
	}
	if now {
		l.left.Store(true)
		l.cancel()
	}
}

// leaveHook lets a request's leaving see each Redis call made for it.
type leaveHook struct{}

func (leaveHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (leaveHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if l, ok := ctx.Value(leavingKey{}).(*leaving); ok {
			l.see([]redis.Cmder{cmd})
		}
		return next(ctx, cmd)
	}
}

func (leaveHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if l, ok := ctx.Value(leavingKey{}).(*leaving); ok {
			l.see(cmds)
		}
		return next(ctx, cmds)
	}
}

// counterSum adds up the counters of a family whose labels include want.
func counterSum(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			n := 0
			for _, l := range m.GetLabel() {
				if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
					n++
				}
			}
			if n == len(want) {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// A client that goes away mid-request (its context canceled during a
// Redis call) is not a failing dependency: the rate limiter takes no
// fallback and counts no failure, the read models count no error, no
// feed is built for the reader that is gone, nothing is recorded, and the
// request is logged once, as the client's disconnect (499), with no
// warning.
func TestClientGoneIsNotAFailingDependency(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBHTTPAPI)
	rdb.AddHook(leaveHook{})
	logs := &testutil.Buffer{}
	api := newTestAPIOn(t, testutil.NewDB(t), rdb, func(d *httpapi.Deps) {
		d.Log = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	schools := api.seedSchools(t, 60)

	cases := []struct {
		name, method, path string
		body               func(student string) any
		at                 leaveAt
	}{
		{"compact feed, during the count", "GET", "/m/recommendations/{id}", nil, atCount},
		{"recommendations, during the count", "POST", "/recommendations",
			func(id string) any { return map[string]any{"student_id": id} }, atCount},
		{"recommendations, during the feed read", "POST", "/recommendations",
			func(id string) any { return map[string]any{"student_id": id} }, afterCounts},
		{"continuous feed, during the feed and cooldown read", "POST", "/continuous-feed",
			func(id string) any { return map[string]any{"student_id": id, "limit": 5} }, afterCounts},
		{"continuous feed, during the carried swipes' count", "POST", "/continuous-feed",
			func(id string) any {
				return map[string]any{"student_id": id, "limit": 5, "swipes": []any{
					map[string]any{"school_id": schools[0].ID, "direction": "right", "swipe_id": uuid.NewString()}}}
			}, atSecondCount},
		{"swipe, during the count", "POST", "/swipe",
			func(id string) any {
				return map[string]any{"student_id": id, "school_id": schools[1].ID, "direction": "right"}
			}, atCount},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			student, tok := api.newStudent(t, completeProfile())
			var body []byte
			if c.body != nil {
				var err error
				body, err = json.Marshal(c.body(student))
				require.NoError(t, err)
			}
			limiterErrors := counterSum(t, api.Registry, "matching_rate_limit_errors_total", nil)
			readErrors := counterSum(t, api.Registry, "matching_feed_cache_reads_total", map[string]string{"result": "error"})
			writeErrors := counterSum(t, api.Registry, "matching_feed_cache_writes_total", map[string]string{"result": "error"})
			builds := api.Students.calls.Load()
			logged := len(logs.String())

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			l := &leaving{at: c.at, cancel: cancel}
			req := httptest.NewRequestWithContext(context.WithValue(ctx, leavingKey{}, l), c.method,
				strings.ReplaceAll(c.path, "{id}", student), bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			api.Handler.ServeHTTP(rec, req)

			require.True(t, l.left.Load(), "the client left at the chosen call")
			assert.Equal(t, 499, rec.Code, "%s", rec.Body)
			assert.Equal(t, limiterErrors, counterSum(t, api.Registry, "matching_rate_limit_errors_total", nil),
				"no rate limiter failure counted")
			assert.Equal(t, readErrors, counterSum(t, api.Registry, "matching_feed_cache_reads_total", map[string]string{"result": "error"}),
				"no feed cache error counted")
			assert.Equal(t, writeErrors, counterSum(t, api.Registry, "matching_feed_cache_writes_total", map[string]string{"result": "error"}),
				"no feed cache error counted")
			assert.Equal(t, builds, api.Students.calls.Load(), "no feed built for a reader that is gone")
			var swipes int
			require.NoError(t, api.Pool.QueryRow(context.Background(), `SELECT count(*) FROM swipes WHERE student_id = $1`, student).Scan(&swipes))
			assert.Zero(t, swipes, "nothing recorded")

			var lines []map[string]any
			for _, line := range strings.Split(strings.TrimSpace(logs.String()[logged:]), "\n") {
				var m map[string]any
				require.NoError(t, json.Unmarshal([]byte(line), &m), "%s", line)
				lines = append(lines, m)
			}
			require.Len(t, lines, 1, "one log line: %v", lines)
			assert.Equal(t, "request", lines[0]["msg"])
			assert.Equal(t, "INFO", lines[0]["level"])
			assert.EqualValues(t, 499, lines[0]["status"])
		})
	}
	assert.EqualValues(t, len(cases), counterSum(t, api.Registry, "matching_http_requests_total", map[string]string{"code": "499"}))
}
