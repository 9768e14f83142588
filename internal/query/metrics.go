package query

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the read side's Prometheus collectors.
type Metrics struct {
	// FeedReads counts feed reads by endpoint (recommendations, compact,
	// match) and result: hit, miss (not built), stale (built from another
	// catalogue or algorithm version) or error (Redis unavailable; the feed
	// is computed inline).
	FeedReads *prometheus.CounterVec
	// FeedBuilds times inline feed builds (rank, assemble, encode).
	FeedBuilds prometheus.Histogram
	// FeedWrites counts feed writes by result: stored, kept_newer (a newer
	// feed was already there) or error.
	FeedWrites *prometheus.CounterVec
	// FactorRequests counts feed builds by whether the student's
	// weight-free score factors were kept from an earlier build (hit),
	// worked out and kept (miss) or not kept (pass: FactorCache.RankLean's
	// doorkeeper); FactorEvictions the students' factors dropped to
	// keep the FactorCache within its bound, FactorBytes what it holds.
	FactorRequests  *prometheus.CounterVec
	FactorEvictions prometheus.Counter
	FactorBytes     prometheus.Gauge

	hits sync.Map // endpoint → its FeedReads child of result hit (readHit)
}

// readHit counts a read of endpoint's stored feed that answered. The
// child of FeedReads is resolved once per endpoint: WithLabelValues checks,
// hashes and looks up its labels on every call, and a cached read is the
// hot path.
func (m *Metrics) readHit(endpoint string) {
	c, ok := m.hits.Load(endpoint)
	if !ok {
		c, _ = m.hits.LoadOrStore(endpoint, m.FeedReads.WithLabelValues(endpoint, "hit"))
	}
	c.(prometheus.Counter).Inc()
}

// NewMetrics creates and registers the read side's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := newMetrics()
	reg.MustRegister(m.FeedReads, m.FeedBuilds, m.FeedWrites, m.FactorRequests, m.FactorEvictions, m.FactorBytes)
	return m
}

// newMetrics creates the metrics, unregistered.
func newMetrics() *Metrics {
	return &Metrics{
		FeedReads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matching_feed_cache_reads_total",
			Help: "Precomputed feed reads by endpoint and result (hit, miss, stale, error).",
		}, []string{"endpoint", "result"}),
		FeedBuilds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "matching_feed_build_duration_seconds",
			Help:    "Time to build one student's feed inline (load excluded): rank, assemble, encode.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .025, .05, .1, .25},
		}),
		FeedWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matching_feed_cache_writes_total",
			Help: "Feed writes to Redis by result (stored, kept_newer, error).",
		}, []string{"result"}),
		FactorRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matching_factor_cache_requests_total",
			Help: "Feed builds by whether the student's weight-free score factors were kept from an earlier build (hit), worked out and kept (miss), or not kept by the full cache's doorkeeper (pass).",
		}, []string{"result"}),
		FactorEvictions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matching_factor_cache_evictions_total",
			Help: "Students' score factors dropped from the factor cache to keep it within its memory bound.",
		}),
		FactorBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "matching_factor_cache_bytes",
			Help: "Memory held by the factor cache: students' weight-free score factors.",
		}),
	}
}
