package loadtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The mixed load is what a fleet of phones sends: of every 100 requests,
// mixCompactShare compact feed reads, mixSwipeShare swipes, and the rest
// sync pulls, each pull carrying the cursor the student's last pull
// answered. It runs with the worker running, against the same mix served
// by the baselines in alternating rounds: B1 (one Redis GET of a value of
// the size the service answers) for the reads and the pulls, B3 (the
// swipe's durable write alone, in its own process) for the swipes.
const (
	mixCompactShare = 70
	mixSwipeShare   = 25
)

// The kinds of request of the mixed load, as the results name them.
const (
	kindCompact = "GET /m/recommendations"
	kindSwipe   = "POST /swipe"
	kindPull    = "POST /m/sync/pull"
)

// mixKinds are the mixed load's kinds in the order its tables list them.
var mixKinds = []string{kindCompact, kindSwipe, kindPull}

// pickMix is the kind of request a number p in [0, 100) stands for.
func pickMix(p int) string {
	switch {
	case p < mixCompactShare:
		return kindCompact
	case p < mixCompactShare+mixSwipeShare:
		return kindSwipe
	default:
		return kindPull
	}
}

// mix makes the requests of the mixed load, one maker per kind: the
// service's, or the baselines'.
type mix struct {
	compact, swipe, pull func() Request
}

// next is a request of a kind drawn at the mix's shares.
func (m mix) next() Request { return m.request(pickMix(rand.IntN(100))) }

// request is a request of kind.
func (m mix) request(kind string) Request {
	switch kind {
	case kindCompact:
		return m.compact()
	case kindSwipe:
		return m.swipe()
	default:
		return m.pull()
	}
}

// serviceMix is the mixed load sent to the service.
func (r *runner) serviceMix() mix {
	return mix{compact: r.compactRequest, swipe: r.swipeRequest, pull: r.pullRequest}
}

// baselineMix is the same load sent to the baselines, by full URL (a
// client with no base): compact reads and pulls to B1 servers holding a
// value of the size of the service's answer to each, swipes (the same
// bodies, on the same students' decks) to B3.
func (r *runner) baselineMix(compactB1, pullB1, b3 string) mix {
	return mix{
		compact: func() Request { return Request{Kind: kindCompact, Method: http.MethodGet, Path: compactB1 + "/v"} },
		swipe: func() Request {
			req := r.swipeRequest()
			req.Path = b3 + req.Path
			return req
		},
		pull: func() Request { return Request{Kind: kindPull, Method: http.MethodGet, Path: pullB1 + "/v"} },
	}
}

// primeCursors makes every student's first pull, as every phone made
// one when it was installed, so that each pull of the load carries the
// cursor of the student's last pull: what a fleet of phones sends, where a
// pull without a cursor (everything the student ever did) is rare.
func (r *runner) primeCursors(ctx context.Context) error {
	var (
		wg   sync.WaitGroup
		next = make(chan string)
		ok   atomic.Int64
	)
	for range 16 {
		wg.Go(func() {
			for s := range next {
				req := r.pullRequestFor(s)
				if status, body := r.api.Do(ctx, req); status == http.StatusOK {
					req.Done(status, body)
					ok.Add(1)
				}
			}
		})
	}
	for _, s := range r.students {
		next <- s
	}
	close(next)
	wg.Wait()
	if ok.Load() == 0 {
		return errors.New("no first pull was answered")
	}
	return nil
}

// pullSize is the size of a pull's answer as the mixed load meets it: the
// median of n pulls of students drawn at random, each carrying the
// student's last cursor, as the load's own pulls do.
func (r *runner) pullSize(ctx context.Context, n int) (int, error) {
	var sizes []int
	for range n {
		req := r.pullRequest()
		status, body := r.api.Do(ctx, req)
		if status != http.StatusOK {
			return 0, fmt.Errorf("POST /m/sync/pull: %d %s", status, body)
		}
		req.Done(status, body)
		sizes = append(sizes, len(body))
	}
	if len(sizes) == 0 {
		return 0, errors.New("no pull was made")
	}
	slices.Sort(sizes)
	return sizes[len(sizes)/2], nil
}

// mixed: the mixed load against the same mix served by the baselines, in
// alternating rounds (baselines, service, baselines, service), the worker
// running; between rounds the worker is let finish what the last round
// swiped, so each round starts on a quiet machine.
func (r *runner) mixed(ctx context.Context) error {
	r.printf("### Mixed load (%d %% %s, %d %% %s, %d %% %s), worker running, against the same mix served by B1 and B3\n\n",
		mixCompactShare, kindCompact, mixSwipeShare, kindSwipe, 100-mixCompactShare-mixSwipeShare, kindPull)
	compactSize, err := r.warmCompact(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := r.primeCursors(ctx); err != nil {
		return err
	}
	pullSize, err := r.pullSize(ctx, 200)
	if err != nil {
		return err
	}
	r.printf("Every student's first pull made (%.1f s): each pull of the load carries the cursor of the student's last; "+
		"a pull answers %d B (median of 200).\n\n", time.Since(start).Seconds(), pullSize)
	compactB1, stopCompact, err := RedisBaseline(ctx, r.rdb, compactSize)
	if err != nil {
		return err
	}
	defer stopCompact()
	pullB1, stopPull, err := RedisBaseline(ctx, r.rdb, pullSize)
	if err != nil {
		return err
	}
	defer stopPull()
	b3, err := r.startB3(ctx)
	if err != nil {
		return err
	}
	r.warnConnections(ctx)
	baselines := NewClient("", "", r.c.Clients*2, 30*time.Second)
	base, svc := r.baselineMix(compactB1, pullB1, b3.URL), r.serviceMix()
	var (
		baseErrors              firstError
		baseRates, svcRates     []float64
		baseResults, svcResults []map[string]*Result
		cpuUsed                 CPUSample
		served, swiped          int
	)
	if r.c.Receiver != nil {
		r.c.Receiver.Reset()
	}
	patchesBefore := r.counters(ctx, "matching_feed_patches_total")
	for round := range r.c.Rounds {
		if round > 0 {
			r.waitDrained(ctx, 0) // the baselines alone on the machine, as in swipe
		}
		b := ClosedLoop(ctx, baselines, r.c.Clients, r.c.Duration, func(int) Request { return baseErrors.watch(base.next()) })
		before := r.cpu.Sample(ctx)
		res := ClosedLoop(ctx, r.api, r.c.Clients, r.c.Duration, func(int) Request { return svc.next() })
		cpuUsed = cpuUsed.Add(r.cpu.Sample(ctx).Sub(before))
		baseResults, svcResults = append(baseResults, b), append(svcResults, res)
		baseRates, svcRates = append(baseRates, totalRate(b)), append(svcRates, totalRate(res))
		for _, x := range res {
			served += x.OK()
		}
		if x, ok := res[kindSwipe]; ok {
			swiped += x.OK()
		}
		r.printf("round %d: baselines %.0f/s, service %.0f 2xx/s\n", round+1, baseRates[round], svcRates[round])
	}
	baseErrors.print(r, "the baselines")
	r.printMixed(compactSize, pullSize, mean(baseRates), mean(svcRates), baseResults, svcResults)
	r.printf("What the swipes' patches did to the stored feed (`matching_feed_patches_total`; the swipes are on the cards of each student's last compact page): %s.\n\n",
		patchShares(patchesBefore, r.counters(ctx, "matching_feed_patches_total")))
	r.printCPU("request", cpuUsed, served)
	// What comes next is measured without this load's tail: the worker
	// folds and delivers what the mix swiped first.
	r.waitDrained(ctx, swiped)
	return nil
}

// mixedConnections is about what the mixed load's processes may hold of
// PostgreSQL's connections at once: the API's pool and B3's (16 each on
// 2 cores, store.APISettings), the worker's (workerConns; 78 at its
// default task slots, 70 plus 8) and the load test's own.
func mixedConnections(workerConns int) int {
	if workerConns <= 0 {
		workerConns = 78
	}
	return 16 + 16 + workerConns + 4
}

// warnConnections says so when PostgreSQL may refuse the mixed load's
// connections: a refused one answers 503 on either side.
func (r *runner) warnConnections(ctx context.Context) {
	var limit int
	if err := r.pool.QueryRow(ctx, `SELECT current_setting('max_connections')::int`).Scan(&limit); err != nil {
		return
	}
	if need := mixedConnections(r.c.WorkerConns); limit < need+10 {
		r.printf("(PostgreSQL's max_connections is %d; the API, the worker and B3 together may open about %d: "+
			"connections it refuses answer 503 on either side)\n\n", limit, need)
	}
}

// printMixed prints the mixed load's table: the whole mix, then each kind.
func (r *runner) printMixed(compactSize, pullSize int, base, svc float64, baseResults, svcResults []map[string]*Result) {
	all := func(results []map[string]*Result, kinds ...string) *Result {
		var rs []*Result
		for _, m := range results {
			for _, k := range kinds {
				if x, ok := m[k]; ok {
					rs = append(rs, x)
				}
			}
		}
		return merge(rs)
	}
	r.printf("\n| | baselines /s | service /s | ratio | baselines p50 / p99 | service p50 / p99 | service not 2xx |\n" +
		"|---|---:|---:|---:|---:|---:|---:|\n")
	b, s := all(baseResults, mixKinds...), all(svcResults, mixKinds...)
	r.printf("| **all requests** (B1: %d B and %d B; B3) | %.0f | %.0f | **%.2f** | %s / %s | %s / %s | %s |\n",
		compactSize, pullSize, base, svc, svc/max(base, 1e-9), ms(b.Quantile(0.5)), ms(b.Quantile(0.99)),
		ms(s.Quantile(0.5)), ms(s.Quantile(0.99)), notOK(s))
	for _, kind := range mixKinds {
		b, s := all(baseResults, kind), all(svcResults, kind)
		r.printf("| `%s` | %.0f | %.0f | | %s / %s | %s / %s | %s |\n", kind, b.Rate(), s.Rate(),
			ms(b.Quantile(0.5)), ms(b.Quantile(0.99)), ms(s.Quantile(0.5)), ms(s.Quantile(0.99)), notOK(s))
	}
	r.printf("\n")
}

// totalRate is the 2xx answers per second of a round, all kinds together.
func totalRate(results map[string]*Result) float64 {
	total := 0.0
	for _, x := range results {
		total += x.Rate()
	}
	return total
}
