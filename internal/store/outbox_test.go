package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
)

// insertEvents writes one outbox row per topic in one transaction.
func insertEvents(t *testing.T, db *store.Store, studentID string, topics ...string) []int64 {
	t.Helper()
	var ids []int64
	err := pgx.BeginFunc(context.Background(), db.Pool(), func(tx pgx.Tx) error {
		for i, topic := range topics {
			id, err := store.InsertOutbox(context.Background(), tx, topic, studentID, map[string]any{"n": i})
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return nil
	})
	require.NoError(t, err)
	return ids
}

func unpublished(t *testing.T, db *store.Store) []int64 {
	t.Helper()
	rows, err := db.Pool().Query(context.Background(), `SELECT id FROM outbox WHERE published_at IS NULL ORDER BY id`)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	return ids
}

func eventIDs(evs []domain.ClaimedEvent) []int64 {
	ids := make([]int64, len(evs))
	for i, e := range evs {
		ids[i] = e.ID
	}
	return ids
}

var testSubs = []domain.Subscription{
	{URL: "https://a.example/hook", Key: "aaaa", Events: []string{"swipe.recorded"}},
	{URL: "https://b.example/hook", Key: "bbbb", Events: []string{"swipe.recorded", "other.event"}},
}

func testURLs() []string { return []string{testSubs[0].URL, testSubs[1].URL} }

// pendingWrites are the deliveries of events to testSubs, as a relay that
// hands every first attempt to the queue writes them: pending, leased for
// a minute.
func pendingWrites(events []domain.ClaimedEvent) []domain.DeliveryWrite {
	var ds []domain.DeliveryWrite
	for _, ev := range events {
		for _, sub := range testSubs {
			if slices.Contains(sub.Events, ev.Topic) {
				ds = append(ds, domain.DeliveryWrite{OutboxID: ev.ID, Endpoint: sub.URL, Topic: ev.Topic,
					WebhookID: fmt.Sprintf("msg_%d_%s", ev.ID, sub.Key), Status: "pending", Next: time.Now().Add(time.Minute)})
			}
		}
	}
	return ds
}

// publish is a relay's pass that writes pendingWrites; hand sees the
// claimed events first.
func publish(ctx context.Context, db *store.Store, topics []string, limit int,
	hand func(events []domain.ClaimedEvent, disabled map[string]string) error) (int, error) {
	return db.PublishOutbox(ctx, topics, testURLs(), limit,
		func(ctx context.Context, events []domain.ClaimedEvent, disabled map[string]string, write store.OutboxWriter) error {
			if err := hand(events, disabled); err != nil {
				return err
			}
			_, err := write(ctx, pendingWrites(events))
			return err
		})
}

func TestInsertOutboxIsPartOfTheWritersTransaction(t *testing.T) {
	ctx := context.Background()
	db := store.New(testutil.NewDB(t))
	student := uuid.NewString()

	// A rolled-back transaction leaves no event behind.
	errAbort := errors.New("abort")
	err := pgx.BeginFunc(ctx, db.Pool(), func(tx pgx.Tx) error {
		_, err := store.InsertOutbox(ctx, tx, "swipe.recorded", student, map[string]string{"k": "v"})
		require.NoError(t, err)
		return errAbort
	})
	require.ErrorIs(t, err, errAbort)
	n, oldest, err := db.OutboxBacklog(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.True(t, oldest.IsZero())

	before := time.Now()
	var first, second int64
	require.NoError(t, pgx.BeginFunc(ctx, db.Pool(), func(tx pgx.Tx) error {
		var err error
		if first, err = store.InsertOutbox(ctx, tx, "swipe.recorded", student, map[string]any{"school_id": "s1", "direction": "right"}); err != nil {
			return err
		}
		second, err = store.InsertOutbox(ctx, tx, "other.event", "", json.RawMessage(`{"count":3}`))
		return err
	}))
	assert.Greater(t, second, first)

	n, oldest, err = db.OutboxBacklog(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.WithinDuration(t, before, oldest, 5*time.Second)

	var (
		got []domain.ClaimedEvent
		ids []int64
		ds  []domain.DeliveryWrite
	)
	claimed, err := db.PublishOutbox(ctx, []string{"swipe.recorded", "other.event"}, testURLs(), 10,
		func(ctx context.Context, evs []domain.ClaimedEvent, _ map[string]string, write store.OutboxWriter) error {
			got, ds = evs, pendingWrites(evs)
			var err error
			ids, err = write(ctx, ds)
			return err
		})
	require.NoError(t, err)
	assert.Equal(t, 2, claimed)
	require.Len(t, got, 2)
	assert.Equal(t, first, got[0].ID)
	assert.Equal(t, "swipe.recorded", got[0].Topic)
	assert.Equal(t, student, got[0].StudentID)
	assert.JSONEq(t, `{"school_id":"s1","direction":"right"}`, string(got[0].Payload))
	assert.Equal(t, "", got[1].StudentID)
	assert.JSONEq(t, `{"count":3}`, string(got[1].Payload))

	// One delivery per endpoint subscribed to the event's topic, written
	// as given, with the row ids in the order given.
	require.Len(t, ids, 3)
	for i, d := range ds {
		var (
			outbox          int64
			endpoint, msgID string
			status          string
			attempts        int
			next            time.Time
		)
		require.NoError(t, db.Pool().QueryRow(ctx, `SELECT outbox_id, endpoint_url, webhook_id, status, attempts, next_attempt_at
FROM webhook_deliveries WHERE id = $1`, ids[i]).Scan(&outbox, &endpoint, &msgID, &status, &attempts, &next))
		assert.Equal(t, d.OutboxID, outbox)
		assert.Equal(t, d.Endpoint, endpoint)
		assert.Equal(t, d.WebhookID, msgID)
		assert.Equal(t, "pending", status)
		assert.Zero(t, attempts)
		assert.WithinDuration(t, d.Next, next, time.Millisecond)
	}
	assert.Equal(t, fmt.Sprintf("msg_%d_%s", second, testSubs[1].Key), ds[2].WebhookID)
	assert.Empty(t, unpublished(t, db))
}

// A delivery written after its first attempt is written once, in its state
// after the attempt, with the attempt (no update of a pending row); one
// that is there already is left as it was, its id 0, and the next claim
// of its event says so.
func TestPublishOutboxWritesDeliveriesWithTheirFirstAttempts(t *testing.T) {
	ctx := context.Background()
	db := store.New(testutil.NewDB(t))
	ids := insertEvents(t, db, uuid.NewString(), "swipe.recorded", "swipe.recorded")
	// A delivery of the second event exists already (a task of an older
	// build inserted the row it found missing).
	_, err := db.Pool().Exec(ctx, `INSERT INTO webhook_deliveries (outbox_id, endpoint_url, webhook_id, event, next_attempt_at)
VALUES ($1, $2, 'msg_x', 'swipe.recorded', now())`, ids[1], testSubs[0].URL)
	require.NoError(t, err)
	retryAt := time.Now().Add(5 * time.Second).Truncate(time.Second)
	var written []int64
	_, err = db.PublishOutbox(ctx, []string{"swipe.recorded"}, testURLs(), 10,
		func(ctx context.Context, evs []domain.ClaimedEvent, _ map[string]string, write store.OutboxWriter) error {
			require.Len(t, evs, 2)
			assert.Empty(t, evs[0].Delivered)
			assert.Equal(t, []string{testSubs[0].URL}, evs[1].Delivered)
			var err error
			written, err = write(ctx, []domain.DeliveryWrite{
				{OutboxID: ids[0], Endpoint: testSubs[0].URL, WebhookID: "msg_a", Topic: "swipe.recorded", Status: "succeeded",
					Attempt: &domain.WebhookAttempt{StatusCode: 204, Latency: 12 * time.Millisecond}},
				{OutboxID: ids[0], Endpoint: testSubs[1].URL, WebhookID: "msg_b", Topic: "swipe.recorded", Status: "pending",
					Next: retryAt, LastError: "HTTP 503", Attempt: &domain.WebhookAttempt{StatusCode: 503, Latency: time.Millisecond, Error: "HTTP 503"}},
				{OutboxID: ids[1], Endpoint: testSubs[0].URL, WebhookID: "msg_c", Topic: "swipe.recorded", Status: "succeeded",
					Attempt: &domain.WebhookAttempt{StatusCode: 200}},
			})
			return err
		})
	require.NoError(t, err)
	require.Len(t, written, 3)
	assert.Positive(t, written[0])
	assert.Positive(t, written[1])
	assert.Zero(t, written[2], "there already: left as it was")

	type row struct {
		status, lastError string
		attempts          int
		next              *time.Time
		code              *int
		latency           int
		attemptErr        *string
	}
	read := func(id int64) row {
		var r row
		var lastError *string
		require.NoError(t, db.Pool().QueryRow(ctx, `SELECT d.status, d.last_error, d.attempts, d.next_attempt_at,
	a.status_code, a.latency_ms, a.error
FROM webhook_deliveries d JOIN webhook_attempts a ON a.delivery_id = d.id AND a.attempt = 1 WHERE d.id = $1`, id).
			Scan(&r.status, &lastError, &r.attempts, &r.next, &r.code, &r.latency, &r.attemptErr))
		if lastError != nil {
			r.lastError = *lastError
		}
		return r
	}
	ok := read(written[0])
	assert.Equal(t, "succeeded", ok.status)
	assert.Equal(t, 1, ok.attempts)
	assert.Nil(t, ok.next)
	require.NotNil(t, ok.code)
	assert.Equal(t, 204, *ok.code)
	assert.Equal(t, 12, ok.latency)
	assert.Nil(t, ok.attemptErr)
	failed := read(written[1])
	assert.Equal(t, "pending", failed.status)
	assert.Equal(t, "HTTP 503", failed.lastError)
	require.NotNil(t, failed.next)
	assert.WithinDuration(t, retryAt, *failed.next, time.Millisecond)
	require.NotNil(t, failed.attemptErr)
	assert.Equal(t, "HTTP 503", *failed.attemptErr)
	var attempts, existing int
	require.NoError(t, db.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM webhook_attempts),
	(SELECT attempts FROM webhook_deliveries WHERE outbox_id = $1 AND endpoint_url = $2)`, ids[1], testSubs[0].URL).
		Scan(&attempts, &existing))
	assert.Equal(t, 2, attempts, "no attempt row for the delivery that was there")
	assert.Zero(t, existing)
}

func TestInsertOutboxRejectsBadInput(t *testing.T) {
	ctx := context.Background()
	db := store.New(testutil.NewDB(t))
	err := pgx.BeginFunc(ctx, db.Pool(), func(tx pgx.Tx) error {
		_, err := store.InsertOutbox(ctx, tx, "swipe.recorded", "not-a-uuid", map[string]any{})
		return err
	})
	assert.Equal(t, domain.KindInvalid, domain.KindOf(err), "err: %v", err)

	err = pgx.BeginFunc(ctx, db.Pool(), func(tx pgx.Tx) error {
		_, err := store.InsertOutbox(ctx, tx, "", "", map[string]any{})
		return err
	})
	assert.Error(t, err)
}

// A relay pass commits only when hand succeeded: when the tasks could not
// be queued, the rows stay unpublished and no delivery is left behind, and
// the next pass claims them again.
func TestPublishOutboxRollsBackWhenTheHandOverFails(t *testing.T) {
	ctx := context.Background()
	db := store.New(testutil.NewDB(t))
	ids := insertEvents(t, db, uuid.NewString(), "swipe.recorded", "swipe.recorded", "swipe.recorded")
	errRedis := errors.New("redis down")
	claimed, err := publish(ctx, db, []string{"swipe.recorded"}, 2,
		func([]domain.ClaimedEvent, map[string]string) error { return errRedis })
	require.ErrorIs(t, err, errRedis)
	assert.Equal(t, 2, claimed)
	assert.Equal(t, ids, unpublished(t, db))
	var deliveries int
	require.NoError(t, db.Pool().QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries`).Scan(&deliveries))
	assert.Zero(t, deliveries)

	var got []int64
	for {
		n, err := publish(ctx, db, []string{"swipe.recorded"}, 2,
			func(evs []domain.ClaimedEvent, _ map[string]string) error {
				got = append(got, eventIDs(evs)...)
				return nil
			})
		require.NoError(t, err)
		if n < 2 {
			break
		}
	}
	assert.Equal(t, ids, got)
	require.NoError(t, db.Pool().QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries`).Scan(&deliveries))
	assert.Equal(t, 6, deliveries)
	assert.Empty(t, unpublished(t, db))
}

func TestPublishOutboxConcurrentRelaysTakeDisjointRows(t *testing.T) {
	ctx := context.Background()
	db := store.New(testutil.NewDB(t))
	ids := insertEvents(t, db, "", "t", "t", "t", "t", "t", "t", "t", "t", "t", "t")

	// Relay A claims the first five and holds them until relay B has
	// claimed: B must skip A's rows instead of waiting for them.
	aHolds, bDone := make(chan struct{}), make(chan struct{})
	var a, b []int64
	var wg sync.WaitGroup
	wg.Go(func() {
		_, err := publish(ctx, db, []string{"t"}, 5, func(evs []domain.ClaimedEvent, _ map[string]string) error {
			a = eventIDs(evs)
			close(aHolds)
			<-bDone
			return nil
		})
		assert.NoError(t, err)
	})
	<-aHolds
	bctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	_, err := publish(bctx, db, []string{"t"}, 5, func(evs []domain.ClaimedEvent, _ map[string]string) error {
		b = eventIDs(evs)
		return nil
	})
	cancel()
	close(bDone)
	wg.Wait()
	require.NoError(t, err, "relay B must not wait for A's rows")
	assert.Equal(t, ids[:5], a)
	assert.Equal(t, ids[5:], b)
	assert.Empty(t, unpublished(t, db))
}

func TestPublishOutboxClaimsOnlyTheGivenTopics(t *testing.T) {
	ctx := context.Background()
	db := store.New(testutil.NewDB(t))
	// Rows of a topic a newer build writes lead the queue: a claim of one
	// row must still reach the known row behind them, and leave them.
	ids := insertEvents(t, db, "", "newer.topic", "newer.topic", "swipe.recorded")
	var got []int64
	n, err := publish(ctx, db, []string{"swipe.recorded"}, 1,
		func(evs []domain.ClaimedEvent, _ map[string]string) error { got = eventIDs(evs); return nil })
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, []int64{ids[2]}, got)
	assert.Equal(t, ids[:2], unpublished(t, db))
	n, err = publish(ctx, db, nil, 10,
		func([]domain.ClaimedEvent, map[string]string) error {
			t.Fatal("no topics: nothing claimed")
			return nil
		})
	require.NoError(t, err)
	assert.Zero(t, n)
}

// The claim says which endpoints are disabled by 410 Gone, with the
// reason, among those asked about.
func TestPublishOutboxReportsDisabledEndpoints(t *testing.T) {
	ctx := context.Background()
	db := store.New(testutil.NewDB(t))
	insertEvents(t, db, "", "swipe.recorded")
	_, err := db.Pool().Exec(ctx, `INSERT INTO webhook_endpoint_state (endpoint_url, reason) VALUES ($1, '410 Gone'), ('https://other.example', 'x')`,
		testSubs[0].URL)
	require.NoError(t, err)
	var got map[string]string
	_, err = publish(ctx, db, []string{"swipe.recorded"}, 10,
		func(_ []domain.ClaimedEvent, disabled map[string]string) error { got = disabled; return nil })
	require.NoError(t, err)
	assert.Equal(t, map[string]string{testSubs[0].URL: "410 Gone"}, got)
}

// age sets when rows were written and published, in the database's clock;
// a nil publishedAgo leaves them unpublished.
func age(t *testing.T, db *store.Store, createdAgo time.Duration, publishedAgo *time.Duration, ids ...int64) {
	t.Helper()
	var pub *float64
	if publishedAgo != nil {
		s := publishedAgo.Seconds()
		pub = &s
	}
	_, err := db.Pool().Exec(context.Background(), `
UPDATE outbox SET
	created_at = now() - make_interval(secs => $1),
	published_at = now() - make_interval(secs => $2)
WHERE id = ANY($3)`, createdAgo.Seconds(), pub, ids)
	require.NoError(t, err)
}

func outboxIDs(t *testing.T, db *store.Store) []int64 {
	t.Helper()
	rows, err := db.Pool().Query(context.Background(), `SELECT id FROM outbox ORDER BY id`)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	return ids
}

func TestDeletePublishedOutboxKeepsRecentUnpublishedAndReferencedRows(t *testing.T) {
	ctx := context.Background()
	db := store.New(testutil.NewDB(t))
	const day = 24 * time.Hour
	ids := insertEvents(t, db, "", "t", "t", "t", "t", "t", "t", "t", "t")
	old, recent := 8*day, 6*day
	age(t, db, 9*day, &old, ids[0], ids[2], ids[3], ids[5], ids[7]) // expired
	age(t, db, 9*day, &recent, ids[1])                              // published 6 days ago
	age(t, db, 9*day, nil, ids[4])                                  // written long ago, never published
	// ids[6] is new and unpublished.
	_, err := db.Pool().Exec(ctx, `
INSERT INTO webhook_deliveries (outbox_id, endpoint_url, webhook_id, event)
VALUES ($1, 'https://a.example/hook', 'msg_1', 'swipe.recorded')`, ids[3])
	require.NoError(t, err)

	// Two per statement: four expired rows are free, ids[3] has a delivery.
	var total []int
	for {
		n, _, err := db.DeletePublishedOutbox(ctx, 7*day, 2, time.Time{})
		require.NoError(t, err)
		total = append(total, n)
		if n < 2 {
			break
		}
	}
	assert.Equal(t, []int{2, 2, 0}, total)
	assert.Equal(t, []int64{ids[1], ids[3], ids[4], ids[6]}, outboxIDs(t, db))

	// A shorter retention takes the row published 6 days ago as well.
	n, _, err := db.DeletePublishedOutbox(ctx, 5*day, 100, time.Time{})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, []int64{ids[3], ids[4], ids[6]}, outboxIDs(t, db))

	_, _, err = db.DeletePublishedOutbox(ctx, 0, 100, time.Time{})
	assert.Error(t, err, "a zero retention would delete every published row")
	_, _, err = db.DeletePublishedOutbox(ctx, day, 0, time.Time{})
	assert.Error(t, err)
	assert.Equal(t, []int64{ids[3], ids[4], ids[6]}, outboxIDs(t, db))
}

func TestDeletePublishedOutboxSkipsRowsAnotherTransactionHolds(t *testing.T) {
	ctx := context.Background()
	db := store.New(testutil.NewDB(t))
	ids := insertEvents(t, db, "", "t", "t")
	old := 30 * 24 * time.Hour
	age(t, db, old, &old, ids...)

	tx, err := db.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT id FROM outbox WHERE id = $1 FOR KEY SHARE`, ids[0])
	require.NoError(t, err)

	dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	n, _, err := db.DeletePublishedOutbox(dctx, 24*time.Hour, 10, time.Time{})
	require.NoError(t, err, "must not wait for the held row")
	assert.Equal(t, 1, n)
	require.NoError(t, tx.Rollback(ctx))
	assert.Equal(t, []int64{ids[0]}, outboxIDs(t, db))
}

// A pass carries where its last statement stopped: the events it keeps
// (their deliveries may still be sent) are not read again by every
// statement after it.
func TestDeletePublishedOutboxCarriesWhereItStopped(t *testing.T) {
	ctx := context.Background()
	db := store.New(testutil.NewDB(t))
	const day = 24 * time.Hour
	ids := insertEvents(t, db, "", "t", "t", "t", "t")
	kept, first, second, third := 12*day, 11*day, 10*day, 9*day
	age(t, db, 13*day, &kept, ids[0])
	age(t, db, 13*day, &first, ids[1])
	age(t, db, 13*day, &second, ids[2])
	age(t, db, 13*day, &third, ids[3])
	_, err := db.Pool().Exec(ctx, `INSERT INTO webhook_deliveries (outbox_id, endpoint_url, webhook_id, event, status)
		VALUES ($1, 'https://a.example/hook', 'msg_1', 'swipe.recorded', 'parked')`, ids[0])
	require.NoError(t, err)

	n, last, err := db.DeletePublishedOutbox(ctx, 7*day, 1, time.Time{})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.WithinDuration(t, time.Now().Add(-first), last, time.Minute, "the publication time of the row it deleted")
	// Rows published before the cursor are not looked at: one published
	// between the kept row and the cursor that a later delivery freed
	// waits for the next pass.
	n, last2, err := db.DeletePublishedOutbox(ctx, 7*day, 1, last)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.True(t, last2.After(last))
	n, last3, err := db.DeletePublishedOutbox(ctx, 7*day, 10, last2)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	n, last4, err := db.DeletePublishedOutbox(ctx, 7*day, 10, last3)
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.Equal(t, last3, last4, "nothing deleted: the cursor stays")
	assert.Equal(t, []int64{ids[0]}, outboxIDs(t, db), "the event of a parked delivery stays")
}
