package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/collegematch/matching/internal/auth"
	"github.com/collegematch/matching/internal/tools/drill"
)

func init() {
	register("drill", command{
		usage: "drill [--drills worker-kill,redis-restart,postgres-blackhole] [--bin DIR] [--work DIR] ...",
		help: "fault drills on the real stack: start the API and worker from --bin, a Redis of their own and a " +
			"proxy to PostgreSQL on 127.0.0.1, break one dependency during a swipe load and check that no " +
			"acknowledged swipe is lost or counted twice, every swipe is learned and every event delivered " +
			"(make drill, docs/drills.md); exits 1 when an invariant fails",
		run: runDrill,
	})
}

func runDrill(ctx context.Context, e env, args []string) error {
	fs := e.flagSet("drill")
	drills := fs.String("drills", strings.Join(drill.All, ","), "which drills to run, in order")
	bin := fs.String("bin", "", "directory of the api and worker binaries (default: this binary's directory)")
	work := fs.String("work", "", "directory for logs, the webhook file and the pids file (default: a new temporary one)")
	redisServer := fs.String("redis-server", "redis-server", "the redis-server binary the drill's own Redis runs")
	redisPort := fs.Int("redis-port", 6397, "port of the drill's own Redis on 127.0.0.1")
	port := fs.Int("port", 18300, "first of four ports on 127.0.0.1: API, webhook receiver, API and worker operations ports")
	students := fs.Int("students", 200, "students per drill (new ones each drill, made through the API)")
	rate := fs.Float64("rate", 100, "swipes per second")
	clients := fs.Int("clients", 32, "load goroutines")
	before := fs.Duration("before", 5*time.Second, "load before the fault")
	after := fs.Duration("after", 10*time.Second, "load after the fault")
	kills := fs.Int("kills", 20, "worker-kill: how many times the worker is killed")
	up := fs.Duration("up", 2*time.Second, "worker-kill: how long the worker runs, once ready, between kills")
	pause := fs.Duration("pause", time.Second, "worker-kill, redis-restart: how long the process stays down")
	hole := fs.Duration("blackhole", 30*time.Second, "postgres-blackhole: how long nothing is forwarded")
	learn := fs.Duration("learn-within", time.Minute, "every swipe is learned this long after the fault ended")
	deliver := fs.Duration("deliver-within", 150*time.Second, "every event is delivered this long after the fault ended")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usageErr("unexpected argument %q", pos[0])
	case *students < 2 || *clients < 1 || *rate <= 0 || *kills < 1:
		return usageErr("--students must be at least 2; --clients, --rate and --kills positive")
	case len(e.cfg.HS256Secret) == 0:
		return usageErr("AUTH_HS256_SECRET must be set: the API is started with it and the load signs its token with it")
	}
	if *bin == "" {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		*bin = filepath.Dir(self)
	}
	for _, b := range []string{"api", "worker"} {
		if _, err := os.Stat(filepath.Join(*bin, b)); err != nil {
			return usageErr("--bin %s holds no %s binary (go build -o DIR/ ./cmd/api ./cmd/worker)", *bin, b)
		}
	}
	if *work == "" {
		if *work, err = os.MkdirTemp("", "matching-drill-"); err != nil {
			return err
		}
		defer os.RemoveAll(*work)
	}
	token, err := auth.MintHS256(e.cfg.HS256Secret, auth.MintOptions{Subject: uuid.NewString(), Service: true,
		TTL: 2 * time.Hour, Issuer: e.cfg.Issuer, Audience: e.cfg.Audience})
	if err != nil {
		return err
	}
	results, err := drill.Run(ctx, drill.Config{
		Drills: strings.Split(*drills, ","), Bin: *bin, Work: *work, DatabaseURL: e.cfg.DatabaseURL,
		Secret: string(e.cfg.HS256Secret), Token: token, RedisServer: *redisServer, RedisPort: *redisPort, Port: *port,
		Students: *students, Rate: *rate, Clients: *clients, Before: *before, After: *after,
		Kills: *kills, Up: *up, Pause: *pause, Blackhole: *hole, LearnWithin: *learn, DeliverWithin: *deliver,
		Out: e.stdout, Log: e.stderr,
	})
	if err != nil {
		return err
	}
	var failed []string
	for _, r := range results {
		if r.Failed() {
			failed = append(failed, r.Name)
		}
	}
	if len(failed) > 0 {
		return errors.New(fmt.Sprint("an invariant failed: ", strings.Join(failed, ", ")))
	}
	return nil
}
