// Package scaleout holds the round-robin HTTP proxy the scale-out run
// (scripts/scaleout.sh, make test-scaleout) puts in front of the API
// replicas, as a load balancer would: each request goes to the next
// replica in turn, so consecutive requests of one client land on different
// processes.
package scaleout

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// Proxy sends each request to the next backend in turn. A backend that does
// not answer is a 503 with Retry-After, as the service answers a dependency
// failure; the request is not tried on another backend (it may have been
// acted on).
type Proxy struct {
	backends []*backend
	next     atomic.Uint64
}

type backend struct {
	url      *url.URL
	rp       *httputil.ReverseProxy
	requests atomic.Int64
	failures atomic.Int64
}

// NewProxy builds a proxy over the given base URLs (http://host:port).
func NewProxy(log *slog.Logger, backends []string) (*Proxy, error) {
	if len(backends) == 0 {
		return nil, errors.New("no backend")
	}
	transport := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		MaxIdleConns:        512,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     30 * time.Second,
	}
	p := &Proxy{}
	for _, raw := range backends {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("backend %q is not an http:// base URL", raw)
		}
		b := &backend{url: u}
		b.rp = &httputil.ReverseProxy{
			Rewrite: func(r *httputil.ProxyRequest) {
				r.SetURL(u)
				r.SetXForwarded()
			},
			Transport: transport,
			ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
				b.failures.Add(1)
				log.Warn("backend did not answer", "backend", u.Host, "path", r.URL.Path, "err", err)
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(`{"error":{"code":"SERVICE_UNAVAILABLE","message":"the replica did not answer"}}`))
			},
		}
		p.backends = append(p.backends, b)
	}
	return p, nil
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b := p.backends[(p.next.Add(1)-1)%uint64(len(p.backends))]
	b.requests.Add(1)
	b.rp.ServeHTTP(w, r)
}

// Stats is one line per backend: host, requests sent, requests it did not
// answer.
func (p *Proxy) Stats() string {
	var s strings.Builder
	for i, b := range p.backends {
		if i > 0 {
			s.WriteString(", ")
		}
		fmt.Fprintf(&s, "%s %d requests (%d unanswered)", b.url.Host, b.requests.Load(), b.failures.Load())
	}
	return s.String()
}
