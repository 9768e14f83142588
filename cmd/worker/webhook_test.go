package main

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/command"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/testutil"
	"github.com/collegematch/matching/internal/webhook"
)

// received is one request a receiver got.
type received struct {
	ID        string // webhook-id header
	BodyID    string
	OutboxID  int64
	Event     string
	Data      map[string]string
	At        time.Time
	Status    int
	Signed    bool // the signature verified
	Timestamp int64
	Header    http.Header
	Body      []byte
}

// receiver is a real HTTP subscriber on loopback. It checks every request
// with its own implementation of Standard Webhooks verification, and
// answers with respond (200 when nil); respond sees the request's 1-based
// number among those with the same webhook-id.
type receiver struct {
	srv     *httptest.Server
	secret  string
	respond func(w http.ResponseWriter, r *http.Request, nth int) int

	mu   sync.Mutex
	reqs []received
	seen map[string]int
}

func newReceiver(t *testing.T, respond func(w http.ResponseWriter, r *http.Request, nth int) int) *receiver {
	t.Helper()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	rc := &receiver{secret: "whsec_" + base64.StdEncoding.EncodeToString(key), respond: respond, seen: map[string]int{}}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

// verifySignature is written from the Standard Webhooks specification,
// independently of the service's signer: HMAC-SHA256 keyed with the
// base64-decoded part of the secret after "whsec_", over
// "<webhook-id>.<webhook-timestamp>.<raw body>", base64-encoded, compared
// in constant time with each space-separated "v1,<sig>" of the header.
func verifySignature(secret string, h http.Header, body []byte) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	ts, err := strconv.ParseInt(h.Get("webhook-timestamp"), 10, 64)
	if err != nil || time.Since(time.Unix(ts, 0)).Abs() > 5*time.Minute {
		return false
	}
	mac := hmac.New(sha256.New, key)
	_, _ = fmt.Fprintf(mac, "%s.%d.%s", h.Get("webhook-id"), ts, body)
	expected := mac.Sum(nil)
	for _, part := range strings.Split(h.Get("webhook-signature"), " ") {
		version, sig, ok := strings.Cut(part, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err == nil && hmac.Equal(got, expected) {
			return true
		}
	}
	return false
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	body, _ := io.ReadAll(r.Body)
	var msg struct {
		ID    string            `json:"id"`
		Event string            `json:"event"`
		Data  map[string]string `json:"data"`
	}
	_ = json.Unmarshal(body, &msg)
	id := r.Header.Get("webhook-id")
	var outboxID int64
	if parts := strings.Split(id, "_"); len(parts) == 3 {
		outboxID, _ = strconv.ParseInt(parts[1], 10, 64)
	}
	ts, _ := strconv.ParseInt(r.Header.Get("webhook-timestamp"), 10, 64)
	rc.mu.Lock()
	rc.seen[id]++
	nth := rc.seen[id]
	rc.mu.Unlock()
	status := http.StatusOK
	if rc.respond != nil {
		status = rc.respond(w, r, nth)
	} else {
		w.WriteHeader(status)
	}
	rc.mu.Lock()
	rc.reqs = append(rc.reqs, received{ID: id, BodyID: msg.ID, OutboxID: outboxID, Event: msg.Event, Data: msg.Data, At: at,
		Status: status, Signed: verifySignature(rc.secret, r.Header, body), Timestamp: ts, Header: r.Header.Clone(), Body: body})
	rc.mu.Unlock()
}

// arrived counts the messages (webhook-ids) that have reached the
// receiver, answered or not: requests lists a request only once answered.
func (rc *receiver) arrived() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.seen)
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.reqs)
}

// delivered maps each outbox id to the webhook-ids of its requests
// answered 2xx.
func (rc *receiver) delivered() map[int64][]string {
	out := map[int64][]string{}
	for _, r := range rc.requests() {
		if r.Status >= 200 && r.Status < 300 {
			out[r.OutboxID] = append(out[r.OutboxID], r.ID)
		}
	}
	return out
}

type endpointEntry struct {
	rc           *receiver
	path         string
	allowPrivate bool
}

func (e endpointEntry) url() string { return e.rc.srv.URL + e.path }

// endpointsFile writes a WEBHOOK_ENDPOINTS_FILE (YAML) for entries.
func endpointsFile(t *testing.T, entries ...endpointEntry) string {
	t.Helper()
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "- url: %s\n  secret: %s\n  events: [swipe.recorded]\n  allow_private: %v\n", e.url(), e.rc.secret, e.allowPrivate)
	}
	p := filepath.Join(t.TempDir(), "endpoints.yaml")
	require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o600))
	return p
}

// hookWorld is a database with schools and students, a Redis DB, and the
// API's write side routing to the endpoints.
type hookWorld struct {
	dbURL    string
	pool     *pgxpool.Pool
	db       *store.Store
	write    writeSide
	schools  []string
	students []string
	env      map[string]string
}

func newHookWorld(t *testing.T, nSchools, nStudents int, redisURL string, entries ...endpointEntry) *hookWorld {
	t.Helper()
	w := &hookWorld{dbURL: testutil.NewDBURL(t)}
	pool, err := store.Open(context.Background(), w.dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	w.pool, w.db = pool, store.New(pool)
	schools, students := seedWorld(t, w.db, nSchools, nStudents)
	for _, s := range schools {
		w.schools = append(w.schools, s.ID)
	}
	w.students = students
	var rdb redis.UniversalClient = testutil.NewRedis(t, testutil.RedisDBCmdWorker)
	if redisURL == "" {
		redisURL = testutil.RedisURLFor(t, testutil.RedisDBCmdWorker)
	} else {
		rdb = redisClient(t, redisURL)
	}
	file := endpointsFile(t, entries...)
	w.write = newWriteSide(t, w.db, rdb, testutil.Logger(t))
	w.env = map[string]string{"DATABASE_URL": w.dbURL, "REDIS_URL": redisURL, "OPS_ADDR": "127.0.0.1:0",
		"WEBHOOK_ENDPOINTS_FILE": file}
	return w
}

// swipe records swipe k of a student through the write side and returns
// its outbox id.
func (w *hookWorld) swipe(t testing.TB, student, k int) int64 {
	t.Helper()
	_, err := w.write.swipes.Record(context.Background(), command.SwipeInput{StudentID: w.students[student],
		SchoolID: w.schools[k%len(w.schools)], Direction: []string{"left", "right"}[k%2], ClientID: uuid.NewString()})
	require.NoError(t, err)
	var id int64
	require.NoError(t, w.pool.QueryRow(context.Background(),
		`SELECT max(id) FROM outbox WHERE topic = 'swipe.recorded' AND student_id = $1`, w.students[student]).Scan(&id))
	return id
}

type deliveryRow struct {
	ID        int64
	Status    string
	Attempts  int
	WebhookID string
	LastError string
}

func (w *hookWorld) delivery(t *testing.T, outboxID int64, url string) (deliveryRow, bool) {
	t.Helper()
	var d deliveryRow
	err := w.pool.QueryRow(context.Background(), `
SELECT id, status, attempts, webhook_id, coalesce(last_error, '') FROM webhook_deliveries
WHERE outbox_id = $1 AND endpoint_url = $2`, outboxID, url).Scan(&d.ID, &d.Status, &d.Attempts, &d.WebhookID, &d.LastError)
	return d, err == nil
}

type attemptRow struct {
	N       int
	Code    *int
	Latency int
	Error   *string
}

func (w *hookWorld) attempts(t *testing.T, deliveryID int64) []attemptRow {
	t.Helper()
	rows, err := w.pool.Query(context.Background(),
		`SELECT attempt, status_code, latency_ms, error FROM webhook_attempts WHERE delivery_id = $1 ORDER BY attempt`, deliveryID)
	require.NoError(t, err)
	defer rows.Close()
	var out []attemptRow
	for rows.Next() {
		var a attemptRow
		require.NoError(t, rows.Scan(&a.N, &a.Code, &a.Latency, &a.Error))
		out = append(out, a)
	}
	return out
}

func (w *hookWorld) waitStatus(t *testing.T, outboxID int64, url, status string, within time.Duration) deliveryRow {
	t.Helper()
	var d deliveryRow
	deadline := time.Now().Add(within)
	for {
		var ok bool
		d, ok = w.delivery(t, outboxID, url)
		if ok && d.Status == status {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery of event %d to %s never %s within %v (last: %+v, found: %v)", outboxID, url, status, within, d, ok)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The first attempt leaves within 5 s of the swipe, signed so that an
// independent verifier accepts it, with the documented body; a receiver
// that fails is retried on the schedule (about 5 s later), one that times
// out likewise, one that answers 429 with Retry-After is retried no sooner
// than asked; each retry carries the same webhook-id; a loopback receiver
// not marked allow_private is never contacted; every attempt is a row.
func TestWebhookDeliveryRetriesAndSignatures(t *testing.T) {
	ok := newReceiver(t, nil)
	flaky := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, nth int) int {
		code := map[bool]int{true: 500, false: 200}[nth <= 1]
		w.WriteHeader(code)
		return code
	})
	slow := newReceiver(t, func(w http.ResponseWriter, r *http.Request, nth int) int {
		if nth == 1 {
			select { // longer than the attempt timeout
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return 0
		}
		w.WriteHeader(204)
		return 204
	})
	limited := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, nth int) int {
		if nth == 1 {
			w.Header().Set("Retry-After", "9")
			w.WriteHeader(429)
			return 429
		}
		w.WriteHeader(200)
		return 200
	})
	private := newReceiver(t, nil)
	eps := []endpointEntry{{ok, "/a", true}, {flaky, "/b", true}, {slow, "/c", true}, {limited, "/d", true}, {private, "/e", false}}
	w := newHookWorld(t, 40, 1, "", eps...)
	startWith(t, w.env, options{sender: senderTimeout(time.Second)})

	swipedAt := time.Now()
	outboxID := w.swipe(t, 0, 3)

	// Every subscribed endpoint gets its first attempt within 5 s.
	for _, e := range eps[:4] {
		require.Eventually(t, func() bool { return len(e.rc.requests()) > 0 }, 5*time.Second, 10*time.Millisecond, e.url())
		assert.Less(t, e.rc.requests()[0].At.Sub(swipedAt), 5*time.Second)
	}
	d := w.waitStatus(t, outboxID, eps[0].url(), domain.DeliverySucceeded, 5*time.Second)
	assert.Equal(t, 1, d.Attempts)

	first := ok.requests()[0]
	assert.True(t, first.Signed, "the signature verifies independently")
	assert.Equal(t, first.ID, first.BodyID, "body id is the webhook-id")
	assert.Equal(t, webhook.MessageID(outboxID, eps[0].url()), first.ID)
	assert.Equal(t, "swipe.recorded", first.Event)
	assert.Equal(t, w.students[0], first.Data["student_id"])
	assert.Equal(t, w.schools[3], first.Data["school_id"])
	assert.Equal(t, "right", first.Data["direction"])
	ts, err := time.Parse(time.RFC3339Nano, first.Data["timestamp"])
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(first.Data["timestamp"], "Z"), "UTC")
	assert.WithinDuration(t, swipedAt, ts, 2*time.Second)
	assert.Len(t, first.Data, 4)

	// 500 then 200: the retry about 5 s (+-20 %) after the first attempt.
	w.waitStatus(t, outboxID, eps[1].url(), domain.DeliverySucceeded, 12*time.Second)
	fr := flaky.requests()
	require.Len(t, fr, 2)
	gap := fr[1].At.Sub(fr[0].At)
	// At most 6 s, rounded up to a whole second, plus up to a second until
	// the queue's forwarder moves the due retry.
	assert.GreaterOrEqual(t, gap, 4*time.Second)
	assert.Less(t, gap, 8500*time.Millisecond)
	assert.Equal(t, fr[0].ID, fr[1].ID, "same webhook-id on the retry")
	assert.True(t, fr[0].Signed && fr[1].Signed)
	assert.NotEqual(t, ok.requests()[0].ID, fr[0].ID, "webhook-ids differ per endpoint")

	// A timeout (1 s here, 10 s in production) is retried the same way.
	sd := w.waitStatus(t, outboxID, eps[2].url(), domain.DeliverySucceeded, 12*time.Second)
	at := w.attempts(t, sd.ID)
	require.Len(t, at, 2)
	require.NotNil(t, at[0].Error)
	assert.Contains(t, *at[0].Error, "timeout")
	assert.Nil(t, at[0].Code)
	assert.Equal(t, 204, *at[1].Code)
	assert.Nil(t, at[1].Error)

	// 429 with Retry-After: 9 is retried after 9 s, not after the 5 s step.
	w.waitStatus(t, outboxID, eps[3].url(), domain.DeliverySucceeded, 15*time.Second)
	lr := limited.requests()
	require.Len(t, lr, 2)
	assert.GreaterOrEqual(t, lr[1].At.Sub(lr[0].At), 9*time.Second)
	assert.Equal(t, lr[0].ID, lr[1].ID)

	// The loopback endpoint without allow_private: refused, never contacted.
	pd, found := w.delivery(t, outboxID, eps[4].url())
	require.True(t, found)
	assert.Equal(t, domain.DeliveryPending, pd.Status, "refusals are retried like any failure")
	assert.Contains(t, pd.LastError, "destination refused")
	assert.Contains(t, pd.LastError, "loopback")
	assert.Empty(t, private.requests())
	pa := w.attempts(t, pd.ID)
	require.NotEmpty(t, pa)
	assert.Nil(t, pa[0].Code)

	// Every attempt was recorded, with latency and status.
	fa := w.attempts(t, w.waitStatus(t, outboxID, eps[1].url(), domain.DeliverySucceeded, time.Second).ID)
	require.Len(t, fa, 2)
	assert.Equal(t, 500, *fa[0].Code)
	assert.Equal(t, "HTTP 500", *fa[0].Error)
	assert.Equal(t, 200, *fa[1].Code)
	assert.Equal(t, []int{1, 2}, []int{fa[0].N, fa[1].N})
}

func senderTimeout(d time.Duration) webhook.Config { return webhook.Config{Timeout: d} }

func redisClient(t testing.TB, url string) redis.UniversalClient {
	t.Helper()
	rdb, _, err := cache.Open(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// A 410 disables the endpoint: its pending deliveries and every later one
// are disabled without an attempt, and `matchctl webhooks failed` lists
// them. A replay (what matchctl webhooks replay does) re-enables it and
// sends the event again with the same webhook-id.
func TestWebhookGoneDisablesTheEndpointUntilReplayed(t *testing.T) {
	var mu sync.Mutex
	gone := true
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ int) int {
		mu.Lock()
		defer mu.Unlock()
		code := map[bool]int{true: 410, false: 200}[gone]
		w.WriteHeader(code)
		return code
	})
	other := newReceiver(t, nil)
	eps := []endpointEntry{{rc, "/gone", true}, {other, "/fine", true}}
	w := newHookWorld(t, 40, 1, "", eps...)
	startWith(t, w.env, options{})

	first := w.swipe(t, 0, 1)
	d := w.waitStatus(t, first, eps[0].url(), domain.DeliveryDisabled, 5*time.Second)
	assert.Equal(t, 1, d.Attempts)
	assert.Len(t, rc.requests(), 1)

	second := w.swipe(t, 0, 2)
	d2 := w.waitStatus(t, second, eps[0].url(), domain.DeliveryDisabled, 5*time.Second)
	assert.Zero(t, d2.Attempts, "a disabled endpoint is not contacted")
	assert.Contains(t, d2.LastError, "410")
	assert.Len(t, rc.requests(), 1)
	w.waitStatus(t, second, eps[1].url(), domain.DeliverySucceeded, 5*time.Second)

	failed, err := w.db.FailedWebhookDeliveries(context.Background(), 10)
	require.NoError(t, err)
	require.Len(t, failed, 2)

	// The subscriber is fixed; the operator replays the first delivery.
	mu.Lock()
	gone = false
	mu.Unlock()
	rd, err := w.db.ReplayWebhookDelivery(context.Background(), d.ID)
	require.NoError(t, err)
	replayTask(t, w.env["REDIS_URL"], rd)
	w.waitStatus(t, first, eps[0].url(), domain.DeliverySucceeded, 5*time.Second)
	got := rc.requests()
	require.Len(t, got, 2)
	assert.Equal(t, got[0].ID, got[1].ID, "a replay carries the same webhook-id")
	assert.True(t, got[1].Signed)

	// The endpoint is enabled again: the second delivery replays too, and a
	// new event goes straight through.
	rd2, err := w.db.ReplayWebhookDelivery(context.Background(), d2.ID)
	require.NoError(t, err)
	replayTask(t, w.env["REDIS_URL"], rd2)
	w.waitStatus(t, second, eps[0].url(), domain.DeliverySucceeded, 5*time.Second)
	third := w.swipe(t, 0, 3)
	w.waitStatus(t, third, eps[0].url(), domain.DeliverySucceeded, 5*time.Second)
}

func replayTask(t *testing.T, redisURL string, d store.WebhookDelivery) {
	t.Helper()
	q := handover.NewClient(redisClient(t, redisURL), handover.NewQueuer())
	queued, err := q.Queue(context.Background(), tasks.WebhookJob(d.OutboxID, d.Endpoint, d.Replays, nil))
	require.NoError(t, err)
	require.Equal(t, 1, queued, "a replay is a new task")
}

// A receiver that always fails: 9 attempts on the schedule (shortened
// here), then the delivery is parked.
func TestWebhookParkedAfterTheLastAttempt(t *testing.T) {
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ int) int {
		http.Error(w, "down for maintenance", http.StatusBadGateway)
		return 502
	})
	eps := []endpointEntry{{rc, "/down", true}}
	w := newHookWorld(t, 20, 1, "", eps...)
	startWith(t, w.env, options{delayedCheck: 100 * time.Millisecond,
		webhooks: webhook.RetryConfig{Schedule: []time.Duration{50 * time.Millisecond}}})
	id := w.swipe(t, 0, 1)
	d := w.waitStatus(t, id, eps[0].url(), domain.DeliveryParked, 20*time.Second)
	assert.Equal(t, 9, d.Attempts)
	assert.Equal(t, `HTTP 502: "down for maintenance"`, d.LastError)
	reqs := rc.requests()
	require.Len(t, reqs, 9)
	for _, r := range reqs {
		assert.Equal(t, reqs[0].ID, r.ID)
	}
	assert.Len(t, w.attempts(t, d.ID), 9)
}

// hangingWorld is 4 students and 2 endpoints whose receivers never answer
// the first request of each message (until the client goes away) and
// answer 200 to the others.
func hangingWorld(t *testing.T) ([]endpointEntry, *hookWorld) {
	t.Helper()
	hang := func(w http.ResponseWriter, r *http.Request, nth int) int {
		if nth == 1 {
			<-r.Context().Done()
			return 0
		}
		w.WriteHeader(200)
		return 200
	}
	eps := []endpointEntry{{newReceiver(t, hang), "/a", true}, {newReceiver(t, hang), "/b", true}}
	return eps, newHookWorld(t, 40, 4, "", eps...)
}

// The worker is stopped while receivers hold requests open: the
// interrupted deliveries run again after a restart, and every event
// reaches every endpoint with one webhook-id per (event, endpoint).
func TestWebhookWorkerKilledMidDelivery(t *testing.T) {
	eps, w := hangingWorld(t)
	a, b := eps[0].rc, eps[1].rc
	opt := options{shutdownTimeout: 300 * time.Millisecond}
	w1 := startWith(t, w.env, opt)
	var ids []int64
	for i := range 12 {
		ids = append(ids, w.swipe(t, i%4, i))
	}
	require.Eventually(t, func() bool { return a.arrived() == len(ids) && b.arrived() == len(ids) }, 10*time.Second,
		10*time.Millisecond, "every first attempt is in flight")
	w1.stop(t, 10*time.Second) // mid-delivery: every first request is open
	startWith(t, w.env, opt)
	for _, id := range ids {
		for _, e := range eps {
			w.waitStatus(t, id, e.url(), domain.DeliverySucceeded, 30*time.Second)
		}
	}
	checkAtLeastOnce(t, ids, eps)
}

// Swipes queued offline and pushed in one sync (their learning batched into
// one task) reach every endpoint like any other swipe, each with the time
// it happened on the device; a replayed push delivers nothing twice, and
// interactions other than swipes produce no event.
func TestWebhookDeliversSyncedSwipes(t *testing.T) {
	a, b := newReceiver(t, nil), newReceiver(t, nil)
	eps := []endpointEntry{{a, "/a", true}, {b, "/b", true}}
	w := newHookWorld(t, 40, 1, "", eps...)
	startWith(t, w.env, options{})

	at := time.Now().UTC().Add(-10 * time.Minute).Truncate(time.Millisecond)
	var changes []command.Change
	for i := range 30 {
		changes = append(changes, command.Change{ID: uuid.NewString(), Type: "swipe", SchoolID: w.schools[i],
			Direction: []string{"left", "right"}[i%2], OccurredAt: at.Add(time.Duration(i) * time.Second).Format(time.RFC3339Nano)})
	}
	changes = append(changes, command.Change{ID: uuid.NewString(), Type: "swipe", SchoolID: w.schools[35], Direction: "right",
		InteractionType: "detail_view", OccurredAt: at.Format(time.RFC3339Nano)})
	ctx := context.Background()
	res, err := w.write.sync.Push(ctx, w.students[0], changes, nil)
	require.NoError(t, err)
	require.Len(t, res.Accepted, 31)

	rows, err := w.pool.Query(ctx, `SELECT id FROM outbox WHERE topic = 'swipe.recorded' ORDER BY id`)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	require.Len(t, ids, 30, "one event per counted swipe")
	require.Eventually(t, func() bool { return len(a.delivered()) == 30 && len(b.delivered()) == 30 },
		20*time.Second, 20*time.Millisecond, "a: %d, b: %d", len(a.delivered()), len(b.delivered()))

	res, err = w.write.sync.Push(ctx, w.students[0], changes, nil)
	require.NoError(t, err)
	require.Len(t, res.Duplicates, 31)
	time.Sleep(500 * time.Millisecond) // room for a wrongly queued delivery
	checkAtLeastOnce(t, ids, eps)
	when := map[string]bool{}
	for _, r := range a.requests() {
		assert.Equal(t, w.students[0], r.Data["student_id"])
		when[r.Data["timestamp"]] = true
	}
	assert.Len(t, a.requests(), 30, "nothing delivered twice")
	for i := range 30 {
		assert.True(t, when[at.Add(time.Duration(i)*time.Second).Format("2006-01-02T15:04:05.000Z")], "swipe %d's device time", i)
	}
}

// Two tasks for one delivery (a task an older build queued in the default
// queue beside the current one, or one the monitor queued for a task that
// was only late) never attempt it at once: each attempt is claimed in the
// delivery's row, so the receiver sees each attempt once and the schedule
// counts it once.
func TestWebhookDuplicateTasksMakeOneAttemptAtATime(t *testing.T) {
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, nth int) int {
		time.Sleep(100 * time.Millisecond) // both tasks are running meanwhile
		code := map[bool]int{true: 500, false: 200}[nth == 1]
		w.WriteHeader(code)
		return code
	})
	eps := []endpointEntry{{rc, "/dup", true}}
	w := newHookWorld(t, 20, 2, "", eps...)
	q := asynq.NewClientFromRedisClient(redisClient(t, w.env["REDIS_URL"]))
	var ids []int64
	for i := range 6 {
		id := w.swipe(t, i%2, i)
		ids = append(ids, id)
		job := tasks.WebhookJob(id, eps[0].url(), 0, nil)
		_, err := q.Enqueue(asynq.NewTask(job.Type, job.Payload), asynq.Queue(tasks.QueueDefault), asynq.TaskID(job.ID))
		require.NoError(t, err, "the same id in another queue is another task")
	}
	startWith(t, w.env, options{})
	for _, id := range ids {
		d := w.waitStatus(t, id, eps[0].url(), domain.DeliverySucceeded, 15*time.Second)
		assert.Equal(t, 2, d.Attempts, "event %d: a failure and a success, each counted once", id)
		assert.Len(t, w.attempts(t, d.ID), 2)
	}
	time.Sleep(300 * time.Millisecond)
	perEvent := map[int64][]time.Time{}
	for _, r := range rc.requests() {
		perEvent[r.OutboxID] = append(perEvent[r.OutboxID], r.At)
	}
	for _, id := range ids {
		at := perEvent[id]
		require.Len(t, at, 2, "event %d: one request per attempt", id)
		assert.GreaterOrEqual(t, at[1].Sub(at[0]), 3*time.Second, "event %d: the retry waited for the schedule (5 s +-20 %%)", id)
	}
}

// The API writes no delivery and queues no webhook task: a swipe's and a
// sync push's events wait, unpublished, for the worker's relay, which
// writes their deliveries and queues their first attempts.
func TestWebhookDeliveriesAreTheRelays(t *testing.T) {
	rc := newReceiver(t, nil)
	eps := []endpointEntry{{rc, "/r", true}}
	w := newHookWorld(t, 20, 1, "", eps...)
	ctx := context.Background()
	_, err := w.write.swipes.Record(ctx, command.SwipeInput{StudentID: w.students[0], SchoolID: w.schools[0], Direction: "right",
		ClientID: uuid.NewString()})
	require.NoError(t, err)
	res, err := w.write.sync.Push(ctx, w.students[0], []command.Change{
		{ID: uuid.NewString(), Type: "swipe", SchoolID: w.schools[1], Direction: "left", OccurredAt: time.Now().UTC().Format(time.RFC3339)},
		{ID: uuid.NewString(), Type: "swipe", SchoolID: w.schools[2], Direction: "right", OccurredAt: time.Now().UTC().Format(time.RFC3339)},
	}, nil)
	require.NoError(t, err)
	require.Len(t, res.Accepted, 2)

	var unpublished, deliveries int
	require.NoError(t, w.pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE published_at IS NULL AND topic = 'swipe.recorded'`).
		Scan(&unpublished))
	assert.Equal(t, 3, unpublished)
	require.NoError(t, w.pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries`).Scan(&deliveries))
	assert.Zero(t, deliveries)
	insp := asynq.NewInspectorFromRedisClient(redisClient(t, w.env["REDIS_URL"]))
	hooks, err := insp.ListPendingTasks(tasks.QueueWebhooks)
	if !errors.Is(err, asynq.ErrQueueNotFound) {
		require.NoError(t, err)
	}
	assert.Empty(t, hooks, "no webhook task from the API")

	startWith(t, w.env, options{})
	require.Eventually(t, func() bool { return len(rc.delivered()) == 3 }, 10*time.Second, 20*time.Millisecond,
		"delivered %d of 3", len(rc.delivered()))
}

// checkAtLeastOnce requires every event delivered (2xx) to every endpoint,
// and every request of one event to one endpoint to carry one webhook-id.
func checkAtLeastOnce(t *testing.T, ids []int64, eps []endpointEntry) {
	t.Helper()
	for _, e := range eps {
		perEvent := map[int64]map[string]bool{}
		for _, r := range e.rc.requests() {
			if perEvent[r.OutboxID] == nil {
				perEvent[r.OutboxID] = map[string]bool{}
			}
			perEvent[r.OutboxID][r.ID] = true
			assert.True(t, r.Signed, "request %s to %s verifies", r.ID, e.url())
			assert.Equal(t, r.ID, r.BodyID)
		}
		delivered := e.rc.delivered()
		dups := 0
		for _, id := range ids {
			assert.NotEmpty(t, delivered[id], "event %d reached %s", id, e.url())
			assert.Len(t, perEvent[id], 1, "event %d to %s: one webhook-id", id, e.url())
			dups += len(delivered[id]) - 1
		}
		t.Logf("%s: %d requests, %d events, %d delivered twice or more", e.url(), len(e.rc.requests()), len(ids), dups)
	}
}

// proxy is a TCP proxy in front of Redis whose connections can be cut and
// refused for a while, as a Redis restart looks to its clients.
type proxy struct {
	t      *testing.T
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	p := &proxy{t: t, target: target, conns: map[net.Conn]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(func() { p.down(); p.wg.Wait() })
	return p
}

func (p *proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[up] = true, true
			p.mu.Unlock()
			pipe := func(dst, src net.Conn) {
				_, _ = io.Copy(dst, src)
				_ = dst.Close()
				_ = src.Close()
			}
			go pipe(up, c)
			go pipe(c, up)
		}
	})
}

// down closes the listener and every connection.
func (p *proxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// up listens again on the same address.
func (p *proxy) up() {
	var (
		ln  net.Listener
		err error
	)
	for range 50 {
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(p.t, err)
	p.serve(ln)
}

// Redis restarts while deliveries are queued and running: its clients see
// every connection cut and refused for a while (a proxy in front of the
// test's Redis), and it comes back empty, as a Redis that keeps nothing on
// disk does, so every queued, scheduled and running webhook task is gone.
// Swipes keep coming meanwhile. Every event still reaches every endpoint at
// least once, from the delivery rows in PostgreSQL, and duplicates carry
// the same webhook-id.
func TestWebhookRedisRestartMidBacklog(t *testing.T) {
	slow := func(w http.ResponseWriter, _ *http.Request, _ int) int {
		time.Sleep(300 * time.Millisecond)
		w.WriteHeader(200)
		return 200
	}
	a, b := newReceiver(t, slow), newReceiver(t, slow)
	eps := []endpointEntry{{a, "/a", true}, {b, "/b", true}}
	target := redisAddr(t)
	p := newProxy(t, target)
	direct := testutil.NewRedis(t, testutil.RedisDBCmdWorker) // flushed now and at the end
	proxied := fmt.Sprintf("redis://%s/%d", p.addr, testutil.RedisDBCmdWorker)
	w := newHookWorld(t, 60, 6, proxied, eps...)
	// Overdue deliveries are looked for every 200 ms, and queued again once
	// their task is a second late (production: every 10 s, a minute late);
	// a new delivery is leased to its first attempt for 2 s (production 30 s).
	// A task whose end Redis did not record (it was away) stays active in
	// the queue until the queue recovery finds its lease over: 30 s after it
	// was taken, and here a second more (production: 5 s more, looked for
	// every 5 s).
	startWith(t, w.env, options{monitor: webhook.MonitorConfig{Interval: 200 * time.Millisecond, Overdue: time.Second},
		relay:    webhook.RelayConfig{FirstLease: 2 * time.Second},
		recovery: tasks.RecoveryConfig{Interval: 200 * time.Millisecond, Grace: time.Second}})

	var ids []int64
	for i := range 150 {
		ids = append(ids, w.swipe(t, i%6, i))
	}
	require.Eventually(t, func() bool { return len(a.delivered()) > 10 }, 10*time.Second, 5*time.Millisecond)
	p.down()
	require.NoError(t, direct.FlushDB(context.Background()).Err(), "Redis comes back empty")
	before := len(a.delivered())
	require.Less(t, before, 150, "the restart must hit a backlog")
	for i := 150; i < 200; i++ { // written while Redis is away: the relay hands them over later
		ids = append(ids, w.swipe(t, i%6, i))
	}
	time.Sleep(2 * time.Second)
	p.up()
	for i := 200; i < 250; i++ {
		ids = append(ids, w.swipe(t, i%6, i))
	}
	if !assert.Eventually(t, func() bool {
		return len(a.delivered()) == len(ids) && len(b.delivered()) == len(ids)
	}, 60*time.Second, 50*time.Millisecond) {
		t.Fatalf("delivered to a: %d, to b: %d of %d events", len(a.delivered()), len(b.delivered()), len(ids))
	}
	t.Logf("%d of the first 150 events had reached a when Redis went away", before)
	checkAtLeastOnce(t, ids, eps)
}

func redisAddr(t *testing.T) string {
	t.Helper()
	u := testutil.RedisURLFor(t, 0)
	rest := strings.TrimPrefix(strings.TrimPrefix(u, "redis://"), "rediss://")
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		rest = rest[at+1:]
	}
	host, _, _ := strings.Cut(rest, "/")
	return host
}

// An endpoint listing two secrets while one is rolled: a delivery by the
// running worker carries a signature for each, and a subscriber that knows
// either secret alone verifies it; the attempt is counted under the
// endpoint's name, never its URL.
func TestWebhookDeliverySignedWithEverySecret(t *testing.T) {
	rc := newReceiver(t, nil)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	newSecret := "whsec_" + base64.StdEncoding.EncodeToString(key)
	ep := endpointEntry{rc: rc, path: "/hook?token=TOPSECRET", allowPrivate: true}
	w := newHookWorld(t, 40, 1, "", ep)
	file := filepath.Join(t.TempDir(), "endpoints.yaml")
	require.NoError(t, os.WriteFile(file, []byte("- name: crm\n  url: "+ep.url()+"\n  secrets: ["+rc.secret+", "+newSecret+
		"]\n  events: [swipe.recorded]\n  allow_private: true\n"), 0o600))
	w.env["WEBHOOK_ENDPOINTS_FILE"] = file
	wk := startWith(t, w.env, options{})

	id := w.swipe(t, 0, 1)
	w.waitStatus(t, id, ep.url(), domain.DeliverySucceeded, 5*time.Second)
	got := rc.requests()
	require.Len(t, got, 1)
	sigs := strings.Fields(got[0].Header.Get("webhook-signature"))
	require.Len(t, sigs, 2, "one v1 signature per secret, space-separated")
	assert.True(t, verifySignature(rc.secret, got[0].Header, got[0].Body), "the old secret alone verifies it")
	assert.True(t, verifySignature(newSecret, got[0].Header, got[0].Body), "the new secret alone verifies it")
	key[0] ^= 1
	assert.False(t, verifySignature("whsec_"+base64.StdEncoding.EncodeToString(key), got[0].Header, got[0].Body), "another secret does not")

	_, body := get(t, "http://"+wk.ops+"/metrics")
	assert.Contains(t, body, `matching_webhook_attempts_total{endpoint="crm",result="delivered"} 1`)
	assert.NotContains(t, body, "TOPSECRET")
	assert.NotContains(t, body, rc.srv.URL)
}
