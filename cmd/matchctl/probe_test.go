package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// `matchctl probe URL` exits 0 on a 2xx answer and 1 on anything else (an
// error status, a redirect, nothing listening, no answer within its
// timeout), 2 on a bad command line, and reads no configuration: a
// LOG_LEVEL that would stop every other command does not stop it.
func TestProbe(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/readyz":
			w.WriteHeader(http.StatusOK)
		case "/unready":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/moved":
			http.Redirect(w, r, "/readyz", http.StatusFound)
		case "/hang":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	}))
	defer srv.Close()
	defer close(release)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + l.Addr().String() + "/readyz"
	require.NoError(t, l.Close())

	getenv := func(k string) string { return map[string]string{"LOG_LEVEL": "loud"}[k] }
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"probe", srv.URL + "/readyz"}, 0},
		{[]string{"probe", srv.URL + "/unready"}, 1},
		{[]string{"probe", srv.URL + "/moved"}, 1},
		{[]string{"probe", closed}, 1},
		{[]string{"probe", "--timeout", "200ms", srv.URL + "/hang"}, 1},
		{[]string{"probe"}, 2},
		{[]string{"probe", "127.0.0.1:9090/readyz"}, 2},
		{[]string{"probe", "--timeout", "0s", srv.URL + "/readyz"}, 2},
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), tc.args, getenv, &out, &errOut)
		assert.Equal(t, tc.code, code, "%v: %s%s", tc.args, out.String(), errOut.String())
		if tc.code == 0 {
			assert.Equal(t, "200 OK\n", out.String())
		} else {
			assert.NotEmpty(t, errOut.String(), "%v says why", tc.args)
		}
	}

	// Every other command reads the configuration first.
	var errOut bytes.Buffer
	assert.Equal(t, 1, run(context.Background(), []string{"token", "--student", "x"}, getenv, &bytes.Buffer{}, &errOut))
	assert.Contains(t, errOut.String(), "LOG_LEVEL")
}
