package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/collegematch/matching/internal/auth"
	"github.com/collegematch/matching/internal/tools/loadtest"
)

func init() {
	register("loadtest", command{
		usage: "loadtest [--api URL] [--ops URL,URL] [--scenarios swipe,cost,mixed,reads,sustained] [--worker-pid PID] ...",
		help:  "measure a running service under load against baselines on the same machine (see docs/benchmarks.md)",
		run:   runLoadtest,
	})
}

func runLoadtest(ctx context.Context, e env, args []string) error {
	fs := e.flagSet("loadtest")
	api := fs.String("api", "http://127.0.0.1:8080", "the service's public API (127.0.0.1 only)")
	ops := fs.String("ops", "http://127.0.0.1:9090,http://127.0.0.1:9091", "the API's and the worker's operations ports, comma-separated")
	scenarios := fs.String("scenarios", "swipe,cost,mixed", "what to measure, in order: swipe, cost, mixed, reads, sustained")
	students := fs.Int("students", 10000, "students the load is spread over (made through the API)")
	history := fs.Int("history", 10000, "swipes recorded, and the database analysed, before anything is measured")
	clients := fs.Int("clients", 64, "closed-loop clients")
	duration := fs.Duration("duration", 10*time.Second, "length of each measured round")
	rounds := fs.Int("rounds", 2, "rounds of each pair (baseline, service), alternating")
	rate := fs.Float64("rate", 500, "sustained: swipes per second, open loop")
	rateFor := fs.Duration("rate-duration", time.Minute, "sustained: how long")
	pollers := fs.Int("pollers", 8, "sustained: students polling their feed meanwhile")
	receiver := fs.String("receiver", "", "listen here (127.0.0.1:PORT) as the webhook subscriber the service was configured with")
	costRate := fs.Float64("cost-rate", 300, "cost: swipes per second, open loop, for the service and B3 alike")
	costStudents := fs.Int("cost-students", 1000, "cost: students the swipes are spread over")
	workerConns := fs.Int("worker-conns", 78, "the worker's database pool (pool_max_conns), for the mixed load's check of PostgreSQL's max_connections")
	workerPID := fs.Int("worker-pid", 0, "the worker's process, paused (SIGSTOP, then SIGCONT) while swipe measures the API alone; its ops port is the second --ops URL")
	generator := fs.String("generator", "go", "swipe and reads: what drives the closed loops of the service and its baselines: go (the load test's client) or wrk (the wrk binary, an independent generator)")
	serveB3 := fs.String("serve-b3", "", "serve B3 (the swipe's durable write alone) on this 127.0.0.1 address until stopped, and nothing else: the baseline's own process, which loadtest starts")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if *serveB3 != "" {
		if len(pos) > 0 {
			return usageErr("unexpected argument %q", pos[0])
		}
		if !loopback("http://" + *serveB3) {
			return usageErr("--serve-b3 must be on 127.0.0.1 or localhost")
		}
		return loadtest.ServeB3(ctx, *serveB3, e.cfg.DatabaseURL, e.stdout, e.log)
	}
	switch {
	case len(pos) > 0:
		return usageErr("unexpected argument %q", pos[0])
	case !loopback(*api):
		return usageErr("--api must be on 127.0.0.1 or localhost")
	case *students < 1 || *clients < 1 || *rounds < 1 || *duration <= 0:
		return usageErr("--students, --clients, --rounds and --duration must be positive")
	case *history < 0:
		return usageErr("--history must not be negative")
	case *costRate <= 0 || *costStudents < 1:
		return usageErr("--cost-rate and --cost-students must be positive")
	case *workerPID < 0:
		return usageErr("--worker-pid must not be negative")
	case *workerConns < 1:
		return usageErr("--worker-conns must be positive")
	case *generator != "go" && *generator != "wrk":
		return usageErr("--generator must be go or wrk")
	case *generator == "wrk" && *students < 2:
		return usageErr("--generator wrk needs --students of at least 2 (one for each of wrk's threads)")
	case len(e.cfg.HS256Secret) == 0:
		return usageErr("AUTH_HS256_SECRET must be the service's development secret (a service token is minted with it)")
	}
	if *generator == "wrk" {
		if _, err := exec.LookPath("wrk"); err != nil {
			return fmt.Errorf("--generator wrk needs wrk on PATH (scripts/wrk.sh installs it): %w", err)
		}
	}
	token, err := auth.MintHS256(e.cfg.HS256Secret, auth.MintOptions{Subject: uuid.NewString(), Service: true,
		TTL: 2 * time.Hour, Issuer: e.cfg.Issuer, Audience: e.cfg.Audience})
	if err != nil {
		return err
	}
	c := loadtest.Config{
		APIURL: strings.TrimRight(*api, "/"), DatabaseURL: e.cfg.DatabaseURL, RedisURL: e.cfg.RedisURL, Token: token,
		Students: *students, History: *history, Clients: *clients, Duration: *duration, Rounds: *rounds,
		Scenarios: strings.Split(*scenarios, ","), Rate: *rate, RateDuration: *rateFor, Pollers: *pollers, Out: e.stdout,
		CostRate: *costRate, CostStudents: *costStudents, WorkerPID: *workerPID, WorkerConns: *workerConns,
		Generator: *generator,
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("loadtest: find this program to start B3 with: %w", err)
	}
	c.B3Command = []string{self, "loadtest", "--serve-b3", "127.0.0.1:0"}
	for _, u := range strings.Split(*ops, ",") {
		if u = strings.TrimSpace(u); u != "" {
			c.OpsURLs = append(c.OpsURLs, strings.TrimRight(u, "/"))
		}
	}
	if *receiver != "" {
		r, err := loadtest.StartReceiver(*receiver)
		if err != nil {
			return err
		}
		defer r.Close()
		c.Receiver = r
	}
	return loadtest.Run(ctx, c)
}

func loopback(u string) bool {
	for _, p := range []string{"http://127.0.0.1:", "http://localhost:", "http://[::1]:"} {
		if strings.HasPrefix(u, p) {
			return true
		}
	}
	return false
}
