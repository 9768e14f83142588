package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
)

// A change_seq value taken by a transaction still in progress holds the
// watermark back, even after a later value committed; once it commits, the
// watermark covers both.
func TestChangeWatermarkWaitsForValuesInFlight(t *testing.T) {
	ctx := context.Background()
	pool := testutil.NewDB(t)
	db := store.New(pool)
	schools := catalog.Generate(2, 1)
	_, err := db.UpsertSchools(ctx, schools)
	require.NoError(t, err)

	pos, safe, err := db.ChangeWatermark(ctx, time.Second)
	require.NoError(t, err)
	require.True(t, safe)
	var top int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT max(change_seq) FROM schools`).Scan(&top))
	assert.GreaterOrEqual(t, pos, top)

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	var early, later int64
	require.NoError(t, tx.QueryRow(ctx, `UPDATE schools SET city = 'Early' WHERE id = $1 RETURNING change_seq`, schools[0].ID).Scan(&early))
	require.NoError(t, pool.QueryRow(ctx, `UPDATE schools SET city = 'Later' WHERE id = $1 RETURNING change_seq`, schools[1].ID).Scan(&later))
	require.Less(t, early, later)

	start := time.Now()
	_, safe, err = db.ChangeWatermark(ctx, 150*time.Millisecond)
	require.NoError(t, err)
	assert.False(t, safe, "a value below the committed one is still in flight")
	assert.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)

	committed := make(chan error, 1)
	go func() {
		time.Sleep(50 * time.Millisecond)
		committed <- tx.Commit(ctx)
	}()
	pos, safe, err = db.ChangeWatermark(ctx, 5*time.Second)
	require.NoError(t, <-committed)
	require.NoError(t, err)
	require.True(t, safe, "the wait ends with the transaction")
	assert.GreaterOrEqual(t, pos, later)
	var city string
	require.NoError(t, pool.QueryRow(ctx, `SELECT city FROM schools WHERE change_seq = $1`, early).Scan(&city))
	assert.Equal(t, "Early", city, "committed by the time the watermark passed it")
}

// Every write of a synced table takes its change_seq from the trigger, so
// updates move a row forward too.
func TestChangeSeqStampedOnInsertAndUpdate(t *testing.T) {
	ctx := context.Background()
	pool := testutil.NewDB(t)
	db := store.New(pool)
	schools := catalog.Generate(1, 1)
	_, err := db.UpsertSchools(ctx, schools)
	require.NoError(t, err)
	var before, after int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT change_seq FROM schools WHERE id = $1`, schools[0].ID).Scan(&before))
	require.NoError(t, pool.QueryRow(ctx, `UPDATE schools SET zip = '12345' WHERE id = $1 RETURNING change_seq`, schools[0].ID).Scan(&after))
	assert.Greater(t, after, before)
}

func TestServerKeyIsMadeOnceAndShared(t *testing.T) {
	ctx := context.Background()
	db := store.New(testutil.NewDB(t))
	k1, err := db.ServerKey(ctx, "sync-cursor")
	require.NoError(t, err)
	require.Len(t, k1, 32)
	k2, err := db.ServerKey(ctx, "sync-cursor")
	require.NoError(t, err)
	assert.Equal(t, k1, k2)
	other, err := db.ServerKey(ctx, "other")
	require.NoError(t, err)
	assert.NotEqual(t, k1, other)
}
