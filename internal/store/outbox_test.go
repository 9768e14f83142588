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
		second, err = store.InsertOutbox(ctx, tx, "catalog.changed", "", json.RawMessage(`{"count":3}`))
		return err
	}))
	assert.Greater(t, second, first)

	n, oldest, err = db.OutboxBacklog(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.WithinDuration(t, before, oldest, 5*time.Second)

	var got []store.OutboxRow
	claimed, err := db.RelayOutbox(ctx, 10, func(_ context.Context, rows []store.OutboxRow) ([]int64, error) {
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
	ids := insertEvents(t, db, uuid.NewString(), "a", "b", "c", "d")

	// Hand over the first two, claim an id outside the batch, then fail:
	// the two are marked and the error comes back as it was.
	errRedis := errors.New("redis is down")
	claimed, err := db.RelayOutbox(ctx, 3, func(_ context.Context, rows []store.OutboxRow) ([]int64, error) {
		assert.Equal(t, ids[:3], rowIDs(rows), "oldest first, limit respected")
		return []int64{rows[0].ID, rows[1].ID, ids[3]}, errRedis
	})
	assert.Equal(t, 3, claimed)
	assert.Same(t, errRedis, err, "hand's own error, not a wrapped one")
	assert.Equal(t, ids[2:], unpublished(t, db), "row 3 was not handed over, row 4 was not in the batch")

	// Nothing handed over: nothing marked.
	claimed, err = db.RelayOutbox(ctx, 10, func(_ context.Context, rows []store.OutboxRow) ([]int64, error) {
		return nil, nil
	})
	require.NoError(t, err)
	assert.Equal(t, 2, claimed)
	assert.Equal(t, ids[2:], unpublished(t, db))

	claimed, err = db.RelayOutbox(ctx, 10, func(_ context.Context, rows []store.OutboxRow) ([]int64, error) {
		return rowIDs(rows), nil
	})
	require.NoError(t, err)
	assert.Equal(t, 2, claimed)
	assert.Empty(t, unpublished(t, db))

	claimed, err = db.RelayOutbox(ctx, 10, func(_ context.Context, rows []store.OutboxRow) ([]int64, error) {
		t.Error("hand called with no rows")
		return nil, nil
	})
	require.NoError(t, err)
	assert.Zero(t, claimed)

	_, err = db.RelayOutbox(ctx, 0, nil)
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
		_, err := db.RelayOutbox(ctx, 5, func(_ context.Context, rows []store.OutboxRow) ([]int64, error) {
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
	_, err := db.RelayOutbox(ctx, 10, func(_ context.Context, rows []store.OutboxRow) ([]int64, error) {
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
		_, err := db.RelayOutbox(ctx, 2, func(context.Context, []store.OutboxRow) ([]int64, error) {
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
