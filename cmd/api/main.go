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
	"syscall"
	"time"

	"github.com/hibiken/asynq"

	"github.com/collegematch/matching/internal/auth"
	"github.com/collegematch/matching/internal/buildinfo"
	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/command"
	"github.com/collegematch/matching/internal/config"
	"github.com/collegematch/matching/internal/httpapi"
	"github.com/collegematch/matching/internal/memlimit"
	"github.com/collegematch/matching/internal/metrics"
	"github.com/collegematch/matching/internal/offline"
	"github.com/collegematch/matching/internal/ops"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/ratelimit"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/webhook"
	"github.com/collegematch/matching/internal/wire"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Getenv, os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "api:", err)
		os.Exit(1)
	}
}

// ready, when not nil, receives the bound public and ops addresses once
// both listeners are open (tests use it with ":0" addresses).
func run(ctx context.Context, getenv func(string) string, stderr io.Writer, ready chan<- [2]string) error {
	cfg, err := config.Load(getenv, config.RoleAPI)
	if err != nil {
		return err
	}
	// The same subscribers as the worker's, validated before anything
	// starts: a row the API hands over is marked published, so its webhook
	// tasks must be among the ones it queues.
	endpoints, err := webhook.LoadFile(cfg.WebhookEndpointsFile)
	if err != nil {
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

	pool, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	db := store.New(pool)

	rdb, err := cache.Open(cfg.RedisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()

	if len(cfg.AuthInsecure) > 0 {
		log.WarnContext(ctx, "AUTH_ALLOW_INSECURE=1: unsafe authentication settings are active; never run this way in production",
			"settings", cfg.AuthInsecure)
	}
	verifier, err := auth.NewVerifier(ctx, auth.VerifierOptions{
		JWKSURL: cfg.JWKSURL, HS256Secret: cfg.HS256Secret, Issuer: cfg.Issuer, Audience: cfg.Audience, Log: log,
		MaxLifetime: cfg.MaxTokenLifetime,
	})
	if err != nil {
		return err
	}

	reg := metrics.NewRegistry()

	// The school catalogue is held in memory: loaded before the API listens,
	// refreshed in the background when the store's catalogue version moves.
	qm := query.NewMetrics(reg)
	catalog := query.NewCatalogHolder(db, log, qm, query.DefaultCatalogPoll)
	if err := catalog.Load(ctx); err != nil {
		return fmt.Errorf("load the school catalogue: %w", err)
	}
	go catalog.Run(ctx)
	feeds := cache.NewFeeds(rdb, cfg.FeedCacheTTL)
	queries := query.New(query.Config{
		Students: wire.Students{Store: db},
		Feeds:    feeds,
		Catalogs: catalog,
		Log:      log,
		Metrics:  qm,
		// The onboarding categories' example schools have image URLs under it.
		ImageBaseURL: cfg.ImageBaseURL,
		// Probes served are remembered for FEED_CACHE_TTL, so a swipe on
		// one is known as a probe swipe.
		Probes: cache.NewProbes(rdb, cfg.FeedCacheTTL),
	})

	// The write side hands each committed event's tasks to the queue at
	// once; the worker's relay hands over whatever this could not. Both
	// route with the learn routes (tasks.AddLearnRoutes), so both derive the
	// same task ids from a row.
	queue := asynq.NewClientFromRedisClient(rdb)
	defer queue.Close()
	router := tasks.NewRouter()
	tasks.AddLearnRoutes(router)
	tasks.AddWebhookRoutes(router, wire.WebhookSubscriptions(endpoints), wire.Webhooks{Store: db})
	writes := wire.WriteStore{Store: db}
	swipes := command.NewSwipes(command.SwipesConfig{
		Store: writes, Probes: cache.NewProbes(rdb, cfg.FeedCacheTTL), Feeds: feeds,
		Catalogs: wire.Catalogs{CatalogHolder: catalog}, Queue: queue, Router: router, Log: log,
	})
	feedback := command.NewFeedback(command.FeedbackConfig{
		Store: writes, Catalogs: wire.Catalogs{CatalogHolder: catalog}, Queue: queue, Router: router, Log: log,
	})

	// The continuous feed serves the same learned feed, skipping what it
	// showed within FEED_COOLDOWN and what the student swiped; the swipes
	// sent along are recorded by the same command as POST /swipe.
	continuous := query.NewContinuous(query.ContinuousConfig{
		Queries:  queries,
		Store:    cache.NewCooldowns(feeds, cfg.FeedCooldown),
		Probes:   cache.NewProbes(rdb, cfg.FeedCacheTTL),
		Recorder: swipes,
	})

	// Offline sync records pushed changes in one transaction per push and
	// hands over one student:learn task per push.
	syncer := offline.New(offline.Config{
		Store: db, Feeds: queries, Versions: feeds, Catalogs: wire.Catalogs{CatalogHolder: catalog},
		Queue: queue, Router: router, Log: log,
	})

	checks := []httpapi.HealthCheck{
		{Name: "postgres", Check: db.Ping},
		{Name: "redis", Check: func(ctx context.Context) error { return cache.Ping(ctx, rdb) }},
	}
	api := httpapi.NewServer(httpapi.Deps{
		Log:            log,
		Metrics:        metrics.NewHTTP(reg),
		Verifier:       verifier,
		Limiter:        ratelimit.NewPipelined(rdb, cfg.RateLimits),
		RateLimits:     cfg.RateLimits,
		Onboarding:     command.NewOnboarding(db, command.WithFeedInvalidator(queries)),
		Queries:        queries,
		Categories:     queries,
		CategorySwipes: wire.CategorySwipes{Store: db},
		Swipes:         swipes,
		Feedback:       feedback,
		Continuous:     continuous,
		Sync:           syncer,
		FeedCacheTTL:   cfg.FeedCacheTTL,
		Health:         checks,
		CORS:           cfg.CORSAllowedOrigins,
		Version:        buildinfo.Version,
	})
	opsChecks := make([]ops.Check, len(checks))
	for i, c := range checks {
		opsChecks[i] = ops.Check{Name: c.Name, Check: c.Check}
	}

	public := ops.Server(cfg.HTTPAddr, api)
	public.WriteTimeout = 35 * time.Second // the reference mobile client gives up after 30 s
	opsSrv := ops.Server(cfg.OpsAddr, ops.Handler(reg, opsChecks, cfg.PProf))
	return serve(ctx, log, ready, public, opsSrv)
}

// serve runs the servers until ctx ends or one fails, then drains them.
func serve(ctx context.Context, log *slog.Logger, ready chan<- [2]string, servers ...*http.Server) error {
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
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, s := range servers {
		if serr := s.Shutdown(shutdownCtx); serr != nil {
			err = errors.Join(err, serr)
		}
	}
	return err
}
