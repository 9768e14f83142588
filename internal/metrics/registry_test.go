package metrics_test

import (
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/buildinfo"
	"github.com/collegematch/matching/internal/metrics"
)

// Families lists what is registered, with types and labels, even for
// vectors that have no series yet.
func TestRegistryFamilies(t *testing.T) {
	reg := metrics.NewRegistry()
	metrics.NewHTTP(reg)
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "test_func", Help: "a \"quoted\" {help}"}, func() float64 { return 1 }))
	fams, err := reg.Families()
	require.NoError(t, err)
	byName := map[string]metrics.Family{}
	for _, f := range fams {
		byName[f.Name] = f
	}
	assert.Equal(t, metrics.Family{Name: "matching_http_requests_total", Type: "counter", Labels: []string{"code", "method", "route"},
		Help: "HTTP requests by route, method and status code."}, byName["matching_http_requests_total"])
	assert.Equal(t, "histogram", byName["matching_http_request_duration_seconds"].Type)
	assert.Equal(t, []string{"method", "route"}, byName["matching_http_request_duration_seconds"].Labels)
	assert.Equal(t, "counter", byName["matching_http_panics_total"].Type)
	assert.Empty(t, byName["matching_http_panics_total"].Labels)
	assert.Equal(t, metrics.Family{Name: "test_func", Type: "gauge", Help: `a "quoted" {help}`}, byName["test_func"])
	assert.Equal(t, "gauge", byName["go_goroutines"].Type, "the Go collector is typed by what it exports")
	assert.Equal(t, metrics.Family{Name: "matching_build_info", Type: "gauge", Labels: []string{"go_version", "revision", "version"},
		Help: "Always 1; the labels name the running build (version, source revision, Go version)."}, byName["matching_build_info"])

	require.Panics(t, func() { metrics.NewHTTP(reg) }, "registering twice fails as on a prometheus.Registry")
}

func TestBuildInfo(t *testing.T) {
	reg := metrics.NewRegistry()
	fams, err := reg.Gather()
	require.NoError(t, err)
	version, revision, goVersion := buildinfo.Info()
	assert.Equal(t, runtime.Version(), goVersion)
	assert.NotEmpty(t, revision)
	for _, f := range fams {
		if f.GetName() != "matching_build_info" {
			continue
		}
		require.Len(t, f.GetMetric(), 1)
		m := f.GetMetric()[0]
		assert.Equal(t, 1.0, m.GetGauge().GetValue())
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		assert.Equal(t, map[string]string{"version": version, "revision": revision, "go_version": goVersion}, labels)
		return
	}
	t.Fatal("matching_build_info not exported")
}
