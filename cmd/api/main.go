// Command api serves the public matching API and its operations port.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/collegematch/matching/internal/active"
	"github.com/collegematch/matching/internal/auth"
	"github.com/collegematch/matching/internal/buildinfo"
	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/command"
	"github.com/collegematch/matching/internal/config"
	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/httpapi"
	"github.com/collegematch/matching/internal/memlimit"
	"github.com/collegematch/matching/internal/metrics"
	"github.com/collegematch/matching/internal/ops"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/ratelimit"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/webhook"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Getenv, os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "api:", err)
		os.Exit(1)
	}
}

// registered, when not nil, is handed the metrics registry once everything
// is registered on it (the test of docs/metrics.md reads it).
var registered func(*metrics.Registry)

// ready, when not nil, receives the bound public and ops addresses once
// both listeners are open (tests use it with ":0" addresses).
func run(ctx context.Context, getenv func(string) string, stderr io.Writer, ready chan<- [2]string) error {
	cfg, err := config.Load(getenv, config.RoleAPI)
	if err != nil {
		return err
	}
	// Students' learn shards: the API marks each in theirs, the worker's
	// drains and sweep read the same spread (LEARN_SHARDS).
	if err := tasks.SetLearnShards(cfg.LearnShards); err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel})).With("service", "api")
	log.InfoContext(ctx, "starting", "version", buildinfo.Version, "config", cfg)
	// A soft memory limit under the container's (docs/security.md).
	if res, err := memlimit.Apply(cfg.GoMemLimitSet, memlimit.Default); err != nil {
		log.WarnContext(ctx, "cannot read the container's memory limit; no soft memory limit set", "err", err)
	} else {
		log.InfoContext(ctx, "memory limit", "from", res.From, "limit_bytes", res.Limit, "container_bytes", res.Container)
	}

	// Every PostgreSQL call is bounded (store.APISettings): a request that
	// cannot get an answer answers 503 within 5 s.
	dbSettings := store.APISettings(runtime.GOMAXPROCS(0), log)
	pool, err := store.OpenWith(ctx, cfg.DatabaseURL, dbSettings)
	if err != nil {
		return err
	}
	defer pool.Close()
	db := store.NewLimited(pool, dbSettings.Limits)

	rdb, topology, err := cache.Open(ctx, cfg.RedisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	log.InfoContext(ctx, "redis", "topology", topology.String())

	if len(cfg.AuthInsecure) > 0 {
		log.WarnContext(ctx, "AUTH_ALLOW_INSECURE=1: unsafe authentication settings are active; never run this way in production",
			"settings", cfg.AuthInsecure)
	}
	if cfg.JWKSURL != "" && len(cfg.ServiceClients) == 0 {
		log.InfoContext(ctx, "AUTH_SERVICE_CLIENTS is empty: no identity-provider token may act for every student ("+auth.ServiceScope+" is ignored)")
	}
	verifier, err := auth.NewVerifier(ctx, auth.VerifierOptions{
		JWKSURL: cfg.JWKSURL, HS256Secret: cfg.HS256Secret, Issuer: cfg.Issuer, Audience: cfg.Audience, Log: log,
		MaxLifetime: cfg.MaxTokenLifetime, ServiceClients: cfg.ServiceClients,
	})
	if err != nil {
		return err
	}

	reg := metrics.NewRegistry()
	metrics.NewDBPool(reg, pool.Stat)
	metrics.NewRedisRoundTrips(reg, cache.CountRoundTrips(rdb).Count)

	// The API writes no webhook deliveries. Given WEBHOOK_ENDPOINTS_FILE (a
	// deployment may hand every process the same files), it reads the list
	// only to check that the workers read the same one: a difference is
	// logged and exported (matching_webhook_config_mismatch), as the
	// workers do.
	agreeGauge := webhook.NewAgreementGauge(reg)
	if cfg.WebhookEndpointsFile != "" {
		endpoints, err := webhook.LoadFile(cfg.WebhookEndpointsFile)
		if err != nil {
			return err
		}
		host, _ := os.Hostname()
		agreement := webhook.NewAgreement(log.With("component", "webhook_config"),
			cache.NewConfigPeers(rdb, webhook.AgreementName, "api/"+host+"/"+strconv.Itoa(os.Getpid()), 3*webhook.AgreementInterval),
			endpoints, agreeGauge)
		agreeCtx, stopAgree := context.WithCancel(ctx)
		agreeDone := make(chan struct{})
		go func() { defer close(agreeDone); agreement.Run(agreeCtx, webhook.AgreementInterval) }()
		defer func() { stopAgree(); <-agreeDone }()
	}

	// The school catalogue is held in memory: loaded before the API listens,
	// refreshed in the background when the store's catalogue version moves.
	qm := query.NewMetrics(reg)
	// It is read off the request path, so its reads get the worker's
	// longer bound: a catalogue ten times today's still loads.
	catalog := active.NewHolder(store.NewLimited(pool, store.Limits{Call: store.WorkerCallTimeout, Acquire: store.WorkerAcquireTimeout}),
		log, active.NewMetrics(reg), active.DefaultPoll)
	if err := catalog.Load(ctx); err != nil {
		return fmt.Errorf("load the school catalogue: %w", err)
	}
	go catalog.Run(ctx)
	feeds := cache.NewFeeds(rdb, cfg.FeedCacheTTL)
	queries := query.New(query.Config{
		Students: db,
		Feeds:    feeds,
		Catalogs: catalog,
		Log:      log,
		Metrics:  qm,
		// The onboarding categories' example schools have image URLs under it.
		ImageBaseURL: cfg.ImageBaseURL,
		// Probes served are remembered for FEED_CACHE_TTL, so a swipe on
		// one is known as a probe swipe.
		Probes: cache.NewProbes(rdb, cfg.FeedCacheTTL),
		// The API builds a feed only when none is stored (a first read, an
		// expired feed); the rebuilds after swipes, which reuse a student's
		// kept score factors, run in the worker. No factor cache here.
		FactorCacheBytes: -1,
	})

	// The write side: one PostgreSQL statement per swipe (or one pipelined
	// transaction per batch), and around it one Redis round trip to read
	// what the answer is predicted from and one to patch the stored feed
	// and hand the learn task to the worker (cache.SwipeTrips). The worker's
	// relay publishes the outbox's swipe.recorded events to webhook
	// subscribers, and its learn sweep queues again any learn task lost.
	queuer := handover.NewQueuer()
	trips := cache.NewSwipeTrips(feeds, queuer)
	// Every committed swipe and feedback reason is counted once in the
	// learning counters (like rates by phase and slot), wherever it came in.
	learning := metrics.NewLearning(reg)
	swipes := command.NewSwipes(command.SwipesConfig{
		Store: db, Batch: db, Redis: trips, Catalogs: catalog, Log: log, Count: learning,
	})
	feedback := command.NewFeedback(command.FeedbackConfig{
		Store: db, Redis: trips, Queue: handover.NewClient(rdb, queuer), Catalogs: catalog, Log: log, Count: learning,
	})

	// The continuous feed serves the same learned feed, skipping what it
	// showed within FEED_COOLDOWN and what the student swiped; the swipes
	// sent along are recorded by the write side first.
	continuous := query.NewContinuous(query.ContinuousConfig{
		Queries: queries,
		Store:   cache.NewCooldowns(feeds, cfg.FeedCooldown),
		Probes:  cache.NewProbes(rdb, cfg.FeedCacheTTL),
	})

	// Allowances are counted in Redis, shared by every replica; while Redis
	// cannot count, in this replica's memory at the same rates (or refused,
	// RATE_LIMIT_FAIL_CLOSED).
	limiter := ratelimit.NewPipelined(rdb, cfg.RateLimits)
	limiter.SetLog(log.With("component", "ratelimit"))

	checks := []httpapi.HealthCheck{
		{Name: "postgres", Check: db.Ping},
		{Name: "redis", Check: func(ctx context.Context) error { return cache.Ping(ctx, rdb) }},
	}
	api := httpapi.NewServer(httpapi.Deps{
		Log:            log,
		Metrics:        metrics.NewHTTP(reg),
		Verifier:       verifier,
		Limiter:        limiter,
		RateLimits:     cfg.RateLimits,
		Onboarding:     command.NewOnboarding(db, command.WithFeedInvalidator(queries)),
		Queries:        queries,
		Categories:     queries,
		CategorySwipes: command.NewCategories(db, feeds, log),
		Swipes:         swipes,
		Feedback:       feedback,
		Continuous:     continuous,
		Carried:        swipes,
		SyncPush:       command.NewSync(command.SyncConfig{Store: db, Redis: trips, Catalogs: catalog, Log: log, Count: learning}),
		SyncPull:       query.NewSync(queries, db, 0, 0),
		FeedCacheTTL:   cfg.FeedCacheTTL,
		Health:         checks,
		CORS:           cfg.CORSAllowedOrigins,
		Version:        buildinfo.Version,
	})
	opsChecks := make([]ops.Check, len(checks))
	for i, c := range checks {
		opsChecks[i] = ops.Check{Name: c.Name, Check: c.Check}
	}
	// Dependencies are watched in the background: an outage shows in
	// /health, metrics and logs, and does not fail readiness.
	deps := ops.NewMonitor(reg, log.With("component", "dependencies"), opsChecks)
	deps.Start(ctx)
	readiness := &ops.Readiness{}
	if registered != nil {
		registered(reg)
	}

	public := ops.Server(cfg.HTTPAddr, api)
	public.WriteTimeout = 35 * time.Second // the reference mobile client gives up after 30 s
	opsSrv := ops.Server(cfg.OpsAddr, ops.Handler(reg, readiness, deps, cfg.PProf))
	return serve(ctx, log, ready, readiness, public, opsSrv)
}

// serve runs the servers until ctx ends or one fails, then drains them.
// The replica is ready once every listener is open (the catalogue was
// loaded before), and no longer ready once it starts to drain.
func serve(ctx context.Context, log *slog.Logger, ready chan<- [2]string, readiness *ops.Readiness, servers ...*http.Server) error {
	errc := make(chan error, len(servers))
	var addrs [2]string
	for i, s := range servers {
		ln, err := net.Listen("tcp", s.Addr)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", s.Addr, err)
		}
		if i < len(addrs) {
			addrs[i] = ln.Addr().String()
		}
		log.InfoContext(ctx, "listening", "addr", ln.Addr().String())
		go func() {
			if err := s.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	readiness.Ready()
	if ready != nil {
		ready <- addrs
	}
	var err error
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err = <-errc:
		log.Error("server failed", "err", err)
	}
	readiness.Stopping()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, s := range servers {
		if serr := s.Shutdown(shutdownCtx); serr != nil {
			err = errors.Join(err, serr)
		}
	}
	return err
}
