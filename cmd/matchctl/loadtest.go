package main

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/collegematch/matching/internal/auth"
	"github.com/collegematch/matching/internal/tools/loadtest"
)

func init() {
	register("loadtest", command{
		usage: "loadtest [--api URL] [--ops URL,URL] [--scenarios swipe,mixed,reads,sustained] ...",
		help:  "measure a running service under load against baselines on the same machine (see docs/benchmarks.md)",
		run:   runLoadtest,
	})
}

func runLoadtest(ctx context.Context, e env, args []string) error {
	fs := e.flagSet("loadtest")
	api := fs.String("api", "http://127.0.0.1:8080", "the service's public API (127.0.0.1 only)")
	ops := fs.String("ops", "http://127.0.0.1:9090,http://127.0.0.1:9091", "the API's and the worker's operations ports, comma-separated")
	scenarios := fs.String("scenarios", "swipe,mixed", "what to measure, in order: swipe, mixed, reads, sustained")
	students := fs.Int("students", 10000, "students the load is spread over (made through the API)")
	history := fs.Int("history", 10000, "swipes recorded, and the database analysed, before anything is measured")
	clients := fs.Int("clients", 64, "closed-loop clients")
	duration := fs.Duration("duration", 10*time.Second, "length of each measured round")
	rounds := fs.Int("rounds", 2, "rounds of each pair (baseline, service), alternating")
	rate := fs.Float64("rate", 500, "sustained: swipes per second, open loop")
	rateFor := fs.Duration("rate-duration", time.Minute, "sustained: how long")
	pollers := fs.Int("pollers", 8, "sustained: students polling their feed meanwhile")
	receiver := fs.String("receiver", "", "listen here (127.0.0.1:PORT) as the webhook subscriber the service was configured with")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
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
	case len(e.cfg.HS256Secret) == 0:
		return usageErr("AUTH_HS256_SECRET must be the service's development secret (a service token is minted with it)")
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
	}
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
