package query

import "github.com/prometheus/client_golang/prometheus"

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
}

// NewMetrics creates and registers the read side's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
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
	}
	reg.MustRegister(m.FeedReads, m.FeedBuilds, m.FeedWrites)
	return m
}
