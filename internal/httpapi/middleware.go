package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/collegematch/matching/internal/auth"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/metrics"
	"github.com/collegematch/matching/internal/ratelimit"
)

// statusWriter records the status code and size of a response.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

// WriteString writes s without copying it into a []byte first, as
// net/http's own writer does.
func (w *statusWriter) WriteString(s string) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := io.WriteString(w.ResponseWriter, s)
	w.bytes += n
	return n, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// standardMethods are the methods of RFC 9110 (and PATCH): the only
// values the method label of metrics and logs takes besides OTHER.
var standardMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace}

// methodLabel is the method as metrics and logs record it: a standard
// method, or OTHER for anything a client made up, so no client input
// becomes a label (decisions.md, "HTTP").
func methodLabel(m string) string {
	if slices.Contains(standardMethods, m) {
		return m
	}
	return "OTHER"
}

// maxLoggedPath is how much of a request's path a log line or an error
// message carries; the rest is cut (a path may be up to 64 KiB).
const maxLoggedPath = 256

// clip cuts s to at most n bytes (on a rune boundary), marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// observe records each request's metrics under the route pattern and the
// method label (methodLabel): never the raw path or method, which would let
// clients mint series; and logs it as one JSON line at requestLevel. It
// records the answer in the request's own statusWriter (request.sw), and
// builds the log line only when the logger takes its level.
func observe(log *slog.Logger, m *metrics.HTTP) func(http.Handler) http.Handler {
	series := newRequestSeries(m)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			q, r := stateOf(r)
			sw := &q.sw
			*sw = statusWriter{ResponseWriter: w}
			next.ServeHTTP(sw, r)
			took := time.Since(start)
			if sw.status == 0 {
				sw.status = http.StatusOK
			}
			route := chi.RouteContext(r.Context()).RoutePattern()
			if route == "" {
				route = "unmatched"
			}
			method := methodLabel(r.Method)
			series.observe(route, method, sw.status, took)
			level := requestLevel(sw.status)
			if !log.Enabled(r.Context(), level) {
				return
			}
			log.LogAttrs(r.Context(), level, "request",
				slog.String("request_id", q.id),
				slog.String("method", method),
				slog.String("route", route),
				slog.String("path", clip(r.URL.Path, maxLoggedPath)),
				slog.Int("status", sw.status),
				slog.Int("bytes", sw.bytes),
				slog.Float64("ms", float64(took.Microseconds())/1000),
			)
		})
	}
}

// requestLevel is the level a request's log line is written at: debug for
// a request answered 1xx-3xx (counted in the metrics: a line each would
// cost the hot path a write per request), info for one the client got
// wrong (4xx, and 499 when it left), warn for a 503 (a dependency is down;
// its own log line says which), error for any other 5xx but 501.
func requestLevel(status int) slog.Level {
	switch {
	case status < 400:
		return slog.LevelDebug
	case status == http.StatusServiceUnavailable:
		return slog.LevelWarn
	case status >= 500 && status != http.StatusNotImplemented:
		return slog.LevelError
	}
	return slog.LevelInfo
}

// recoverer turns a handler panic into a logged 500 with the error body.
func recoverer(log *slog.Logger, m *metrics.HTTP) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				rec := recover()
				if rec == nil {
					return
				}
				if rec == http.ErrAbortHandler {
					panic(rec)
				}
				m.Panics.Inc()
				log.ErrorContext(r.Context(), "panic", "request_id", RequestIDFrom(r.Context()),
					"panic", fmt.Sprint(rec), "stack", string(debug.Stack()))
				respondErr(w, r, log, fmt.Errorf("panic: %v", rec))
			}()
			next.ServeHTTP(w, r)
		})
	}
}

// cors answers browsers from the configured origins only; with none
// configured it does nothing (mobile apps need no CORS).
func cors(origins []string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if len(origins) == 0 {
			return next
		}
		any := slices.Contains(origins, "*")
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			origin := r.Header.Get("Origin")
			if origin == "" || (!any && !slices.Contains(origins, origin)) {
				next.ServeHTTP(w, r)
				return
			}
			h := w.Header()
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Expose-Headers", "X-Request-ID, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After, ETag")
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
				h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Idempotency-Key, If-None-Match, X-Request-ID")
				h.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// TokenVerifier checks a bearer token and returns its claims. Errors are
// *domain.Error of KindUnauthenticated.
type TokenVerifier interface {
	Verify(ctx context.Context, raw string) (auth.Claims, error)
}

// requireAuth verifies the bearer token and stores its claims.
func requireAuth(log *slog.Logger, v TokenVerifier, m *metrics.HTTP) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := r.Header.Get("Authorization")
			scheme, raw, ok := strings.Cut(h, " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(raw) == "" {
				m.AuthFailures.WithLabelValues("401").Inc()
				msg := "missing bearer token: send Authorization: Bearer <token>"
				if h != "" {
					msg = "malformed Authorization header: expected Bearer <token>"
				}
				respondErr(w, r, log, domain.Errorf(domain.KindUnauthenticated, "%s", msg))
				return
			}
			claims, err := v.Verify(r.Context(), strings.TrimSpace(raw))
			if err != nil {
				m.AuthFailures.WithLabelValues("401").Inc()
				if domain.KindOf(err) == domain.KindUnauthenticated {
					log.DebugContext(r.Context(), "token rejected", "request_id", RequestIDFrom(r.Context()), "err", err)
				}
				respondErr(w, r, log, err)
				return
			}
			q, r := stateOf(r)
			q.claims, q.hasClaims = claims, true
			next.ServeHTTP(w, r)
		})
	}
}

// limitedBody is a body already read under MaxBodyBytes: b, replayed.
type limitedBody struct {
	bytes.Reader
	b []byte
}

// newLimitedBody replays b.
func newLimitedBody(b []byte) *limitedBody {
	lb := &limitedBody{b: b}
	lb.Reset(b)
	return lb
}

func (*limitedBody) Close() error { return nil }

// actingStudent finds the student a request acts on (the student_id path
// parameter, else the body's student_id field), refuses a student token
// acting for someone else with 403, and stores the id for the rate limiter
// and handlers. The body is read once, under the size cap, and replayed;
// one that breaks its route's array or depth limits is refused at once
// (bodyShapes).
func actingStudent(log *slog.Logger, m *metrics.HTTP) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id := chi.URLParam(r, "student_id")
			if id == "" && r.Body != nil && r.Body != http.NoBody {
				b, err := readLimited(w, r)
				if err != nil {
					var mbe *http.MaxBytesError
					if errors.As(err, &mbe) {
						respondErr(w, r, log, decodeError(err))
						return
					}
					respondErr(w, r, log, domain.Invalid("could not read the request body", map[string]string{"body": "unreadable"}))
					return
				}
				r.Body = newLimitedBody(b)
				if s := bodyShapes[chi.RouteContext(r.Context()).RoutePattern()]; s != nil && r.Method == http.MethodPost {
					if p := scanShape(b, s); p.fatal {
						respondErr(w, r, log, p.err())
						return
					}
				}
				var repeated bool
				if id, repeated = bodyStudentID(b); repeated {
					respondErr(w, r, log, domain.Invalid("student_id is given more than once",
						map[string]string{"student_id": "is given more than once"}))
					return
				}
			}
			if id != "" && !isUUID(id) {
				respondErr(w, r, log, domain.Invalid("student_id must be a UUID", map[string]string{"student_id": "must be a UUID"}))
				return
			}
			id = strings.ToLower(id)
			q, r := stateOf(r)
			claims := q.claims
			if id != "" && !claims.MayActFor(id) {
				m.AuthFailures.WithLabelValues("403").Inc()
				msg := "this token may only act for its own student"
				if claims.ServiceRefused {
					msg += " (its " + auth.ServiceScope + " scope is not accepted from this client)"
				}
				respondErr(w, r, log, &domain.Error{Kind: domain.KindForbidden, Code: domain.CodeForbidden,
					Message: msg, Details: map[string]any{"student_id": id}})
				return
			}
			if id == "" {
				id = claims.Subject
			}
			q.student = id
			next.ServeHTTP(w, r)
		})
	}
}

// bodyStudentID returns the top-level student_id of a JSON body when it is
// a string. Every key encoding/json would match to student_id counts (it
// compares names case-insensitively); repeated reports more than one, which
// the caller refuses: decoders disagree on which one wins, and the id that
// is authorized must be the id the handler acts on. The body is walked in
// place (members): nothing but the id is copied.
func bodyStudentID(b []byte) (id string, repeated bool) {
	seen := 0
	ok := members(b, func(key, value []byte) bool {
		if isStudentIDKey(key) {
			seen++
			id, _ = jsonString(value) // "" when not a string
		}
		return true
	})
	if !ok {
		return "", false
	}
	return id, seen > 1
}

// bodySchoolID returns the top-level school_id of a request's JSON body
// (read by actingStudent) when it is a string, "" otherwise. It names what
// to read ahead of the handler only: the handler decodes the body itself,
// and a read made for another school is not used.
func bodySchoolID(r *http.Request) string {
	body, ok := r.Body.(*limitedBody)
	if !ok {
		return ""
	}
	var id string
	members(body.b, func(key, value []byte) bool {
		if string(key) == "school_id" {
			id, _ = jsonString(value)
		}
		return true
	})
	return id
}

// isStudentIDKey reports whether a raw JSON key matches student_id as
// encoding/json matches names (escapes decoded, case folded).
func isStudentIDKey(key []byte) bool {
	switch {
	case len(key) > 64: // student_id spelled with every letter escaped is 60 bytes
		return false
	case hasEscape(key):
		return strings.EqualFold(keyString(key), "student_id")
	}
	return bytes.EqualFold(key, []byte("student_id"))
}

// Limiter counts a request against a group's allowance for key.
type Limiter interface {
	Allow(ctx context.Context, group ratelimit.Group, key string) (ratelimit.Decision, error)
}

// rateLimit counts the request against its group for the acting student,
// sets the X-RateLimit-* headers and refuses with 429 and Retry-After.
// While Redis cannot count, the limiter counts in the replica's memory at
// the same rates (the decision says so and is counted in the metrics), or,
// with failClosed, answers an error and the request is 503. A client that
// leaves while it is counted is no limiter failure (admit).
func rateLimit(log *slog.Logger, l Limiter, m *metrics.HTTP, group ratelimit.Group, failClosed bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			d, err := l.Allow(r.Context(), group, studentFrom(r.Context()))
			if admit(w, r, log, m, group, failClosed, d, err) {
				next.ServeHTTP(w, r)
			}
		})
	}
}

// admit applies a rate-limit outcome: it sets the headers and answers 429
// (or 503 when failing closed) itself, and reports whether the request may
// proceed.
func admit(w http.ResponseWriter, r *http.Request, log *slog.Logger, m *metrics.HTTP, group ratelimit.Group,
	failClosed bool, d ratelimit.Decision, err error) bool {
	if domain.ClientGone(r.Context(), err) {
		// The client went away while its request was being counted: Redis
		// is not to blame (no fallback, no failure counted), and nothing
		// more is done for a reader that is gone.
		respondErr(w, r, log, err)
		return false
	}
	err = closedPolicy(d, err, failClosed)
	if err != nil {
		if failClosed {
			m.RateLimitFailure.WithLabelValues(string(group), "denied").Inc()
			respondErr(w, r, log, domain.Unavailable("rate limiting", err))
			return false
		}
		m.RateLimitFailure.WithLabelValues(string(group), "allowed").Inc()
		// One line per failed Redis call, not per request let through
		// while the limiter waits to retry Redis.
		if !errors.Is(err, ratelimit.ErrUnavailable) {
			log.WarnContext(r.Context(), "rate limiter unavailable, allowing requests",
				"group", group, "request_id", RequestIDFrom(r.Context()), "err", err)
		}
		return true
	}
	countFallback(m, group, d)
	setRateHeaders(w.Header(), d)
	if !d.Allowed {
		m.RateLimited.WithLabelValues(string(group)).Inc()
		secs := int(math.Ceil(d.RetryAfter.Seconds()))
		w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
		respondErr(w, r, log, &domain.Error{Kind: domain.KindRateLimited, Code: domain.CodeRateLimited,
			Message: fmt.Sprintf("too many %s requests; retry in %d s", group, max(secs, 1)),
			Details: map[string]any{"group": string(group), "limit": d.Limit, "retry_after_seconds": max(secs, 1)}})
		return false
	}
	return true
}

// closedPolicy makes a decision counted in memory an error when the API
// fails closed, whatever policy the limiter was built with.
func closedPolicy(d ratelimit.Decision, err error, failClosed bool) error {
	if err == nil && d.Local && failClosed {
		return ratelimit.ErrUnavailable
	}
	return err
}

// countFallback counts a decision the limiter took from its count in
// memory because Redis could not count (ratelimit.Decision.Local).
func countFallback(m *metrics.HTTP, group ratelimit.Group, d ratelimit.Decision) {
	if !d.Local {
		return
	}
	m.RateLimitFailure.WithLabelValues(string(group), "fallback").Inc()
	decision := "allowed"
	if !d.Allowed {
		decision = "refused"
	}
	m.RateLimitFallback.WithLabelValues(string(group), decision).Inc()
}

// PrefetchLimiter is a Limiter that can also read one Redis value in the
// round trip that counts the request (ratelimit.Pipelined).
type PrefetchLimiter interface {
	Limiter
	AllowFetch(ctx context.Context, group ratelimit.Group, key string, f ratelimit.Fetch) (ratelimit.Decision, ratelimit.Fetched, error)
}

// rateLimitPrefetch is rateLimit for a hot read path: it counts the request
// and reads the value fetch names for the acting student in one Redis
// round trip, and hands the value to the handler (prefetchedFrom). The
// failure policy is rateLimit's; a read that did not answer leaves the
// handler to read (or compute) the value itself.
func rateLimitPrefetch(log *slog.Logger, l PrefetchLimiter, m *metrics.HTTP, group ratelimit.Group, failClosed bool,
	fetch func(r *http.Request, studentID string) ratelimit.Fetch) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			student := studentFrom(r.Context())
			d, got, err := l.AllowFetch(r.Context(), group, student, fetch(r, student))
			if !admit(w, r, log, m, group, failClosed, d, err) {
				return
			}
			if got.Done {
				var q *request
				q, r = stateOf(r)
				q.fetched = got
			}
			next.ServeHTTP(w, r)
		})
	}
}

// setRateHeaders sets the X-RateLimit-* headers of a decision: the three
// numbers are formatted into one string and the three values share one
// array, each capped so that adding to one cannot overwrite the next.
func setRateHeaders(h http.Header, d ratelimit.Decision) {
	var buf [64]byte
	b := strconv.AppendInt(buf[:0], int64(d.Limit), 10)
	limitEnd := len(b)
	b = strconv.AppendInt(b, int64(max(d.Remaining, 0)), 10)
	remainingEnd := len(b)
	b = strconv.AppendInt(b, int64(math.Ceil(float64(d.ResetAt.UnixMilli())/1000)), 10)
	s := string(b)
	v := []string{s[:limitEnd], s[limitEnd:remainingEnd], s[remainingEnd:]}
	h[headerLimit], h[headerRemaining], h[headerReset] = v[0:1:1], v[1:2:2], v[2:3:3]
}

// isUUID accepts the canonical 8-4-4-4-12 hex form only.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	_, err := uuid.Parse(s)
	return err == nil
}
