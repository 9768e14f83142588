package tasks

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/collegematch/matching/internal/periodic"
)

// QueueInspector reads a queue's state (*asynq.Inspector).
type QueueInspector interface {
	Queues() ([]string, error)
	GetQueueInfo(queue string) (*asynq.QueueInfo, error)
}

// QueueRegistry puts queue names back in asynq's list of queues, the set
// QueueInspector.Queues reads (*handover.Client).
type QueueRegistry interface {
	RegisterQueues(ctx context.Context, queues ...string) error
}

// QueueMetricsConfig tunes the queue metrics; zero fields take the defaults.
type QueueMetricsConfig struct {
	Interval time.Duration // between reads of the queues; default 10 s
	// TTL is how long the lease outlives the last renewal: another replica
	// takes over this long after the exporting one stops renewing (it
	// releases the lease when it stops in order). Default 3 × Interval.
	TTL time.Duration
}

func (c QueueMetricsConfig) withDefaults() QueueMetricsConfig {
	if c.Interval <= 0 {
		c.Interval = 10 * time.Second
	}
	if c.TTL <= c.Interval {
		c.TTL = 3 * c.Interval
	}
	return c
}

// queueMetricsLease is the lease's name (the Redis key lead:queue-metrics).
const queueMetricsLease = "queue-metrics"

// QueueStates are the task states of matching_queue_tasks, as asynq keeps
// them.
var QueueStates = []string{"pending", "active", "scheduled", "retry", "archived", "completed", "aggregating"}

// QueueMetrics exports the state of the asynq queues (tasks by state,
// latency, processed and failed totals) for the whole worker fleet. The
// numbers are the queues' own, kept in Redis, so they are the same whichever
// replica reads them: only the replica that holds the lease exports them
// (and matching_queue_metrics_leader 1; the others 0), so a fleet of N
// workers gives one series per queue, not N copies that a sum would count N
// times and that an external-metric autoscaler would add up. When the
// exporting replica stops, another takes over within the lease's TTL; a
// query aggregates with max by (queue), which also covers the moment two
// replicas overlap.
//
// The queues are the service's own (Queues), not whatever asynq's list of
// queues holds: asynq adds a queue to that list once per process, on the
// first task it queues there, so after Redis lost its data the list stays
// empty while the API and worker go on queueing, and a reader trusting it
// would export empty queues over a growing backlog. A queue of the service
// missing from the list is registered again before it is read, so asynq's
// own tools (its Inspector, asynqmon) see it too.
//
// The queues are read in the background every Interval, never on a scrape:
// one SMEMBERS and two short scripts per queue (asynq's Inspector). A failed
// read exports nothing until the next one succeeds (a stale queue length
// would mislead an autoscaler) and counts matching_queue_metrics_errors_total.
type QueueMetrics struct {
	log    *slog.Logger
	in     QueueInspector
	reg    QueueRegistry
	job    *periodic.Runner
	queues []string
	cfg    QueueMetricsConfig
	errors prometheus.Counter

	mu      sync.Mutex
	leading bool
	infos   []asynq.QueueInfo // the last read, while leading

	leader, tasks, size, latency, processed, failed, paused, memory *prometheus.Desc
}

// NewQueueMetrics builds the exporter of queues and registers it on reg;
// Run reads the queues.
func NewQueueMetrics(log *slog.Logger, in QueueInspector, registry QueueRegistry, lease periodic.Lease, queues []string,
	reg prometheus.Registerer, cfg QueueMetricsConfig) *QueueMetrics {
	if log == nil || in == nil || registry == nil || lease == nil || reg == nil {
		panic("tasks.NewQueueMetrics: nil dependency")
	}
	q := []string{"queue"}
	cfg = cfg.withDefaults()
	m := &QueueMetrics{log: log, in: in, reg: registry, queues: slices.Sorted(slices.Values(queues)), cfg: cfg,
		job: periodic.New(periodic.Config{Name: queueMetricsLease, Interval: cfg.Interval, TTL: cfg.TTL, Lease: lease, Log: log}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matching_queue_metrics_errors_total",
			Help: "Failed reads of the queues' state by the replica exporting the queue metrics.",
		}),
		leader: prometheus.NewDesc("matching_queue_metrics_leader",
			"1 on the one worker replica that exports the matching_queue_* metrics for the fleet, 0 on the others.", nil, nil),
		tasks: prometheus.NewDesc("matching_queue_tasks",
			"Tasks in the queue by state (pending, active, scheduled, retry, archived, completed, aggregating); exported by one replica for the fleet.",
			[]string{"queue", "state"}, nil),
		size: prometheus.NewDesc("matching_queue_size",
			"Tasks in the queue in any state; exported by one replica for the fleet.", q, nil),
		latency: prometheus.NewDesc("matching_queue_latency_seconds",
			"Age of the oldest pending task of the queue (0 when none is pending); exported by one replica for the fleet.", q, nil),
		processed: prometheus.NewDesc("matching_queue_processed_total",
			"Tasks of the queue the whole fleet has processed, succeeded or failed (asynq's count, kept in Redis); exported by one replica.", q, nil),
		failed: prometheus.NewDesc("matching_queue_failed_total",
			"Task runs of the queue that failed, fleet-wide (asynq's count, kept in Redis); exported by one replica.", q, nil),
		paused: prometheus.NewDesc("matching_queue_paused",
			"1 when the queue is paused (its tasks are not processed); exported by one replica for the fleet.", q, nil),
		memory: prometheus.NewDesc("matching_queue_memory_bytes",
			"Redis memory the queue and its tasks take, estimated by sampling; exported by one replica for the fleet.", q, nil),
	}
	reg.MustRegister(m, m.errors)
	return m
}

// Describe implements prometheus.Collector.
func (m *QueueMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.leader, m.tasks, m.size, m.latency, m.processed, m.failed, m.paused, m.memory} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the last read, when this replica
// exports the queues.
func (m *QueueMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	leading, infos := m.leading, m.infos
	m.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(m.leader, prometheus.GaugeValue, b2f(leading))
	for _, in := range infos {
		q := in.Queue
		for i, n := range []int{in.Pending, in.Active, in.Scheduled, in.Retry, in.Archived, in.Completed, in.Aggregating} {
			ch <- prometheus.MustNewConstMetric(m.tasks, prometheus.GaugeValue, float64(n), q, QueueStates[i])
		}
		ch <- prometheus.MustNewConstMetric(m.size, prometheus.GaugeValue, float64(in.Size), q)
		ch <- prometheus.MustNewConstMetric(m.latency, prometheus.GaugeValue, in.Latency.Seconds(), q)
		ch <- prometheus.MustNewConstMetric(m.processed, prometheus.CounterValue, float64(in.ProcessedTotal), q)
		ch <- prometheus.MustNewConstMetric(m.failed, prometheus.CounterValue, float64(in.FailedTotal), q)
		ch <- prometheus.MustNewConstMetric(m.paused, prometheus.GaugeValue, b2f(in.Paused), q)
		ch <- prometheus.MustNewConstMetric(m.memory, prometheus.GaugeValue, float64(in.MemoryUsage), q)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Run reads the queues at once and then every Interval until ctx ends, then
// gives the lease up so another replica takes over at its next read.
func (m *QueueMetrics) Run(ctx context.Context) {
	m.job.Run(ctx, func(ctx context.Context) error {
		m.Pass(ctx)
		return nil // Pass logs and counts its failures
	})
	m.set(false, nil)
}

// Pass renews (or takes) the lease and, when this replica holds it, reads
// every queue; it reports whether this replica exports the queues now.
func (m *QueueMetrics) Pass(ctx context.Context) bool {
	var infos []asynq.QueueInfo
	lead, err := m.job.Do(ctx, func(ctx context.Context) (err error) {
		infos, err = m.read(ctx)
		return err
	})
	switch {
	case !lead:
		if err != nil && ctx.Err() == nil {
			m.errors.Inc()
			m.log.DebugContext(ctx, "queue metrics lease not held", "err", err)
		}
		m.set(false, nil)
		return false
	case err != nil:
		m.errors.Inc()
		m.log.WarnContext(ctx, "queues not read; queue metrics left out until the next read", "err", err)
		m.set(true, nil)
		return true
	}
	m.set(true, infos)
	return true
}

// read reads every queue of the service. A queue missing from asynq's list
// of queues is registered first: nothing was ever queued there, or Redis
// lost its data since this fleet's processes registered it.
func (m *QueueMetrics) read(ctx context.Context) ([]asynq.QueueInfo, error) {
	known, err := m.in.Queues()
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, q := range m.queues {
		if !slices.Contains(known, q) {
			missing = append(missing, q)
		}
	}
	if len(missing) > 0 {
		if err := m.reg.RegisterQueues(ctx, missing...); err != nil {
			return nil, err
		}
	}
	infos := make([]asynq.QueueInfo, 0, len(m.queues))
	for _, q := range m.queues {
		in, err := m.in.GetQueueInfo(q)
		if err != nil {
			return nil, err
		}
		if slices.Contains(missing, q) && in.Size > 0 {
			m.log.WarnContext(ctx, "queue was missing from asynq's list of queues while it held tasks (Redis lost its data?); registered again",
				"queue", q, "size", in.Size, "pending", in.Pending)
		}
		infos = append(infos, *in)
	}
	return infos, nil
}

func (m *QueueMetrics) set(leading bool, infos []asynq.QueueInfo) {
	m.mu.Lock()
	m.leading, m.infos = leading, infos
	m.mu.Unlock()
}

// Queues lists every queue the worker serves (QueuePriorities and
// WebhookQueues).
func Queues() []string {
	var qs []string
	for q := range QueuePriorities() {
		qs = append(qs, q)
	}
	for q := range WebhookQueues() {
		qs = append(qs, q)
	}
	slices.Sort(qs)
	return qs
}
