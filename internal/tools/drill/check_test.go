package drill

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/testutil"
)

// fixture is one student with two schools, written as the service writes
// a swipe: the row with its count, the student's count, the outbox event.
type fixture struct {
	pool    *pgxpool.Pool
	student string
	schools []string
}

func newFixture(t *testing.T) *fixture {
	ctx := context.Background()
	f := &fixture{pool: testutil.NewDB(t), student: uuid.NewString()}
	for range 3 {
		id := uuid.NewString()
		_, err := f.pool.Exec(ctx, `INSERT INTO schools (id, name, state, region, source) VALUES ($1, 'A College', 'CA', 'West', 'test')`, id)
		require.NoError(t, err)
		f.schools = append(f.schools, id)
	}
	_, err := f.pool.Exec(ctx, `INSERT INTO students (id) VALUES ($1)`, f.student)
	require.NoError(t, err)
	return f
}

// swipe stores a counted swipe under client as the n-th and returns the
// swipe's and its event's ids.
func (f *fixture) swipe(t *testing.T, client string, n int) (swipeID, outboxID int64) {
	ctx := context.Background()
	require.NoError(t, f.pool.QueryRow(ctx, `INSERT INTO swipes (student_id, school_id, direction, counted, client_id, swipe_count)
		VALUES ($1, $2, 'right', true, $3, $4) RETURNING id`, f.student, f.schools[n-1], client, n).Scan(&swipeID))
	require.NoError(t, f.pool.QueryRow(ctx, `INSERT INTO outbox (topic, student_id, payload)
		VALUES ('swipe.recorded', $1, jsonb_build_object('swipe_id', $2::bigint)) RETURNING id`, f.student, swipeID).Scan(&outboxID))
	_, err := f.pool.Exec(ctx, `UPDATE students SET swipe_count = $2 WHERE id = $1`, f.student, n)
	require.NoError(t, err)
	return swipeID, outboxID
}

func (f *fixture) learnedUpTo(t *testing.T, swipeID int64) {
	_, err := f.pool.Exec(context.Background(), `INSERT INTO learning_state (student_id, model, weights, last_swipe_id)
		VALUES ($1, '{}', '{}', $2) ON CONFLICT (student_id) DO UPDATE SET last_swipe_id = $2`, f.student, swipeID)
	require.NoError(t, err)
}

func TestCheckHoldsWhenEverythingIsThere(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, ev1 := f.swipe(t, "c1", 1)
	s2, ev2 := f.swipe(t, "c2", 2)
	f.learnedUpTo(t, s2)
	recv := &receiver{events: map[int64]struct{}{ev1: {}, ev2: {}}}
	sent := map[string]*swipe{
		"c1": {id: "c1", student: f.student, acked: true, count: 1},
		"c2": {id: "c2", student: f.student}, // stored, never answered 2xx
		"c3": {id: "c3", student: f.student}, // neither
	}
	v, err := check(ctx, f.pool, []string{f.student}, sent, recv)
	require.NoError(t, err)
	assert.Equal(t, verdict{stored: 2}, v)
}

func TestCheckFindsEachBrokenPromise(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	s1, ev1 := f.swipe(t, "c1", 1)
	f.swipe(t, "c2", 2)
	f.learnedUpTo(t, s1)
	recv := &receiver{events: map[int64]struct{}{ev1: {}}}
	sent := map[string]*swipe{
		"c1": {id: "c1", student: f.student, acked: true, count: 1},
		"c2": {id: "c2", student: f.student, acked: true, count: 1}, // answered a count its row does not hold
		"c3": {id: "c3", student: f.student, acked: true, count: 3}, // answered 2xx, not stored
	}
	v, err := check(ctx, f.pool, []string{f.student}, sent, recv)
	require.NoError(t, err)
	assert.Equal(t, 1, v.lost, v.problems)
	assert.Equal(t, 1, v.doubled, v.problems)
	assert.Equal(t, 1, v.unlearned, "learned up to the first of two swipes")
	assert.Equal(t, 1, v.undelivered, "the second event has not arrived")

	// A count above the stored swipes, and a row under a swipe_id the load
	// never sent, are doubles too; a counted swipe without its event is
	// undelivered.
	_, err = f.pool.Exec(ctx, `UPDATE students SET swipe_count = 4 WHERE id = $1`, f.student)
	require.NoError(t, err)
	_, err = f.pool.Exec(ctx, `INSERT INTO swipes (student_id, school_id, direction, counted, client_id, swipe_count)
		VALUES ($1, $2, 'left', true, 'stranger', 3)`, f.student, f.schools[2])
	require.NoError(t, err)
	v, err = check(ctx, f.pool, []string{f.student}, sent, recv)
	require.NoError(t, err)
	assert.Equal(t, 1+1+1, v.doubled, v.problems) // the count, the stranger, the answer
	assert.Equal(t, 2, v.undelivered, v.problems)
	assert.Equal(t, 3, v.stored)
}
