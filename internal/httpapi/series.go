package httpapi

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/collegematch/matching/internal/metrics"
)

// requestSeries are the children of the request metrics, each resolved
// the first time a route, method and status code (the duration: a route
// and method) is seen and kept: WithLabelValues checks, hashes and looks
// up its labels on every call. Routes and methods are bounded
// (methodLabel), and so are the codes the API answers, so the cache is.
type requestSeries struct {
	m        *metrics.HTTP
	requests sync.Map // seriesKey → prometheus.Counter
	duration sync.Map // seriesKey with code 0 → prometheus.Observer
}

type seriesKey struct {
	route, method string
	code          int
}

func newRequestSeries(m *metrics.HTTP) *requestSeries { return &requestSeries{m: m} }

// observe counts one answer and its duration.
func (s *requestSeries) observe(route, method string, code int, took time.Duration) {
	k := seriesKey{route: route, method: method, code: code}
	c, ok := s.requests.Load(k)
	if !ok {
		c, _ = s.requests.LoadOrStore(k, s.m.Requests.WithLabelValues(route, method, strconv.Itoa(code)))
	}
	c.(prometheus.Counter).Inc()
	k.code = 0
	o, ok := s.duration.Load(k)
	if !ok {
		o, _ = s.duration.LoadOrStore(k, s.m.Duration.WithLabelValues(route, method))
	}
	o.(prometheus.Observer).Observe(took.Seconds())
}
