package loadtest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/collegematch/matching/internal/tasks"
)

// Config says what to measure and where.
type Config struct {
	APIURL      string   // the public API, e.g. http://127.0.0.1:18080
	OpsURLs     []string // the API's and the worker's operations ports (CPU, metrics)
	DatabaseURL string   // the service's database (schools, B3's tables, pg_stat_statements)
	RedisURL    string   // the service's Redis (the GET baseline, Redis CPU)
	Token       string   // a matching:service token: acts for every student
	Receiver    *Receiver

	Students int // students the load is spread over
	// History is how many swipes are recorded, and the database analysed,
	// before anything is measured (see runner.history).
	History  int
	Clients  int           // closed-loop clients
	Duration time.Duration // of each measured round
	Rounds   int           // rounds of each pair, alternating baseline and service
	// Scenarios to run, in order: "swipe" (POST /swipe with the worker
	// paused, against B3), "cost" (open-loop swipes at CostRate over
	// CostStudents, everything a swipe costs, against B3 at the same rate),
	// "mixed" (70 % GET /m/recommendations, 25 % POST /swipe, 5 % POST
	// /m/sync/pull, the worker running, against the same mix served by
	// the baselines: B1 for reads and pulls, B3 for swipes), "reads" (cached GET
	// /m/recommendations and POST /recommendations against the Redis GET
	// baseline), "sustained" (open-loop swipes at Rate for RateDuration).
	Scenarios    []string
	Rate         float64
	RateDuration time.Duration
	Pollers      int // students polling their feed during "sustained"
	CostRate     float64
	CostStudents int
	// Generator drives the swipe and reads scenarios' closed loops: "go" (or "")
	// this package's client, "wrk" the wrk binary (see wrk.go).
	Generator string

	// WorkerPID is the worker's process, paused (SIGSTOP) while "swipe"
	// measures the API alone; 0: not paused. OpsURLs[1] is its ops port.
	WorkerPID int
	// WorkerConns is the worker's database pool (pool_max_conns; default
	// 78, its default at 70 task slots), for the mixed load's check of
	// PostgreSQL's max_connections.
	WorkerConns int
	// B3Command starts B3's process: a command that serves B3 on a free
	// port of 127.0.0.1 over DATABASE_URL (given in its environment) and
	// writes "b3 URL" on its standard output (matchctl loadtest --serve-b3).
	B3Command []string

	Out io.Writer
	Now func() time.Time
}

// Run prepares the students and runs the scenarios, writing Markdown
// tables to Out.
func Run(ctx context.Context, c Config) error {
	if c.Rounds <= 0 {
		c.Rounds = 2
	}
	pcfg, err := pgxpool.ParseConfig(c.DatabaseURL)
	if err != nil {
		return err
	}
	// The load test's own connections are counted in no one's CPU.
	pcfg.ConnConfig.RuntimeParams["application_name"] = toolAppName
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	opt, err := redis.ParseURL(c.RedisURL)
	if err != nil {
		return err
	}
	if opt.Protocol == 0 {
		opt.Protocol = 2 // as the service's clients speak (cache.Open), so the bare handler's GET costs what theirs do
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	r := &runner{c: c, pool: pool, rdb: rdb, api: NewClient(c.APIURL, c.Token, c.Clients*2, 30*time.Second),
		cpu:          CPU{OpsURLs: c.OpsURLs, Pool: pool, Redis: rdb},
		learnPending: func(ctx context.Context) (int, error) { return tasks.LearnPending(ctx, rdb) }}
	defer r.stopB3()
	if err := r.prepare(ctx); err != nil {
		return err
	}
	if err := r.history(ctx, c.History); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	for _, s := range c.Scenarios {
		var err error
		switch s {
		case "swipe":
			err = r.swipe(ctx)
		case "cost":
			err = r.cost(ctx)
		case "mixed":
			err = r.mixed(ctx)
		case "reads":
			err = r.reads(ctx)
		case "sustained":
			err = r.sustained(ctx)
		default:
			err = fmt.Errorf("unknown scenario %q", s)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

type runner struct {
	c    Config
	pool *pgxpool.Pool
	rdb  *redis.Client
	api  *Client
	cpu  CPU

	students []string
	schools  []string

	drainWait time.Duration // how long waitDrained waits (0: two minutes)
	// learnPending counts the students marked in the learn drains
	// (tasks.LearnPending on the service's Redis).
	learnPending func(context.Context) (int, error)
	b3           *b3Process // B3, once a scenario started it

	mu      sync.Mutex
	cursors map[string]string   // sync pull cursors by student
	decks   map[string][]string // the schools of each student's last compact page not swiped yet
}

func (r *runner) printf(format string, args ...any) { fmt.Fprintf(r.c.Out, format, args...) }

// prepare makes the students (complete profiles, spread over the states)
// through the API and reads the active schools.
func (r *runner) prepare(ctx context.Context) error {
	rows, err := r.pool.Query(ctx, `SELECT id::text FROM schools WHERE active ORDER BY id`)
	if err != nil {
		return err
	}
	if r.schools, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return err
	}
	if len(r.schools) == 0 {
		return errors.New("the catalogue is empty: run matchctl seed first")
	}
	states := []string{"CA", "TX", "NY", "FL", "IL", "PA", "OH", "GA", "NC", "MI", "WA", "MA", "AZ", "CO", "OR"}
	r.students = make([]string, r.c.Students)
	for i := range r.students {
		r.students[i] = uuid.NewSHA1(uuid.NameSpaceOID, fmt.Appendf(nil, "loadtest-student-%d", i)).String()
	}
	r.cursors = map[string]string{}
	r.decks = map[string][]string{}
	start := time.Now()
	var (
		mu   sync.Mutex
		fail error
		wg   sync.WaitGroup
		next = make(chan int)
	)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				body, _ := json.Marshal(map[string]any{
					"student_id": r.students[i], "name": fmt.Sprintf("Load %d", i), "email": fmt.Sprintf("load%d@example.com", i),
					"graduation_year": "2027", "gpa": 2.5 + float64(i%25)/10, "test_scores": map[string]int{"sat": 900 + (i%70)*10},
					"state": states[i%len(states)],
				})
				status, resp := r.api.Do(ctx, Request{Method: http.MethodPost, Path: "/v2/onboarding/minimal", Body: body})
				if status != http.StatusOK && status != http.StatusCreated {
					mu.Lock()
					fail = fmt.Errorf("onboarding student %d: %d %s", i, status, resp)
					mu.Unlock()
				}
			}
		})
	}
	for i := range r.students {
		if fail != nil || ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if fail != nil {
		return fail
	}
	r.printf("Prepared %d students (%.1f s) over %d active schools.\n\n", len(r.students), time.Since(start).Seconds(), len(r.schools))
	return nil
}

// history records about n swipes through the API before anything is
// measured, waits for the worker to work them off, and analyses the
// database. A service in production has rows in its tables and
// statistics on them (autovacuum analyses a table that grows). Measured
// from empty tables instead, a statement whose plan was cached while a
// table was empty keeps it: the attempt record's join read
// webhook_deliveries from end to end, ever longer as the table grew,
// until autovacuum's next analysis (never, on a server running without
// it).
func (r *runner) history(ctx context.Context, n int) error {
	if n <= 0 {
		return nil
	}
	start := time.Now()
	// The drain after the history is told by pg_stat_statements going quiet.
	if err := EnsureStatements(ctx, r.pool); err != nil {
		return err
	}
	if _, err := r.warmCompact(ctx); err != nil {
		return err
	}
	var sent atomic.Int64
	hctx, stop := context.WithCancel(ctx)
	defer stop()
	res := ClosedLoop(hctx, r.api, r.c.Clients, 10*time.Minute, func(int) Request {
		if sent.Add(1) >= int64(n) {
			stop()
		}
		return r.swipeRequest()
	})["POST /swipe"]
	if res == nil || res.OK() == 0 {
		return errors.New("no swipe was recorded")
	}
	r.waitDrained(ctx, res.OK())
	if _, err := r.pool.Exec(ctx, `ANALYZE`); err != nil {
		return err
	}
	var autovacuum string
	if err := r.pool.QueryRow(ctx, `SHOW autovacuum`).Scan(&autovacuum); err != nil {
		return err
	}
	r.printf("History: %d swipes recorded and worked off, then ANALYZE (%.1f s).", res.OK(), time.Since(start).Seconds())
	if autovacuum != "on" {
		r.printf(" This server runs with autovacuum off: nothing analyses the tables as they grow during the load.")
	}
	r.printf("\n\n")
	return nil
}

func (r *runner) student() string { return r.students[rand.IntN(len(r.students))] }
func (r *runner) school() string  { return r.schools[rand.IntN(len(r.schools))] }

func (r *runner) swipeRequest() Request { return r.swipeRequestFor(r.student()) }

// swipeRequestFor is a swipe of student s on the next card of their deck.
func (r *runner) swipeRequestFor(s string) Request {
	dir := "left"
	if rand.IntN(2) == 0 {
		dir = "right"
	}
	body, _ := json.Marshal(map[string]any{"student_id": s, "school_id": r.nextCard(s), "direction": dir,
		"swipe_id": uuid.NewString(), "time_spent": float64(rand.IntN(20000)) / 1000})
	return Request{Kind: "POST /swipe", Method: http.MethodPost, Path: "/swipe", Body: body}
}

// nextCard is the school a student swipes next: the top card of the deck
// their last compact page dealt, as the app swipes it, else (no page read
// yet, or all of it swiped) any school.
func (r *runner) nextCard(student string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if deck := r.decks[student]; len(deck) > 0 {
		r.decks[student] = deck[1:]
		return deck[0]
	}
	return r.school()
}

// dealt records the compact page a student was served as their deck.
func (r *runner) dealt(student string, status int, body []byte) {
	if status != http.StatusOK {
		return
	}
	var page struct {
		R []struct {
			I string `json:"i"`
		} `json:"r"`
	}
	if json.Unmarshal(body, &page) != nil {
		return
	}
	deck := make([]string, len(page.R))
	for i, it := range page.R {
		deck[i] = it.I
	}
	r.mu.Lock()
	r.decks[student] = deck
	r.mu.Unlock()
}

func (r *runner) pullRequest() Request { return r.pullRequestFor(r.student()) }

// pullRequestFor is a sync pull of student s carrying the cursor their
// last pull answered, as a phone does (none before their first), and
// keeping the cursor its answer gives.
func (r *runner) pullRequestFor(s string) Request {
	r.mu.Lock()
	cur := r.cursors[s]
	r.mu.Unlock()
	b := map[string]any{"student_id": s}
	if cur != "" {
		b["cursor"] = cur
	}
	body, _ := json.Marshal(b)
	return Request{Kind: "POST /m/sync/pull", Method: http.MethodPost, Path: "/m/sync/pull", Body: body,
		Done: func(status int, resp []byte) {
			var out struct {
				Cursor string `json:"cursor"`
			}
			if status == http.StatusOK && json.Unmarshal(resp, &out) == nil && out.Cursor != "" {
				r.mu.Lock()
				r.cursors[s] = out.Cursor
				r.mu.Unlock()
			}
		}}
}

func (r *runner) compactRequest() Request {
	s := r.student()
	return Request{Kind: "GET /m/recommendations", Method: http.MethodGet, Path: "/m/recommendations/" + s,
		Done: func(status int, body []byte) { r.dealt(s, status, body) }}
}

func (r *runner) recsRequest() Request {
	body, _ := json.Marshal(map[string]any{"student_id": r.student(), "limit": 20})
	return Request{Kind: "POST /recommendations", Method: http.MethodPost, Path: "/recommendations", Body: body}
}

// swipe: POST /swipe, closed loop, with the worker paused, against B3 in
// alternating rounds (B3, service, B3, service): the API tier's cost over
// the swipe's durable write. Then what PostgreSQL and Redis ran per swipe
// once the worker, resumed, has folded the swipes and delivered their
// webhooks.
func (r *runner) swipe(ctx context.Context) error {
	r.printf("### POST /swipe with the worker paused, against B3 (the swipe's durable write alone)\n\n%s", r.generatorNote())
	// Students swipe what their feed showed them: every feed is built
	// first, as the app's first read builds it.
	if _, err := r.warmCompact(ctx); err != nil {
		return err
	}
	b3, err := r.startB3(ctx)
	if err != nil {
		return err
	}
	bare := NewClient(b3.URL, "", r.c.Clients*2, 30*time.Second)
	r.waitDrained(ctx, 0) // the worker idle before it is paused
	stmtsBefore, err := SampleStatements(ctx, r.pool)
	if err != nil {
		return err
	}
	redisBefore := SampleRedisCommands(ctx, r.cpu.Redis)
	if r.c.Receiver != nil {
		r.c.Receiver.Reset()
	}
	cpu, resume := r.pauseWorker()
	defer resume()
	var b3Errors firstError
	var (
		base, svc        []float64
		baseRes, results []*Result
		b3Used, cpuUsed  CPUSample
		wal              = WALSample{OK: true}
	)
	for round := range r.c.Rounds {
		before := cpu.Sample(ctx)
		b, err := r.closedLoop(ctx, bare, "POST /swipe", func() Request { return b3Errors.watch(r.swipeRequest()) },
			func() (*Result, error) { return r.wrkSwipes(ctx, b3.URL, "") })
		if err != nil {
			return err
		}
		b3Used = b3Used.Add(cpu.Sample(ctx).Sub(before))
		baseRes = append(baseRes, b)
		base = append(base, b.Rate())
		before, walBefore := cpu.Sample(ctx), SampleWAL(ctx, r.pool)
		res, err := r.closedLoop(ctx, r.api, "POST /swipe", r.swipeRequest,
			func() (*Result, error) { return r.wrkSwipes(ctx, r.c.APIURL, r.c.Token) })
		if err != nil {
			return err
		}
		cpuUsed = cpuUsed.Add(cpu.Sample(ctx).Sub(before))
		wal = wal.Add(SampleWAL(ctx, r.pool).Sub(walBefore))
		results = append(results, res)
		svc = append(svc, res.Rate())
		r.printf("round %d: B3 %.0f/s (%s), POST /swipe %.0f 2xx/s (%s)\n", round+1, b.Rate(), statusLine(b), res.Rate(), statusLine(res))
	}
	if n := merge(baseRes).NotOK; n > 0 {
		r.printf("(B3 answered %d requests outside 2xx; wrk does not keep their bodies: run without --generator wrk to see why)\n\n", n)
	}
	b3Errors.print(r, "B3")
	resume()
	all, allBase := merge(results), merge(baseRes)
	r.printf("\n| | per second | ratio | p50 | p99 |\n|---|---:|---:|---:|---:|\n")
	r.printf("| B3: bare chi, the swipe's durable write alone (one statement, one commit, no Redis), %d clients | %.0f | 1.00 | %s | %s |\n",
		r.c.Clients, mean(base), ms(allBase.Quantile(0.5)), ms(allBase.Quantile(0.99)))
	r.printf("| `POST /swipe`, %d clients, 2xx, worker %s | %.0f | **%.2f** | %s | %s |\n\n", r.c.Clients, r.pausedWord(), mean(svc),
		mean(svc)/mean(base), ms(all.Quantile(0.5)), ms(all.Quantile(0.99)))
	r.printB3CPU(b3Used, allBase.OK())
	r.printCPU("swipe", cpuUsed, all.OK())
	r.printf("%s\n\n", wal.Describe("swipe", all.OK()))

	swipes := all.OK()
	r.waitDrained(ctx, swipes)
	stmtsAfter, err := SampleStatements(ctx, r.pool)
	if err != nil {
		return err
	}
	if b3Stmts := stmtsAfter.Sub(stmtsBefore, true); allBase.OK() > 0 {
		r.printB3Statements(b3Stmts, allBase.OK())
	}
	r.printStatements(stmtsAfter.Sub(stmtsBefore, false), swipes)
	r.printRedisCommands(SampleRedisCommands(ctx, r.cpu.Redis).Sub(redisBefore), swipes)
	r.printFootprint(ctx)
	return nil
}

// pauseWorker stops the worker (when its process is known) and returns
// the CPU sampler to use meanwhile (the API's ops port only: a stopped
// process answers no scrape) and the function that resumes it, which may
// be called more than once.
func (r *runner) pauseWorker() (CPU, func()) {
	if r.c.WorkerPID <= 0 {
		return r.cpu, func() {}
	}
	if err := pauseProcess(r.c.WorkerPID); err != nil {
		r.printf("(the worker could not be paused: %v)\n\n", err)
		return r.cpu, func() {}
	}
	cpu := r.cpu
	cpu.OpsURLs = cpu.OpsURLs[:min(1, len(cpu.OpsURLs))]
	var once sync.Once
	return cpu, func() {
		once.Do(func() {
			if err := resumeProcess(r.c.WorkerPID); err != nil {
				r.printf("(the worker could not be resumed: %v)\n\n", err)
			}
		})
	}
}

func (r *runner) pausedWord() string {
	if r.c.WorkerPID > 0 {
		return "paused"
	}
	return "running (no --worker-pid to pause it)"
}

// startB3 sets B3's tables up (copies of the service's, as they are after
// the history) and starts its process, once per run.
func (r *runner) startB3(ctx context.Context) (*b3Process, error) {
	if r.b3 != nil {
		return r.b3, nil
	}
	start := time.Now()
	if err := SetupB3(ctx, r.pool); err != nil {
		return nil, err
	}
	if err := AnalyzeB3(ctx, r.pool); err != nil {
		return nil, err
	}
	// The copies wrote their tables' worth of WAL: a checkpoint now rather
	// than one it asks for during a measurement (it needs the right to;
	// without it the run goes on).
	_, _ = r.pool.Exec(ctx, `CHECKPOINT`)
	p, err := startB3(ctx, r.c.B3Command, r.c.DatabaseURL)
	if err != nil {
		return nil, err
	}
	r.b3 = p
	r.cpu.B3PID = p.PID
	r.printf("B3: copies of the service's students, swipes and outbox tables (columns, indexes, keys, triggers and rows), served by process %d (%.1f s).\n\n",
		p.PID, time.Since(start).Seconds())
	return p, nil
}

func (r *runner) stopB3() {
	if r.b3 == nil {
		return
	}
	r.b3.Stop()
	r.b3 = nil
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = DropB3(ctx, r.pool)
}

// waitDrained waits until every swipe's webhook has arrived (when a
// receiver runs) and PostgreSQL has gone quiet (the worker has folded
// everything), for at most two minutes.
func (r *runner) waitDrained(ctx context.Context, events int) {
	read := func() (int64, error) {
		var calls int64
		err := r.pool.QueryRow(ctx, `SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements
			WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&calls)
		return calls, err
	}
	if !r.untilQuiet(ctx, events, read, nil) {
		r.printf("(the worker had not drained after %s)\n\n", r.drainLimit())
	}
}

// learnDrained reports whether no student is marked in a learn drain
// (false when Redis does not say; true for a runner told no way to ask).
func (r *runner) learnDrained(ctx context.Context) bool {
	if r.learnPending == nil {
		return true
	}
	n, err := r.learnPending(ctx)
	return err == nil && n == 0
}

func (r *runner) drainLimit() time.Duration {
	if r.drainWait == 0 {
		return 2 * time.Minute
	}
	return r.drainWait
}

// untilQuiet polls every second, for at most drainLimit, until events
// webhook events have arrived (when a receiver runs) and, for three
// seconds, read, the count of statements PostgreSQL has run, has moved by
// fewer than 50 a second while no student was marked in a learn drain (a
// drain working off a backlog makes two statements a batch of up to 64
// students: quiet by the count alone while it still folds). Each time a
// quiet stretch begins it calls mark (when not nil), so the caller can
// keep what it read then. It returns whether it drained.
func (r *runner) untilQuiet(ctx context.Context, events int, read func() (int64, error), mark func()) bool {
	deadline := time.Now().Add(r.drainLimit())
	var last int64 = -1
	quiet := 0
	for time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(time.Second)
		delivered := true
		if r.c.Receiver != nil {
			d, _ := r.c.Receiver.Counts()
			delivered = d >= events
		}
		calls, err := read()
		switch {
		case err != nil:
			// Not known to be quiet: a failed count must not pass for
			// one that stopped moving.
			quiet, last = 0, -1
			continue
		case last >= 0 && calls-last < 50 && r.learnDrained(ctx):
			quiet++
			if quiet == 1 && mark != nil {
				mark()
			}
		default:
			quiet = 0
		}
		last = calls
		if delivered && quiet >= 3 {
			return true
		}
	}
	return false
}

func (r *runner) printStatements(stmts []Statement, swipes int) {
	if swipes == 0 {
		return
	}
	calls, totalMs := statementTotals(stmts)
	stmts = slices.Clone(stmts)
	slices.SortStableFunc(stmts, func(a, b Statement) int { return cmp.Compare(b.Calls, a.Calls) })
	r.printf("PostgreSQL per swipe, everything the service ran (API, worker, webhook delivery; pg_stat_statements over %d swipes):\n\n", swipes)
	r.printf("| statement | calls per swipe | ms per swipe | ms per call |\n|---|---:|---:|---:|\n")
	for _, s := range stmts {
		per := float64(s.Calls) / float64(swipes)
		if per < 0.005 && s.TotalMs/float64(swipes) < 0.001 {
			continue
		}
		r.printf("| `%s` | %.3f | %.4f | %.4f |\n", shortQuery(s.Query), per, s.TotalMs/float64(swipes), s.TotalMs/float64(max(s.Calls, 1)))
	}
	r.printf("| **total** | **%.2f** | **%.3f** | |\n\n", float64(calls)/float64(swipes), totalMs/float64(swipes))
}

// printRedisCommands prints what Redis ran per swipe over the same span as
// the statements: the API's, the worker's and the task queue's commands,
// and the feed polls of a sustained run. The counters are the server's:
// on a Redis other clients use too (LOADTEST_REDIS_URL), theirs count.
func (r *runner) printRedisCommands(cmds RedisCommands, swipes int) {
	if t := cmds.Table("swipe", swipes); t != "" {
		r.printf("Redis per swipe, everything the service ran over the same span (INFO commandstats; "+
			"a script's time includes the commands it called, also listed under their names; the whole server's "+
			"counters, so on a Redis shared with other clients theirs are counted too):\n\n%s\n", t)
	}
}

// shortQuery puts a statement on one line, cut to a readable length.
func shortQuery(q string) string {
	q = strings.Join(strings.Fields(q), " ")
	q = strings.ReplaceAll(q, "|", "\\|")
	if len(q) > 140 {
		q = q[:137] + "..."
	}
	return q
}

// warmCompact builds every student's feed (one GET each) and returns the
// size of a compact page.
func (r *runner) warmCompact(ctx context.Context) (int, error) {
	size := 0
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan string)
	for range 16 {
		wg.Go(func() {
			for s := range next {
				status, body := r.api.Do(ctx, Request{Method: http.MethodGet, Path: "/m/recommendations/" + s})
				r.dealt(s, status, body)
				if status == http.StatusOK {
					mu.Lock()
					size = max(size, len(body))
					mu.Unlock()
				}
			}
		})
	}
	for _, s := range r.students {
		next <- s
	}
	close(next)
	wg.Wait()
	if size == 0 {
		return 0, errors.New("no compact page was served")
	}
	return size, nil
}

// reads: cached GET /m/recommendations and POST /recommendations (20
// items), each against the bare handler serving a value of its size.
func (r *runner) reads(ctx context.Context) error {
	r.printf("### Cached reads against a bare chi handler with one Redis GET of a value of the same size\n\n%s", r.generatorNote())
	compactSize, err := r.warmCompact(ctx)
	if err != nil {
		return err
	}
	status, body := r.api.Do(ctx, r.recsRequest())
	if status != http.StatusOK {
		return fmt.Errorf("POST /recommendations: %d %s", status, body)
	}
	r.printf("| read | bare GET req/s | service req/s | ratio | p50 | p99 |\n|---|---:|---:|---:|---:|---:|\n")
	type readCPU struct {
		name string
		used CPUSample
		n    int
	}
	var cpus []readCPU
	for _, rd := range []struct {
		name string
		size int
		kind string
		next func() Request
		wrk  string // reads.lua's kind
	}{
		{"cached `GET /m/recommendations`", compactSize, "GET /m/recommendations", r.compactRequest, "compact"},
		{"cached `POST /recommendations` (20 items)", len(body), "POST /recommendations", r.recsRequest, "page"},
	} {
		url, stop, err := RedisBaseline(ctx, r.rdb, rd.size)
		if err != nil {
			return err
		}
		bare := NewClient(url, "", r.c.Clients*2, 30*time.Second)
		var base, svc []float64
		var rs []*Result
		var used CPUSample
		for range r.c.Rounds {
			b, err := r.closedLoop(ctx, bare, "bare", func() Request { return Request{Kind: "bare", Method: http.MethodGet, Path: "/v"} },
				func() (*Result, error) { return r.wrkReads(ctx, "bare", url, "") })
			if err != nil {
				stop()
				return err
			}
			base = append(base, b.Rate())
			before := r.cpu.Sample(ctx)
			res, err := r.closedLoop(ctx, r.api, rd.kind, rd.next,
				func() (*Result, error) { return r.wrkReads(ctx, rd.wrk, r.c.APIURL, r.c.Token) })
			if err != nil {
				stop()
				return err
			}
			used = used.Add(r.cpu.Sample(ctx).Sub(before))
			svc = append(svc, res.Rate())
			rs = append(rs, res)
		}
		stop()
		all := merge(rs)
		r.printf("| %s (%d B) | %.0f | %.0f | **%.2f** | %s | %s |\n", rd.name, rd.size, mean(base), mean(svc),
			mean(svc)/mean(base), ms(all.Quantile(0.5)), ms(all.Quantile(0.99)))
		cpus = append(cpus, readCPU{rd.name, used, all.OK()})
	}
	r.printf("\n")
	for _, c := range cpus {
		r.printCPU(c.name+" read", c.used, c.n)
	}
	return nil
}

// sustained: open-loop swipes at Rate for RateDuration over every student,
// while Pollers students poll their feed, then the worker's lag figures.
func (r *runner) sustained(ctx context.Context) error {
	r.printf("### Sustained open-loop swipes: %.0f/s for %s over %d students, %d students polling their feed\n\n",
		r.c.Rate, r.c.RateDuration, len(r.students), r.c.Pollers)
	if r.c.Receiver != nil {
		r.c.Receiver.Reset()
	}
	if err := ResetStatements(ctx, r.pool); err != nil {
		return err
	}
	redisBefore := SampleRedisCommands(ctx, r.cpu.Redis)
	lagBefore := r.histogram(ctx, "matching_feed_lag_seconds")
	patchesBefore := r.counters(ctx, "matching_feed_patches_total")
	pollCtx, stopPolls := context.WithCancel(ctx)
	var pollWG sync.WaitGroup
	var polls *Result
	pollWG.Go(func() {
		pollers := r.students[:min(r.c.Pollers, len(r.students))]
		res := ClosedLoop(pollCtx, r.api, len(pollers), r.c.RateDuration, func(w int) Request {
			time.Sleep(500 * time.Millisecond)
			return Request{Kind: "poll", Method: http.MethodGet, Path: "/m/recommendations/" + pollers[w]}
		})
		polls = res["poll"]
	})
	before, walBefore := r.cpu.Sample(ctx), SampleWAL(ctx, r.pool)
	res := OpenLoop(ctx, r.api, r.c.Rate, 512, r.c.RateDuration, 10*time.Second, func(int) Request { return r.swipeRequest() })["POST /swipe"]
	used, wal := r.cpu.Sample(ctx).Sub(before), SampleWAL(ctx, r.pool).Sub(walBefore)
	stopPolls()
	pollWG.Wait()
	end := time.Now()
	due := int(r.c.Rate * r.c.RateDuration.Seconds())
	r.printf("| | figure |\n|---|---:|\n")
	r.printf("| swipes due | %d |\n", due)
	r.printf("| sent | %d (%.1f %%) |\n", res.Sent, 100*float64(res.Sent)/float64(max(due, 1)))
	r.printf("| answered 2xx | %d (%.1f %% of due) |\n", res.OK(), 100*float64(res.OK())/float64(max(due, 1)))
	r.printf("| not sent (all %d in-flight slots taken) | %d |\n", 512, res.Dropped)
	r.printf("| other answers | %s |\n", notOK(res))
	r.printf("| swipe p50 / p99 | %s / %s |\n", ms(res.Quantile(0.5)), ms(res.Quantile(0.99)))
	if polls != nil {
		r.printf("| feed polls p50 / p99 | %s / %s (%s) |\n", ms(polls.Quantile(0.5)), ms(polls.Quantile(0.99)), statusLine(polls))
	}
	lag := r.histogram(ctx, "matching_feed_lag_seconds").sub(lagBefore)
	r.printf("| learned feed lag (`matching_feed_lag_seconds`) p50 / p99 | %s / %s (%d rebuilds) |\n",
		secs(lag.quantile(0.5)), secs(lag.quantile(0.99)), int(lag.count))
	r.printf("| what the swipes' patches did to the stored feed (`matching_feed_patches_total`) | %s |\n",
		patchShares(patchesBefore, r.counters(ctx, "matching_feed_patches_total")))
	if r.c.Receiver != nil {
		drained := r.waitDelivered(ctx, res.OK(), time.Minute)
		d, posts := r.c.Receiver.Counts()
		lags := r.c.Receiver.Lags()
		slices.Sort(lags)
		q := func(p float64) time.Duration {
			if len(lags) == 0 {
				return 0
			}
			return lags[int(p*float64(len(lags)-1))]
		}
		r.printf("| webhook events received (distinct / posts) | %d / %d |\n", d, posts)
		r.printf("| webhook first attempt after the swipe p50 / p99 / max | %s / %s / %s |\n", ms(q(0.5)), ms(q(0.99)), ms(q(1)))
		r.printf("| every event delivered, after the end of the load | %s |\n", drained.Sub(end).Round(100*time.Millisecond))
	}
	r.printf("\n")
	r.printCPU("swipe", used, res.OK())
	r.printf("%s\n\n", wal.Describe("swipe", res.OK()))
	// What PostgreSQL ran per swipe at this rate: at a rate the machine
	// is not saturated by, execution times are the statements' own rather
	// than time spent waiting for a core.
	r.waitDrained(ctx, res.OK())
	stmts, err := ReadStatements(ctx, r.pool)
	if err != nil {
		return err
	}
	r.printStatements(stmts, res.OK())
	r.printRedisCommands(SampleRedisCommands(ctx, r.cpu.Redis).Sub(redisBefore), res.OK())
	return nil
}

// waitDelivered waits until n distinct events arrived, at most max.
func (r *runner) waitDelivered(ctx context.Context, n int, max time.Duration) time.Time {
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if d, _ := r.c.Receiver.Counts(); d >= n {
			return time.Now()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Now()
}

func (r *runner) printCPU(unit string, used CPUSample, n int) {
	if n == 0 {
		return
	}
	names := []string{"API", "worker"}
	r.printf("CPU per %s (µs): ", unit)
	var parts []string
	for i, s := range used.Service {
		name := fmt.Sprintf("process %d", i)
		if i < len(names) {
			name = names[i]
		}
		parts = append(parts, fmt.Sprintf("%s %.0f", name, s*1e6/float64(n)))
	}
	parts = append(parts, fmt.Sprintf("PostgreSQL backends %.0f", used.Postgres*1e6/float64(n)),
		fmt.Sprintf("PostgreSQL's own processes %.0f", used.PostgresServer*1e6/float64(n)),
		fmt.Sprintf("Redis %.0f", used.Redis*1e6/float64(n)))
	r.printf("%s; in all %.0f.\n\n", strings.Join(parts, ", "), used.ServiceTotal()*1e6/float64(n))
}

// printB3CPU prints B3's CPU per request: its process, its PostgreSQL
// backends and PostgreSQL's own processes.
func (r *runner) printB3CPU(used CPUSample, n int) {
	if n == 0 {
		return
	}
	per := func(v float64) float64 { return v * 1e6 / float64(n) }
	r.printf("B3's CPU per request (µs): its process %.0f, PostgreSQL backends %.0f, PostgreSQL's own processes %.0f; in all %.0f.\n\n",
		per(used.B3), per(used.B3Postgres), per(used.PostgresServer), per(used.B3Total()))
}

// printB3Statements prints what B3's statement cost per request.
func (r *runner) printB3Statements(stmts []Statement, n int) {
	calls, totalMs := statementTotals(stmts)
	r.printf("B3 in PostgreSQL: %.2f statements and %.3f ms of execution per request (pg_stat_statements over %d requests).\n\n",
		float64(calls)/float64(n), totalMs/float64(n), n)
}

func statementTotals(stmts []Statement) (calls int64, totalMs float64) {
	for _, s := range stmts {
		calls += s.Calls
		totalMs += s.TotalMs
	}
	return calls, totalMs
}

func merge(rs []*Result) *Result {
	out := &Result{Statuses: map[int]int{}}
	for _, r := range rs {
		if r == nil {
			continue
		}
		out.Kind = r.Kind
		out.Sent += r.Sent
		out.Errors += r.Errors
		out.NotOK += r.NotOK
		out.Dropped += r.Dropped
		out.Elapsed += r.Elapsed
		out.Latencies = append(out.Latencies, r.Latencies...)
		for s, c := range r.Statuses {
			out.Statuses[s] += c
		}
	}
	return out
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t / float64(len(xs))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func secs(s float64) string {
	if s < 1 {
		return fmt.Sprintf("%.0f ms", s*1000)
	}
	return fmt.Sprintf("%.2f s", s)
}

func statusLine(r *Result) string {
	codes := make([]int, 0, len(r.Statuses))
	for c := range r.Statuses {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d x%d", c, r.Statuses[c]))
	}
	if r.NotOK > 0 {
		parts = append(parts, fmt.Sprintf("4xx/5xx x%d", r.NotOK))
	}
	if r.Errors > 0 {
		parts = append(parts, fmt.Sprintf("errors x%d", r.Errors))
	}
	return strings.Join(parts, ", ")
}

func notOK(r *Result) string {
	n := r.Errors + r.NotOK
	for s, c := range r.Statuses {
		if s < 200 || s >= 300 {
			n += c
		}
	}
	if n == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", n, statusLine(r))
}

// firstError keeps the first answer that was not 2xx, to say why.
type firstError struct {
	mu     sync.Mutex
	status int
	body   string
}

// watch makes req report its answer to e.
func (e *firstError) watch(req Request) Request {
	req.Done = func(status int, body []byte) {
		if status >= 200 && status < 300 {
			return
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.status == 0 {
			e.status, e.body = status, strings.TrimSpace(string(body[:min(len(body), 300)]))
		}
	}
	return req
}

// print says what the first answer that was not 2xx was, if any; who
// names what answered it.
func (e *firstError) print(r *runner, who string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.status != 0 {
		r.printf("(%s's first answer not 2xx: %d %s)\n", who, e.status, e.body)
	}
}
