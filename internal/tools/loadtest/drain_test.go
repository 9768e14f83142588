package loadtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/testutil"
)

// The drain after a load is told by the database's statements going
// quiet: it waits while statements keep coming, and a count it cannot read
// never passes for a quiet one.
func TestWaitDrainedWaitsForQuiet(t *testing.T) {
	ctx := context.Background()
	pool := testutil.NewDB(t)
	var out strings.Builder
	r := &runner{c: Config{Out: &out}, pool: pool, drainWait: 7 * time.Second}

	// Without the extension the count cannot be read: not drained.
	start := time.Now()
	r.waitDrained(ctx, 0)
	assert.GreaterOrEqual(t, time.Since(start), 7*time.Second, "no count, no quiet")
	assert.Contains(t, out.String(), "had not drained after 7s")

	require.NoError(t, EnsureStatements(ctx, pool))
	var calls int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_statements`).Scan(&calls); err != nil {
		t.Skipf("pg_stat_statements is not loaded on this server (shared_preload_libraries): %v", err)
	}

	// Statements for 3 s, then none: drained once three quiet seconds
	// follow the busy ones.
	out.Reset()
	busy, stop := context.WithTimeout(ctx, 3*time.Second)
	defer stop()
	go func() {
		for busy.Err() == nil {
			_, _ = pool.Exec(busy, `SELECT 1`)
		}
	}()
	start = time.Now()
	r.drainWait = time.Minute
	r.waitDrained(ctx, 0)
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, 5*time.Second, "not while statements kept coming")
	assert.Less(t, took, 15*time.Second)
	assert.Empty(t, out.String())
}
