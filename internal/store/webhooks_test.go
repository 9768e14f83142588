package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
)

// addDelivery writes a pending delivery of event id to
// https://a.example/h (webhook-id "m"), due now.
func addDelivery(t *testing.T, db *store.Store, id int64) {
	t.Helper()
	_, err := db.Pool().Exec(context.Background(), `
INSERT INTO webhook_deliveries (outbox_id, endpoint_url, webhook_id, event, next_attempt_at)
VALUES ($1, 'https://a.example/h', 'm', 'swipe.recorded', now())`, id)
	require.NoError(t, err)
}

// oneDelivery is a database with one event and its pending delivery to
// https://a.example/h (webhook-id "m").
func oneDelivery(t *testing.T) (*store.Store, []int64) {
	t.Helper()
	db := store.New(testutil.NewDB(t))
	ids := insertEvents(t, db, uuid.NewString(), "swipe.recorded")
	addDelivery(t, db, ids[0])
	return db, ids
}

// A second task begins a delivery the first has claimed: it finds it
// leased; a delivery not yet due is not claimed; an ended one is returned
// as it is. (Concurrent claims: TestWebhookDuplicateTasksMakeOneAttemptAtATime.)
func TestBeginWebhookDeliveryClaimsOnce(t *testing.T) {
	ctx := context.Background()
	db, ids := oneDelivery(t)

	first, err := db.BeginWebhookDelivery(ctx, domain.DeliveryKey{OutboxID: ids[0], Endpoint: "https://a.example/h", MessageID: "m"})
	require.NoError(t, err)
	assert.True(t, first.Claimed)
	assert.Equal(t, "swipe.recorded", first.Event.Topic)
	second, err := db.BeginWebhookDelivery(ctx, domain.DeliveryKey{OutboxID: ids[0], Endpoint: "https://a.example/h", MessageID: "m"})
	require.NoError(t, err)
	assert.False(t, second.Claimed, "leased to the first")
	assert.Equal(t, first.ID, second.ID)
	assert.WithinDuration(t, time.Now().Add(time.Minute), second.NextAttemptAt, 10*time.Second)

	// Recorded as failed, due in 5 s: not claimed before then.
	require.NoError(t, db.RecordWebhookAttempt(ctx, first.ID, domain.WebhookAttempt{StatusCode: 500, Error: "HTTP 500"}, "pending",
		time.Now().Add(5*time.Second), 0))
	third, err := db.BeginWebhookDelivery(ctx, domain.DeliveryKey{OutboxID: ids[0], Endpoint: "https://a.example/h", MessageID: "m"})
	require.NoError(t, err)
	assert.False(t, third.Claimed)
	assert.Equal(t, 1, third.Attempts)

	// Due: claimed. Succeeded: returned, not claimed.
	_, err = db.Pool().Exec(ctx, `UPDATE webhook_deliveries SET next_attempt_at = now() WHERE id = $1`, first.ID)
	require.NoError(t, err)
	fourth, err := db.BeginWebhookDelivery(ctx, domain.DeliveryKey{OutboxID: ids[0], Endpoint: "https://a.example/h", MessageID: "m"})
	require.NoError(t, err)
	assert.True(t, fourth.Claimed)
	require.NoError(t, db.RecordWebhookAttempt(ctx, first.ID, domain.WebhookAttempt{StatusCode: 200}, "succeeded", time.Time{}, 0))
	fifth, err := db.BeginWebhookDelivery(ctx, domain.DeliveryKey{OutboxID: ids[0], Endpoint: "https://a.example/h", MessageID: "m"})
	require.NoError(t, err)
	assert.False(t, fifth.Claimed)
	assert.Equal(t, "succeeded", fifth.Status)

	// A task of an older build, without a row: inserted, claimed.
	other, err := db.BeginWebhookDelivery(ctx, domain.DeliveryKey{OutboxID: ids[0], Endpoint: "https://b.example/h", MessageID: "m2"})
	require.NoError(t, err)
	assert.True(t, other.Claimed)
	assert.NotEqual(t, first.ID, other.ID)

	_, err = db.BeginWebhookDelivery(ctx, domain.DeliveryKey{OutboxID: ids[0] + 1000, Endpoint: "https://a.example/h", MessageID: "m"})
	require.Error(t, err, "the event is gone")
}

// Replaying a delivery that is being attempted keeps the attempt's claim: the
// replay's task waits for it instead of sending beside it. A replay of a
// parked delivery is due at once, with a fresh round.
func TestReplayKeepsAClaimedAttempt(t *testing.T) {
	ctx := context.Background()
	db := store.New(testutil.NewDB(t))
	ids := insertEvents(t, db, uuid.NewString(), "swipe.recorded", "swipe.recorded")
	for _, id := range ids {
		addDelivery(t, db, id)
	}
	busy, err := db.BeginWebhookDelivery(ctx, domain.DeliveryKey{OutboxID: ids[0], Endpoint: "https://a.example/h", MessageID: "m"})
	require.NoError(t, err)
	require.True(t, busy.Claimed)
	_, err = db.ReplayWebhookDelivery(ctx, busy.ID)
	require.NoError(t, err)
	again, err := db.BeginWebhookDelivery(ctx, domain.DeliveryKey{OutboxID: ids[0], Endpoint: "https://a.example/h", MessageID: "m"})
	require.NoError(t, err)
	assert.False(t, again.Claimed, "still claimed by the attempt in flight")

	parked, err := db.BeginWebhookDelivery(ctx, domain.DeliveryKey{OutboxID: ids[1], Endpoint: "https://a.example/h", MessageID: "m"})
	require.NoError(t, err)
	require.NoError(t, db.RecordWebhookAttempt(ctx, parked.ID, domain.WebhookAttempt{StatusCode: 502, Error: "HTTP 502"}, "parked", time.Time{}, 0))
	_, err = db.ReplayWebhookDelivery(ctx, parked.ID)
	require.NoError(t, err)
	replayed, err := db.BeginWebhookDelivery(ctx, domain.DeliveryKey{OutboxID: ids[1], Endpoint: "https://a.example/h", MessageID: "m"})
	require.NoError(t, err)
	assert.True(t, replayed.Claimed)
	assert.Equal(t, 1, replayed.Attempts)
	assert.Equal(t, 1, replayed.RoundStart, "a fresh round of 9 attempts")
}

// An operator replays a delivery while its last attempt of the old round
// is in flight: the failed attempt is recorded, but the delivery is not
// parked; it stays pending and due at once, for the replay's round.
func TestAttemptAfterAReplayKeepsTheReplay(t *testing.T) {
	ctx := context.Background()
	db, ids := oneDelivery(t)
	d, err := db.BeginWebhookDelivery(ctx, domain.DeliveryKey{OutboxID: ids[0], Endpoint: "https://a.example/h", MessageID: "m"})
	require.NoError(t, err)
	require.True(t, d.Claimed)
	_, err = db.ReplayWebhookDelivery(ctx, d.ID)
	require.NoError(t, err)
	require.NoError(t, db.RecordWebhookAttempt(ctx, d.ID, domain.WebhookAttempt{StatusCode: 502, Error: "HTTP 502"}, "parked",
		time.Time{}, d.Replays))
	after, err := db.BeginWebhookDelivery(ctx, domain.DeliveryKey{OutboxID: ids[0], Endpoint: "https://a.example/h", MessageID: "m"})
	require.NoError(t, err)
	assert.Equal(t, "pending", after.Status, "not parked: the replay stands")
	assert.True(t, after.Claimed, "due at once")
	assert.Equal(t, 1, after.Attempts)
	assert.Equal(t, 1, after.Replays)
}

// Many attempts are recorded in one statement, each exactly as
// RecordWebhookAttempt records one; a delivery whose row is not there is
// reported as not recorded.
func TestRecordWebhookAttemptsInOneStatement(t *testing.T) {
	ctx := context.Background()
	db := store.New(testutil.NewDB(t))
	ids := insertEvents(t, db, uuid.NewString(), "swipe.recorded", "swipe.recorded", "swipe.recorded", "swipe.recorded")
	var deliveries []int64
	for _, id := range ids {
		addDelivery(t, db, id)
		d, err := db.BeginWebhookDelivery(ctx, domain.DeliveryKey{OutboxID: id, Endpoint: "https://a.example/h", MessageID: "m"})
		require.NoError(t, err)
		deliveries = append(deliveries, d.ID)
	}
	// The third was replayed by an operator while its attempt was in flight.
	_, err := db.ReplayWebhookDelivery(ctx, deliveries[2])
	require.NoError(t, err)
	next := time.Now().Add(5 * time.Second).Truncate(time.Millisecond)
	done, err := db.RecordWebhookAttempts(ctx, []domain.AttemptRecord{
		{DeliveryID: deliveries[0], Attempt: domain.WebhookAttempt{StatusCode: 200, Latency: 12 * time.Millisecond}, Status: "succeeded"},
		{DeliveryID: deliveries[1], Attempt: domain.WebhookAttempt{StatusCode: 500, Error: "HTTP 500"}, Status: "pending", Next: next},
		{DeliveryID: deliveries[2], Attempt: domain.WebhookAttempt{Error: "timeout"}, Status: "parked"},
		{DeliveryID: deliveries[3] + 1000, Attempt: domain.WebhookAttempt{StatusCode: 200}, Status: "succeeded"},
	})
	require.NoError(t, err)
	assert.Equal(t, map[int64]bool{deliveries[0]: true, deliveries[1]: true, deliveries[2]: true}, done)

	type row struct {
		status   string
		attempts int
		next     *time.Time
		lastErr  *string
	}
	read := func(id int64) row {
		var r row
		require.NoError(t, db.Pool().QueryRow(ctx, `SELECT status, attempts, next_attempt_at, last_error FROM webhook_deliveries WHERE id = $1`, id).
			Scan(&r.status, &r.attempts, &r.next, &r.lastErr))
		return r
	}
	ok := read(deliveries[0])
	assert.Equal(t, "succeeded", ok.status)
	assert.Equal(t, 1, ok.attempts)
	retry := read(deliveries[1])
	assert.Equal(t, "pending", retry.status)
	require.NotNil(t, retry.next)
	assert.WithinDuration(t, next, *retry.next, time.Millisecond)
	assert.Equal(t, "HTTP 500", *retry.lastErr)
	replayed := read(deliveries[2])
	assert.Equal(t, "pending", replayed.status, "the replay's round goes on")
	assert.Equal(t, "pending", read(deliveries[3]).status, "not touched")

	var attempts []int
	rows, err := db.Pool().Query(ctx, `SELECT coalesce(status_code, 0) FROM webhook_attempts ORDER BY delivery_id`)
	require.NoError(t, err)
	for rows.Next() {
		var c int
		require.NoError(t, rows.Scan(&c))
		attempts = append(attempts, c)
	}
	assert.Equal(t, []int{200, 500, 0}, attempts)
}

// opsDelivery writes a delivery of event outboxID to url with status and its
// attempts, made at the given times with the given status codes (0: no
// response), and returns its id.
type att struct {
	at   time.Time
	code int
}

func opsDelivery(t *testing.T, db *store.Store, outboxID int64, url, status string, attempts ...att) int64 {
	t.Helper()
	ctx := context.Background()
	var id int64
	require.NoError(t, db.Pool().QueryRow(ctx, `
INSERT INTO webhook_deliveries (outbox_id, endpoint_url, webhook_id, event, status, attempts, updated_at)
VALUES ($1, $2, 'msg_' || $1::bigint || '_' || md5($2::text), 'swipe.recorded', $3, $4, now()) RETURNING id`,
		outboxID, url, status, len(attempts)).Scan(&id))
	n := 0
	var last time.Time
	for _, a := range attempts {
		at, code := a.at, a.code
		n++
		var c *int
		if code != 0 {
			c = &code
		}
		_, err := db.Pool().Exec(ctx, `INSERT INTO webhook_attempts (delivery_id, attempt, status_code, latency_ms, error, created_at)
VALUES ($1, $2, $3, 12, CASE WHEN $3::int BETWEEN 200 AND 299 THEN NULL ELSE 'HTTP ' || coalesce($3::text, 'timeout') END, $4)`, id, n, c, at)
		require.NoError(t, err)
		if at.After(last) {
			last = at
		}
	}
	if !last.IsZero() {
		_, err := db.Pool().Exec(ctx, `UPDATE webhook_deliveries SET updated_at = $2 WHERE id = $1`, id, last)
		require.NoError(t, err)
	}
	return id
}

// Each endpoint's state: its last success, the first failure after it,
// its deliveries still pending and those parked or disabled; an endpoint
// disabled by a 410 until enabled again.
func TestWebhookEndpointStatesAndEnable(t *testing.T) {
	ctx := context.Background()
	db := store.New(testutil.NewDB(t))
	student, other := uuid.NewString(), uuid.NewString()
	ev := insertEvents(t, db, student, "swipe.recorded", "swipe.recorded", "swipe.recorded")
	ev2 := insertEvents(t, db, other, "swipe.recorded")
	const ok, failing, gone = "https://ok.example/h", "https://failing.example/h?token=x", "https://gone.example/h"
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	opsDelivery(t, db, ev[0], ok, "succeeded", att{base, 503}, att{base.Add(time.Minute), 200})
	opsDelivery(t, db, ev[0], failing, "succeeded", att{base, 200})
	opsDelivery(t, db, ev[1], failing, "parked", att{base.Add(2 * time.Minute), 500}, att{base.Add(3 * time.Minute), 0})
	opsDelivery(t, db, ev[2], failing, "pending", att{base.Add(4 * time.Minute), 502})
	opsDelivery(t, db, ev2[0], failing, "pending")
	goneID := opsDelivery(t, db, ev[1], gone, "disabled", att{base.Add(5 * time.Minute), 410})
	_, err := db.DisableWebhookEndpoint(ctx, gone, "410 Gone on delivery 1")
	require.NoError(t, err)

	states, err := db.WebhookEndpointStates(ctx)
	require.NoError(t, err)
	require.Len(t, states, 3)
	s := states[ok]
	assert.WithinDuration(t, base.Add(time.Minute), s.LastSuccess, time.Millisecond)
	assert.True(t, s.FailingSince.IsZero(), "a failure before the last success does not count")
	assert.Zero(t, s.Pending+s.Failed)
	s = states[failing]
	assert.WithinDuration(t, base, s.LastSuccess, time.Millisecond)
	assert.WithinDuration(t, base.Add(2*time.Minute), s.FailingSince, time.Millisecond, "the first failure after the last success")
	assert.Equal(t, 2, s.Pending)
	assert.Equal(t, 1, s.Failed)
	assert.True(t, s.DisabledAt.IsZero())
	s = states[gone]
	assert.False(t, s.DisabledAt.IsZero())
	assert.Equal(t, "410 Gone on delivery 1", s.Reason)
	assert.True(t, s.LastSuccess.IsZero())
	assert.Equal(t, 1, s.Failed)

	was, n, err := db.EnableWebhookEndpoint(ctx, gone)
	require.NoError(t, err)
	assert.True(t, was)
	assert.Equal(t, 1, n, "its disabled delivery stays disabled until replayed")
	states, err = db.WebhookEndpointStates(ctx)
	require.NoError(t, err)
	assert.True(t, states[gone].DisabledAt.IsZero())
	was, _, err = db.EnableWebhookEndpoint(ctx, gone)
	require.NoError(t, err)
	assert.False(t, was, "enabled already")

	// The log: newest first, by endpoint, event, webhook-id or student.
	all, err := db.WebhookAttemptLog(ctx, store.WebhookAttemptFilter{}, 100)
	require.NoError(t, err)
	require.Len(t, all, 7)
	assert.Equal(t, goneID, all[0].DeliveryID, "the attempt written last first")
	assert.Equal(t, 410, all[0].StatusCode)
	assert.Equal(t, 12*time.Millisecond, all[0].Latency)
	byEndpoint, err := db.WebhookAttemptLog(ctx, store.WebhookAttemptFilter{Endpoint: failing}, 100)
	require.NoError(t, err)
	assert.Len(t, byEndpoint, 4)
	for _, e := range byEndpoint {
		assert.Equal(t, failing, e.Endpoint)
	}
	byEvent, err := db.WebhookAttemptLog(ctx, store.WebhookAttemptFilter{OutboxID: ev[1]}, 100)
	require.NoError(t, err)
	assert.Len(t, byEvent, 3)
	byID, err := db.WebhookAttemptLog(ctx, store.WebhookAttemptFilter{WebhookID: byEvent[0].WebhookID}, 100)
	require.NoError(t, err)
	assert.Len(t, byID, 1)
	byStudent, err := db.WebhookAttemptLog(ctx, store.WebhookAttemptFilter{StudentID: student}, 100)
	require.NoError(t, err)
	assert.Len(t, byStudent, 7)
	none, err := db.WebhookAttemptLog(ctx, store.WebhookAttemptFilter{StudentID: other}, 100)
	require.NoError(t, err)
	assert.Empty(t, none, "the other student's delivery has no attempt yet")
	limited, err := db.WebhookAttemptLog(ctx, store.WebhookAttemptFilter{}, 2)
	require.NoError(t, err)
	assert.Len(t, limited, 2)
}
