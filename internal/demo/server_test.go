package demo_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/api"
	"github.com/collegematch/matching/internal/demo"
	"github.com/collegematch/matching/internal/testutil"
)

// newDemo serves the demo server on loopback, proxying to apiURL, with
// sessions numbered from 1.
func newDemo(t *testing.T, apiURL string, timeout time.Duration) *httptest.Server {
	t.Helper()
	target, err := url.Parse(apiURL)
	require.NoError(t, err)
	var n atomic.Int64
	h, err := demo.NewServer(demo.Options{
		API: target,
		Log: testutil.Logger(t),
		NewSession: func() (demo.Session, error) {
			i := n.Add(1)
			return demo.Session{
				StudentID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i),
				Token:     fmt.Sprintf("token-%d", i),
				ExpiresAt: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC),
			}, nil
		},
		APITimeout: timeout,
	})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

func errorCode(t *testing.T, body string) string {
	t.Helper()
	var e struct {
		Error struct {
			Code    string         `json:"code"`
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &e), body)
	assert.NotEmpty(t, e.Error.Message)
	assert.NotNil(t, e.Error.Details)
	return e.Error.Code
}

func TestPagesAreServedWithTheirMarksAndPolicy(t *testing.T) {
	srv := newDemo(t, "http://127.0.0.1:1", 0)

	resp, page := get(t, srv.URL+"/")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	for _, mark := range []string{`id="swipe-count"`, `id="phase"`, `id="feedback"`, `id="deck"`, `id="weights"`,
		`src="/assets/demo.js"`, `href="/docs"`} {
		assert.Contains(t, page, mark)
	}
	csp := resp.Header.Get("Content-Security-Policy")
	assert.Contains(t, csp, "default-src 'self'")
	assert.Contains(t, csp, "connect-src 'self'", "the page calls nothing but this server")
	assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))

	resp, js := get(t, srv.URL+"/assets/demo.js")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Content-Type"), "javascript")
	assert.Contains(t, js, `"/continuous-feed"`, "the page is built with the generated client's paths")

	for _, path := range []string{"/docs", "/docs/"} {
		resp, docs := get(t, srv.URL+path)
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.Contains(t, docs, `src="/docs/swagger-ui-bundle.js"`, path)
		assert.NotContains(t, docs, "https://", "%s loads nothing from elsewhere", path)
	}
	resp, _ = get(t, srv.URL+"/docs/swagger-ui-bundle.js")
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	resp, doc := get(t, srv.URL+"/docs/openapi.yaml")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "application/yaml; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Equal(t, string(api.OpenAPI), doc, "the committed api/openapi.yaml, as it is")

	resp, body := get(t, srv.URL+"/nothing-here")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Equal(t, "NOT_FOUND", errorCode(t, body))
}

func TestSessionIsMadeAtStartAndRenewedOnPost(t *testing.T) {
	srv := newDemo(t, "http://127.0.0.1:1", 0)
	read := func(resp *http.Response) demo.Session {
		t.Helper()
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
		var s demo.Session
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&s))
		return s
	}
	resp, err := http.Get(srv.URL + "/session")
	require.NoError(t, err)
	first := read(resp)
	assert.Equal(t, "00000000-0000-4000-8000-000000000001", first.StudentID)
	assert.Equal(t, "token-1", first.Token)

	resp, err = http.Get(srv.URL + "/session")
	require.NoError(t, err)
	assert.Equal(t, first, read(resp), "the same student until a new one is asked for")

	resp, err = http.Post(srv.URL+"/session", "application/json", nil)
	require.NoError(t, err)
	second := read(resp)
	assert.Equal(t, "00000000-0000-4000-8000-000000000002", second.StudentID)
	resp, err = http.Get(srv.URL + "/session")
	require.NoError(t, err)
	assert.Equal(t, second, read(resp))
}

func TestProxyForwardsToTheAPI(t *testing.T) {
	type seen struct {
		method, path, query, auth, idem, forwarded, body string
	}
	got := make(chan seen, 1)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), r.Header.Get("Idempotency-Key"),
			r.Header.Get("X-Forwarded-For"), string(b)}
		w.Header().Set("Retry-After", "7")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":{"code":"RATE_LIMITED","message":"slow down","details":{}}}`)
	}))
	t.Cleanup(upstream.Close)
	srv := newDemo(t, upstream.URL, 0)

	req, err := http.NewRequest(http.MethodPost, srv.URL+"/api/v2/recommendations?x=1", strings.NewReader(`{"student_id":"s"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer abc")
	req.Header.Set("Idempotency-Key", "k-1")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)

	s := <-got
	assert.Equal(t, seen{http.MethodPost, "/v2/recommendations", "x=1", "Bearer abc", "k-1", "127.0.0.1", `{"student_id":"s"}`}, s)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "the API's answer, as it is")
	assert.Equal(t, "7", resp.Header.Get("Retry-After"))
	assert.Equal(t, "RATE_LIMITED", errorCode(t, string(b)))
	assert.Empty(t, resp.Header.Get("Content-Security-Policy"), "API answers keep their own headers")
}

func TestProxyAnswers503WhenTheAPIIsDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	srv := newDemo(t, closed, 0)

	start := time.Now()
	resp, body := get(t, srv.URL+"/api/health")
	assert.Less(t, time.Since(start), 3*time.Second)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	assert.Equal(t, "SERVICE_UNAVAILABLE", errorCode(t, body))
	assert.Contains(t, body, closed)
}

func TestProxyAnswers503WhenTheAPIHangs(t *testing.T) {
	release := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); upstream.Close() })
	srv := newDemo(t, upstream.URL, 300*time.Millisecond)

	start := time.Now()
	resp, body := get(t, srv.URL+"/api/health")
	assert.Less(t, time.Since(start), 3*time.Second, "the wait is bounded by APITimeout")
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	assert.Equal(t, "SERVICE_UNAVAILABLE", errorCode(t, body))
}

func TestOnlyLoopbackHostNamesAreServed(t *testing.T) {
	srv := newDemo(t, "http://127.0.0.1:1", 0)
	status := func(host string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/session", nil)
		require.NoError(t, err)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, host := range []string{"127.0.0.1:8081", "localhost:8081", "LOCALHOST", "[::1]:8081", "127.1.2.3"} {
		code, _ := status(host)
		assert.Equal(t, http.StatusOK, code, host)
	}
	for _, host := range []string{"evil.example", "evil.example:8081", "10.0.0.1:8081", "localhost.evil.example"} {
		code, body := status(host)
		assert.Equal(t, http.StatusForbidden, code, host)
		assert.Equal(t, "FORBIDDEN", errorCode(t, body), host)
		assert.NotContains(t, body, "token-", "%s gets no token", host)
	}
}

func TestNewServerNeedsTheAPIAndSessions(t *testing.T) {
	session := func() (demo.Session, error) { return demo.Session{}, nil }
	_, err := demo.NewServer(demo.Options{Log: testutil.Logger(t), NewSession: session})
	assert.ErrorContains(t, err, "base URL")
	_, err = demo.NewServer(demo.Options{API: &url.URL{Path: "/x"}, Log: testutil.Logger(t), NewSession: session})
	assert.ErrorContains(t, err, "base URL")
	_, err = demo.NewServer(demo.Options{API: &url.URL{Scheme: "http", Host: "127.0.0.1:1"}, Log: testutil.Logger(t)})
	assert.ErrorContains(t, err, "NewSession")
	_, err = demo.NewServer(demo.Options{API: &url.URL{Scheme: "http", Host: "127.0.0.1:1"}, Log: testutil.Logger(t),
		NewSession: func() (demo.Session, error) { return demo.Session{}, fmt.Errorf("no secret") }})
	assert.ErrorContains(t, err, "no secret")
}

// TestProxyForwardsARequestOnlyWhenItsBodyIsWhole: the API sees a request
// only once its whole body has reached the demo server. A body streamed
// through while it arrives races the demo server's own reading of it: an
// API that answers before the forwarding has seen the body's end (from
// cache, or a refusal) has its answer start, the server drains and closes
// the unread request body, the forwarding fails reading it, and the
// connection to the API, with the answer on it, is cut short.
func TestProxyForwardsARequestOnlyWhenItsBodyIsWhole(t *testing.T) {
	type arrival struct {
		at   time.Time
		body string
	}
	got := make(chan arrival, 1)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		b, _ := io.ReadAll(r.Body)
		got <- arrival{at, string(b)}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(upstream.Close)
	srv := newDemo(t, upstream.URL, 0)

	const body = `{"student_id":"00000000-0000-4000-8000-000000000001","limit":20}`
	lastPart := make(chan time.Time, 1)
	pr, pw := io.Pipe()
	go func() { // the body in two parts, 200 ms apart, as from a slow phone
		_, _ = io.WriteString(pw, body[:20])
		time.Sleep(200 * time.Millisecond)
		lastPart <- time.Now()
		_, _ = io.WriteString(pw, body[20:])
		_ = pw.Close()
	}()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/api/recommendations", pr)
	require.NoError(t, err)
	req.ContentLength = int64(len(body))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.JSONEq(t, `{"ok":true}`, string(b))

	a, last := <-got, <-lastPart
	assert.Equal(t, body, a.body)
	assert.False(t, a.at.Before(last), "the API saw the request %v before its body's last part was sent", last.Sub(a.at))
}

// TestProxyRefusesABodyLargerThanTheAPIAccepts: past the API's 1 MiB the
// proxy answers as the API does (docs/api.md: INVALID_REQUEST naming the
// body), without asking it.
func TestProxyRefusesABodyLargerThanTheAPIAccepts(t *testing.T) {
	var calls atomic.Int64
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(1) }))
	t.Cleanup(upstream.Close)
	srv := newDemo(t, upstream.URL, 0)

	resp, err := http.Post(srv.URL+"/api/recommendations", "application/json", strings.NewReader(strings.Repeat(" ", 1<<20+1)))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.JSONEq(t, `{"error":{"code":"INVALID_REQUEST","message":"request body is larger than 1 MiB",
		"details":{"fields":{"body":"larger than 1 MiB"}}}}`, string(b), "the API's own answer")
	assert.Zero(t, calls.Load(), "the API is not asked")

	resp, err = http.Post(srv.URL+"/api/recommendations", "application/json", strings.NewReader(strings.Repeat(" ", 1<<20)))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "a body of exactly 1 MiB goes through")
	assert.Equal(t, int64(1), calls.Load())
}

// TestProxyAnswersABodyCutShortAsTheAPIWould: a body that ends before its
// Content-Length (a browser that went away) is not forwarded.
func TestProxyAnswersABodyCutShortAsTheAPIWould(t *testing.T) {
	var calls atomic.Int64
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(1) }))
	t.Cleanup(upstream.Close)
	srv := newDemo(t, upstream.URL, 0)

	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "POST /api/recommendations HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"+
		"Content-Length: 100\r\n\r\n{\"student_id\"")
	require.NoError(t, err)
	require.NoError(t, conn.(*net.TCPConn).CloseWrite())
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Equal(t, "INVALID_REQUEST", errorCode(t, string(b)))
	assert.Contains(t, string(b), `"body":"could not be read"`)
	assert.Zero(t, calls.Load(), "the API is not asked")
}
