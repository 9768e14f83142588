package metrics

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Registry is a Prometheus registry that remembers the collectors registered
// on it, so that what a binary exports can be listed (Families), empty
// vectors included; docs/metrics.md is checked against that list.
type Registry struct {
	*prometheus.Registry

	mu         sync.Mutex
	collectors []prometheus.Collector
}

// Register implements prometheus.Registerer.
func (r *Registry) Register(c prometheus.Collector) error {
	if err := r.Registry.Register(c); err != nil {
		return err
	}
	r.mu.Lock()
	r.collectors = append(r.collectors, c)
	r.mu.Unlock()
	return nil
}

// MustRegister implements prometheus.Registerer: it panics on the first
// collector that cannot be registered.
func (r *Registry) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// Unregister implements prometheus.Registerer.
func (r *Registry) Unregister(c prometheus.Collector) bool {
	if !r.Registry.Unregister(c) {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := slices.Index(r.collectors, c); i >= 0 {
		r.collectors = slices.Delete(r.collectors, i, i+1)
	}
	return true
}

// Family is one metric family a registry exports.
type Family struct {
	Name string
	// Type is counter, gauge, histogram, summary or untyped.
	Type string
	// Labels are the variable labels, sorted.
	Labels []string
	Help   string
}

// descPattern reads a Desc's String form (client_golang's, which tests pin):
// its name, help and variable labels.
var descPattern = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*"), help: ("(?:[^"\\]|\\.)*"), .*variableLabels: \{([^}]*)\}\}$`)

// Families lists every metric family the registered collectors describe,
// sorted by name, whether or not it has a series yet. The type comes from
// the collector (a vector or a single metric); a collector of another kind
// (the Go and process collectors, the queue metrics) is typed by what it
// exports now, and stays "" when it exports nothing.
func (r *Registry) Families() ([]Family, error) {
	r.mu.Lock()
	cs := slices.Clone(r.collectors)
	r.mu.Unlock()
	gathered, err := r.Gather()
	if err != nil {
		return nil, err
	}
	types := map[string]string{}
	for _, f := range gathered {
		types[f.GetName()] = strings.ToLower(f.GetType().String())
	}
	var out []Family
	for _, c := range cs {
		typ := collectorType(c)
		ch := make(chan *prometheus.Desc)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := descPattern.FindStringSubmatch(d.String())
			if m == nil {
				return nil, fmt.Errorf("metrics: cannot read descriptor %s", d)
			}
			name, err1 := strconv.Unquote(m[1])
			help, err2 := strconv.Unquote(m[2])
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("metrics: cannot read descriptor %s", d)
			}
			var labels []string
			for l := range strings.SplitSeq(m[3], ",") {
				if l = strings.TrimSpace(l); l != "" {
					labels = append(labels, strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")"))
				}
			}
			slices.Sort(labels)
			f := Family{Name: name, Type: typ, Labels: labels, Help: help}
			if f.Type == "" {
				f.Type = types[name]
			}
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b Family) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// collectorType is the type of a vector or of a single metric; "" for
// other collectors.
func collectorType(c prometheus.Collector) string {
	switch c.(type) {
	case *prometheus.CounterVec:
		return "counter"
	case *prometheus.GaugeVec:
		return "gauge"
	case *prometheus.HistogramVec:
		return "histogram"
	case *prometheus.SummaryVec:
		return "summary"
	}
	m, ok := c.(prometheus.Metric)
	if !ok {
		return ""
	}
	var pb dto.Metric
	if m.Write(&pb) != nil {
		return ""
	}
	switch {
	case pb.Counter != nil:
		return "counter"
	case pb.Gauge != nil:
		return "gauge"
	case pb.Histogram != nil:
		return "histogram"
	case pb.Summary != nil:
		return "summary"
	}
	return "untyped"
}
