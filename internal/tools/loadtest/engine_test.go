package loadtest

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The lag percentiles of the sustained run come from the service's
// histograms, read before and after the load: what was observed in
// between, interpolated within its bucket as Prometheus does.
func TestHistogramQuantileOfWhatWasObservedBetween(t *testing.T) {
	inf := math.Inf(1)
	before := histogram{bounds: []float64{0.25, 0.5, 1, inf}, counts: []float64{90, 100, 100, 100}, count: 100}
	after := histogram{bounds: []float64{0.25, 0.5, 1, inf}, counts: []float64{140, 190, 200, 200}, count: 200}
	h := after.sub(before)
	assert.Equal(t, []float64{50, 90, 100, 100}, h.counts)
	assert.EqualValues(t, 100, h.count)

	assert.InDelta(t, 0.125, h.quantile(0.25), 1e-9, "inside the first bucket, from 0")
	assert.InDelta(t, 0.25+0.25*(70-50)/40.0, h.quantile(0.7), 1e-9, "interpolated within (0.25, 0.5]")
	assert.InDelta(t, 0.5+0.5*(99-90)/10.0, h.quantile(0.99), 1e-9, "a p99 in (0.5, 1] says only that it is there")
	assert.Zero(t, histogram{}.quantile(0.5), "nothing observed")

	over := histogram{bounds: []float64{1, inf}, counts: []float64{1, 10}, count: 10}
	assert.Equal(t, 1.0, over.quantile(0.99), "beyond the last finite bound: that bound")

	// A bucket a build had not observed into yet (a new bound) counts in full.
	added := histogram{bounds: []float64{0.1, 0.25}, counts: []float64{3, 5}, count: 5}
	assert.Equal(t, []float64{3, 5}, added.sub(histogram{}).counts)
}

func TestResultCountsAndQuantiles(t *testing.T) {
	r := &Result{Statuses: map[int]int{200: 6, 201: 2, 429: 1, 503: 1}, Elapsed: 2 * time.Second}
	for i := 10; i >= 1; i-- {
		r.Latencies = append(r.Latencies, time.Duration(i)*time.Millisecond)
	}
	assert.Equal(t, 8, r.OK(), "2xx only")
	assert.Equal(t, 4.0, r.Rate())
	assert.Equal(t, time.Millisecond, r.Quantile(0))
	assert.Equal(t, 5*time.Millisecond, r.Quantile(0.5))
	assert.Equal(t, 10*time.Millisecond, r.Quantile(1))
	assert.Zero(t, (&Result{}).Quantile(0.99))
	assert.Zero(t, (&Result{}).Rate())

	m := merge([]*Result{r, {Statuses: map[int]int{200: 2}, Latencies: []time.Duration{time.Second}, Elapsed: 2 * time.Second}})
	assert.Equal(t, 10, m.OK())
	assert.Len(t, m.Latencies, 11)
}

// An open loop sends at its rate whatever the answers take; a request
// due while every in-flight slot is taken is counted as dropped, not sent
// late; the run ends by itself and waits for what is open.
func TestOpenLoopKeepsItsRateAndCountsWhatItCouldNotSend(t *testing.T) {
	var served atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/slow") {
			<-release
		}
		served.Add(1)
		assert.Equal(t, "Bearer tok", r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	c := NewClient(srv.URL, "tok", 16, 5*time.Second)

	var done atomic.Int64
	res := OpenLoop(context.Background(), c, 200, 16, 250*time.Millisecond, 2*time.Second, func(w int) Request {
		assert.Equal(t, -1, w)
		return Request{Kind: "fast", Method: http.MethodPost, Path: "/fast", Body: []byte(`{}`),
			Done: func(status int, _ []byte) { done.Add(1) }}
	})
	fast := res["fast"]
	require.NotNil(t, fast)
	assert.Equal(t, 50, fast.Sent+fast.Dropped, "200/s for 250 ms: 50 due")
	assert.Equal(t, fast.Sent, fast.OK())
	assert.EqualValues(t, fast.Sent, done.Load(), "Done sees every answer")

	// Four slots, every answer held: the rest of the due requests drop.
	go func() { time.Sleep(2 * time.Second); close(release) }()
	start := time.Now()
	res = OpenLoop(context.Background(), c, 100, 4, 200*time.Millisecond, 5*time.Second, func(int) Request {
		return Request{Kind: "slow", Method: http.MethodGet, Path: "/slow"}
	})
	slow := res["slow"]
	assert.Equal(t, 4, slow.Sent)
	assert.Equal(t, 16, slow.Dropped, "20 due, 4 sent")
	assert.Equal(t, 4, slow.OK(), "the open ones were waited for")
	assert.Less(t, time.Since(start), 6*time.Second)
}

// A closed loop stops at its end; a request cut off by the end is not a
// failure.
func TestClosedLoopStopsByItself(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			<-r.Context().Done()
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	c := NewClient(srv.URL, "", 4, 10*time.Second)
	start := time.Now()
	res := ClosedLoop(context.Background(), c, 4, 200*time.Millisecond, func(w int) Request {
		if w == 3 {
			return Request{Kind: "hang", Method: http.MethodGet, Path: "/hang"}
		}
		return Request{Kind: "ok", Method: http.MethodGet, Path: "/ok"}
	})
	assert.Less(t, time.Since(start), 2*time.Second)
	require.NotNil(t, res["ok"])
	assert.Positive(t, res["ok"].OK())
	assert.Zero(t, res["ok"].Errors)
	assert.Nil(t, res["hang"], "cut off by the end, not counted")
}

// The receiver counts each webhook-id once however often it is posted,
// with the lag of its first arrival after the event's timestamp.
func TestReceiverCountsEventsOnce(t *testing.T) {
	r, err := StartReceiver("127.0.0.1:0")
	require.NoError(t, err)
	defer r.Close()
	post := func(id string) {
		t.Helper()
		body := fmt.Sprintf(`{"type":"swipe.recorded","data":{"timestamp":%q}}`,
			time.Now().Add(-time.Second).Format(time.RFC3339Nano))
		req, err := http.NewRequest(http.MethodPost, "http://"+r.Addr, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("webhook-id", id)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	}
	post("a")
	post("b")
	post("a")
	distinct, posts := r.Counts()
	assert.Equal(t, 2, distinct)
	assert.Equal(t, 3, posts)
	for _, l := range r.Lags() {
		assert.GreaterOrEqual(t, l, time.Second)
		assert.Less(t, l, 5*time.Second)
	}
	r.Reset()
	distinct, posts = r.Counts()
	assert.Zero(t, distinct+posts)
}

func TestMetricValue(t *testing.T) {
	text := "# HELP process_cpu_seconds_total x\n# TYPE process_cpu_seconds_total counter\n" +
		"process_cpu_seconds_total 12.5\nprocess_cpu_seconds_total_other 3\n"
	assert.Equal(t, 12.5, metricValue(strings.NewReader(text), "process_cpu_seconds_total"))
	assert.Zero(t, metricValue(strings.NewReader(text), "missing"))
}
