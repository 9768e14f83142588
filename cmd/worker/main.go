// Command worker runs the service's background tasks from the asynq queues,
// relays the transactional outbox to those queues, and serves its own
// operations port.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/collegematch/matching/internal/active"
	"github.com/collegematch/matching/internal/buildinfo"
	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/config"
	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/memlimit"
	"github.com/collegematch/matching/internal/metrics"
	"github.com/collegematch/matching/internal/ops"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/queueconsole"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/webhook"
)

const (
	// shutdownTimeout is how long running tasks get to finish on shutdown;
	// the ones still running then go back to their queue.
	shutdownTimeout = 20 * time.Second
	// taskCheckInterval is how often an idle worker looks for new tasks
	// (asynq polls; its default is a second). A swipe's feed must be rebuilt
	// within 2 s at p99, and most of an idle worker's lag is this wait: at
	// 50 ms it costs about 20 small Redis calls a second per idle worker.
	taskCheckInterval = 50 * time.Millisecond
	// handlerDrainTimeout is how long handlers left running by the shutdown
	// get to record their outcome (the webhook handler's writes are bounded
	// by 5 s) before the database pool closes.
	handlerDrainTimeout = 6 * time.Second
	// delayedTaskCheckInterval is how often due retries move back to their
	// queue (asynq's default is 5 s). The first webhook retry is due 5 s
	// after the first attempt; a second of slack keeps the schedule close.
	delayedTaskCheckInterval = time.Second
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// go-redis has one logger per process, so it is set here, not in run.
	redis.SetLogger(redisLogger{slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("service", "worker", "component", "redis")})
	if err := run(ctx, os.Getenv, os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

// run starts the task server, the outbox relay and the ops server, and
// stops them when ctx ends. ready, when not nil, receives the bound ops
// address once it listens (tests use it with a ":0" address).
func run(ctx context.Context, getenv func(string) string, stderr io.Writer, ready chan<- string) error {
	return runWith(ctx, getenv, stderr, ready, options{})
}

// options are the worker's tunables that are not configuration: fixed in
// production, shortened by tests.
type options struct {
	shutdownTimeout time.Duration       // default shutdownTimeout
	delayedCheck    time.Duration       // default delayedTaskCheckInterval
	webhooks        webhook.RetryConfig // retry schedule and jitter; default the decisions.md schedule
	sender          webhook.Config      // per-attempt timeout; default 10 s
	monitor         webhook.MonitorConfig
	sweep           tasks.LearnSweepConfig
	relay           webhook.RelayConfig
	queueMetrics    tasks.QueueMetricsConfig
	recovery        tasks.RecoveryConfig
	// registered, when not nil, is handed the metrics registry once
	// everything is registered on it (the test of docs/metrics.md).
	registered func(*metrics.Registry)
	retention  webhook.RetentionConfig // Deliveries comes from WEBHOOK_RETENTION
}

func runWith(ctx context.Context, getenv func(string) string, stderr io.Writer, ready chan<- string, opt options) error {
	cfg, err := config.Load(getenv, config.RoleWorker)
	if err != nil {
		return err
	}
	// Students' learn shards: the API marks each in theirs, the worker's
	// drains and sweep read the same spread (LEARN_SHARDS).
	if err := tasks.SetLearnShards(cfg.LearnShards); err != nil {
		return err
	}
	// Subscribers are validated before anything starts: a bad entry stops
	// the worker with an error naming it.
	endpoints, err := webhook.LoadFile(cfg.WebhookEndpointsFile)
	if err != nil {
		return err
	}
	if opt.shutdownTimeout <= 0 {
		opt.shutdownTimeout = shutdownTimeout
	}
	if opt.delayedCheck <= 0 {
		opt.delayedCheck = delayedTaskCheckInterval
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel})).With("service", "worker")
	log.InfoContext(ctx, "starting", "version", buildinfo.Version, "config", cfg, "webhook_endpoints", len(endpoints))
	// A soft memory limit under the container's (docs/security.md).
	var memLimit int64
	if res, err := memlimit.Apply(cfg.GoMemLimitSet, memlimit.Default); err != nil {
		log.WarnContext(ctx, "cannot read the container's memory limit; no soft memory limit set", "err", err)
	} else {
		memLimit = res.Limit
		log.InfoContext(ctx, "memory limit", "from", res.From, "limit_bytes", res.Limit, "container_bytes", res.Container)
	}
	factorCache := factorCacheBytes(cfg.FactorCacheMB, memLimit)
	log.InfoContext(ctx, "factor cache", "bytes", factorCache,
		"students_at_6500_schools", factorCache/(match.FactorBytesPerSchool*6500))

	// Every PostgreSQL call is bounded (store.WorkerSettings), so a
	// database that stops answering frees the task slots; the pool has a
	// connection for every slot.
	dbSettings := store.WorkerSettings(cfg.WorkerConcurrency+cfg.WebhookConcurrency, log)
	pool, err := store.OpenWith(ctx, cfg.DatabaseURL, dbSettings)
	if err != nil {
		return err
	}
	defer pool.Close()
	db := store.NewLimited(pool, dbSettings.Limits)

	// One Redis client serves the task server, the relay's enqueues and the
	// readiness check; asynq leaves a client it was given open.
	rdb, topology, err := cache.Open(ctx, cfg.RedisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	log.InfoContext(ctx, "redis", "topology", topology.String())
	queue := handover.NewClient(rdb, handover.NewQueuer())

	reg := metrics.NewRegistry()
	metrics.NewDBPool(reg, pool.Stat)
	metrics.NewRedisRoundTrips(reg, cache.CountRoundTrips(rdb).Count)
	taskMetrics := tasks.NewTaskMetrics(reg)
	webhookMetrics := webhook.NewMetrics(reg)
	for _, e := range endpoints {
		webhookMetrics.ForEndpoints(e.Name)
	}

	// The learner rebuilds feeds exactly as the API does on a miss, on the
	// school catalogue held in memory (reloaded when the store's catalogue
	// version moves).
	qm := query.NewMetrics(reg)
	catalog := active.NewHolder(db, log, active.NewMetrics(reg), active.DefaultPoll)
	if err := catalog.Load(ctx); err != nil {
		return fmt.Errorf("load the school catalogue: %w", err)
	}
	go catalog.Run(ctx)
	feeds := query.New(query.Config{
		Students: db, Feeds: cache.NewFeeds(rdb, cfg.FeedCacheTTL), Catalogs: catalog,
		Log: log.With("component", "feeds"), Metrics: qm, Probes: cache.NewProbes(rdb, cfg.FeedCacheTTL),
		FactorCacheBytes: factorCache,
	})

	// The relay publishes the outbox's events to the subscribers of
	// WEBHOOK_ENDPOINTS_FILE a batch at a time: it makes their first
	// attempts itself (SendFirstAttempts below; as many at once as
	// WEBHOOK_CONCURRENCY, half of them to one endpoint) and writes each
	// delivery with its attempt; it also deletes published rows after
	// RelayConfig.Retention.
	if opt.relay.Senders <= 0 {
		opt.relay.Senders = cfg.WebhookConcurrency
	}
	opt.relay.ShutdownTimeout = opt.shutdownTimeout
	relay := webhook.NewRelay(log.With("component", "outbox_relay"), db, queue, subscriptions(endpoints),
		webhook.NewRelayMetrics(reg), opt.relay)
	// The learn sweep marks again, in their learn drains, the students whose
	// marks Redis lost; one replica at a time runs each pass.
	host, _ := os.Hostname()
	leader := handover.NewLeader(rdb, host+"/"+strconv.Itoa(os.Getpid()))
	// Every worker must read the same subscriber list (any replica's relay
	// may hand an event over): each publishes its list's fingerprint, and a
	// difference is logged and exported (matching_webhook_config_mismatch).
	agreement := webhook.NewAgreement(log.With("component", "webhook_config"),
		cache.NewConfigPeers(rdb, webhook.AgreementName, "worker/"+host+"/"+strconv.Itoa(os.Getpid()), 3*webhook.AgreementInterval),
		endpoints, webhook.NewAgreementGauge(reg))
	learnDrains := tasks.NewLearnDrains(rdb)
	sweep := tasks.NewLearnSweep(log.With("component", "learn_sweep"), db, learnDrains, queue, leader, reg, opt.sweep)
	// The queues' state (matching_queue_*) is exported once for the fleet,
	// by the replica that holds the queue-metrics lease.
	queueMetrics := tasks.NewQueueMetrics(log.With("component", "queue_metrics"),
		asynq.NewInspectorFromRedisClient(rdb), queue, leader, tasks.Queues(), reg, opt.queueMetrics)
	// Tasks a worker left active without running them (it died, or Redis
	// failed the write that would have ended them) go back to their queue
	// once their lease is over; one replica at a time.
	recovery := tasks.NewRecovery(log.With("component", "queue_recovery"), rdb, leader, tasks.Queues(), reg, opt.recovery)
	// Retention deletes ended webhook deliveries after WEBHOOK_RETENTION
	// (the relay deletes their events); one replica at a time.
	opt.retention.Deliveries = cfg.WebhookRetention
	retention := webhook.NewRetention(log.With("component", "retention"), db, leader, reg, opt.retention)

	// Two task servers share the Redis client: the main slots serve
	// learning and the relay task (and webhook tasks queued by older
	// builds), the webhook slots serve deliveries only.
	errorHandler := asynq.ErrorHandlerFunc(func(ctx context.Context, t *asynq.Task, err error) {
		id, _ := asynq.GetTaskID(ctx)
		retried, _ := asynq.GetRetryCount(ctx)
		maxRetry, _ := asynq.GetMaxRetry(ctx)
		level := slog.LevelWarn
		switch {
		case retried >= maxRetry || errors.Is(err, asynq.SkipRetry):
			level = slog.LevelError // no attempt left: the task is archived
		case errors.Is(err, webhook.ErrNotDue):
			level = slog.LevelDebug // a duplicate waiting for its delivery's turn
		}
		log.Log(ctx, level, "task failed", "task_type", t.Type(), "task_id", id,
			"retried", retried, "max_retry", maxRetry, "err", err)
	})
	serverConfig := func(slots int, queues map[string]int) asynq.Config {
		return asynq.Config{
			Concurrency:     slots,
			Queues:          queues,
			ShutdownTimeout: opt.shutdownTimeout,
			// webhook:deliver retries on its own schedule (webhook.Schedule,
			// or a Retry-After the subscriber sent), learn:drain within
			// seconds (tasks.DrainRetryDelay); other types on asynq's.
			RetryDelayFunc:           tasks.RetryDelayFunc(opt.webhooks.RetryDelayFunc()),
			TaskCheckInterval:        taskCheckInterval,
			DelayedTaskCheckInterval: opt.delayedCheck,
			Logger:                   asynqLogger{log.With("component", "asynq")},
			LogLevel:                 asynqLevel(cfg.LogLevel),
			ErrorHandler:             errorHandler,
		}
	}
	srv := asynq.NewServerFromRedisClient(rdb, serverConfig(cfg.WorkerConcurrency, tasks.QueuePriorities()))
	hookSrv := asynq.NewServerFromRedisClient(rdb, serverConfig(cfg.WebhookConcurrency, tasks.WebhookQueues()))
	mux := asynq.NewServeMux()
	mux.Use(taskMetrics.Middleware)
	// Handlers still running when the shutdown timeout ends are left by the
	// task servers (their tasks go back to the queue) with their context
	// cancelled; they then record what they were doing (an interrupted
	// webhook attempt releases its delivery's claim), which needs the
	// database this function closes on return: it waits for them, briefly.
	var running sync.WaitGroup
	mux.Use(func(next asynq.Handler) asynq.Handler {
		return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
			running.Add(1)
			defer running.Done()
			return next.ProcessTask(ctx, t)
		})
	})
	tasks.NewHandler(tasks.Deps{
		Log: log, LearnDrains: learnDrains, Learning: db, Feeds: feeds, Catalogs: catalog,
		LearnMetrics: tasks.NewLearnMetrics(reg),
	}).Register(mux)
	hooks := webhook.NewHandler(webhook.Deps{
		Log: log, Relay: relay, Store: db, Poster: webhook.NewSender(endpoints, opt.sender),
		Metrics: webhookMetrics, Retry: opt.webhooks,
	})
	hooks.Register(mux)
	relay.SendFirstAttempts(hooks)
	monitor := webhook.NewMonitor(log.With("component", "webhook_monitor"), db, queue, leader, webhookMetrics, opt.monitor)

	checks := []ops.Check{
		{Name: "postgres", Check: db.Ping},
		{Name: "redis", Check: func(ctx context.Context) error { return cache.Ping(ctx, rdb) }},
	}
	// Dependencies are watched in the background: an outage shows in
	// metrics and logs, and does not fail readiness. The worker is ready
	// once its task servers have started.
	deps := ops.NewMonitor(reg, log.With("component", "dependencies"), checks)
	depsCtx, stopDeps := context.WithCancel(ctx)
	defer stopDeps()
	deps.Start(depsCtx)
	readiness := &ops.Readiness{}
	if opt.registered != nil {
		opt.registered(reg)
	}
	// The queue console shares the ops port: read-only unless
	// OPS_ADMIN_TOKEN is set (queueconsole).
	console := queueconsole.Handler(queueconsole.Config{
		Inspector: asynq.NewInspectorFromRedisClient(rdb), Queues: tasks.Queues(),
		Outside: queueconsole.Outsides(queueconsole.OutboxBacklog(db.OutboxBacklog),
			queueconsole.LearnMarks(func(ctx context.Context) (int, error) { return tasks.LearnPending(ctx, rdb) })),
		AdminToken: cfg.OpsAdminToken,
		Log:        log.With("component", "queue_console"),
	})
	opsMux := http.NewServeMux()
	opsMux.Handle("/queues", console)
	opsMux.Handle("/queues/", console)
	opsMux.Handle("/", ops.Handler(reg, readiness, deps, cfg.PProf))
	opsSrv := ops.Server(cfg.OpsAddr, opsMux)
	ln, err := net.Listen("tcp", cfg.OpsAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.OpsAddr, err)
	}

	// Start does not need Redis to answer yet: the server keeps retrying, the
	// relay keeps rows unpublished, and the dependency monitor reports the
	// outage (matching_dependency_up, the log, /readyz's body).
	if err := srv.Start(mux); err != nil {
		_ = ln.Close()
		return fmt.Errorf("start task server: %w", err)
	}
	if err := hookSrv.Start(mux); err != nil {
		srv.Shutdown()
		_ = ln.Close()
		return fmt.Errorf("start webhook task server: %w", err)
	}
	log.InfoContext(ctx, "task servers started", "concurrency", cfg.WorkerConcurrency, "queues", tasks.QueuePriorities(),
		"webhook_concurrency", cfg.WebhookConcurrency, "webhook_queues", tasks.WebhookQueues())
	readiness.Ready()

	relayCtx, stopRelay := context.WithCancel(ctx)
	relayDone := make(chan struct{})
	go func() {
		defer close(relayDone)
		var wg sync.WaitGroup
		wg.Go(func() { monitor.Run(relayCtx) })
		wg.Go(func() { sweep.Run(relayCtx) })
		wg.Go(func() { queueMetrics.Run(relayCtx) })
		wg.Go(func() { recovery.Run(relayCtx) })
		wg.Go(func() { retention.Run(relayCtx) })
		wg.Go(func() { agreement.Run(relayCtx, webhook.AgreementInterval) })
		relay.Run(relayCtx)
		wg.Wait()
	}()

	errc := make(chan error, 1)
	go func() {
		if err := opsSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	}()
	log.InfoContext(ctx, "listening", "addr", ln.Addr().String())
	if ready != nil {
		ready <- ln.Addr().String()
	}

	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err = <-errc:
		log.Error("ops server failed", "err", err)
	}
	readiness.Stopping()
	stopRelay()
	// The task servers and the relay (its first attempts on the wire) wait
	// up to the shutdown timeout for what is running, at once.
	var down sync.WaitGroup
	down.Go(func() { <-relayDone })
	down.Go(srv.Shutdown)
	down.Go(hookSrv.Shutdown)
	down.Wait()
	left := make(chan struct{})
	go func() { running.Wait(); close(left) }()
	select {
	case <-left:
	case <-time.After(handlerDrainTimeout):
		log.Warn("task handlers still running after shutdown; their work is redone by the queue")
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if serr := opsSrv.Shutdown(shutdownCtx); serr != nil {
		err = errors.Join(err, serr)
	}
	log.Info("stopped")
	return err
}

// factorCacheBytes is the memory the worker gives its factor cache (the
// students' score factors kept between rebuilds, query.FactorCache):
// WORKER_FACTOR_CACHE_MB (mb) when set; else a quarter of the soft memory
// limit the runtime runs under (memLimit: 0 or math.MaxInt64 when none),
// at least query.DefaultFactorCacheBytes; else that default. A rebuild
// from kept factors costs about two thirds of one without
// (docs/capacity.md), and a replica sees every student's tasks, so the
// cache helps as far as it holds the students swiping at once.
func factorCacheBytes(mb int, memLimit int64) int {
	switch {
	case mb > 0:
		return mb << 20
	case memLimit > 0 && memLimit < math.MaxInt64:
		return int(max(memLimit/4, query.DefaultFactorCacheBytes))
	}
	return query.DefaultFactorCacheBytes
}
