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
// quiet with no student marked in a learn drain: it waits while
// statements keep coming or students wait to be folded, a count it cannot
// read never passes for a quiet one, and what it read when the quiet
// began is what a measurement ends with (the quiet waited out is not
// counted).
func TestWaitDrainedWaitsForQuiet(t *testing.T) {
	ctx := context.Background()
	pool := testutil.NewDB(t)
	var out strings.Builder
	r := &runner{c: Config{Out: &out}, pool: pool, drainWait: 3 * time.Second}

	// Without the extension the count cannot be read: not drained.
	start := time.Now()
	r.waitDrained(ctx, 0)
	assert.GreaterOrEqual(t, time.Since(start), 3*time.Second, "no count, no quiet")
	assert.Contains(t, out.String(), "had not drained after 3s")

	require.NoError(t, EnsureStatements(ctx, pool))
	var calls int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_statements`).Scan(&calls); err != nil {
		t.Skipf("pg_stat_statements is not loaded on this server (shared_preload_libraries): %v", err)
	}

	// Statements for 2 s, then none: drained once three quiet seconds
	// follow the busy ones, ending with what was read when the quiet began.
	out.Reset()
	busy, stop := context.WithTimeout(ctx, 2*time.Second)
	defer stop()
	go func() {
		for busy.Err() == nil {
			_, _ = pool.Exec(busy, `SELECT 1`)
		}
	}()
	start = time.Now()
	r.drainWait = time.Minute
	end, ok, err := r.drainTally(ctx, 0)
	took := time.Since(start)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.GreaterOrEqual(t, took, 4*time.Second, "not while statements kept coming")
	assert.Less(t, took, 15*time.Second)
	assert.True(t, end.cpu.At.After(start.Add(2*time.Second)), "read after the statements stopped")
	assert.True(t, end.cpu.At.Before(start.Add(took-time.Second)), "read when the quiet began, not after it was waited out")
	busyCalls := end.stmts.Sub(nil, false)
	require.NotEmpty(t, busyCalls)
	assert.Equal(t, "SELECT $1", busyCalls[0].Query, "the busy statements are the service's, as the load test counts them")
	assert.Empty(t, out.String())

	// No statements, but students marked in the learn drains for 3 s (a
	// drain working off a backlog makes two statements a batch): not
	// drained until they are folded, and the measurement ends then.
	marked := time.Now().Add(3 * time.Second)
	r.learnPending = func(context.Context) (int, error) {
		if time.Now().Before(marked) {
			return 64, nil
		}
		return 0, nil
	}
	start = time.Now()
	end, ok, err = r.drainTally(ctx, 0)
	took = time.Since(start)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.GreaterOrEqual(t, took, 5*time.Second, "three quiet seconds, the first once the drains emptied")
	assert.False(t, end.cpu.At.Before(marked), "read once the drains were empty")
}
