package webhook

import "github.com/prometheus/client_golang/prometheus"

// RelayMetrics are the outbox relay's collectors.
type RelayMetrics struct {
	Relayed   *prometheus.CounterVec // rows published, by topic
	Tasks     *prometheus.CounterVec // jobs handed to the queue, by type and result (enqueued)
	Errors    *prometheus.CounterVec // failed passes, by stage (relay, backlog, prune, queue)
	Backlog   prometheus.Gauge       // rows not yet published
	OldestAge prometheus.Gauge       // age of the oldest row not yet published, seconds
	Deleted   prometheus.Counter     // published rows deleted after the retention
	// FirstLease is the lease the last batch gave its first attempts,
	// seconds (firstLease).
	FirstLease prometheus.Gauge
	// FirstAttempts counts new deliveries' first attempts by path: sent by
	// the relay within its batch's wait, in_flight (sent by the relay,
	// still on the wire when the batch committed: recorded after), queued
	// (a task makes it).
	FirstAttempts *prometheus.CounterVec
}

// NewRelayMetrics creates the relay's collectors and registers them on reg.
func NewRelayMetrics(reg prometheus.Registerer) *RelayMetrics {
	m := &RelayMetrics{
		Relayed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matching_outbox_relayed_total", Help: "Outbox rows published by the relay (their webhook deliveries written and queued), by topic.",
		}, []string{"topic"}),
		Tasks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matching_outbox_tasks_total", Help: "Tasks the relay handed to the queue, by type and result (enqueued).",
		}, []string{"type", "result"}),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matching_outbox_relay_errors_total", Help: "Relay passes that failed, by stage (relay: a batch rolled back and is retried, backlog, prune, queue: tasks not queued after attempts were kept, queued again by the monitor).",
		}, []string{"stage"}),
		Backlog: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "matching_outbox_backlog", Help: "Outbox rows not yet published.",
		}),
		OldestAge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "matching_outbox_oldest_unpublished_age_seconds", Help: "Age of the oldest outbox row not yet published (0 when none).",
		}),
		Deleted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matching_outbox_deleted_total", Help: "Published outbox rows deleted once their retention had passed.",
		}),
		FirstLease: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "matching_outbox_first_attempt_lease_seconds",
			Help: "Lease the relay's last batch gave new deliveries' first attempts: the base lease, longer while first attempts start late.",
		}),
		FirstAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matching_outbox_first_attempts_total",
			Help: "New deliveries' first attempts, by path: sent (by the relay, within its batch), in_flight (by the relay, recorded after its batch), queued (by a webhook:deliver task).",
		}, []string{"path"}),
	}
	for _, c := range []string{"relay", "backlog", "prune", "queue"} {
		m.Errors.WithLabelValues(c)
	}
	for _, p := range []string{"sent", "in_flight", "queued"} {
		m.FirstAttempts.WithLabelValues(p)
	}
	reg.MustRegister(m.Relayed, m.Tasks, m.Errors, m.Backlog, m.OldestAge, m.Deleted, m.FirstLease, m.FirstAttempts)
	return m
}

// Metrics are webhook delivery's collectors.
//
// Attempts, Deliveries, AttemptLatency and Lag carry an endpoint label: the
// endpoint's name in WEBHOOK_ENDPOINTS_FILE (never its URL, which may carry
// a token), or UnconfiguredEndpoint, so the label's values are bounded by
// the file.
type Metrics struct {
	Attempts         *prometheus.CounterVec   // attempts by result (delivered, failed, gone, interrupted) and endpoint
	Deliveries       *prometheus.CounterVec   // deliveries that ended, by outcome (succeeded, parked, disabled) and endpoint
	AttemptLatency   *prometheus.HistogramVec // request to response, seconds, by endpoint
	Lag              *prometheus.HistogramVec // event written to delivered, seconds, by endpoint
	Backlog          prometheus.Gauge         // pending deliveries (handed over, not yet ended)
	OldestPendingAge prometheus.Gauge         // age of the oldest pending delivery, seconds
	Requeued         prometheus.Counter       // overdue deliveries queued again by the monitor
}

// NewMetrics creates webhook delivery's collectors and registers them on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matching_webhook_attempts_total", Help: "Webhook delivery attempts, by result (delivered, failed, gone, interrupted) and endpoint (its name).",
		}, []string{"result", "endpoint"}),
		Deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matching_webhook_deliveries_total", Help: "Webhook deliveries that ended, by outcome (succeeded, parked, disabled) and endpoint (its name).",
		}, []string{"outcome", "endpoint"}),
		AttemptLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "matching_webhook_attempt_duration_seconds", Help: "Time from sending a webhook request to its response (or failure), by endpoint (its name).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"endpoint"}),
		Lag: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "matching_webhook_delivery_lag_seconds", Help: "Time from an event being written to its successful delivery to one endpoint, by endpoint (its name).",
			Buckets: []float64{.05, .1, .25, .5, 1, 2, 5, 10, 30, 60, 300, 3600, 36000, 100000},
		}, []string{"endpoint"}),
		Backlog: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "matching_webhook_backlog", Help: "Webhook deliveries pending (attempted at least once or due, not yet succeeded, parked or disabled).",
		}),
		OldestPendingAge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "matching_webhook_oldest_pending_age_seconds", Help: "Age of the oldest pending webhook delivery (0 when none).",
		}),
		Requeued: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matching_webhook_requeued_total", Help: "Overdue pending webhook deliveries queued again (their task was lost).",
		}),
	}
	reg.MustRegister(m.Attempts, m.Deliveries, m.AttemptLatency, m.Lag, m.Backlog, m.OldestPendingAge, m.Requeued)
	return m
}

// UnconfiguredEndpoint is the endpoint label of a delivery to a URL that is
// no longer in WEBHOOK_ENDPOINTS_FILE: the label never holds a URL.
const UnconfiguredEndpoint = "(unconfigured)"

// ForEndpoints makes every series of the endpoints named exist at zero, so
// that rates and alerts see an endpoint before its first attempt.
func (m *Metrics) ForEndpoints(names ...string) *Metrics {
	for _, n := range names {
		for _, r := range []string{"delivered", "failed", "gone", "interrupted"} {
			m.Attempts.WithLabelValues(r, n)
		}
		for _, o := range []string{"succeeded", "parked", "disabled"} {
			m.Deliveries.WithLabelValues(o, n)
		}
		m.AttemptLatency.WithLabelValues(n)
		m.Lag.WithLabelValues(n)
	}
	return m
}
