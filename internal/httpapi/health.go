package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/collegematch/matching/internal/domain"
)

// handleHealth reports each dependency. It answers 200 whether the status
// is "ok" or "degraded": the body says which. Readiness (/readyz on the ops
// port) does not fail on a dependency outage: every replica shares the
// dependencies, and a replica serves what it can without them.
func handleHealth(checks []HealthCheck, version string) http.Handler {
	type response struct {
		Status  string            `json:"status"`
		Checks  map[string]string `json:"checks"`
		Version string            `json:"version"`
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		results := RunChecks(r.Context(), checks)
		status := "ok"
		for _, v := range results {
			if v != "ok" {
				status = "degraded"
			}
		}
		w.Header().Set("Cache-Control", "no-store")
		encode(w, http.StatusOK, response{Status: status, Checks: results, Version: version})
	})
}

// RunChecks runs every check concurrently with a 2-second budget and
// returns "ok" or "down" per name.
func RunChecks(ctx context.Context, checks []HealthCheck) map[string]string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	out := make(map[string]string, len(checks))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range checks {
		wg.Go(func() {
			res := "ok"
			if err := c.Check(ctx); err != nil {
				res = "down"
			}
			mu.Lock()
			out[c.Name] = res
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// notImplemented answers endpoints whose behaviour is not built yet with
// 501 and the error body, never with invented data.
func notImplemented(log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		respondErr(w, r, log, domain.Errorf(domain.KindNotImplemented, "%s %s is not implemented yet", r.Method, r.URL.Path))
	})
}
