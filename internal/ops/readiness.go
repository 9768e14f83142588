package ops

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// States of a replica, as /readyz names them.
const (
	StateStarting = "starting"
	StateReady    = "ready"
	StateStopping = "stopping"
)

// Readiness is whether this replica can serve. It starts as starting; the
// binary calls Ready once it can serve and Stopping when it begins to
// drain. The zero value is ready to use.
type Readiness struct {
	state atomic.Int32 // 0 starting, 1 ready, 2 stopping
}

// Ready marks the replica ready (unless it is already stopping).
func (r *Readiness) Ready() { r.state.CompareAndSwap(0, 1) }

// Stopping marks the replica as draining: no longer ready.
func (r *Readiness) Stopping() { r.state.Store(2) }

// State is StateStarting, StateReady or StateStopping.
func (r *Readiness) State() string {
	return [...]string{StateStarting, StateReady, StateStopping}[r.state.Load()]
}

// Check is one dependency (PostgreSQL, Redis) the binary needs.
type Check struct {
	Name  string
	Check func(ctx context.Context) error
}

// Intervals of the dependency monitor.
const (
	// CheckInterval is how often each dependency is checked.
	CheckInterval = 5 * time.Second
	// CheckTimeout bounds one check.
	CheckTimeout = 2 * time.Second
)

// Monitor checks the dependencies in the background, so that probes never
// wait on them, and reports what it found: in Status (for /readyz's body),
// in the gauge matching_dependency_up{dependency} (1 up, 0 down) and in
// the log, once per change (a warning when a dependency goes down, with the
// error; a line when it is back, with how long it was down).
type Monitor struct {
	checks   []Check
	log      *slog.Logger
	up       *prometheus.GaugeVec
	interval time.Duration

	mu     sync.Mutex
	status map[string]string    // "ok", "down: <error>" or "not checked yet"
	since  map[string]time.Time // when a dependency went down
}

// NewMonitor builds the monitor of checks, registering its gauge on reg.
func NewMonitor(reg prometheus.Registerer, log *slog.Logger, checks []Check) *Monitor {
	up := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "matching_dependency_up",
		Help: "Whether the dependency answered its last check (every 5 s): 1 up, 0 down.",
	}, []string{"dependency"})
	reg.MustRegister(up)
	m := &Monitor{checks: checks, log: log, up: up, interval: CheckInterval,
		status: map[string]string{}, since: map[string]time.Time{}}
	for _, c := range checks {
		m.status[c.Name] = "not checked yet"
	}
	return m
}

// Start checks every dependency once, so the first answers are known
// before the binary serves (each check is bounded by CheckTimeout), then
// again every interval in the background until ctx ends.
func (m *Monitor) Start(ctx context.Context) {
	m.CheckNow(ctx)
	go func() {
		t := time.NewTicker(m.interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				m.CheckNow(ctx)
			}
		}
	}()
}

// CheckNow checks every dependency once, concurrently, and records the
// results.
func (m *Monitor) CheckNow(ctx context.Context) {
	var wg sync.WaitGroup
	for _, c := range m.checks {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, CheckTimeout)
			defer cancel()
			// A client that overruns its context is not waited for.
			done := make(chan error, 1)
			go func() { done <- c.Check(cctx) }()
			var err error
			select {
			case err = <-done:
			case <-cctx.Done():
				err = fmt.Errorf("no answer within %s", CheckTimeout)
			}
			if ctx.Err() != nil {
				return // stopping: not an outage
			}
			m.record(c.Name, err)
		})
	}
	wg.Wait()
}

func (m *Monitor) record(name string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	was := m.status[name]
	if err == nil {
		m.status[name] = "ok"
		m.up.WithLabelValues(name).Set(1)
		if since, down := m.since[name]; down {
			delete(m.since, name)
			m.log.Info("dependency is back", "dependency", name, "down_for", time.Since(since).Round(time.Millisecond).String())
		}
		return
	}
	m.status[name] = "down: " + err.Error()
	m.up.WithLabelValues(name).Set(0)
	if was == "ok" || was == "not checked yet" {
		m.since[name] = time.Now()
		m.log.Warn("dependency is down", "dependency", name, "err", err)
	}
}

// Status is the last known state of each dependency.
func (m *Monitor) Status() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.status)
}
