package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/collegematch/matching/internal/buildinfo"
	"github.com/collegematch/matching/internal/domain"
)

// Defaults of the delivery client.
const (
	DefaultTimeout       = 10 * time.Second // a delivery is a 2xx within this
	DefaultMaxRetryAfter = 10 * time.Hour   // Retry-After is honoured up to this
	maxResponseBody      = 64 << 10         // read (and dropped) to reuse the connection
)

// Outcome classifies one attempt.
type Outcome uint8

const (
	// Delivered: a 2xx within the timeout.
	Delivered Outcome = iota
	// Failed: anything else that may succeed later (non-2xx, 3xx, timeout,
	// connection error, refused destination); retry on the schedule.
	Failed
	// Gone: 410 Gone; the endpoint is to be disabled.
	Gone
)

func (o Outcome) String() string {
	switch o {
	case Delivered:
		return "delivered"
	case Gone:
		return "gone"
	default:
		return "failed"
	}
}

// Result is what one attempt did.
type Result struct {
	Outcome    Outcome
	StatusCode int           // 0 when no response came
	Latency    time.Duration // request sent to response headers (or failure)
	// Err is nil when delivered; otherwise its text is fit to record: the
	// endpoint named without user info, query or fragment, and at most
	// domain.MaxQuotedBytes of the subscriber's answer, quoted and escaped
	// (ScrubError).
	Err error
	// RetryAfter is the wait a 429 or 503 asked for with Retry-After
	// (seconds or an HTTP date), capped at MaxRetryAfter; 0 when none.
	RetryAfter time.Duration
}

// Config tunes a Sender; zero fields take the defaults.
type Config struct {
	Timeout       time.Duration // per attempt, default DefaultTimeout
	MaxRetryAfter time.Duration // default DefaultMaxRetryAfter
	Now           func() time.Time
}

// Sender signs and posts messages to the configured endpoints.
type Sender struct {
	endpoints map[string]Endpoint
	guarded   *http.Client // refuses private destinations
	open      *http.Client // for endpoints with allow_private
	cfg       Config
}

// NewSender builds a sender for endpoints.
func NewSender(endpoints []Endpoint, cfg Config) *Sender {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxRetryAfter <= 0 {
		cfg.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Sender{endpoints: make(map[string]Endpoint, len(endpoints)), cfg: cfg,
		guarded: newClient(cfg.Timeout, guardControl), open: newClient(cfg.Timeout, nil)}
	for _, e := range endpoints {
		s.endpoints[e.URL] = e
	}
	return s
}

func newClient(timeout time.Duration, control func(network, address string, c syscall.RawConn) error) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second, Control: control}
	tr := &http.Transport{
		Proxy:                 nil, // a proxy would make the guard check the proxy, not the subscriber
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          200,
		MaxIdleConnsPerHost:   32,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: timeout,
	}
	return &http.Client{
		Timeout:   timeout,
		Transport: tr,
		// A redirect is not followed: the subscriber's configured URL is the
		// only destination, and a 3xx counts as a failed attempt.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Endpoint returns the configured endpoint with this URL.
func (s *Sender) Endpoint(url string) (Endpoint, bool) {
	e, ok := s.endpoints[url]
	return e, ok
}

// Endpoints lists the configured endpoints.
func (s *Sender) Endpoints() []Endpoint {
	out := make([]Endpoint, 0, len(s.endpoints))
	for _, e := range s.endpoints {
		out = append(out, e)
	}
	return out
}

// Send posts body to the endpoint with this URL, signed with its secret,
// under message id id and the current time, and classifies the answer.
func (s *Sender) Send(ctx context.Context, url, id string, body []byte) Result {
	ep, ok := s.endpoints[url]
	if !ok {
		return Result{Outcome: Failed, Err: fmt.Errorf("endpoint %s is not configured", Redact(url))}
	}
	ts := s.cfg.Now().Unix()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(body))
	if err != nil {
		return Result{Outcome: Failed, Err: ScrubError(fmt.Errorf("build request: %w", err))}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "collegematch-webhooks/"+buildinfo.Version)
	req.Header.Set(HeaderID, id)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, SignAll(ep.Keys, id, ts, body))

	client := s.guarded
	if ep.AllowPrivate {
		client = s.open
	}
	start := time.Now()
	resp, err := client.Do(req)
	latency := time.Since(start)
	if err != nil {
		return Result{Outcome: Failed, Latency: latency, Err: ScrubError(describe(err))}
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBody))
	res := Result{StatusCode: resp.StatusCode, Latency: latency}
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		res.Outcome = Delivered
	case code == http.StatusGone:
		res.Outcome = Gone
		res.Err = errors.New("HTTP 410 Gone: endpoint disabled")
	case code >= 300 && code < 400:
		res.Outcome = Failed
		res.Err = fmt.Errorf("HTTP %d: redirect not followed (to %s)", code, Redact(resp.Header.Get("Location")))
	default:
		res.Outcome = Failed
		res.Err = fmt.Errorf("HTTP %d%s", code, bodySnippet(snippet))
		if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
			res.RetryAfter = ParseRetryAfter(resp.Header.Get("Retry-After"), s.cfg.Now(), s.cfg.MaxRetryAfter)
		}
	}
	res.Err = ScrubError(res.Err)
	return res
}

// describe turns a client error into a short, stable message. Go's
// *url.Error prints the whole URL, query string and credentials included:
// it is rebuilt around the redacted URL.
func describe(err error) error {
	var ne net.Error
	var ue *url.Error
	switch {
	case errors.Is(err, ErrDestinationRefused):
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Err != nil {
			return oe.Err
		}
		return withoutURL(err)
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("timeout: %w", withoutURL(err))
	case errors.As(err, &ue):
		return withoutURL(err)
	default:
		return err
	}
}

// withoutURL replaces a *url.Error's URL by its redacted form, keeping the
// error it wraps.
func withoutURL(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	return &url.Error{Op: ue.Op, URL: Redact(ue.URL), Err: ue.Err}
}

// ScrubError returns err with its text scrubbed (domain.Scrub: URLs
// redacted, control characters escaped, length bounded), still wrapping
// err; nil stays nil.
func ScrubError(err error) error { return domain.Scrub(err) }

// bodySnippet quotes the start of a failed response (domain.QuoteAnswer).
func bodySnippet(b []byte) string {
	if q := domain.QuoteAnswer(b); q != "" {
		return ": " + q
	}
	return ""
}

// ParseRetryAfter reads a Retry-After value, delay-seconds or an HTTP date,
// as a wait from now, capped at limit; 0 when absent, invalid or past.
func ParseRetryAfter(v string, now time.Time, limit time.Duration) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		if secs > int64(limit/time.Second) {
			return limit
		}
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	} else {
		return 0
	}
	return min(max(d, 0), limit)
}

// Name returns the name of the configured endpoint with this URL (the
// endpoint label of the metrics); ok is false when it is not configured.
func (s *Sender) Name(url string) (name string, ok bool) {
	e, ok := s.endpoints[url]
	return e.Name, ok
}
