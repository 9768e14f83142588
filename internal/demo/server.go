// Package demo serves what `matchctl demo` shows: the demo page, a student's
// walk through the real API in a browser; the API docs page, the OpenAPI
// document rendered by Swagger UI; a development session (a fresh student
// and a token for it); and a same-origin proxy to the public API under /api/.
//
// The pages are built from web/ (TypeScript, bundled by esbuild, with the
// client generated from api/openapi.yaml) into dist/, which is committed
// and embedded, so the Go build needs no Node.js; `make web-check` fails
// when dist/ or the generated client differ from what their sources build.
//
// Why a proxy rather than CORS: the page calls the API on its own origin,
// so the API keeps its production settings (CORS_ALLOWED_ORIGINS empty, as
// mobile clients need), no request pays for a CORS preflight (every call
// sends Authorization and a JSON body, so each would), and the paths of the
// public API port stay exactly the specification's.
package demo

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/collegematch/matching/api"
)

//go:embed all:dist
var dist embed.FS

// Session is what the page logs in with: a student that exists only once
// the page onboards it, and a development token whose subject it is.
type Session struct {
	StudentID string    `json:"student_id"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Options configure the demo server.
type Options struct {
	// API is the public API's base URL; /api/<path> is proxied to <API>/<path>.
	API *url.URL
	// NewSession makes a session for a new student: once at start, and
	// again on POST /session (the page's "New student" button).
	NewSession func() (Session, error)
	Log        *slog.Logger
	// APITimeout bounds the wait for the API's response headers
	// (default 35 s, the API's own write timeout).
	APITimeout time.Duration
}

// DefaultAPITimeout is Options.APITimeout's default.
const DefaultAPITimeout = 35 * time.Second

// NewServer returns the demo server's handler, with the first session made.
func NewServer(o Options) (http.Handler, error) {
	if o.API == nil || o.API.Scheme == "" || o.API.Host == "" {
		return nil, errors.New("demo: the API's base URL (scheme and host) is required")
	}
	if o.NewSession == nil || o.Log == nil {
		return nil, errors.New("demo: NewSession and Log are required")
	}
	if o.APITimeout <= 0 {
		o.APITimeout = DefaultAPITimeout
	}
	site, err := fs.Sub(dist, "dist")
	if err != nil {
		return nil, err
	}
	s := &server{opt: o, site: site}
	if _, err := s.renew(); err != nil {
		return nil, fmt.Errorf("demo: make the first session: %w", err)
	}

	files := http.FileServerFS(site)
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", s.page("index.html"))
	mux.Handle("GET /assets/", files)
	mux.Handle("GET /docs", s.page("docs/index.html"))
	mux.Handle("GET /docs/{$}", s.page("docs/index.html"))
	mux.HandleFunc("GET /docs/openapi.yaml", serveOpenAPI)
	mux.Handle("GET /docs/", files)
	mux.HandleFunc("GET /session", s.getSession)
	mux.HandleFunc("POST /session", s.newSession)
	mux.Handle("/api/", wholeBody(s.proxy()))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "no such page: "+r.URL.Path)
	})
	return loopbackOnly(headers(mux)), nil
}

type server struct {
	opt  Options
	site fs.FS

	mu      sync.Mutex
	current Session
}

// renew replaces the current session with a new student's.
func (s *server) renew() (Session, error) {
	sess, err := s.opt.NewSession()
	if err != nil {
		return Session{}, err
	}
	s.mu.Lock()
	s.current = sess
	s.mu.Unlock()
	s.opt.Log.Info("demo session", "student_id", sess.StudentID, "expires_at", sess.ExpiresAt)
	return sess, nil
}

func (s *server) getSession(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	sess := s.current
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, sess)
}

func (s *server) newSession(w http.ResponseWriter, _ *http.Request) {
	sess, err := s.renew()
	if err != nil {
		s.opt.Log.Error("demo session not made", "err", err)
		writeError(w, http.StatusInternalServerError, "INTERNAL_ERROR", "could not make a session: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, sess)
}

// page serves one HTML file of the site.
func (s *server) page(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := fs.ReadFile(s.site, name)
		if err != nil {
			writeError(w, http.StatusNotFound, "NOT_FOUND", "the page is not built: "+name)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(b)
	})
}

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/yaml; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(api.OpenAPI)))
	_, _ = w.Write(api.OpenAPI)
}

// proxy forwards /api/<path> to the API's <path>, headers (Authorization,
// Idempotency-Key, X-Request-ID) and body as they are. An API that does not
// answer is a 503 SERVICE_UNAVAILABLE with Retry-After, as the API itself
// answers for a dependency that is down.
func (s *server) proxy() http.Handler {
	target := s.opt.API
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Path = strings.TrimPrefix(pr.In.URL.Path, "/api")
			pr.Out.URL.RawPath = strings.TrimPrefix(pr.In.URL.RawPath, "/api")
			pr.SetURL(target)
			pr.SetXForwarded()
		},
		Transport: &http.Transport{
			Proxy:                 nil, // the API is on this machine or its network, never behind HTTP_PROXY
			DialContext:           (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
			ResponseHeaderTimeout: s.opt.APITimeout,
			MaxIdleConnsPerHost:   16,
			IdleConnTimeout:       90 * time.Second,
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the browser went away; nobody reads an answer
			}
			s.opt.Log.Warn("API did not answer", "path", r.URL.Path, "api", target.String(), "err", err)
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE",
				"the API at "+target.String()+" did not answer; is it running?")
		},
	}
}

// maxBodyBytes is the largest request body the proxy forwards: the API's
// own limit, so a larger one gets the answer the API would give it.
const maxBodyBytes = 1 << 20

// wholeBody reads a request's body before the request goes on, so the API
// is asked only once the body is whole. Streamed through as it arrives, the
// body would race this server's own reading of it: an API that answers
// before the forwarding has seen the body's end (from cache, or a refusal)
// starts the answer, the server drains and closes the unread request body,
// the forwarding fails reading it and drops the connection to the API,
// and the answer on it reaches the browser cut short. The demo's bodies are
// small; the API caps them at 1 MiB.
func wholeBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
		if err != nil {
			// The API's INVALID_REQUEST, naming the body. A body that
			// could not be read is a browser that went away or stopped
			// sending: nobody reads the answer, but it is the API's too.
			message, field := "request body is larger than 1 MiB", "larger than 1 MiB"
			var tooLarge *http.MaxBytesError
			if !errors.As(err, &tooLarge) {
				message, field = "the request body could not be read: "+err.Error(), "could not be read"
			}
			writeErrorDetails(w, http.StatusBadRequest, "INVALID_REQUEST", message,
				map[string]any{"fields": map[string]string{"body": field}})
			return
		}
		r.Body, r.ContentLength, r.TransferEncoding = http.NoBody, 0, nil
		if len(b) > 0 {
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		}
		next.ServeHTTP(w, r)
	})
}

// contentSecurityPolicy lets the pages load and call nothing but this
// server: the pages and Swagger UI are bundled, and nothing comes from a CDN.
// Swagger UI sets inline styles and shows data: images.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self' data:; " +
	"style-src 'self' 'unsafe-inline'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

func headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/api/") {
			h := w.Header()
			h.Set("Content-Security-Policy", contentSecurityPolicy)
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Referrer-Policy", "no-referrer")
			// The pages change with each build; the session with each start.
			h.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackOnly refuses requests whose Host is not a loopback name: the
// server hands out a development token, and a page of another site that a
// DNS name rebound to 127.0.0.1 must not read it.
func loopbackOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		if ip := net.ParseIP(host); !(strings.EqualFold(host, "localhost") || ip != nil && ip.IsLoopback()) {
			writeError(w, http.StatusForbidden, "FORBIDDEN", "the demo server answers only on a loopback host name (127.0.0.1, localhost)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"INTERNAL_ERROR","message":"internal error","details":{}}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// writeError answers in the API's error body, with no details.
func writeError(w http.ResponseWriter, status int, code, message string) {
	writeErrorDetails(w, status, code, message, map[string]any{})
}

// writeErrorDetails answers in the API's error body.
func writeErrorDetails(w http.ResponseWriter, status int, code, message string, details map[string]any) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": code, "message": message, "details": details}})
}
