// Package httpapi is the public HTTP API: chi routes, the middleware chain
// (request id, logging, recovery, CORS, auth, rate limits) and one handler
// maker per endpoint. It declares the interfaces it needs; cmd/api passes
// the implementations.
package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/collegematch/matching/internal/config"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/metrics"
)

// HealthCheck pings one dependency.
type HealthCheck struct {
	Name  string
	Check func(ctx context.Context) error
}

// Deps is everything the API needs. Every field is required unless marked.
type Deps struct {
	Log        *slog.Logger
	Metrics    *metrics.HTTP
	Verifier   TokenVerifier
	Limiter    Limiter
	RateLimits config.RateLimits
	Onboarding Onboarding
	Queries    Queries
	// Categories and CategorySwipes serve the onboarding categories.
	Categories     Categories
	CategorySwipes CategorySwipes
	// Continuous serves POST /continuous-feed (with Carried recording the
	// swipes it carries); optional: without it the endpoint answers 501.
	Continuous ContinuousFeed
	Carried    CarriedSwipes
	// Swipes and Feedback record swipes and learning feedback.
	Swipes   Swipes
	Feedback FeedbackRecorder
	// SyncPush and SyncPull serve offline sync (POST /m/sync/push and
	// /m/sync/pull); optional: without them both answer 501.
	SyncPush SyncPush
	SyncPull SyncPull
	// FeedCacheTTL is how long clients may cache the compact feed
	// (Cache-Control max-age); FEED_CACHE_TTL.
	FeedCacheTTL time.Duration
	Health       []HealthCheck
	CORS         []string // optional
	Version      string
}

// NewServer builds the public API handler.
func NewServer(d Deps) http.Handler {
	switch {
	case d.Log == nil, d.Metrics == nil, d.Verifier == nil, d.Limiter == nil, d.Onboarding == nil, d.Queries == nil,
		d.Categories == nil, d.CategorySwipes == nil, d.Swipes == nil, d.Feedback == nil:
		panic("httpapi.NewServer: missing dependency")
	}
	if _, ok := d.Limiter.(SwipeAllowance); !ok {
		panic(fmt.Sprintf("httpapi.NewServer: the limiter (%T) cannot charge carried swipes (SwipeAllowance)", d.Limiter))
	}
	if d.FeedCacheTTL <= 0 {
		d.FeedCacheTTL = 5 * time.Minute
	}
	r := chi.NewRouter()
	r.Use(begin, observe(d.Log, d.Metrics), recoverer(d.Log, d.Metrics), cors(d.CORS))
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, domain.CodeNotFound, "no such endpoint: "+echoMethod(r.Method)+" "+clip(r.URL.Path, maxLoggedPath), nil)
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		if allow := allowedMethods(r, req.URL.Path); allow != "" {
			w.Header().Set("Allow", allow)
		}
		writeError(w, http.StatusMethodNotAllowed, domain.CodeMethodNotAllowed,
			echoMethod(req.Method)+" is not allowed on "+clip(req.URL.Path, maxLoggedPath), nil)
	})
	addRoutes(r, d)
	return r
}

// echoMethod is a request's method as an error message quotes it: a
// standard one as is, anything else cut to 32 bytes.
func echoMethod(m string) string {
	if methodLabel(m) != "OTHER" {
		return m
	}
	return clip(m, 32)
}

// allowedMethods lists the methods routes has for path, for the Allow
// header a 405 must carry.
func allowedMethods(routes chi.Routes, path string) string {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		if routes.Match(chi.NewRouteContext(), m, path) {
			allow = append(allow, m)
		}
	}
	return strings.Join(allow, ", ")
}
