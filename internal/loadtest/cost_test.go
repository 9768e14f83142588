package loadtest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/testutil"
)

// The log counters a measurement reports move with what PostgreSQL
// writes, and a checkpoint asked for in between is counted.
func TestSampleWALCountsWritesAndCheckpoints(t *testing.T) {
	ctx := context.Background()
	pool := testutil.NewDB(t)
	before := SampleWAL(ctx, pool)
	require.True(t, before.OK)

	_, err := pool.Exec(ctx, `CREATE TABLE wal_probe (id int PRIMARY KEY, v text)`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO wal_probe SELECT g, repeat('x', 100) FROM generate_series(1, 200) g`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `CHECKPOINT`)
	require.NoError(t, err)
	// The first change of a page after a checkpoint logs the whole page.
	_, err = pool.Exec(ctx, `UPDATE wal_probe SET v = 'y' WHERE id = 1`)
	require.NoError(t, err)

	// A backend hands its counters to the server's at most once a second.
	var d WALSample
	require.Eventually(t, func() bool {
		d = SampleWAL(ctx, pool).Sub(before)
		return d.OK && d.FPI >= 1
	}, 5*time.Second, 100*time.Millisecond, "the update after the checkpoint logs a full page")
	assert.Greater(t, d.Records, int64(200))
	assert.Greater(t, d.Bytes, int64(200*100))
	assert.GreaterOrEqual(t, d.Requested, int64(1))
	assert.Contains(t, d.Describe("swipe", 100), "checkpoints started during the measurement: ")

	sum := d.Add(d)
	assert.Equal(t, 2*d.Bytes, sum.Bytes)
	assert.Equal(t, 2*d.Requested, sum.Requested)
	assert.False(t, d.Add(WALSample{}).OK, "a span that was not read taints the sum")
	assert.Equal(t, "PostgreSQL's WAL counters could not be read.", WALSample{}.Describe("swipe", 10))
}

// PostgreSQL's CPU between two samples is taken backend by backend: a
// connection that closed in between (the insert baseline's) does not make
// it negative, and one that opened counts whole.
func TestCPUSubTakesBackendsOneByOne(t *testing.T) {
	before := CPUSample{Postgres: 6, backends: map[int]float64{1: 1, 2: 5}}
	after := CPUSample{Postgres: 1.7, backends: map[int]float64{1: 1.5, 3: 0.2}}
	assert.InDelta(t, 0.7, after.Sub(before).Postgres, 1e-9)

	// Backends that could not be listed: the totals.
	assert.InDelta(t, -4.3, CPUSample{Postgres: 1.7}.Sub(before).Postgres, 1e-9)
}
