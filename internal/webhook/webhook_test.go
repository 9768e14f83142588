package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/webhook"
)

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwZ1b2c3d4e5f6" // 33 bytes

// verify is an independent implementation of the Standard Webhooks
// verification a receiver runs: it recomputes the signature from the raw
// request and compares it with every v1 signature of the header.
func verify(t *testing.T, secret string, r *http.Request, body []byte, tolerance time.Duration) {
	t.Helper()
	assert.True(t, verifies(t, secret, r, body, tolerance), "signature %q does not verify", r.Header.Get("webhook-signature"))
}

// verifies reports whether one of the request's v1 signatures is the one
// secret gives (the Standard Webhooks receiver's check).
func verifies(t *testing.T, secret string, r *http.Request, body []byte, tolerance time.Duration) bool {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	require.NoError(t, err)
	id, ts := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp")
	require.NotEmpty(t, id)
	sec, err := strconv.ParseInt(ts, 10, 64)
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now(), time.Unix(sec, 0), tolerance)
	mac := hmac.New(sha256.New, key)
	io.WriteString(mac, id+"."+ts+"."+string(body))
	want := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Fields(r.Header.Get("webhook-signature")) {
		v, s, _ := strings.Cut(sig, ",")
		if v == "v1" && hmac.Equal([]byte(s), []byte(want)) {
			return true
		}
	}
	return false
}

func endpoints(t *testing.T, doc string) []webhook.Endpoint {
	t.Helper()
	eps, err := webhook.Parse([]byte(doc))
	require.NoError(t, err)
	return eps
}

func TestParseValidEndpoints(t *testing.T) {
	yml := `
- url: https://hooks.example.com/in?token=abc
  secret: ` + testSecret + `
  events: [swipe.recorded]
- url: http://127.0.0.1:9999/hook
  secret: ` + testSecret + `
  events: ["swipe.recorded"]
  allow_private: true
`
	eps := endpoints(t, yml)
	require.Len(t, eps, 2)
	assert.False(t, eps[0].AllowPrivate)
	assert.True(t, eps[1].AllowPrivate)
	require.Len(t, eps[0].Keys, 1)
	assert.Len(t, eps[0].Keys[0], 33)
	assert.Equal(t, "hooks.example.com", eps[0].Name, "the name defaults to the host")
	assert.Equal(t, "127.0.0.1-9999", eps[1].Name, "... with its port")
	assert.Equal(t, "hooks.example.com (https://hooks.example.com/in)", eps[0].String(), "no query in logs")

	js := `[{"url":"https://a.example/x","secret":"` + testSecret + `","events":["swipe.recorded"]}]`
	assert.Len(t, endpoints(t, js), 1)
	wrapped := "endpoints:\n  - url: https://a.example/x\n    secret: " + testSecret + "\n    events: [swipe.recorded]\n"
	assert.Len(t, endpoints(t, wrapped), 1)
	assert.Empty(t, endpoints(t, ""))
	assert.Empty(t, endpoints(t, "[]"))
}

func TestParseRejectsBadEntriesNamingThem(t *testing.T) {
	for name, tc := range map[string]struct{ doc, want string }{
		"bad url":       {`[{"url":"://nope","secret":"` + testSecret + `","events":["swipe.recorded"]}]`, "endpoint 1"},
		"ftp":           {`[{"url":"ftp://a.example/x","secret":"` + testSecret + `","events":["swipe.recorded"]}]`, `scheme "ftp" is not http or https`},
		"no host":       {`[{"url":"https:///x","secret":"` + testSecret + `","events":["swipe.recorded"]}]`, "no host"},
		"no prefix":     {`[{"url":"https://a.example/x","secret":"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw","events":["swipe.recorded"]}]`, "whsec_"},
		"not base64":    {`[{"url":"https://a.example/x","secret":"whsec_!!!","events":["swipe.recorded"]}]`, "base64"},
		"short":         {`[{"url":"https://a.example/x","secret":"whsec_c2hvcnQ=","events":["swipe.recorded"]}]`, "at least 24"},
		"unknown event": {`[{"url":"https://a.example/x","secret":"` + testSecret + `","events":["swipe.deleted"]}]`, `unknown event "swipe.deleted"`},
		"no events":     {`[{"url":"https://a.example/x","secret":"` + testSecret + `"}]`, "events is empty"},
		"unknown field": {`[{"url":"https://a.example/x","secret":"` + testSecret + `","events":["swipe.recorded"],"allow_privat":true}]`, "allow_privat"},
		"duplicate url": {`[{"url":"https://a.example/x","secret":"` + testSecret + `","events":["swipe.recorded"]},{"url":"https://a.example/x","secret":"` + testSecret + `","events":["swipe.recorded"]}]`, "endpoint 2 (https://a.example/x): same url as endpoint 1"},
		"second entry":  {`[{"url":"https://a.example/x","secret":"` + testSecret + `","events":["swipe.recorded"]},{"url":"https://b.example/y","events":["swipe.recorded"]}]`, "endpoint 2 (https://b.example/y): secret is missing"},
		"not a list":    {`url: https://a.example`, "not a list"},
		"same name":     {`[{"name":"crm","url":"https://a.example/x","secret":"` + testSecret + `","events":["swipe.recorded"]},{"name":"crm","url":"https://b.example/y","secret":"` + testSecret + `","events":["swipe.recorded"]}]`, `endpoint 2 (https://b.example/y): name "crm" is also endpoint 1's`},
		"bad name":      {`[{"name":"CRM prod","url":"https://a.example/x","secret":"` + testSecret + `","events":["swipe.recorded"]}]`, `name "CRM prod" is not`},
		"both secrets":  {`[{"url":"https://a.example/x","secret":"` + testSecret + `","secrets":["` + testSecret + `"],"events":["swipe.recorded"]}]`, "secret or secrets, not both"},
		"bad 2nd":       {`[{"url":"https://a.example/x","secrets":["` + testSecret + `","whsec_c2hvcnQ="],"events":["swipe.recorded"]}]`, "secrets[1]: secret is 5 bytes"},
		"twice":         {`[{"url":"https://a.example/x","secrets":["` + testSecret + `","` + testSecret + `"],"events":["swipe.recorded"]}]`, "secrets[1] is listed twice"},
		"empty list":    {`[{"url":"https://a.example/x","secrets":[],"events":["swipe.recorded"]}]`, "secret is missing"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := webhook.Parse([]byte(tc.doc))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestRefusedReason(t *testing.T) {
	for _, a := range []string{"127.0.0.1", "::1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "fd00::1", "169.254.169.254",
		"fe80::1", "0.0.0.0", "::", "100.64.0.1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "224.0.0.1", "255.255.255.255",
		"64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "2002:c0a8:101::1", "2002:7f00:1::", // NAT64 and 6to4 carrying private IPv4
		// Documentation and benchmarking ranges.
		"192.0.2.1", "198.51.100.7", "203.0.113.200", "2001:db8::1", "198.18.0.1", "198.19.255.254", "3fff::1",
		// The transition prefixes, whatever IPv4 address they carry:
		// Teredo, 6to4, NAT64 (well-known and local-use).
		"2001:0:4136:e378:8000:63bf:3fff:fdd2", "2002:5db8:d822::1", "64:ff9b::808:808", "64:ff9b:1::808:808",
		"::ffff:192.0.2.1", "::ffff:198.18.0.1"} {
		assert.NotEmpty(t, webhook.RefusedReason(netip.MustParseAddr(a)), a)
	}
	for _, a := range []string{"93.184.216.34", "8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "2a00:1450:4001:80b::200e",
		"172.32.0.1", "198.20.0.1", "192.0.3.1", "203.0.114.1", "2001:200::1"} {
		assert.Empty(t, webhook.RefusedReason(netip.MustParseAddr(a)), a)
	}
	assert.Contains(t, webhook.RefusedReason(netip.MustParseAddr("2001::1")), "Teredo", "the most specific entry names the range")
}

// Every range of IANA's IPv4 and IPv6 Special-Purpose Address Registries
// (https://www.iana.org/assignments/iana-ipv4-special-registry,
// https://www.iana.org/assignments/iana-ipv6-special-registry) is refused,
// at its first and its last address.
func TestRefusedReasonCoversTheIANARegistries(t *testing.T) {
	registries := []string{
		// IPv4
		"0.0.0.0/8", "0.0.0.0/32", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.0.0/29", "192.0.0.8/32", "192.0.0.9/32", "192.0.0.10/32", "192.0.0.170/32", "192.0.0.171/32",
		"192.0.2.0/24", "192.31.196.0/24", "192.52.193.0/24", "192.88.99.0/24", "192.168.0.0/16", "192.175.48.0/24",
		"198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4", "255.255.255.255/32",
		// IPv6
		"::1/128", "::/128", "::ffff:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "100:0:0:1::/64",
		"2001::/23", "2001::/32", "2001:1::1/128", "2001:1::2/128", "2001:1::3/128", "2001:2::/48", "2001:3::/32",
		"2001:4:112::/48", "2001:10::/28", "2001:20::/28", "2001:30::/28", "2001:db8::/32", "2002::/16",
		"2620:4f:8000::/48", "3fff::/20", "5f00::/16", "fc00::/7", "fe80::/10",
	}
	for _, s := range registries {
		p := netip.MustParsePrefix(s)
		first, last := p.Addr(), lastAddr(p)
		assert.NotEmpty(t, webhook.RefusedReason(first), "%s: %s", s, first)
		assert.NotEmpty(t, webhook.RefusedReason(last), "%s: %s", s, last)
	}
}

// lastAddr is the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func send(t *testing.T, eps []webhook.Endpoint, cfg webhook.Config, url string) webhook.Result {
	t.Helper()
	return webhook.NewSender(eps, cfg).Send(context.Background(), url, "msg_1_abc", []byte(`{"id":"msg_1_abc"}`))
}

func TestSendSignsWithTheStandardWebhooksScheme(t *testing.T) {
	var got atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		verify(t, testSecret, r, body, 5*time.Second)
		assert.Equal(t, "msg_1_abc", r.Header.Get("webhook-id"))
		assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
		got.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	eps := endpoints(t, `[{"url":"`+srv.URL+`/hook","secret":"`+testSecret+`","events":["swipe.recorded"],"allow_private":true}]`)
	res := send(t, eps, webhook.Config{}, srv.URL+"/hook")
	require.NoError(t, res.Err)
	assert.Equal(t, webhook.Delivered, res.Outcome)
	assert.Equal(t, 204, res.StatusCode)
	assert.Equal(t, int32(1), got.Load())
}

func TestSendClassifiesResponses(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		handler    http.HandlerFunc
		outcome    webhook.Outcome
		code       int
		retryAfter time.Duration
		errHas     string
	}{
		"500": {func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", 500) }, webhook.Failed, 500, 0, `HTTP 500: "boom"`},
		"410": {func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(410) }, webhook.Gone, 410, 0, "410"},
		"302": {func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/elsewhere", http.StatusFound) }, webhook.Failed, 302, 0, "redirect not followed"},
		"429 seconds": {func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(429)
		}, webhook.Failed, 429, 2 * time.Minute, "HTTP 429"},
		"503 date": {func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", now.Add(90*time.Second).Format(http.TimeFormat))
			w.WriteHeader(503)
		}, webhook.Failed, 503, 90 * time.Second, "HTTP 503"},
		"429 capped": {func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "999999")
			w.WriteHeader(429)
		}, webhook.Failed, 429, webhook.DefaultMaxRetryAfter, "HTTP 429"},
		"400 ignores Retry-After": {func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "60")
			w.WriteHeader(400)
		}, webhook.Failed, 400, 0, "HTTP 400"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			eps := endpoints(t, `[{"url":"`+srv.URL+`","secret":"`+testSecret+`","events":["swipe.recorded"],"allow_private":true}]`)
			res := send(t, eps, webhook.Config{Now: func() time.Time { return now }}, srv.URL)
			assert.Equal(t, tc.outcome, res.Outcome)
			assert.Equal(t, tc.code, res.StatusCode)
			assert.Equal(t, tc.retryAfter, res.RetryAfter)
			require.Error(t, res.Err)
			assert.Contains(t, res.Err.Error(), tc.errHas)
		})
	}
}

func TestSendTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	eps := endpoints(t, `[{"url":"`+srv.URL+`","secret":"`+testSecret+`","events":["swipe.recorded"],"allow_private":true}]`)
	start := time.Now()
	res := send(t, eps, webhook.Config{Timeout: 300 * time.Millisecond}, srv.URL)
	assert.Less(t, time.Since(start), 3*time.Second)
	assert.Equal(t, webhook.Failed, res.Outcome)
	require.Error(t, res.Err)
	assert.Contains(t, res.Err.Error(), "timeout")
}

// Without allow_private, a loopback receiver gets nothing, also when the
// URL names a host that only resolves to loopback: the check is on the
// address the dialer is about to connect to.
func TestSendRefusesPrivateDestinations(t *testing.T) {
	var got atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got.Add(1) }))
	defer srv.Close()
	_, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	for _, u := range []string{srv.URL, "http://localhost:" + port + "/hook"} {
		eps := endpoints(t, `[{"url":"`+u+`","secret":"`+testSecret+`","events":["swipe.recorded"]}]`)
		res := send(t, eps, webhook.Config{}, u)
		assert.Equal(t, webhook.Failed, res.Outcome, u)
		require.Error(t, res.Err, u)
		assert.ErrorIs(t, res.Err, webhook.ErrDestinationRefused, u)
		assert.Contains(t, res.Err.Error(), "loopback", u)
	}
	assert.Zero(t, got.Load(), "nothing reached the receiver")
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	assert.Equal(t, 30*time.Second, webhook.ParseRetryAfter("30", now, time.Hour))
	assert.Equal(t, time.Hour, webhook.ParseRetryAfter("7200", now, time.Hour))
	assert.Equal(t, time.Minute, webhook.ParseRetryAfter(now.Add(time.Minute).Format(http.TimeFormat), now, time.Hour))
	assert.Zero(t, webhook.ParseRetryAfter(now.Add(-time.Minute).Format(http.TimeFormat), now, time.Hour))
	assert.Zero(t, webhook.ParseRetryAfter("soon", now, time.Hour))
	assert.Zero(t, webhook.ParseRetryAfter("", now, time.Hour))
	assert.Zero(t, webhook.ParseRetryAfter("-5", now, time.Hour))
}

// A failed attempt's error names the endpoint without its credentials or
// query string (Go's *url.Error prints the whole URL) and quotes at most
// 200 bytes of the subscriber's answer, escaped.
func TestSendErrorsKeepNoSecrets(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(500)
		_, _ = io.WriteString(w, "marker \x1b[31m"+strings.Repeat("x", 300))
	}))
	defer srv.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // refuses connections from now on
	answering := strings.Replace(srv.URL, "http://", "http://user:SECRET@", 1) + "/hook?token=SECRET"
	refusing := closed.URL + "/hook?token=SECRET"
	eps := endpoints(t, `[{"url":"`+answering+`","secret":"`+testSecret+`","events":["swipe.recorded"],"allow_private":true},
		{"url":"`+refusing+`","secret":"`+testSecret+`","events":["swipe.recorded"],"allow_private":true}]`)

	res := send(t, eps, webhook.Config{}, answering)
	require.Error(t, res.Err)
	assert.Equal(t, `HTTP 500: "marker \x1b[31m`+strings.Repeat("x", 200-len("marker \x1b[31m"))+`"...`, res.Err.Error())

	res = send(t, eps, webhook.Config{}, refusing)
	require.Error(t, res.Err)
	assert.Contains(t, res.Err.Error(), `"`+closed.URL+`/hook"`)
	assert.Contains(t, res.Err.Error(), "connection refused")
	assert.NotContains(t, res.Err.Error(), "SECRET")
}

// The Standard Webhooks specification's published example
// (github.com/standard-webhooks/standard-webhooks, spec/standard-webhooks.md,
// "Signature scheme"): the same secret, id, timestamp and payload give
// exactly its signature, so a receiver using any of its libraries verifies
// what the service sends.
func TestSignMatchesTheStandardWebhooksTestVector(t *testing.T) {
	key, err := webhook.DecodeSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	require.NoError(t, err)
	got := webhook.Sign(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	assert.Equal(t, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", got)
}

const otherSecret = "whsec_C2FsdGVkLXNlY3JldC1mb3ItdGhlLXNlY29uZC1rZXk=" // 32 bytes

func TestParseNamesAndSecrets(t *testing.T) {
	eps := endpoints(t, `
- name: crm-prod
  url: https://hooks.example.com/in?token=abc
  secrets: [`+testSecret+`, `+otherSecret+`]
  events: [swipe.recorded]
- url: https://HOOKS.example.org:8443/x
  secret: `+testSecret+`
  events: [swipe.recorded]
`)
	require.Len(t, eps, 2)
	assert.Equal(t, "crm-prod", eps[0].Name)
	assert.Len(t, eps[0].Keys, 2)
	assert.Equal(t, "hooks.example.org-8443", eps[1].Name)
	e, ok := webhook.Find(eps, "crm-prod")
	assert.True(t, ok)
	assert.Equal(t, eps[0].URL, e.URL)
	e, ok = webhook.Find(eps, "https://HOOKS.example.org:8443/x")
	assert.True(t, ok)
	assert.Equal(t, "hooks.example.org-8443", e.Name)
	_, ok = webhook.Find(eps, "nope")
	assert.False(t, ok)

	// Names derived from one host are told apart by their path, then by a
	// number in the file's order; a name given keeps its own, and a file
	// that was valid without names stays valid.
	entry := func(name, url string) string {
		return `{"name":"` + name + `","url":"` + url + `","secret":"` + testSecret + `","events":["swipe.recorded"]}`
	}
	eps = endpoints(t, "["+strings.Join([]string{
		entry("", "https://a.example/Hooks/One"), entry("", "https://a.example/hooks/two"),
		entry("", "https://a.example/hooks/two?v=2"), entry("", "https://b.example/x"), entry("b.example", "https://c.example/x"),
		entry("", "https://d.example/"),
	}, ",")+"]")
	var names []string
	for _, e := range eps {
		names = append(names, e.Name)
	}
	assert.Equal(t, []string{"a.example-hooks-one", "a.example-hooks-two", "a.example-hooks-two-2", "b.example-x", "b.example", "d.example"}, names)
}

// While a secret is rolled the endpoint lists the old and the new one:
// every delivery carries a signature for each, and a receiver that knows
// only one of them (either) verifies it; a receiver with another secret
// does not.
func TestDeliverySignedWithTwoSecretsVerifiesWithEither(t *testing.T) {
	type req struct {
		r    *http.Request
		body []byte
	}
	got := make(chan req, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- req{r, body}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	eps := endpoints(t, `[{"name":"rolling","url":"`+srv.URL+`/hook","secrets":["`+testSecret+`","`+otherSecret+`"],"events":["swipe.recorded"],"allow_private":true}]`)
	res := send(t, eps, webhook.Config{}, srv.URL+"/hook")
	require.NoError(t, res.Err)
	assert.Equal(t, webhook.Delivered, res.Outcome)
	r := <-got
	sigs := strings.Fields(r.r.Header.Get("webhook-signature"))
	require.Len(t, sigs, 2, "one signature per secret, space-separated")
	for _, s := range sigs {
		assert.True(t, strings.HasPrefix(s, "v1,"), s)
	}
	assert.True(t, verifies(t, testSecret, r.r, r.body, 5*time.Second), "the old secret verifies")
	assert.True(t, verifies(t, otherSecret, r.r, r.body, 5*time.Second), "the new secret verifies")
	const stranger = "whsec_c3RyYW5nZXItc2VjcmV0LW5vdC1saXN0ZWQtYW55d2hlcmU="
	assert.False(t, verifies(t, stranger, r.r, r.body, 5*time.Second), "a secret not listed does not")
}
