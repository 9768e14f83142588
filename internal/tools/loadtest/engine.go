// Package loadtest measures the running service from outside: it sends
// load to its public API on 127.0.0.1, runs the baselines the figures are
// compared with in the same run (B1, a bare chi handler making one Redis
// GET; B3, a bare chi handler doing the swipe's durable write alone, in a
// process of its own, on copies of the service's tables), and reads what
// each request cost (PostgreSQL statements from pg_stat_statements, CPU
// from the processes' own counters, Redis commands and round trips). It
// starts nothing but the load and the baselines, and every run ends by
// itself.
package loadtest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Request is one request a scenario sends: a method, a path and a body,
// with a kind that names it in the results.
type Request struct {
	Kind   string
	Method string
	Path   string
	Body   []byte
	Header http.Header
	// Done, when set, sees the status and body of the answer.
	Done func(status int, body []byte)
}

// Next makes the next request of a scenario; worker is the index of the
// client sending it (closed loop) or -1 (open loop).
type Next func(worker int) Request

// Result is what a run measured for one kind of request.
type Result struct {
	Kind     string
	Sent     int
	Statuses map[int]int
	Errors   int // transport errors and timeouts
	// NotOK counts answers outside 2xx whose status the generator does
	// not tell (wrk counts every status above 399 together).
	NotOK     int
	Latencies []time.Duration
	Elapsed   time.Duration
	// Dropped counts open-loop requests that could not be sent on time
	// because every in-flight slot was taken.
	Dropped int
}

// OK is the number of 2xx answers.
func (r *Result) OK() int {
	n := 0
	for s, c := range r.Statuses {
		if s >= 200 && s < 300 {
			n += c
		}
	}
	return n
}

// Rate is 2xx answers per second of the run.
func (r *Result) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.OK()) / r.Elapsed.Seconds()
}

// Quantile is the q-quantile of the latencies (0 when none).
func (r *Result) Quantile(q float64) time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	slices.Sort(r.Latencies)
	i := int(q * float64(len(r.Latencies)-1))
	return r.Latencies[i]
}

// recorder collects results per kind from many goroutines.
type recorder struct {
	mu      sync.Mutex
	results map[string]*Result
}

func newRecorder() *recorder { return &recorder{results: map[string]*Result{}} }

func (r *recorder) add(kind string, status int, err bool, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := r.get(kind)
	res.Sent++
	if err {
		res.Errors++
	} else {
		res.Statuses[status]++
	}
	res.Latencies = append(res.Latencies, d)
}

func (r *recorder) drop(kind string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.get(kind).Dropped++
}

func (r *recorder) get(kind string) *Result {
	res, ok := r.results[kind]
	if !ok {
		res = &Result{Kind: kind, Statuses: map[int]int{}}
		r.results[kind] = res
	}
	return res
}

// finish stamps every result with the run's length and returns them by kind.
func (r *recorder) finish(elapsed time.Duration) map[string]*Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, res := range r.results {
		res.Elapsed = elapsed
	}
	return r.results
}

// Client sends requests to one base URL.
type Client struct {
	base string
	http *http.Client
	auth string // the Authorization header, "" for none
}

// NewClient makes a client with room for conns connections to base.
func NewClient(base, token string, conns int, timeout time.Duration) *Client {
	tr := &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns,
		IdleConnTimeout: time.Minute, DisableCompression: true}
	c := &Client{base: base, http: &http.Client{Transport: tr, Timeout: timeout}}
	if token != "" {
		c.auth = "Bearer " + token
	}
	return c
}

// Do sends req and returns the status and body; status 0 is a transport
// error or timeout.
func (c *Client) Do(ctx context.Context, req Request) (int, []byte) {
	var body io.Reader
	if req.Body != nil {
		body = bytes.NewReader(req.Body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.Method, c.base+req.Path, body)
	if err != nil {
		return 0, nil
	}
	if c.auth != "" {
		hr.Header.Set("Authorization", c.auth)
	}
	if req.Body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	for k, v := range req.Header {
		hr.Header[k] = v
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil
	}
	return resp.StatusCode, b
}

// ClosedLoop runs clients goroutines, each sending next's requests one
// after the other, for d.
func ClosedLoop(ctx context.Context, c *Client, clients int, d time.Duration, next Next) map[string]*Result {
	rec := newRecorder()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	end, _ := ctx.Deadline()
	var wg sync.WaitGroup
	for w := range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				req := next(w)
				t := time.Now()
				status, body := c.Do(ctx, req)
				// Cut off by the end of the run: not a failure. The
				// connection's deadline (the context's) can end the request
				// a moment before the context's own timer marks it done.
				if status == 0 && (ctx.Err() != nil || !time.Now().Before(end)) {
					return
				}
				rec.add(req.Kind, status, status == 0, time.Since(t))
				if req.Done != nil && status != 0 {
					req.Done(status, body)
				}
			}
		})
	}
	wg.Wait()
	return rec.finish(time.Since(start))
}

// OpenLoop sends next's requests at rate per second for d, whatever the
// answers take, with at most inflight requests open at once: a request due
// while all are taken is not sent and counted as dropped. It waits up to
// grace for the requests still open at the end.
func OpenLoop(ctx context.Context, c *Client, rate float64, inflight int, d, grace time.Duration, next Next) map[string]*Result {
	rec := newRecorder()
	slots := make(chan struct{}, inflight)
	reqCtx, cancelReqs := context.WithTimeout(ctx, d+grace)
	defer cancelReqs()
	interval := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	var wg sync.WaitGroup
	var sent atomic.Int64
	for i := 0; ; i++ {
		due := start.Add(time.Duration(i) * interval)
		if due.Sub(start) >= d || ctx.Err() != nil {
			break
		}
		if wait := time.Until(due); wait > 0 {
			time.Sleep(wait)
		}
		req := next(-1)
		select {
		case slots <- struct{}{}:
		default:
			rec.drop(req.Kind)
			continue
		}
		sent.Add(1)
		wg.Go(func() {
			defer func() { <-slots }()
			t := time.Now()
			status, body := c.Do(reqCtx, req)
			rec.add(req.Kind, status, status == 0, time.Since(t))
			if req.Done != nil && status != 0 {
				req.Done(status, body)
			}
		})
	}
	elapsed := time.Since(start)
	wg.Wait()
	return rec.finish(elapsed)
}
