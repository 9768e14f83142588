package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/collegematch/matching/internal/ratelimit"
)

// addRoutes registers the whole public API: exactly the endpoints of the
// specification's section 4, each with its rate-limit group.
func addRoutes(r chi.Router, d Deps) {
	limit := func(g ratelimit.Group) func(http.Handler) http.Handler {
		return rateLimit(d.Log, d.Limiter, d.Metrics, g, d.RateLimits.FailClosed)
	}
	recs, swipes, batch, def := limit(ratelimit.GroupRecommendations), limit(ratelimit.GroupSwipes),
		limit(ratelimit.GroupBatch), limit(ratelimit.GroupDefault)
	todo := notImplemented(d.Log)

	r.Group(func(r chi.Router) {
		r.Use(requireAuth(d.Log, d.Verifier, d.Metrics), actingStudent(d.Log, d.Metrics))

		r.With(recs).Method(http.MethodPost, "/recommendations", todo)
		r.With(recs).Method(http.MethodPost, "/v2/recommendations", todo)
		r.With(recs).Method(http.MethodPost, "/continuous-feed", todo)
		r.With(recs).Method(http.MethodGet, "/match/{student_id}/{school_id}", todo)
		r.With(recs).Method(http.MethodGet, "/m/recommendations/{student_id}", todo)

		r.With(swipes).Method(http.MethodPost, "/swipe", todo)
		r.With(swipes).Method(http.MethodPost, "/feedback", todo)
		r.With(swipes).Method(http.MethodPost, "/v2/onboarding/category-swipe", todo)

		r.With(batch).Method(http.MethodPost, "/m/batch/schools", todo)
		r.With(batch).Method(http.MethodPost, "/m/sync/pull", todo)
		r.With(batch).Method(http.MethodPost, "/m/sync/push", todo)

		r.With(def).Method(http.MethodPost, "/v2/onboarding/minimal", handleOnboardingMinimal(d.Log, d.Onboarding))
		r.With(def).Method(http.MethodGet, "/v2/onboarding/category-schools", todo)
		r.With(def).Method(http.MethodGet, "/health", handleHealth(d.Health, d.Version))
	})
}
