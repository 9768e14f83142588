// Package drill runs fault drills on the real stack: it starts the API and
// the worker (built binaries), a Redis of its own and a fault proxy in front
// of PostgreSQL, all on 127.0.0.1, sends a swipe load, breaks one
// dependency while the load runs, and then checks what the service
// promises: no swipe answered 2xx is lost, none is counted twice, every
// student's learned state includes every swipe within a minute of the
// fault ending, and every swipe.recorded event reaches the webhook
// subscriber. While the fault lasts every answer that is not 2xx must be
// 503 with Retry-After.
//
// The drills:
//
//   - worker-kill: the worker is killed (SIGKILL) Kills times, started
//     again each time after a short pause;
//   - redis-restart: Redis is killed and started again empty (no
//     persistence) on the same port;
//   - postgres-blackhole: the proxy between the service and PostgreSQL
//     forwards nothing for Blackhole (connections stay open, nothing
//     answers), then heals.
//
// Everything the drill starts is stopped when it returns, and the kernel
// stops it should the drill's process die (Linux); the work directory's
// pids file lists what runs meanwhile.
package drill

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/collegematch/matching/internal/webhook"
)

// Names of the drills, in the order they run.
const (
	WorkerKill        = "worker-kill"
	RedisRestart      = "redis-restart"
	PostgresBlackhole = "postgres-blackhole"
)

// All is every drill, in order.
var All = []string{WorkerKill, RedisRestart, PostgresBlackhole}

// Config says what to run and where.
type Config struct {
	Drills      []string
	Bin         string // directory holding the api and worker binaries
	Work        string // logs, the webhook file, the pids file
	DatabaseURL string // the drill's database, migrated and seeded (postgres://host:port/...)
	Secret      string // AUTH_HS256_SECRET the API is started with
	Token       string // a matching:service token signed with Secret
	RedisServer string // the redis-server binary
	RedisPort   int    // the drill's own Redis
	Port        int    // API; +1 webhook receiver, +2 API operations port, +3 worker operations port

	Students  int           // per drill
	Rate      float64       // swipes per second
	Clients   int           // load goroutines
	Before    time.Duration // load before the fault
	After     time.Duration // load after the fault
	Kills     int           // worker-kill: how many
	Up        time.Duration // worker-kill: how long the worker runs between kills, once ready
	Pause     time.Duration // worker-kill: down time per kill; redis-restart: how long Redis is away
	Blackhole time.Duration // postgres-blackhole: how long
	// LearnWithin: every swipe is in its student's learned state this long
	// after the fault ended; DeliverWithin: every event delivered.
	LearnWithin   time.Duration
	DeliverWithin time.Duration

	Out io.Writer // the report (Markdown)
	Log io.Writer // progress
}

// Result is one drill's figures, a row of the summary.
type Result struct {
	Name        string
	Swipes      int // distinct swipes sent
	Requests    int // attempts, retries included
	Acked       int // swipes answered 2xx
	Status503   int // answers 503 with Retry-After
	Other       int // any other answer that is not 2xx, and requests not answered
	OtherLine   string
	Stored      int
	Lost        int
	Doubled     int
	Unlearned   int // students, LearnWithin after the fault ended
	Undelivered int // events, DeliverWithin after the fault ended
	// AnswersBack: from the end of the fault to the last answer that was
	// not 2xx (0 when none came after it).
	AnswersBack time.Duration
	// Learned, Delivered: from the end of the fault until every swipe was
	// in its student's learned state, every event delivered (-1: not
	// within the bounds).
	Learned   time.Duration
	Delivered time.Duration
	Fault     string // what was done
	Problems  []string
	Exited    []string // processes that ended on their own
}

// Failed reports whether an invariant does not hold.
func (r Result) Failed() bool {
	return r.Lost > 0 || r.Doubled > 0 || r.Unlearned > 0 || r.Undelivered > 0 || r.Other > 0 || len(r.Exited) > 0
}

// Run runs the drills and writes the summary; it returns the results and
// an error when one could not be run.
func Run(ctx context.Context, c Config) ([]Result, error) {
	for _, d := range c.Drills {
		if !slices.Contains(All, d) {
			return nil, fmt.Errorf("unknown drill %q (drills: %s)", d, strings.Join(All, ", "))
		}
	}
	pool, err := pgxpool.New(ctx, c.DatabaseURL)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	schools, err := activeSchools(ctx, pool)
	if err != nil {
		return nil, err
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	hookKey := webhook.SecretPrefix + base64.StdEncoding.EncodeToString(key)
	hooks := filepath.Join(c.Work, "webhooks.yaml")
	if err := os.WriteFile(hooks, fmt.Appendf(nil, "- url: http://127.0.0.1:%d/hook\n  secret: %s\n  events: [swipe.recorded]\n  allow_private: true\n",
		c.Port+1, hookKey), 0o600); err != nil {
		return nil, err
	}
	recv, err := startReceiver(fmt.Sprintf("127.0.0.1:%d", c.Port+1), key)
	if err != nil {
		return nil, err
	}
	defer recv.close()
	c.logf("starting Redis on 127.0.0.1:%d, the proxy to PostgreSQL, the worker and the API on 127.0.0.1:%d", c.RedisPort, c.Port)
	st, err := startStack(ctx, c, hooks)
	if err != nil {
		return nil, err
	}
	defer st.stop()

	var results []Result
	for _, name := range c.Drills {
		if err := st.ready(ctx); err != nil {
			return results, fmt.Errorf("%s: before the drill: %w", name, err)
		}
		r, err := runDrill(ctx, c, st, pool, recv, name, schools)
		if err != nil {
			return results, fmt.Errorf("%s: %w", name, err)
		}
		results = append(results, r)
		c.logf("%s: done (%s)", name, verdictWord(r))
	}
	writeSummary(c.Out, c, results)
	return results, nil
}

func verdictWord(r Result) string {
	if r.Failed() {
		return "FAILED"
	}
	return "held"
}

func (c Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, "drill: %s "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05")}, args...)...)
	}
}

func activeSchools(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
	rows, err := pool.Query(ctx, `SELECT id::text FROM schools WHERE active ORDER BY id`)
	if err != nil {
		return nil, err
	}
	schools, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	if len(schools) < 500 {
		return nil, fmt.Errorf("the catalogue has %d active schools: seed the drill's database first", len(schools))
	}
	return schools, nil
}

// runDrill prepares fresh students, runs the load around the fault, and
// checks the invariants until they hold or the bounds pass.
func runDrill(ctx context.Context, c Config, st *stack, pool *pgxpool.Pool, recv *receiver, name string, schools []string) (Result, error) {
	run := uuid.NewString()
	students := make([]string, c.Students)
	for i := range students {
		students[i] = uuid.NewSHA1(uuid.NameSpaceOID, fmt.Appendf(nil, "drill-%s-%s-%d", run, name, i)).String()
	}
	l := newLoad(st.apiURL(), c.Token, students, schools, c.Clients*2)
	c.logf("%s: onboarding %d students", name, len(students))
	if err := l.prepare(ctx); err != nil {
		return Result{}, err
	}
	stop := make(chan struct{})
	loadDone := make(chan struct{})
	c.logf("%s: swipe load at %.0f/s", name, c.Rate)
	go func() {
		l.run(c.Rate, c.Clients, stop)
		close(loadDone)
	}()
	endLoad := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-loadDone
	}
	defer endLoad()
	if err := sleep(ctx, c.Before); err != nil {
		return Result{}, err
	}
	var fault string
	var err error
	switch name {
	case WorkerKill:
		fault, err = killWorker(ctx, c, st)
	case RedisRestart:
		fault, err = restartRedis(ctx, c, st)
	case PostgresBlackhole:
		fault, err = blackhole(ctx, c, st)
	}
	if err != nil {
		return Result{}, err
	}
	faultEnd := time.Now()
	l.quieten()
	c.logf("%s: fault over; load goes on for %s for half the students", name, c.After)
	if err := sleep(ctx, c.After); err != nil {
		return Result{}, err
	}
	endLoad()
	l.drain(15 * time.Second)
	c.logf("%s: load stopped; checking (learned within %s, delivered within %s of the fault's end)", name, c.LearnWithin, c.DeliverWithin)

	res := Result{Name: name, Fault: fault, Learned: -1, Delivered: -1}
	atBound := -1 // students unlearned once LearnWithin had passed
	for {
		sent, ans := l.snapshot()
		v, err := check(ctx, pool, students, sent, recv)
		if err != nil {
			return Result{}, err
		}
		fill(&res, sent, ans, v, faultEnd)
		since := time.Since(faultEnd)
		if res.Learned < 0 && v.unlearned == 0 {
			res.Learned = since
		}
		if res.Delivered < 0 && v.undelivered == 0 {
			res.Delivered = since
		}
		if atBound < 0 && since >= c.LearnWithin {
			atBound = v.unlearned
		}
		if res.Learned >= 0 && res.Delivered >= 0 || since >= max(c.LearnWithin, c.DeliverWithin) {
			break
		}
		if err := sleep(ctx, time.Second); err != nil {
			return Result{}, err
		}
	}
	res.Unlearned = max(atBound, 0)
	res.Exited = st.exited()
	return res, nil
}

func fill(res *Result, sent map[string]*swipe, ans answers, v verdict, faultEnd time.Time) {
	res.Swipes, res.Acked = len(sent), 0
	for _, s := range sent {
		if s.acked {
			res.Acked++
		}
	}
	res.Requests, res.Status503, res.Other, res.OtherLine = ans.requests, ans.s503, ans.otherTotal(), ans.otherLine()
	res.Stored, res.Lost, res.Doubled, res.Unlearned, res.Undelivered = v.stored, v.lost, v.doubled, v.unlearned, v.undelivered
	res.AnswersBack = max(ans.lastFailure.Sub(faultEnd), 0)
	res.Problems = v.problems
}

// killWorker kills the worker c.Kills times, each time once it has been
// ready for c.Up, and starts it again after c.Pause.
func killWorker(ctx context.Context, c Config, st *stack) (string, error) {
	for i := range c.Kills {
		if err := sleep(ctx, c.Up); err != nil {
			return "", err
		}
		st.kill("worker", syscall.SIGKILL)
		if err := sleep(ctx, c.Pause); err != nil {
			return "", err
		}
		started := time.Now()
		if err := st.startWorker(ctx); err != nil {
			return "", fmt.Errorf("restart %d: %w", i+1, err)
		}
		c.logf("%s: worker killed and started again (%d/%d), ready in %s", WorkerKill, i+1, c.Kills, secs(time.Since(started)))
	}
	return fmt.Sprintf("worker SIGKILLed %d times, %s down each time", c.Kills, c.Pause), nil
}

// restartRedis kills Redis and starts an empty one on the same port after
// c.Pause.
func restartRedis(ctx context.Context, c Config, st *stack) (string, error) {
	st.kill("redis", syscall.SIGKILL)
	c.logf("%s: Redis killed", RedisRestart)
	if err := sleep(ctx, c.Pause); err != nil {
		return "", err
	}
	if err := st.startRedis(ctx); err != nil {
		return "", err
	}
	c.logf("%s: an empty Redis answers again", RedisRestart)
	return fmt.Sprintf("Redis SIGKILLed, an empty one started %s later", c.Pause), nil
}

// blackhole makes the proxy in front of PostgreSQL forward nothing for
// c.Blackhole.
func blackhole(ctx context.Context, c Config, st *stack) (string, error) {
	st.proxy.Blackhole(true)
	c.logf("%s: PostgreSQL black-holed for %s", PostgresBlackhole, c.Blackhole)
	err := sleep(ctx, c.Blackhole)
	st.proxy.Blackhole(false)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("PostgreSQL black-holed for %s (connections open, nothing forwarded)", c.Blackhole), nil
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return errStopped
	case <-time.After(d):
		return nil
	}
}

// writeSummary prints the table of every drill and the notes under it.
func writeSummary(w io.Writer, c Config, results []Result) {
	fmt.Fprintf(w, "\n| drill | swipes sent | requests | 2xx | 503 | other | lost | doubled | unlearned after %s | undelivered events | non-2xx until | all learned after | all delivered after | |\n",
		short(c.LearnWithin))
	fmt.Fprintf(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range results {
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d | %d | %d | %d | %d | %s | %s | %s | **%s** |\n", r.Name, r.Swipes, r.Requests,
			r.Acked, r.Status503, r.Other, r.Lost, r.Doubled, r.Unlearned, r.Undelivered, secs(r.AnswersBack),
			within(r.Learned), within(r.Delivered), verdictWord(r))
	}
	fmt.Fprintln(w)
	for _, r := range results {
		fmt.Fprintf(w, "- %s: %s; %d swipes stored", r.Name, r.Fault, r.Stored)
		if r.Other > 0 {
			fmt.Fprintf(w, "; other answers: %s", r.OtherLine)
		}
		if len(r.Exited) > 0 {
			fmt.Fprintf(w, "; exited on their own: %s", strings.Join(r.Exited, ", "))
		}
		fmt.Fprintln(w)
		for _, p := range r.Problems {
			fmt.Fprintf(w, "  - %s\n", p)
		}
	}
	fmt.Fprintln(w)
}

// within is a time to converge, or "no" when it did not within the bounds.
func within(d time.Duration) string {
	if d < 0 {
		return "no"
	}
	return secs(d)
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

func short(d time.Duration) string { return fmt.Sprintf("%.0f s", d.Seconds()) }
