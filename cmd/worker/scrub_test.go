package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/webhook"
)

// What a failed delivery records keeps no secret of the endpoint's URL and
// no raw byte of the subscriber's answer (decisions.md, "Errors keep no
// secrets"): an endpoint configured with a token in its query string (and
// one with credentials too) that refuses connections, and one that answers
// 500 with an escape byte, through the real worker: the attempt rows, the
// deliveries' last errors, the queue's stored last errors (retried and
// archived tasks), the worker's log and the student's export hold neither
// the token nor the raw bytes, and still say what happened.
func TestWebhookErrorsKeepNoSecrets(t *testing.T) {
	const secret = "SECRET-c0ffee"
	// A port nobody listens on: connections are refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refusedAddr := ln.Addr().String()
	require.NoError(t, ln.Close())
	// A subscriber answering 500 with a marker, an escape sequence, a byte
	// that is not UTF-8 and a URL of its own.
	const marker = "MARKER-5a1t"
	answering := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "%s \x1b[31mboom\x1b[0m \xff see https://status.example.com/x?sig=%s", marker, secret)
	}))
	t.Cleanup(answering.Close)
	refused := "http://127.0.0.1:" + portOf(refusedAddr) + "/hook?token=" + secret
	failing := "http://hookuser:" + secret + "@" + strings.TrimPrefix(answering.URL, "http://") + "/hook?token=" + secret

	w := newHookWorld(t, 20, 1, "")
	w.env["WEBHOOK_ENDPOINTS_FILE"] = rawEndpointsFile(t, refused, failing)
	wk := startWith(t, w.env, options{delayedCheck: 100 * time.Millisecond,
		webhooks: webhook.RetryConfig{Schedule: []time.Duration{2 * time.Second}, Attempts: 3, Jitter: -1}})

	// A task whose payload cannot be used is archived with its error; the
	// payload names an endpoint with its token.
	insp := asynq.NewInspectorFromRedisClient(redisClient(t, w.env["REDIS_URL"]))
	client := asynq.NewClientFromRedisClient(redisClient(t, w.env["REDIS_URL"]))
	bad, _ := json.Marshal(map[string]any{"outbox_id": 0, "endpoint": refused})
	_, err = client.Enqueue(asynq.NewTask(tasks.TypeWebhookDeliver, bad), asynq.Queue(tasks.QueueWebhooks), asynq.MaxRetry(0))
	require.NoError(t, err)

	id := w.swipe(t, 0, 1)

	// While the second attempts (the first retries, made by tasks: the
	// relay made the first attempts) wait for their retry, the queue holds
	// their errors.
	var lastErrs []string
	require.Eventually(t, func() bool {
		retry, err := insp.ListRetryTasks(tasks.QueueWebhooks)
		if err != nil || len(retry) < 2 {
			return false
		}
		archived, err := insp.ListArchivedTasks(tasks.QueueWebhooks)
		if err != nil || len(archived) < 1 {
			return false
		}
		lastErrs = nil
		for _, ti := range append(retry, archived...) {
			lastErrs = append(lastErrs, ti.LastErr)
		}
		return true
	}, 10*time.Second, 20*time.Millisecond, "two retrying tasks and one archived")
	joined := strings.Join(lastErrs, "\n")
	t.Logf("queue's last errors:\n%s", joined)
	assert.Contains(t, joined, "connection refused")
	assert.Contains(t, joined, marker)
	assert.Contains(t, joined, "decode webhook:deliver payload")
	assertScrubbed(t, "the queue's last errors", joined, secret)

	dr := w.waitStatus(t, id, refused, domain.DeliveryParked, 15*time.Second)
	df := w.waitStatus(t, id, failing, domain.DeliveryParked, 15*time.Second)
	t.Logf("last errors: %q, %q", dr.LastError, df.LastError)
	assert.Contains(t, dr.LastError, "connection refused")
	assert.Contains(t, dr.LastError, `"http://127.0.0.1:`+portOf(refusedAddr)+`/hook"`, "the endpoint is named, without its query")
	assert.True(t, strings.HasPrefix(df.LastError, `HTTP 500: "`+marker+` \x1b[31mboom\x1b[0m \xff see https://status.example.com/x"`),
		"the answer quoted, escaped: %s", df.LastError)
	for _, d := range []deliveryRow{dr, df} {
		assertScrubbed(t, "last_error", d.LastError, secret)
		at := w.attempts(t, d.ID)
		require.Len(t, at, 3)
		for _, a := range at {
			require.NotNil(t, a.Error)
			assertScrubbed(t, "attempt error", *a.Error, secret)
		}
	}

	// The student's export (a family's data request).
	exp, err := w.db.ExportStudent(context.Background(), w.students[0])
	require.NoError(t, err)
	b, err := json.Marshal(exp)
	require.NoError(t, err)
	assert.Contains(t, string(b), marker)
	assertScrubbed(t, "export", string(b), secret)

	// The operator's list of failed deliveries.
	failed, err := w.db.FailedWebhookDeliveries(context.Background(), 10)
	require.NoError(t, err)
	require.Len(t, failed, 2)
	for _, d := range failed {
		assertScrubbed(t, "failed list", d.LastError, secret)
	}

	// The worker's log.
	logs := wk.logs.String()
	assert.Contains(t, logs, marker, "the failures were logged")
	assertScrubbed(t, "worker log", logs, secret)
}

// assertScrubbed fails when text holds the secret, a raw control
// character or one JSON escaped from raw (\u001b, \ufffd for the byte that
// was not UTF-8).
func assertScrubbed(t *testing.T, what, text, secret string) {
	t.Helper()
	assert.NotContains(t, text, secret, "%s names the secret", what)
	assert.NotContains(t, text, "\x1b", "%s holds a raw escape byte", what)
	assert.NotContains(t, text, "\xff", "%s holds a raw byte that is not UTF-8", what)
	assert.NotContains(t, text, `\u001b`, "%s held a raw escape byte", what)
	assert.NotContains(t, text, `\ufffd`, "%s held a raw byte that is not UTF-8", what)
	assert.NotContains(t, text, "hookuser", "%s names the endpoint's user", what)
}

func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

// rawEndpointsFile writes a WEBHOOK_ENDPOINTS_FILE with these URLs, each
// allowed to loopback.
func rawEndpointsFile(t *testing.T, urls ...string) string {
	t.Helper()
	var b strings.Builder
	for _, u := range urls {
		key := make([]byte, 32)
		_, _ = rand.Read(key)
		fmt.Fprintf(&b, "- url: %q\n  secret: whsec_%s\n  events: [swipe.recorded]\n  allow_private: true\n",
			u, base64.StdEncoding.EncodeToString(key))
	}
	p := filepath.Join(t.TempDir(), "endpoints.yaml")
	require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o600))
	return p
}
