package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

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

func rowIDs(rows []store.OutboxRow) []int64 {
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids
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
	n, oldest, unrouted, err := db.OutboxBacklog(ctx, nil)
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.True(t, oldest.IsZero())
	assert.Empty(t, unrouted)

	before := time.Now()
	var first, second int64
	require.NoError(t, pgx.BeginFunc(ctx, db.Pool(), func(tx pgx.Tx) error {
		var err error
		if first, err = store.InsertOutbox(ctx, tx, "swipe.recorded", student, map[string]any{"school_id": "s1", "direction": "right"}); err != nil {
			return err
		}
		second, err = store.InsertOutbox(ctx, tx, "catalog.changed", "", json.RawMessage(`{"count":3}`))
		return err
	}))
	assert.Greater(t, second, first)

	n, oldest, unrouted, err = db.OutboxBacklog(ctx, []string{"swipe.recorded"})
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.WithinDuration(t, before, oldest, 5*time.Second)
	assert.Equal(t, map[string]int{"catalog.changed": 1}, unrouted)

	var got []store.OutboxRow
	claimed, err := db.RelayOutbox(ctx, []string{"swipe.recorded", "catalog.changed"}, 10, func(_ context.Context, rows []store.OutboxRow, _ store.DeliveryRecorder) ([]int64, error) {
		got = rows
		return nil, nil
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

	err = pgx.BeginFunc(ctx, db.Pool(), func(tx pgx.Tx) error {
		_, err := store.InsertOutbox(ctx, tx, "x", "", func() {})
		return err
	})
	assert.Error(t, err, "a payload that is not JSON")
}

func TestRelayOutboxMarksOnlyWhatWasHandedOver(t *testing.T) {
	ctx := context.Background()
	db := store.New(testutil.NewDB(t))
	topics := []string{"a", "b", "c", "d"}
	ids := insertEvents(t, db, uuid.NewString(), topics...)

	// Hand over the first two, claim an id outside the batch, then fail:
	// the two are marked and the error comes back as it was.
	errRedis := errors.New("redis is down")
	claimed, err := db.RelayOutbox(ctx, topics, 3, func(_ context.Context, rows []store.OutboxRow, _ store.DeliveryRecorder) ([]int64, error) {
		assert.Equal(t, ids[:3], rowIDs(rows), "oldest first, limit respected")
		return []int64{rows[0].ID, rows[1].ID, ids[3]}, errRedis
	})
	assert.Equal(t, 3, claimed)
	assert.Same(t, errRedis, err, "hand's own error, not a wrapped one")
	assert.Equal(t, ids[2:], unpublished(t, db), "row 3 was not handed over, row 4 was not in the batch")

	// Nothing handed over: nothing marked.
	claimed, err = db.RelayOutbox(ctx, topics, 10, func(_ context.Context, rows []store.OutboxRow, _ store.DeliveryRecorder) ([]int64, error) {
		return nil, nil
	})
	require.NoError(t, err)
	assert.Equal(t, 2, claimed)
	assert.Equal(t, ids[2:], unpublished(t, db))

	claimed, err = db.RelayOutbox(ctx, topics, 10, func(_ context.Context, rows []store.OutboxRow, _ store.DeliveryRecorder) ([]int64, error) {
		return rowIDs(rows), nil
	})
	require.NoError(t, err)
	assert.Equal(t, 2, claimed)
	assert.Empty(t, unpublished(t, db))

	claimed, err = db.RelayOutbox(ctx, topics, 10, func(_ context.Context, rows []store.OutboxRow, _ store.DeliveryRecorder) ([]int64, error) {
		t.Error("hand called with no rows")
		return nil, nil
	})
	require.NoError(t, err)
	assert.Zero(t, claimed)

	_, err = db.RelayOutbox(ctx, topics, 0, nil)
	assert.Error(t, err)
}

func TestRelayOutboxConcurrentRelaysTakeDisjointRows(t *testing.T) {
	ctx := context.Background()
	db := store.New(testutil.NewDB(t))
	ids := insertEvents(t, db, "", "t", "t", "t", "t", "t", "t", "t", "t", "t", "t")

	// Relay A claims the first five and holds them until relay B has
	// claimed: B must skip A's rows instead of waiting for them.
	aClaimed, bDone := make(chan struct{}), make(chan struct{})
	var aRows, bRows []int64
	var wg sync.WaitGroup
	wg.Go(func() {
		_, err := db.RelayOutbox(ctx, []string{"t"}, 5, func(_ context.Context, rows []store.OutboxRow, _ store.DeliveryRecorder) ([]int64, error) {
			aRows = rowIDs(rows)
			close(aClaimed)
			select {
			case <-bDone:
			case <-time.After(10 * time.Second):
				t.Error("relay B waited for relay A's rows")
			}
			return aRows, nil
		})
		assert.NoError(t, err)
	})
	<-aClaimed
	_, err := db.RelayOutbox(ctx, []string{"t"}, 10, func(_ context.Context, rows []store.OutboxRow, _ store.DeliveryRecorder) ([]int64, error) {
		bRows = rowIDs(rows)
		return bRows, nil
	})
	close(bDone)
	require.NoError(t, err)
	wg.Wait()

	assert.Equal(t, ids[:5], aRows)
	assert.Equal(t, ids[5:], bRows)
	assert.Empty(t, unpublished(t, db))
}

func TestMarkOutboxPublishedSkipsRowsARelayHolds(t *testing.T) {
	ctx := context.Background()
	db := store.New(testutil.NewDB(t))
	ids := insertEvents(t, db, "", "t", "t", "t")

	held, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		_, err := db.RelayOutbox(ctx, []string{"t"}, 2, func(context.Context, []store.OutboxRow, store.DeliveryRecorder) ([]int64, error) {
			close(held)
			<-release
			return nil, errors.New("enqueue failed")
		})
		assert.Error(t, err)
	})
	<-held
	mctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	require.NoError(t, db.MarkOutboxPublished(mctx, ids), "must not wait for the relay's locks")
	close(release)
	wg.Wait()

	assert.Equal(t, ids[:2], unpublished(t, db), "the relay's rows are left to the relay, the free one is marked")
	require.NoError(t, db.MarkOutboxPublished(ctx, ids))
	require.NoError(t, db.MarkOutboxPublished(ctx, nil))
	assert.Empty(t, unpublished(t, db))
}

func TestRelayOutboxClaimsOnlyTheGivenTopics(t *testing.T) {
	ctx := context.Background()
	db := store.New(testutil.NewDB(t))
	// Rows of an unknown topic lead the queue: a claim of one row must still
	// reach the routed row behind them.
	ids := insertEvents(t, db, "", "new.topic", "new.topic", "a", "b", "new.topic", "a")

	claimed, err := db.RelayOutbox(ctx, []string{"a"}, 1, func(_ context.Context, rows []store.OutboxRow, _ store.DeliveryRecorder) ([]int64, error) {
		assert.Equal(t, []int64{ids[2]}, rowIDs(rows))
		return rowIDs(rows), nil
	})
	require.NoError(t, err)
	assert.Equal(t, 1, claimed)

	claimed, err = db.RelayOutbox(ctx, []string{"b", "a"}, 10, func(_ context.Context, rows []store.OutboxRow, _ store.DeliveryRecorder) ([]int64, error) {
		assert.Equal(t, []int64{ids[3], ids[5]}, rowIDs(rows), "id order across topics")
		return rowIDs(rows), nil
	})
	require.NoError(t, err)
	assert.Equal(t, 2, claimed)
	assert.Equal(t, []int64{ids[0], ids[1], ids[4]}, unpublished(t, db), "rows of other topics are not claimed, so never marked")

	for _, none := range [][]string{nil, {}} {
		claimed, err = db.RelayOutbox(ctx, none, 10, func(context.Context, []store.OutboxRow, store.DeliveryRecorder) ([]int64, error) {
			t.Error("hand called without topics")
			return nil, nil
		})
		require.NoError(t, err)
		assert.Zero(t, claimed)
	}

	n, _, unrouted, err := db.OutboxBacklog(ctx, []string{"a", "b"})
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.Equal(t, map[string]int{"new.topic": 3}, unrouted)

	claimed, err = db.RelayOutbox(ctx, []string{"new.topic"}, 10, func(_ context.Context, rows []store.OutboxRow, _ store.DeliveryRecorder) ([]int64, error) {
		return rowIDs(rows), nil
	})
	require.NoError(t, err)
	assert.Equal(t, 3, claimed)
	assert.Empty(t, unpublished(t, db))
	n, oldest, unrouted, err := db.OutboxBacklog(ctx, []string{"a", "b"})
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.True(t, oldest.IsZero())
	assert.Empty(t, unrouted)
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
		n, err := db.DeletePublishedOutbox(ctx, 7*day, 2)
		require.NoError(t, err)
		total = append(total, n)
		if n < 2 {
			break
		}
	}
	assert.Equal(t, []int{2, 2, 0}, total)
	assert.Equal(t, []int64{ids[1], ids[3], ids[4], ids[6]}, outboxIDs(t, db))

	// A shorter retention takes the row published 6 days ago as well.
	n, err := db.DeletePublishedOutbox(ctx, 5*day, 100)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, []int64{ids[3], ids[4], ids[6]}, outboxIDs(t, db))

	_, err = db.DeletePublishedOutbox(ctx, 0, 100)
	assert.Error(t, err, "a zero retention would delete every published row")
	_, err = db.DeletePublishedOutbox(ctx, day, 0)
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
	n, err := db.DeletePublishedOutbox(dctx, 24*time.Hour, 10)
	require.NoError(t, err, "must not wait for the held row")
	assert.Equal(t, 1, n)
	require.NoError(t, tx.Rollback(ctx))
	assert.Equal(t, []int64{ids[0]}, outboxIDs(t, db))
}
