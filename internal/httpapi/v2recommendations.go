package httpapi

import (
	"log/slog"
	"net/http"
)

// handleRecommendationsV2 answers POST /v2/recommendations: the envelope,
// paging and feed of POST /recommendations for any existing student,
// complete profile or not.
func handleRecommendationsV2(log *slog.Logger, q Queries) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit, offset, err := readPage(r)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		if serveStoredPage(w, r, q, limit, offset, true) {
			return
		}
		page, err := q.RecommendationsV2(r.Context(), studentFrom(r.Context()), limit, offset)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		encode(w, http.StatusOK, page)
	})
}
