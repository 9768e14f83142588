package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/webhook"
)

const (
	oldSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwZ1b2c3d4e5f6"
	newSecret = "whsec_C2FsdGVkLXNlY3JldC1mb3ItdGhlLXNlY29uZC1rZXk="
)

// standardVerify is the Standard Webhooks receiver's check, written from
// the specification: HMAC-SHA256 keyed with the secret's bytes over
// "id.timestamp.body", compared with each space-separated v1 signature.
func standardVerify(secret string, h http.Header, body []byte) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	ts, err := strconv.ParseInt(h.Get("webhook-timestamp"), 10, 64)
	if err != nil || time.Since(time.Unix(ts, 0)).Abs() > 5*time.Minute {
		return false
	}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%d.%s", h.Get("webhook-id"), ts, body)
	for _, part := range strings.Split(h.Get("webhook-signature"), " ") {
		if v, sig, ok := strings.Cut(part, ","); ok && v == "v1" {
			if got, err := base64.StdEncoding.DecodeString(sig); err == nil && hmac.Equal(got, mac.Sum(nil)) {
				return true
			}
		}
	}
	return false
}

type hookRequest struct {
	header http.Header
	body   []byte
}

// hookReceiver is a real HTTP subscriber answering status.
type hookReceiver struct {
	srv    *httptest.Server
	status int
	mu     sync.Mutex
	got    []hookRequest
}

func newHookReceiver(t *testing.T, status int) *hookReceiver {
	rc := &hookReceiver{status: status}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, hookRequest{r.Header.Clone(), body})
		rc.mu.Unlock()
		w.WriteHeader(rc.status)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *hookReceiver) requests() []hookRequest {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hookRequest(nil), rc.got...)
}

// runWithEndpoints runs matchctl with WEBHOOK_ENDPOINTS_FILE set to file.
func (e *studentsEnv) runWithEndpoints(t *testing.T, file string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base := e.getenv(e.redisURL)
	getenv := func(k string) string {
		if k == "WEBHOOK_ENDPOINTS_FILE" {
			return file
		}
		return base(k)
	}
	var out, errOut bytes.Buffer
	code := run(ctx, args, getenv, &out, &errOut)
	return code, out.String(), errOut.String()
}

// attempt adds an attempt of delivery id, made ago, answered code.
func (e *studentsEnv) attempt(t *testing.T, id int64, n int, code int, ago time.Duration) {
	t.Helper()
	var c *int
	if code != 0 {
		c = &code
	}
	_, err := e.st.Pool().Exec(context.Background(), `INSERT INTO webhook_attempts (delivery_id, attempt, status_code, latency_ms, error, created_at)
VALUES ($1, $2, $3, 37, CASE WHEN $3::int BETWEEN 200 AND 299 THEN NULL ELSE 'HTTP 503: try later' END, now() - make_interval(secs => $4))`,
		id, n, c, ago.Seconds())
	require.NoError(t, err)
}

// The operator's view of the subscribers, as Svix and Convoy users know
// it: each endpoint of the file by name with its state; a signed test
// event; the attempts, newest first, by endpoint, event or student; an
// endpoint disabled by 410 Gone enabled again and its deliveries replayed.
// No URL is printed with its query or credentials.
func TestWebhooksEndpointsPingLogEnable(t *testing.T) {
	e := newStudentsEnv(t)
	ctx := context.Background()
	rc := newHookReceiver(t, http.StatusNoContent)
	broken := newHookReceiver(t, http.StatusInternalServerError)
	crm := rc.srv.URL + "/hook?token=TOPSECRET"
	const gone = "https://gone.example.com/x"
	file := filepath.Join(t.TempDir(), "endpoints.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`
- name: crm
  url: `+crm+`
  secrets: [`+oldSecret+`, `+newSecret+`]
  events: [swipe.recorded]
  allow_private: true
- url: `+gone+`
  secret: `+oldSecret+`
  events: [swipe.recorded]
- name: broken
  url: `+broken.srv.URL+`/in
  secret: `+oldSecret+`
  events: [swipe.recorded]
  allow_private: true
`), 0o600))

	now := time.Now()
	okOutbox, okID := failedDelivery(t, e, crm, "parked", now.Add(-3*time.Hour))
	_, err := e.st.Pool().Exec(ctx, `UPDATE webhook_deliveries SET status = 'succeeded', updated_at = now() - interval '2 hours' WHERE id = $1`, okID)
	require.NoError(t, err)
	e.attempt(t, okID, 1, 503, 150*time.Minute)
	e.attempt(t, okID, 2, 200, 2*time.Hour)
	failOutbox, failID := failedDelivery(t, e, crm, "parked", now.Add(-time.Hour))
	_, err = e.st.Pool().Exec(ctx, `UPDATE webhook_deliveries SET status = 'pending' WHERE id = $1`, failID)
	require.NoError(t, err)
	e.attempt(t, failID, 1, 503, 30*time.Minute)
	e.attempt(t, failID, 2, 0, 10*time.Minute)
	_, goneID := failedDelivery(t, e, gone, "disabled", now.Add(-time.Hour))
	e.attempt(t, goneID, 1, 410, 20*time.Minute)
	failedDelivery(t, e, "https://removed.example.org/h?token=OLD", "parked", now.Add(-time.Hour))

	code, out, errOut := e.runWithEndpoints(t, file, "webhooks", "endpoints")
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 5, out)
	assert.Regexp(t, `^NAME\s+URL\s+STATE\s+LAST SUCCESS\s+FAILING SINCE\s+PENDING\s+PARKED/DISABLED`, lines[0])
	assert.Regexp(t, `^crm\s+`+rc.srv.URL+`/hook\s+failing\s+2h0m0s ago\s+30m0s ago\s+1\s+0$`, lines[1])
	assert.Regexp(t, `^gone\.example\.com\s+https://gone\.example\.com/x\s+disabled \(410, \S+ ago\)\s+-\s+20m0s ago\s+0\s+1$`, lines[2])
	assert.Regexp(t, `^broken\s+\S+/in\s+idle\s+-\s+-\s+0\s+0$`, lines[3])
	assert.Regexp(t, `^\(unconfigured\)\s+https://removed\.example\.org/h\s+idle\s+-\s+-\s+0\s+1$`, lines[4])
	assert.NotContains(t, out, "TOPSECRET")
	assert.NotContains(t, out, "OLD")

	// ping: a signed test event, verified by either secret alone.
	code, out, errOut = e.runWithEndpoints(t, file, "webhooks", "ping", "crm")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `^ping crm \(`+rc.srv.URL+`/hook\): delivered, HTTP 204 in \S+; webhook-id msg_ping_\w+, signed with 2 secret\(s\)`, out)
	got := rc.requests()
	require.Len(t, got, 1)
	assert.True(t, standardVerify(oldSecret, got[0].header, got[0].body), "the old secret verifies the ping")
	assert.True(t, standardVerify(newSecret, got[0].header, got[0].body), "the new secret verifies the ping")
	assert.Len(t, strings.Fields(got[0].header.Get("webhook-signature")), 2)
	var msg struct {
		ID, Event string
		Data      map[string]string
	}
	require.NoError(t, json.Unmarshal(got[0].body, &msg))
	assert.Equal(t, "webhook.ping", msg.Event)
	assert.Equal(t, got[0].header.Get("webhook-id"), msg.ID)
	assert.Equal(t, "crm", msg.Data["endpoint"])
	code, _, errOut = e.runWithEndpoints(t, file, "webhooks", "ping", crm)
	require.Equal(t, 0, code, "by URL too: %s", errOut)
	require.Len(t, rc.requests(), 2)
	code, out, errOut = e.runWithEndpoints(t, file, "webhooks", "ping", "broken")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "failed, HTTP 500")
	assert.Contains(t, errOut, "ping broken not delivered: HTTP 500")
	code, _, errOut = e.runWithEndpoints(t, file, "webhooks", "ping", "nope")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `no endpoint "nope" in WEBHOOK_ENDPOINTS_FILE; its endpoints: crm, gone.example.com, broken`)

	// log: newest first, with status and latency; by endpoint, event, student.
	code, out, errOut = e.runWithEndpoints(t, file, "webhooks", "log")
	require.Equal(t, 0, code, errOut)
	lines = strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 6, out)
	assert.Regexp(t, `^TIME\s+ENDPOINT\s+EVENT\s+WEBHOOK-ID\s+DELIVERY\s+ATTEMPT\s+STATUS\s+LATENCY\s+ERROR`, lines[0])
	// Attempts in the order written (ids), newest first.
	assert.Regexp(t, `\s+gone\.example\.com\s+.*\s+1\s+410\s+37ms\s+HTTP 503: try later$`, lines[1])
	assert.Regexp(t, `\s+crm\s+`+strconv.FormatInt(failOutbox, 10)+`\s+msg_\S+\s+`+strconv.FormatInt(failID, 10)+` \(pending\)\s+2\s+-\s+37ms\s+HTTP 503: try later$`, lines[2])
	assert.Regexp(t, `\s+crm\s+`+strconv.FormatInt(okOutbox, 10)+`\s+.*\s+2\s+200\s+37ms\s+-$`, lines[4])
	assert.NotContains(t, out, "TOPSECRET")
	code, out, errOut = e.runWithEndpoints(t, file, "webhooks", "log", "crm", "--limit", "3")
	require.Equal(t, 0, code, errOut)
	assert.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 4)
	assert.NotContains(t, out, "gone.example.com")
	code, out, errOut = e.runWithEndpoints(t, file, "webhooks", "log", "--event", strconv.FormatInt(okOutbox, 10))
	require.Equal(t, 0, code, errOut)
	assert.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 3)
	code, out, errOut = e.runWithEndpoints(t, file, "webhooks", "log", "--event", webhook.MessageID(failOutbox, crm))
	require.Equal(t, 0, code, errOut)
	assert.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 3)
	code, out, errOut = e.runWithEndpoints(t, file, "webhooks", "log", "--student", e.student)
	require.Equal(t, 0, code, errOut)
	assert.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 6)
	code, out, errOut = e.runWithEndpoints(t, file, "webhooks", "log", "--student", e.other)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "no webhook attempts\n", out)

	// enable: the 410 mark cleared; its disabled delivery replayed by endpoint.
	code, out, errOut = e.runWithEndpoints(t, file, "webhooks", "enable", "gone.example.com")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "endpoint gone.example.com enabled")
	assert.Contains(t, out, "1 of its deliveries were disabled with it; send them again with `matchctl webhooks replay --endpoint gone.example.com --since TIME`")
	code, out, _ = e.runWithEndpoints(t, file, "webhooks", "endpoints")
	require.Equal(t, 0, code)
	assert.NotContains(t, out, "disabled (")
	code, out, _ = e.runWithEndpoints(t, file, "webhooks", "enable", "gone.example.com")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "endpoint gone.example.com is not disabled")
	code, out, errOut = e.runWithEndpoints(t, file, "webhooks", "replay", "--endpoint", "gone.example.com", "--since", "24h")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "1 deliveries replayed", "only the endpoint's: the parked delivery to the removed URL stays")
	var status string
	require.NoError(t, e.st.Pool().QueryRow(ctx, `SELECT status FROM webhook_deliveries WHERE id = $1`, goneID).Scan(&status))
	assert.Equal(t, "pending", status)
	_, err = asynq.NewInspectorFromRedisClient(e.rdb).GetTaskInfo(tasks.QueueWebhooks, tasks.WebhookTaskID(
		mustOutbox(t, e, goneID), gone, 1))
	require.NoError(t, err)
}

func mustOutbox(t *testing.T, e *studentsEnv, deliveryID int64) (id int64) {
	t.Helper()
	require.NoError(t, e.st.Pool().QueryRow(context.Background(), `SELECT outbox_id FROM webhook_deliveries WHERE id = $1`, deliveryID).Scan(&id))
	return id
}

func TestWebhooksOpsUsage(t *testing.T) {
	e := newStudentsEnv(t)
	for _, args := range [][]string{
		{"webhooks", "endpoints", "x"},
		{"webhooks", "ping"},
		{"webhooks", "ping", "a", "b"},
		{"webhooks", "enable"},
		{"webhooks", "log", "a", "b"},
		{"webhooks", "log", "--event", "abc"},
		{"webhooks", "log", "--student", "not-a-uuid"},
		{"webhooks", "log", "--limit", "0"},
		{"webhooks", "failed", "--event", "1"},
		{"webhooks", "log", "--since", "1h"},
		{"webhooks", "replay", "1", "--endpoint", "crm"},
	} {
		code, _, errOut := e.run(t, args...)
		assert.Equal(t, 2, code, "%v: %s", args, errOut)
		assert.Contains(t, errOut, "usage", "%v", args)
	}
	code, _, errOut := e.run(t, "webhooks", "enable", "crm")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "WEBHOOK_ENDPOINTS_FILE lists none")
}
