package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
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

// The watermark's first statement reads the sequence before it lists the
// writers in progress (listed first, a writer that took its value after the
// read would be missed): the list is the inner side of a nested loop over
// the sequence's row, so it is made once that row is read.
func TestWatermarkReadsThePositionBeforeTheWriters(t *testing.T) {
	ctx := context.Background()
	pool := testutil.NewDB(t)
	rows, err := pool.Query(ctx, "EXPLAIN (COSTS OFF) "+store.WatermarkStartSQL)
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	plan := strings.Join(lines, "\n")
	require.Contains(t, lines[0], "Nested Loop", plan)
	seq := strings.Index(plan, "Seq Scan on change_seq")
	locks := strings.Index(plan, "Function Scan on pg_lock_status")
	require.True(t, seq > 0 && locks > 0, plan)
	assert.Less(t, seq, locks, "the sequence is the outer side:\n%s", plan)

	// And it answers as the two statements did.
	var pos int64
	var writers []string
	require.NoError(t, pool.QueryRow(ctx, store.WatermarkStartSQL).Scan(&pos, &writers))
	assert.Empty(t, writers)
	assert.GreaterOrEqual(t, pos, int64(0))
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

// syncStudent is a database of 40 schools and a student who swiped left
// on the fourth.
func syncStudent(t *testing.T) (context.Context, *pgxpool.Pool, *store.Store, []domain.School, string) {
	ctx := context.Background()
	pool := testutil.NewDB(t)
	db := store.New(pool)
	schools := catalog.Generate(40, 1)
	_, err := db.UpsertSchools(ctx, schools)
	require.NoError(t, err)
	student := "7d6f2c1e-8a3b-4c5d-9e0f-1a2b3c4d5e6f"
	_, err = pool.Exec(ctx, `INSERT INTO students (id, name) VALUES ($1, 'S')`, student)
	require.NoError(t, err)
	_, err = db.RecordSwipe(ctx, domain.Swipe{StudentID: student, SchoolID: schools[3].ID, Direction: "left",
		Interaction: domain.InteractionSwipe})
	require.NoError(t, err)
	return ctx, pool, db, schools, student
}

// A pull's schools are the student's (swiped, or named by the caller)
// changed within the range, found by id, read without program shares.
func TestSyncSchoolsAreTheStudentsInTheRange(t *testing.T) {
	ctx, pool, db, schools, student := syncStudent(t)
	var err error
	_, err = db.RecordFeedback(ctx, domain.Feedback{StudentID: student, SchoolID: schools[5].ID, Reason: "too_expensive"})
	require.NoError(t, err)
	// A school no longer served is still sent, marked inactive.
	_, err = pool.Exec(ctx, `UPDATE schools SET active = false WHERE id = $1`, schools[7].ID)
	require.NoError(t, err)
	var top int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT max(change_seq) FROM schools`).Scan(&top))

	got, err := db.SyncSchools(ctx, student, 0, top, []string{schools[7].ID, schools[3].ID})
	require.NoError(t, err)
	require.Len(t, got, 3, "the swiped school, the one with feedback and the named one, once each")
	var ids []string
	for _, s := range got {
		ids = append(ids, s.ID)
		assert.NotEmpty(t, s.Name)
		assert.Empty(t, s.ProgramShares, "not read")
		assert.Equal(t, s.ID != schools[7].ID, s.Active)
	}
	assert.ElementsMatch(t, []string{schools[3].ID, schools[5].ID, schools[7].ID}, ids)
	var withShares int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM schools WHERE id = ANY($1::uuid[]) AND program_shares IS NOT NULL`,
		ids).Scan(&withShares))
	assert.Positive(t, withShares, "the schools have shares to leave out")

	// A range after the schools' last change holds none of them.
	got, err = db.SyncSchools(ctx, student, top, top+1000, []string{schools[7].ID})
	require.NoError(t, err)
	assert.Empty(t, got)
}

// A pull's read below its watermark is the changes, the student and the
// schools in one batch: the same as the three reads one by one, the
// schools cut at the last change sent when the limit cuts the changes.
func TestSyncReadIsTheThreeReadsInOneBatch(t *testing.T) {
	ctx, pool, db, schools, student := syncStudent(t)
	var err error
	// A school changed after the first swipe, then given feedback.
	_, err = pool.Exec(ctx, `UPDATE schools SET zip = '12345' WHERE id = $1`, schools[5].ID)
	require.NoError(t, err)
	_, err = db.RecordFeedback(ctx, domain.Feedback{StudentID: student, SchoolID: schools[5].ID, Reason: "too_expensive"})
	require.NoError(t, err)
	top, safe, err := db.ChangeWatermark(ctx, time.Second)
	require.NoError(t, err)
	require.True(t, safe)
	also := []string{schools[7].ID}

	got, err := db.SyncRead(ctx, student, 0, top, 1000, also)
	require.NoError(t, err)
	sw, fb, upTo, more, err := db.SyncChanges(ctx, student, 0, top, 1000)
	require.NoError(t, err)
	st, err := db.LearnerState(ctx, student)
	require.NoError(t, err)
	sc, err := db.SyncSchools(ctx, student, 0, top, also)
	require.NoError(t, err)
	assert.Equal(t, domain.SyncRead{Swipes: sw, Feedback: fb, UpTo: upTo, More: more, State: st, Schools: sc}, got)
	require.Len(t, got.Swipes, 1)
	require.Len(t, got.Feedback, 1)
	assert.Len(t, got.Schools, 3)
	assert.Equal(t, 2, len(got.State.New), "the events not folded in")

	// One change per pull: the cursor stops at the swipe, and the schools
	// changed after it wait for the pull that sends the feedback.
	got, err = db.SyncRead(ctx, student, 0, top, 1, also)
	require.NoError(t, err)
	assert.True(t, got.More)
	assert.Equal(t, got.Swipes[0].Seq, got.UpTo)
	assert.Empty(t, got.Feedback)
	var ids []string
	for _, s := range got.Schools {
		ids = append(ids, s.ID)
	}
	assert.ElementsMatch(t, []string{schools[3].ID, schools[7].ID}, ids, "not the school changed after the swipe")
	next, err := db.SyncRead(ctx, student, got.UpTo, top, 1, also)
	require.NoError(t, err)
	assert.False(t, next.More)
	assert.Len(t, next.Feedback, 1)
	require.Len(t, next.Schools, 1)
	assert.Equal(t, schools[5].ID, next.Schools[0].ID)

	// An unknown student.
	_, err = db.SyncRead(ctx, "00000000-0000-4000-8000-000000000001", 0, top, 1000, nil)
	var de *domain.Error
	require.ErrorAs(t, err, &de)
	assert.Equal(t, domain.CodeInvalidStudentID, de.Code)
}
