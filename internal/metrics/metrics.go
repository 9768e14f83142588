// Package metrics defines the service's Prometheus collectors. They are
// built in each binary's run and passed down; nothing registers globally.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/collegematch/matching/internal/buildinfo"
)

// NewRegistry returns the registry of a binary: the Go runtime and process
// collectors and matching_build_info are on it.
func NewRegistry() *Registry {
	reg := &Registry{Registry: prometheus.NewRegistry()}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newBuildInfo())
	return reg
}

// newBuildInfo is matching_build_info{version,revision,go_version} 1: which
// build each replica runs, so a dashboard shows a rollout and a query can
// join any series with the version behind it.
func newBuildInfo() prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "matching_build_info",
		Help: "Always 1; the labels name the running build (version, source revision, Go version).",
	}, []string{"version", "revision", "go_version"})
	g.WithLabelValues(buildinfo.Info()).Set(1)
	return g
}

// HTTP holds the API's request metrics.
type HTTP struct {
	Requests         *prometheus.CounterVec
	Duration         *prometheus.HistogramVec
	RateLimited      *prometheus.CounterVec
	RateLimitFailure *prometheus.CounterVec
	// RateLimitFallback counts the decisions taken from the replica's own
	// count in memory while Redis could not count, by group and decision.
	RateLimitFallback *prometheus.CounterVec
	AuthFailures      *prometheus.CounterVec
	Panics            prometheus.Counter
}

// NewHTTP creates and registers the API's request metrics on reg.
func NewHTTP(reg prometheus.Registerer) *HTTP {
	m := &HTTP{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matching_http_requests_total", Help: "HTTP requests by route, method and status code.",
		}, []string{"route", "method", "code"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "matching_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"route", "method"}),
		RateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matching_rate_limited_total", Help: "Requests refused with 429, by group.",
		}, []string{"group"}),
		RateLimitFailure: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matching_rate_limit_errors_total", Help: "Requests the limiter could not count in Redis, by what the replica did (fallback = counted in its memory, denied = fail closed, allowed = not counted).",
		}, []string{"group", "outcome"}),
		RateLimitFallback: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matching_rate_limit_fallback_total", Help: "Rate-limit decisions taken from the replica's own count in memory while Redis could not count, by group and decision (allowed, refused).",
		}, []string{"group", "decision"}),
		AuthFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matching_auth_failures_total", Help: "Requests refused by authentication or authorization, by status.",
		}, []string{"status"}),
		Panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matching_http_panics_total", Help: "Handler panics recovered into a 500.",
		}),
	}
	reg.MustRegister(m.Requests, m.Duration, m.RateLimited, m.RateLimitFailure, m.RateLimitFallback, m.AuthFailures, m.Panics)
	return m
}

// NewRedisRoundTrips registers matching_redis_round_trips_total on reg,
// read at each scrape from count (cache.RoundTrips.Count of the binary's
// one Redis client): what a request or a task costs Redis in round trips,
// the task queue's polling included.
func NewRedisRoundTrips(reg prometheus.Registerer, count func() uint64) {
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "matching_redis_round_trips_total",
		Help: "Round trips this process made to Redis: a command sent alone, a pipeline or a transaction counts one; the task queue's polling included.",
	}, func() float64 { return float64(count()) }))
}
