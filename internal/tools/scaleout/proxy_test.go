package scaleout

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Requests alternate between the backends; one that does not answer is a
// 503 with Retry-After.
func TestProxyRoundRobin(t *testing.T) {
	named := func(name string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, name+" "+r.URL.Path)
		}))
	}
	a, b := named("a"), named("b")
	defer a.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	p, err := NewProxy(slog.New(slog.DiscardHandler), []string{a.URL, b.URL, dead.URL})
	require.NoError(t, err)
	front := httptest.NewServer(p)
	defer front.Close()

	var got []string
	for range 6 {
		res, err := http.Get(front.URL + "/x")
		require.NoError(t, err)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode == http.StatusServiceUnavailable {
			assert.Equal(t, "1", res.Header.Get("Retry-After"))
			got = append(got, "503")
			continue
		}
		got = append(got, string(body))
	}
	b.Close()
	assert.Equal(t, []string{"a /x", "b /x", "503", "a /x", "b /x", "503"}, got)
	assert.Contains(t, p.Stats(), "2 requests (2 unanswered)")

	_, err = NewProxy(slog.New(slog.DiscardHandler), []string{"127.0.0.1:1"})
	assert.Error(t, err)
}
