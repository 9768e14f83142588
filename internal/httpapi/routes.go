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
	carried := newCarriedAllowance(d) // the swipes a request carries cost swipes units
	// The cached compact feed is read in the round trip that counts the
	// request, when the limiter can pipeline (architecture.md, the hot path).
	// So is a cached page of POST /recommendations (and /v2): the page read
	// (an HMGET of the page's stored items) goes with the count.
	compactLimit, pageLimit, swipeLimit := recs, recs, swipes
	if pl, ok := d.Limiter.(PrefetchLimiter); ok {
		compactLimit = rateLimitPrefetch(d.Log, pl, d.Metrics, ratelimit.GroupRecommendations, d.RateLimits.FailClosed,
			func(_ *http.Request, student string) ratelimit.Fetch {
				if read := d.Queries.CompactRead(student); read != nil {
					return ratelimit.Fetch{Read: read}
				}
				return ratelimit.Fetch{}
			})
		pageLimit = rateLimitPrefetch(d.Log, pl, d.Metrics, ratelimit.GroupRecommendations, d.RateLimits.FailClosed,
			func(r *http.Request, student string) ratelimit.Fetch {
				limit, offset, err := readPage(r)
				if err != nil {
					return ratelimit.Fetch{} // the handler answers the error
				}
				if read := d.Queries.PageRead(student, limit, offset); read != nil {
					return ratelimit.Fetch{Read: read}
				}
				return ratelimit.Fetch{}
			})
		// A swipe's read before its commit (the stored feed's profile and
		// model, the school's slot and probe memory) goes with the count.
		if sr, ok := d.Swipes.(SwipeReads); ok {
			swipeLimit = rateLimitPrefetch(d.Log, pl, d.Metrics, ratelimit.GroupSwipes, d.RateLimits.FailClosed,
				func(r *http.Request, student string) ratelimit.Fetch {
					if read := sr.ReadBefore(student, bodySchoolID(r)); read != nil {
						return ratelimit.Fetch{Read: read}
					}
					return ratelimit.Fetch{}
				})
		}
	}

	r.Group(func(r chi.Router) {
		r.Use(requireAuth(d.Log, d.Verifier, d.Metrics), actingStudent(d.Log, d.Metrics))

		r.With(pageLimit).Method(http.MethodPost, "/recommendations", handleRecommendations(d.Log, d.Queries))
		r.With(pageLimit).Method(http.MethodPost, "/v2/recommendations", handleRecommendationsV2(d.Log, d.Queries))
		r.With(recs).Method(http.MethodPost, "/continuous-feed", handleContinuousFeed(d.Log, d.Carried, d.Continuous, carried))
		r.With(recs).Method(http.MethodGet, "/match/{student_id}/{school_id}", handleMatchDetail(d.Log, d.Queries))
		r.With(compactLimit).Method(http.MethodGet, "/m/recommendations/{student_id}",
			handleCompactRecommendations(d.Log, d.Queries, d.FeedCacheTTL))

		r.With(swipeLimit).Method(http.MethodPost, "/swipe", handleSwipe(d.Log, d.Swipes))
		r.With(swipes).Method(http.MethodPost, "/feedback", handleFeedback(d.Log, d.Feedback, carried))
		r.With(swipes).Method(http.MethodPost, "/v2/onboarding/category-swipe",
			handleCategorySwipe(d.Log, d.CategorySwipes))

		r.With(batch).Method(http.MethodPost, "/m/batch/schools", handleBatchSchools(d.Log, d.Queries))
		if d.SyncPush != nil && d.SyncPull != nil {
			r.With(batch).Method(http.MethodPost, "/m/sync/pull", handleSyncPull(d.Log, d.SyncPull))
			r.With(batch).Method(http.MethodPost, "/m/sync/push", handleSyncPush(d.Log, d.SyncPush, carried))
		} else {
			r.With(batch).Method(http.MethodPost, "/m/sync/pull", todo)
			r.With(batch).Method(http.MethodPost, "/m/sync/push", todo)
		}

		r.With(def).Method(http.MethodPost, "/v2/onboarding/minimal", handleOnboardingMinimal(d.Log, d.Onboarding))
		r.With(def).Method(http.MethodGet, "/v2/onboarding/category-schools", handleCategorySchools(d.Categories))
		r.With(def).Method(http.MethodGet, "/health", handleHealth(d.Health, d.Version))
	})
}
