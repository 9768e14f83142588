package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/collegematch/matching/internal/auth"
	"github.com/collegematch/matching/internal/ratelimit"
)

// request is what the middleware learn about a request on its way to the
// handler, in one value: begin makes it, with the request's id and
// deadline, and it is the request's context from then on; each middleware
// after fills in its part (the verified claims, the acting student, what
// the rate limiter read, the page asked for) instead of deriving a context
// and a copy of the request of its own. observe's record of the answer
// lives in it too. So a request is copied once, whatever the chain.
type request struct {
	context.Context // the request's, with its deadline

	id        string
	claims    auth.Claims
	hasClaims bool
	student   string
	fetched   ratelimit.Fetched
	page      *pageAsked // the page of POST /recommendations, once read (readPage)
	sw        statusWriter
}

// pageAsked is a body of POST /recommendations read once: the page it
// asks for, or why it is refused.
type pageAsked struct {
	limit, offset int
	err           error
}

type requestKey struct{}

// Value answers the request itself for requestKey, and what the context
// under it holds for any other key.
func (q *request) Value(key any) any {
	if key == (requestKey{}) {
		return q
	}
	return q.Context.Value(key)
}

// requestFrom returns the request begin made, nil outside it.
func requestFrom(ctx context.Context) *request {
	q, _ := ctx.Value(requestKey{}).(*request)
	return q
}

// stateOf returns r's request and r: begin's when it ran, else (a
// middleware used on its own, in a test) a new one, with r carrying it.
func stateOf(r *http.Request) (*request, *http.Request) {
	if q := requestFrom(r.Context()); q != nil {
		return q, r
	}
	q := &request{Context: r.Context()}
	return q, r.WithContext(q)
}

// RequestIDFrom returns the request id begin set.
func RequestIDFrom(ctx context.Context) string {
	if q := requestFrom(ctx); q != nil {
		return q.id
	}
	return ""
}

// claimsFrom returns the claims requireAuth verified.
func claimsFrom(ctx context.Context) (auth.Claims, bool) {
	if q := requestFrom(ctx); q != nil {
		return q.claims, q.hasClaims
	}
	return auth.Claims{}, false
}

// studentFrom returns the student id the request acts on, as found by
// actingStudent.
func studentFrom(ctx context.Context) string {
	if q := requestFrom(ctx); q != nil {
		return q.student
	}
	return ""
}

// prefetchedFrom returns what rateLimitPrefetch read for the handler.
func prefetchedFrom(ctx context.Context) ratelimit.Fetched {
	if q := requestFrom(ctx); q != nil {
		return q.fetched
	}
	return ratelimit.Fetched{}
}

// Request deadlines (decisions.md, "Load, limits and failure"): what a
// request still waits for when its deadline passes ends, and the request
// answers 503 with Retry-After. Both are below the server's WriteTimeout.
const (
	RequestDeadline = 10 * time.Second
	// LongRequestDeadline is the deadline of the requests that carry many
	// changes (POST /continuous-feed, POST /m/sync/push).
	LongRequestDeadline = 20 * time.Second
)

// deadlineOf is the deadline a request gets.
func deadlineOf(r *http.Request) time.Duration {
	if r.Method == http.MethodPost && (r.URL.Path == "/continuous-feed" || r.URL.Path == "/m/sync/push") {
		return LongRequestDeadline
	}
	return RequestDeadline
}

// Response header names, as net/http stores them (canonical), so that
// setting one does not canonicalize the name again on every request.
const (
	headerRequestID     = "X-Request-Id"
	headerLimit         = "X-Ratelimit-Limit"
	headerRemaining     = "X-Ratelimit-Remaining"
	headerReset         = "X-Ratelimit-Reset"
	headerETag          = "Etag"
	headerCacheControl  = "Cache-Control"
	headerContentType   = "Content-Type"
	headerContentLength = "Content-Length"
	contentTypeJSON     = "application/json"
)

// begin starts every request: it takes a sane incoming X-Request-ID or
// makes one, and echoes it; it gives the request its deadline; and it
// makes the request's state (request), the context of the rest.
func begin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-ID")
		if !validRequestID(id) {
			var b [12]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header()[headerRequestID] = []string{id}
		ctx, cancel := context.WithTimeout(r.Context(), deadlineOf(r))
		defer cancel()
		next.ServeHTTP(w, r.WithContext(&request{Context: ctx, id: id}))
	})
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}
