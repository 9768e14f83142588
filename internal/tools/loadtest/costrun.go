package loadtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// tally is what the processes serving a measurement have used so far:
// CPU and round trips (CPUSample), PostgreSQL's statements and Redis's
// commands.
type tally struct {
	cpu   CPUSample
	stmts StatementCounters
	redis RedisCommands
}

func (r *runner) tally(ctx context.Context) (tally, error) {
	t := tally{cpu: r.cpu.Sample(ctx), redis: SampleRedisCommands(ctx, r.cpu.Redis)}
	var err error
	t.stmts, err = SampleStatements(ctx, r.pool)
	return t, err
}

// drainTally waits, as waitDrained does, until every event has arrived
// (when a receiver runs) and the service's statements have gone quiet (the
// worker has folded everything), and returns the tally read when the quiet
// began, so the seconds of quiet waited out are not counted; when it does
// not drain, the tally read last and ok false.
func (r *runner) drainTally(ctx context.Context, events int) (end tally, ok bool, err error) {
	var cur tally
	read := func() (int64, error) {
		var err error
		if cur, err = r.tally(ctx); err != nil {
			return 0, err
		}
		calls, _ := statementTotals(cur.stmts.Sub(nil, false))
		return calls, nil
	}
	ok = r.untilQuiet(ctx, events, read, func() { end = cur })
	if !ok {
		end, err = r.tally(ctx)
	}
	return end, ok, err
}

// cost: open-loop swipes at CostRate over CostStudents students, B3 and
// the service in alternating rounds (B3, service, B3, service): what a
// swipe costs every process serving it, with the worker running and each
// student swiping every few seconds (so each swipe is mostly folded on its
// own), against B3's cost per request at the same rate. The service's
// span runs from the first swipe until the worker has folded the last and
// its webhook has arrived.
func (r *runner) cost(ctx context.Context) error {
	students := r.students[:min(max(r.c.CostStudents, 1), len(r.students))]
	rate := r.c.CostRate
	if rate <= 0 {
		rate = 300
	}
	r.printf("### What a swipe costs: open loop at %.0f swipes/s over %d students, against B3 at the same rate\n\n", rate, len(students))
	b3, err := r.startB3(ctx)
	if err != nil {
		return err
	}
	bare := NewClient(b3.URL, "", 512, 30*time.Second)
	next := func(int) Request { return r.swipeRequestFor(students[rand.IntN(len(students))]) }
	var b3Errors firstError
	r.waitDrained(ctx, 0)
	lagBefore := r.histogram(ctx, "matching_feed_lag_seconds")
	patchesBefore := r.counters(ctx, "matching_feed_patches_total")
	var (
		b3Res, svcRes    []*Result
		b3Used, svcUsed  CPUSample
		b3Stmts, svcStmt []Statement
		redisCmds        RedisCommands
		span             time.Duration
	)
	for round := range r.c.Rounds {
		before, err := r.tally(ctx)
		if err != nil {
			return err
		}
		b := OpenLoop(ctx, bare, rate, 512, r.c.Duration, 10*time.Second, func(w int) Request { return b3Errors.watch(next(w)) })["POST /swipe"]
		after, err := r.tally(ctx)
		if err != nil {
			return err
		}
		b3Used = b3Used.Add(after.cpu.Sub(before.cpu))
		b3Stmts = mergeStatements(b3Stmts, after.stmts.Sub(before.stmts, true))
		b3Res = append(b3Res, b)

		if r.c.Receiver != nil {
			r.c.Receiver.Reset()
		}
		if before, err = r.tally(ctx); err != nil {
			return err
		}
		start := time.Now()
		res := OpenLoop(ctx, r.api, rate, 512, r.c.Duration, 10*time.Second, next)["POST /swipe"]
		end, drained, err := r.drainTally(ctx, res.OK())
		if err != nil {
			return err
		}
		took := end.cpu.At.Sub(start)
		span += took
		svcUsed = svcUsed.Add(end.cpu.Sub(before.cpu))
		svcStmt = mergeStatements(svcStmt, end.stmts.Sub(before.stmts, false))
		redisCmds = redisCmds.Add(end.redis.Sub(before.redis))
		svcRes = append(svcRes, res)
		note := ""
		if !drained {
			note = " (not drained)"
		}
		r.printf("round %d: B3 %d of %d 2xx, service %d of %d 2xx, folded and delivered %.1f s after the first swipe%s\n",
			round+1, b.OK(), b.Sent, res.OK(), res.Sent, took.Seconds(), note)
	}
	b3Errors.print(r, "B3")
	lag := r.histogram(ctx, "matching_feed_lag_seconds").sub(lagBefore)
	patches := patchShares(patchesBefore, r.counters(ctx, "matching_feed_patches_total"))
	bAll, sAll := merge(b3Res), merge(svcRes)
	r.printCost(bAll, sAll, b3Used, svcUsed, b3Stmts, svcStmt, redisCmds, lag, patches)
	r.printf("The service's span (first swipe to last fold and delivery) was %.1f s over %d rounds of %s of load.\n\n",
		span.Seconds(), r.c.Rounds, r.c.Duration)
	r.printStatements(svcStmt, sAll.OK())
	r.printRedisCommands(redisCmds, sAll.OK())
	return nil
}

// printCost prints the cost table: per swipe, B3 against the service.
func (r *runner) printCost(b3, svc *Result, b3Used, svcUsed CPUSample, b3Stmts, svcStmts []Statement, cmds RedisCommands, lag histogram, patches string) {
	nb, ns := b3.OK(), svc.OK()
	if nb == 0 || ns == 0 {
		r.printf("(no swipe answered 2xx: B3 %s, service %s)\n\n", statusLine(b3), statusLine(svc))
		return
	}
	us := func(v float64, n int) float64 { return v * 1e6 / float64(n) }
	ratio := func(a, b float64) string {
		if b <= 0 {
			return ""
		}
		return fmt.Sprintf("**%.2fx**", a/b)
	}
	bCalls, bMs := statementTotals(b3Stmts)
	sCalls, sMs := statementTotals(svcStmts)
	var worker float64
	if len(svcUsed.Service) > 1 {
		worker = svcUsed.Service[1]
	}
	var api float64
	if len(svcUsed.Service) > 0 {
		api = svcUsed.Service[0]
	}
	var redisCalls int64
	for _, c := range cmds {
		redisCalls += c.Calls
	}
	r.printf("| per swipe | B3 | service | service / B3 |\n|---|---:|---:|---:|\n")
	r.printf("| answered 2xx (of sent) | %d (%d) | %d (%d) | |\n", nb, b3.Sent, ns, svc.Sent)
	r.printf("| p50 / p99 | %s / %s | %s / %s | |\n", ms(b3.Quantile(0.5)), ms(b3.Quantile(0.99)), ms(svc.Quantile(0.5)), ms(svc.Quantile(0.99)))
	r.printf("| **CPU, every process serving it (µs)** | **%.0f** | **%.0f** | %s |\n", us(b3Used.B3Total(), nb), us(svcUsed.ServiceTotal(), ns),
		ratio(us(svcUsed.ServiceTotal(), ns), us(b3Used.B3Total(), nb)))
	r.printf("| API (B3: its process) | %.0f | %.0f | |\n", us(b3Used.B3, nb), us(api, ns))
	r.printf("| worker | | %.0f | |\n", us(worker, ns))
	r.printf("| PostgreSQL backends | %.0f | %.0f | |\n", us(b3Used.B3Postgres, nb), us(svcUsed.Postgres, ns))
	r.printf("| PostgreSQL's own processes (postmaster, WAL writer, checkpointer...; the whole server's) | %.0f | %.0f | |\n",
		us(b3Used.PostgresServer, nb), us(svcUsed.PostgresServer, ns))
	r.printf("| Redis | | %.0f | |\n", us(svcUsed.Redis, ns))
	r.printf("| **PostgreSQL execution time (ms, pg_stat_statements)** | **%.3f** | **%.3f** | %s |\n", bMs/float64(nb), sMs/float64(ns),
		ratio(sMs/float64(ns), bMs/float64(nb)))
	r.printf("| statements | %.2f | %.2f | |\n", float64(bCalls)/float64(nb), float64(sCalls)/float64(ns))
	trips := fmt.Sprintf("**%.2f**", svcUsed.RoundTripsTotal()/float64(ns))
	if svcUsed.RoundTripsTotal() == 0 {
		trips = "not exported by this build"
	}
	r.printf("| **Redis round trips, client side (API + worker, a pipeline one, the queue's polling included)** | 0 | %s | |\n", trips)
	r.printf("| Redis commands run (INFO: total_commands_processed; commandstats calls, a script's own commands included) | 0 | %.2f (%.2f) | |\n",
		svcUsed.RedisCommands/float64(ns), float64(redisCalls)/float64(ns))
	r.printf("| what the swipes' patches did to the stored feed (`matching_feed_patches_total`) | | %s | |\n", patches)
	r.printf("| learned feed rebuilds; lag p50 / p99 (`matching_feed_lag_seconds`) | | %.2f; %s / %s | |\n\n",
		lag.count/float64(ns), secs(lag.quantile(0.5)), secs(lag.quantile(0.99)))
}

// mergeStatements adds b's statements to a's, by query text.
func mergeStatements(a, b []Statement) []Statement {
	at := map[string]int{}
	for i, s := range a {
		at[s.Query] = i
	}
	for _, s := range b {
		if i, ok := at[s.Query]; ok {
			a[i].Calls += s.Calls
			a[i].TotalMs += s.TotalMs
			a[i].Rows += s.Rows
			continue
		}
		at[s.Query] = len(a)
		a = append(a, s)
	}
	return a
}

// Add sums two spans of commands; a span that could not be read (nil)
// adds nothing.
func (s RedisCommands) Add(o RedisCommands) RedisCommands {
	if o == nil {
		return s
	}
	out := RedisCommands{}
	for name, c := range s {
		out[name] = c
	}
	for name, c := range o {
		cur := out[name]
		out[name] = RedisCommand{Calls: cur.Calls + c.Calls, Usec: cur.Usec + c.Usec}
	}
	return out
}
