// Package ops serves the operations port of both binaries: liveness,
// readiness, Prometheus metrics and, when enabled, pprof. It is never
// exposed publicly and needs no token.
package ops

import (
	"encoding/json"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves /livez, /readyz, /metrics and optionally /debug/pprof/.
//
// /livez answers 200 while the process runs. /readyz answers 200 when this
// replica can serve (ready says so: listeners up, catalogue loaded, task
// servers started) and 503 while it starts or stops. A PostgreSQL or Redis
// outage does not fail /readyz: every replica shares those dependencies,
// so failing readiness on their account would take the whole fleet out of
// rotation at once while it can still serve cached reads and accept
// requests that answer 503 on their own. /readyz reports the dependencies'
// last known state (deps, checked in the background, never on the probe's
// path) in its body, and they show in /health, metrics and logs.
func Handler(reg prometheus.Gatherer, ready *Readiness, deps *Monitor, withPprof bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		state := ready.State()
		body := struct {
			Status       string            `json:"status"`
			Dependencies map[string]string `json:"dependencies"`
		}{Status: state, Dependencies: deps.Status()}
		w.Header().Set("Content-Type", "application/json")
		if state != StateReady {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(body)
	})
	opts := promhttp.HandlerOpts{}
	if r, ok := reg.(prometheus.Registerer); ok {
		opts.Registry = r // promhttp counts its own failures there
	}
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, opts))
	if withPprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// Server wraps h with the timeouts every server of the service uses.
func Server(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      60 * time.Second, // pprof profiles run 30 s
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
}
