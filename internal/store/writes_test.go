package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
)

// writeFixture is a database with a student and three served schools.
type writeFixture struct {
	db      *store.Store
	student string
	schools []string
}

func newWriteFixture(t *testing.T) writeFixture {
	t.Helper()
	db := store.New(testutil.NewDB(t))
	gen := catalog.Generate(3, 1)
	_, err := db.UpsertSchools(context.Background(), gen)
	require.NoError(t, err)
	f := writeFixture{db: db, student: newStudent(t, db)}
	for _, s := range gen {
		f.schools = append(f.schools, s.ID)
	}
	return f
}

func (f writeFixture) swipe(school, direction, clientID string) domain.Swipe {
	return domain.Swipe{StudentID: f.student, SchoolID: school, Direction: direction,
		Interaction: domain.InteractionSwipe, ClientID: clientID}
}

func count(t *testing.T, db *store.Store, q string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, db.Pool().QueryRow(context.Background(), q, args...).Scan(&n))
	return n
}

// One statement records a swipe with what its answer says, the count and
// version, and the swipe.recorded event of a counted swipe; a weak signal
// moves the version only and publishes nothing.
func TestRecordSwipe(t *testing.T) {
	ctx := context.Background()
	f := newWriteFixture(t)
	v0 := studentVersion(t, f.db, f.student)
	spent := 4.2
	in := f.swipe(f.schools[0], "right", "")
	in.TimeSpent, in.IsProbe, in.TriggerFeedback, in.UpdatedWeights = &spent, true, true, true
	rec, err := f.db.RecordSwipe(ctx, in)
	require.NoError(t, err)
	assert.False(t, rec.Duplicate)
	assert.Equal(t, 1, rec.SwipeCount)
	assert.Equal(t, v0+1, rec.Version)
	assert.NotZero(t, rec.OutboxID)
	assert.Equal(t, v0+1, studentVersion(t, f.db, f.student))

	var payload map[string]any
	require.NoError(t, f.db.Pool().QueryRow(ctx, `SELECT payload FROM outbox WHERE id = $1`, rec.OutboxID).Scan(&payload))
	assert.Equal(t, f.student, payload["student_id"])
	assert.Equal(t, f.schools[0], payload["school_id"])
	assert.Equal(t, "right", payload["direction"])
	assert.Equal(t, float64(rec.ID), payload["swipe_id"])
	assert.Equal(t, rec.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z"), payload["timestamp"])
	var stored float64
	require.NoError(t, f.db.Pool().QueryRow(ctx, `SELECT time_spent FROM swipes WHERE id = $1`, rec.ID).Scan(&stored))
	assert.Equal(t, 4.2, stored, "time_spent comes back as it was sent")

	tap := f.swipe(f.schools[1], "left", "")
	tap.Interaction = domain.InteractionTap
	rec2, err := f.db.RecordSwipe(ctx, tap)
	require.NoError(t, err)
	assert.Equal(t, 1, rec2.SwipeCount, "a tap is not counted")
	assert.Equal(t, v0+2, rec2.Version)
	assert.Zero(t, rec2.OutboxID, "a tap is not published")
	assert.Equal(t, 1, count(t, f.db, `SELECT count(*) FROM outbox`))
}

// A retry with the same client id stores nothing and gets the first
// swipe's answer, derived from its row; concurrent retries store one row.
func TestRecordSwipeIsIdempotentPerClientID(t *testing.T) {
	ctx := context.Background()
	f := newWriteFixture(t)
	in := f.swipe(f.schools[0], "right", "client-1")
	in.UpdatedWeights, in.TriggerFeedback = true, true
	first, err := f.db.RecordSwipe(ctx, in)
	require.NoError(t, err)
	again, err := f.db.RecordSwipe(ctx, f.swipe(f.schools[0], "right", "client-1"))
	require.NoError(t, err)
	assert.True(t, again.Duplicate)
	assert.Equal(t, first.ID, again.ID)
	assert.Equal(t, 1, again.SwipeCount)
	assert.True(t, again.UpdatedWeights, "the first answer's flags")
	assert.True(t, again.TriggerFeedback)
	other, err := f.db.RecordSwipe(ctx, f.swipe(f.schools[1], "left", "client-1"))
	require.NoError(t, err)
	assert.True(t, other.Duplicate, "the caller tells a conflict from the first swipe's fields")
	assert.Equal(t, f.schools[0], other.SchoolID)

	var wg sync.WaitGroup
	results := make([]domain.RecordedSwipe, 8)
	for i := range results {
		wg.Go(func() {
			var err error
			results[i], err = f.db.RecordSwipe(ctx, f.swipe(f.schools[2], "left", "client-2"))
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	ids := map[int64]bool{}
	for _, r := range results {
		ids[r.ID] = true
	}
	assert.Len(t, ids, 1, "one row for eight concurrent retries")
	assert.Equal(t, 2, count(t, f.db, `SELECT swipe_count FROM students WHERE id = $1`, f.student))
	assert.Equal(t, 2, count(t, f.db, `SELECT count(*) FROM swipes`))
}

func TestRecordSwipeRefusesUnknownStudentsAndSchools(t *testing.T) {
	ctx := context.Background()
	f := newWriteFixture(t)
	unknown := uuid.NewString()
	in := f.swipe(f.schools[0], "right", "")
	in.StudentID = unknown
	_, err := f.db.RecordSwipe(ctx, in)
	assertStudentNotFound(t, err, unknown)
	_, err = f.db.RecordSwipe(ctx, f.swipe(uuid.NewString(), "right", ""))
	assert.Equal(t, domain.CodeInvalidSchoolID, domain.CodeOf(err))
	_, err = f.db.Pool().Exec(ctx, `UPDATE schools SET active = false WHERE id = $1`, f.schools[1])
	require.NoError(t, err)
	_, err = f.db.RecordSwipe(ctx, f.swipe(f.schools[1], "right", ""))
	assert.Equal(t, domain.CodeInvalidSchoolID, domain.CodeOf(err), "an inactive school is not served")
	_, err = f.db.DeleteStudent(ctx, f.student)
	require.NoError(t, err)
	_, err = f.db.RecordSwipe(ctx, f.swipe(f.schools[0], "right", ""))
	assertStudentNotFound(t, err, f.student)
	assert.Zero(t, count(t, f.db, `SELECT count(*) FROM swipes`))
}

// Swipes and feedback name schools without a foreign key (each write checks
// the school in its own statement, above), which holds because no school
// row is ever deleted: the database refuses it, however it is asked.
func TestSchoolsAreNeverDeleted(t *testing.T) {
	ctx := context.Background()
	f := newWriteFixture(t)
	_, err := f.db.RecordSwipe(ctx, f.swipe(f.schools[0], "right", ""))
	require.NoError(t, err)
	for _, q := range []string{
		`DELETE FROM schools WHERE id = '` + f.schools[0] + `'`,
		`DELETE FROM schools WHERE id = '` + f.schools[1] + `'`, // named by nothing
		`TRUNCATE schools`,
	} {
		_, err := f.db.Pool().Exec(ctx, q)
		var pgErr *pgconn.PgError
		if assert.ErrorAs(t, err, &pgErr, q) {
			assert.Equal(t, "23001", pgErr.Code, q) // restrict_violation
			assert.Contains(t, pgErr.Message, "active = false")
		}
	}
	assert.Equal(t, 3, count(t, f.db, `SELECT count(*) FROM schools`))
	_, err = f.db.RecordFeedback(ctx, domain.Feedback{StudentID: f.student, SchoolID: uuid.NewString(), Reason: "too_far"})
	assert.Equal(t, domain.CodeInvalidSchoolID, domain.CodeOf(err), "feedback on an unknown school")
	assert.Zero(t, count(t, f.db, `SELECT count(*) FROM feedback`))
}

// A batch stores its new changes in order, once per client id, counts its
// swipes once, and says what became of every change.
func TestRecordBatch(t *testing.T) {
	ctx := context.Background()
	f := newWriteFixture(t)
	_, err := f.db.RecordSwipe(ctx, f.swipe(f.schools[0], "right", "old"))
	require.NoError(t, err)
	at := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	sw := func(id, school, dir string) domain.Change {
		s := f.swipe(school, dir, id)
		s.OccurredAt = at
		return domain.Change{Type: domain.ChangeSwipe, Swipe: s}
	}
	fb := domain.Change{Type: domain.ChangeFeedback, Feedback: domain.Feedback{StudentID: f.student, SchoolID: f.schools[2],
		Reason: "too_expensive", Comment: "pricey", ClientID: "fb-1", OccurredAt: at}}
	bad := sw("bad", f.schools[1], "right")
	bad.Problem = "direction must be left or right"
	changes := []domain.Change{
		sw("a", f.schools[1], "left"),
		sw("old", f.schools[0], "right"),  // stored before: a duplicate
		sw("old2", f.schools[0], "right"), // new
		sw("a", f.schools[1], "left"),     // again in the batch: a duplicate
		sw("a", f.schools[2], "left"),     // the same id for another change: rejected
		sw("gone", uuid.NewString(), "left"),
		fb,
		bad,
		sw("old", f.schools[1], "left"), // stored before for another change: rejected
	}
	res, err := f.db.RecordBatch(ctx, f.student, changes)
	require.NoError(t, err)
	assert.Equal(t, []domain.Outcome{domain.Accepted, domain.Duplicate, domain.Accepted, domain.Duplicate, domain.Rejected,
		domain.Rejected, domain.Accepted, domain.Rejected, domain.Rejected}, res.Outcomes)
	assert.Contains(t, res.Errors[4], "already used")
	assert.Contains(t, res.Errors[5], "INVALID_SCHOOL_ID")
	assert.Equal(t, bad.Problem, res.Errors[7])
	assert.Contains(t, res.Errors[8], "already used")
	assert.Equal(t, 3, res.SwipeCount)
	require.Len(t, res.Swipes, 2)
	assert.Equal(t, 2, res.Swipes[0].SwipeCount, "each swipe's count once recorded")
	assert.Equal(t, 3, res.Swipes[1].SwipeCount)
	assert.Less(t, res.Swipes[0].ID, res.Swipes[1].ID, "stored in the order given")
	assert.NotZero(t, res.LastFeedbackID)
	assert.Equal(t, 3, count(t, f.db, `SELECT swipe_count FROM students WHERE id = $1`, f.student))
	assert.Equal(t, 3, count(t, f.db, `SELECT count(*) FROM outbox`), "one event per counted swipe")
	var comment string
	require.NoError(t, f.db.Pool().QueryRow(ctx, `SELECT comment FROM feedback WHERE id = $1`, res.LastFeedbackID).Scan(&comment))
	assert.Equal(t, "pricey", comment)

	// The same batch again changes nothing.
	again, err := f.db.RecordBatch(ctx, f.student, changes)
	require.NoError(t, err)
	for i, o := range again.Outcomes {
		if res.Outcomes[i] == domain.Accepted {
			assert.Equal(t, domain.Duplicate, o, "change %d", i)
		}
	}
	assert.Equal(t, 3, again.SwipeCount)
	assert.Equal(t, 3, count(t, f.db, `SELECT count(*) FROM outbox`))

	unknown := uuid.NewString()
	_, err = f.db.RecordBatch(ctx, unknown, changes[:1])
	assertStudentNotFound(t, err, unknown)
}

// A fold reads the state and what is new in one statement and stores its
// result only if nobody stored first.
func TestLearnerStateAndOptimisticSave(t *testing.T) {
	ctx := context.Background()
	f := newWriteFixture(t)
	r1, err := f.db.RecordSwipe(ctx, f.swipe(f.schools[0], "right", ""))
	require.NoError(t, err)
	tap := f.swipe(f.schools[1], "left", "")
	tap.Interaction = domain.InteractionTap
	r2, err := f.db.RecordSwipe(ctx, tap)
	require.NoError(t, err)
	fb, err := f.db.RecordFeedback(ctx, domain.Feedback{StudentID: f.student, SchoolID: f.schools[2], Reason: "too_selective"})
	require.NoError(t, err)

	st, err := f.db.LearnerState(ctx, f.student)
	require.NoError(t, err)
	assert.Zero(t, st.LearningVersion)
	assert.Nil(t, st.Model)
	require.Len(t, st.New, 3, "every event, in recording order")
	assert.Equal(t, r1.ID, st.New[0].SwipeID)
	assert.Equal(t, r2.ID, st.New[1].SwipeID)
	assert.Equal(t, fb.ID, st.New[2].FeedbackID)
	assert.Equal(t, "too_selective", st.New[2].Reason)
	assert.Equal(t, []string{f.schools[0]}, st.SwipedSchools(), "counted swipes only")

	up := domain.LearningUpdate{StudentCreatedAt: st.Student.CreatedAt,
		Model: []byte("M\x00 stored as given"), Weights: map[string]float64{"cost_weight": 0.5},
		LastSwipeID: r2.ID, LastFeedbackID: fb.ID, LastSeq: st.New[2].Seq, Swiped: []string{f.schools[0]}}
	v, saved, err := f.db.SaveLearning(ctx, f.student, 0, up)
	require.NoError(t, err)
	require.True(t, saved)
	assert.Equal(t, int64(1), v)
	_, saved, err = f.db.SaveLearning(ctx, f.student, 0, up)
	require.NoError(t, err)
	assert.False(t, saved, "another fold stored first: nothing changes")

	st, err = f.db.LearnerState(ctx, f.student)
	require.NoError(t, err)
	assert.Empty(t, st.New, "nothing new after the fold")
	assert.Equal(t, []string{f.schools[0]}, st.Swiped)
	assert.Equal(t, "M\x00 stored as given", string(st.Model))
	assert.Equal(t, int64(1), st.LearningVersion)

	// An erased student never gets a learned state back.
	_, err = f.db.DeleteStudent(ctx, f.student)
	require.NoError(t, err)
	_, saved, err = f.db.SaveLearning(ctx, f.student, 1, up)
	require.NoError(t, err)
	assert.False(t, saved)
}

// A fold that read one life of a student, then stalled while the student
// was erased and onboarded again under the same id, cannot store what it
// folded from the erased life: neither as the new life's first state (the
// student's created_at moved) nor over it (versions start again at 1, but
// the new state's cursors are past every id of the old life).
func TestStalledFoldAcrossAnErasure(t *testing.T) {
	ctx := context.Background()
	f := newWriteFixture(t)
	old, err := f.db.RecordSwipe(ctx, f.swipe(f.schools[0], "right", ""))
	require.NoError(t, err)
	first := domain.LearningUpdate{StudentCreatedAt: createdAt(t, f.db, f.student), Model: []byte("old life"),
		LastSwipeID: old.ID, Swiped: []string{f.schools[0]}}
	_, saved, err := f.db.SaveLearning(ctx, f.student, 0, first)
	require.NoError(t, err)
	require.True(t, saved)
	// One stalled fold read version 1 of the old life; another read the
	// old life before any state was stored (version 0).
	stale := first

	erase := func() {
		t.Helper()
		_, err := f.db.DeleteStudent(ctx, f.student)
		require.NoError(t, err)
		time.Sleep(2 * time.Millisecond) // created_at is kept to the microsecond
		_, _, err = f.db.SaveStudent(ctx, domain.Student{ID: f.student, Name: "Avery Quinn", GraduationYear: "2027"})
		require.NoError(t, err)
	}
	erase()
	_, saved, err = f.db.SaveLearning(ctx, f.student, 0, first)
	require.NoError(t, err)
	assert.False(t, saved, "a first fold of the old life does not become the new life's state")
	var n int
	require.NoError(t, f.db.Pool().QueryRow(ctx, `SELECT count(*) FROM learning_state WHERE student_id = $1`,
		f.student).Scan(&n))
	assert.Zero(t, n)

	fresh, err := f.db.RecordSwipe(ctx, f.swipe(f.schools[1], "left", ""))
	require.NoError(t, err)
	life := createdAt(t, f.db, f.student)
	v, saved, err := f.db.SaveLearning(ctx, f.student, 0, domain.LearningUpdate{StudentCreatedAt: life,
		Model: []byte("new life"), LastSwipeID: fresh.ID, Swiped: []string{}})
	require.NoError(t, err)
	require.True(t, saved)
	require.Equal(t, int64(1), v, "versions start again after an erasure")

	_, saved, err = f.db.SaveLearning(ctx, f.student, 1, stale)
	require.NoError(t, err)
	assert.False(t, saved, "the stalled fold is refused")
	st, err := f.db.LearnerState(ctx, f.student)
	require.NoError(t, err)
	assert.Equal(t, "new life", string(st.Model))
	assert.Equal(t, fresh.ID, st.LastSwipeID)

	// A fold of this life that moves only the feedback cursor is saved.
	fb, err := f.db.RecordFeedback(ctx, domain.Feedback{StudentID: f.student, SchoolID: f.schools[2], Reason: "too_selective"})
	require.NoError(t, err)
	v, saved, err = f.db.SaveLearning(ctx, f.student, 1, domain.LearningUpdate{StudentCreatedAt: life,
		Model: []byte("new life, more"), LastSwipeID: fresh.ID, LastFeedbackID: fb.ID, Swiped: []string{}})
	require.NoError(t, err)
	assert.True(t, saved)
	assert.Equal(t, int64(2), v)

	_, _, err = f.db.SaveLearning(ctx, uuid.NewString(), 0, domain.LearningUpdate{Model: []byte("x")})
	assert.ErrorContains(t, err, "created_at", "a first state without the life it was read from is a caller's error")
}

// createdAt is the student's created_at as the store keeps it.
func createdAt(t *testing.T, db *store.Store, id string) time.Time {
	t.Helper()
	var at time.Time
	require.NoError(t, db.Pool().QueryRow(context.Background(), `SELECT created_at FROM students WHERE id = $1`, id).Scan(&at))
	return at
}

// A full re-fold reads of each school the latest event of each kind.
func TestLearnHistoryKeepsTheLatestEventPerSchoolAndKind(t *testing.T) {
	ctx := context.Background()
	f := newWriteFixture(t)
	var last int64
	for _, dir := range []string{"right", "left", "right"} {
		r, err := f.db.RecordSwipe(ctx, f.swipe(f.schools[0], dir, ""))
		require.NoError(t, err)
		last = r.ID
	}
	tap := f.swipe(f.schools[0], "right", "")
	tap.Interaction = domain.InteractionTap
	for range 2 {
		r, err := f.db.RecordSwipe(ctx, tap)
		require.NoError(t, err)
		last = r.ID
	}
	fb, err := f.db.RecordFeedback(ctx, domain.Feedback{StudentID: f.student, SchoolID: f.schools[0], Reason: "too_expensive"})
	require.NoError(t, err)
	hist, err := f.db.LearnHistory(ctx, f.student, last, fb.ID)
	require.NoError(t, err)
	require.Len(t, hist, 3, "one swipe, one tap, one feedback reason")
	assert.Equal(t, "right", hist[0].Direction, "the latest counted swipe")
	assert.Equal(t, domain.InteractionTap, hist[1].Interaction)
	assert.Equal(t, fb.ID, hist[2].FeedbackID)
	assert.Less(t, hist[0].Seq, hist[1].Seq, "in recording order")
}

// The learn sweep finds students whose learned state lacks events
// recorded more than the grace ago, and moves its cursor past settled ones.
func TestUnlearnedStudents(t *testing.T) {
	ctx := context.Background()
	f := newWriteFixture(t)
	r, err := f.db.RecordSwipe(ctx, f.swipe(f.schools[0], "right", ""))
	require.NoError(t, err)
	cur, err := f.db.LearnSweepCursor(ctx)
	require.NoError(t, err)
	assert.Zero(t, cur.SwipeID, "a first sweep looks back")

	debts, err := f.db.UnlearnedStudents(ctx, cur, time.Hour, 100)
	require.NoError(t, err)
	assert.Empty(t, debts, "too recent: its task may still run")
	_, err = f.db.Pool().Exec(ctx, `UPDATE swipes SET created_at = now() - interval '2 minutes'`)
	require.NoError(t, err)
	debts, err = f.db.UnlearnedStudents(ctx, cur, 10*time.Second, 100)
	require.NoError(t, err)
	require.Len(t, debts, 1)
	assert.Equal(t, f.student, debts[0].StudentID)
	assert.Equal(t, r.Version, debts[0].Version)
	assert.Zero(t, debts[0].LastFeedbackID)

	_, saved, err := f.db.SaveLearning(ctx, f.student, 0, domain.LearningUpdate{Model: []byte(`{}`), LastSwipeID: r.ID,
		StudentCreatedAt: createdAt(t, f.db, f.student)})
	require.NoError(t, err)
	require.True(t, saved)
	debts, err = f.db.UnlearnedStudents(ctx, cur, 10*time.Second, 100)
	require.NoError(t, err)
	assert.Empty(t, debts, "learned")

	next, err := f.db.AdvanceLearnSweep(ctx, cur, time.Minute, time.Hour)
	require.NoError(t, err)
	assert.Equal(t, r.ID, next.SwipeID)
	stored, err := f.db.LearnSweepCursor(ctx)
	require.NoError(t, err)
	assert.Equal(t, next, stored)
}

// The sweep's cursor moves past settled events only once they are learned,
// so a learn task lost with Redis's data is found again; an event older
// than the hold-back, or an erased student's, no longer holds it.
func TestLearnSweepCursorWaitsForUnlearnedEvents(t *testing.T) {
	ctx := context.Background()
	f := newWriteFixture(t)
	first, err := f.db.RecordSwipe(ctx, f.swipe(f.schools[0], "right", ""))
	require.NoError(t, err)
	other := newStudent(t, f.db)
	gone, err := f.db.RecordSwipe(ctx, domain.Swipe{StudentID: other, SchoolID: f.schools[1], Direction: "left",
		Interaction: domain.InteractionSwipe})
	require.NoError(t, err)
	_, err = f.db.Pool().Exec(ctx, `UPDATE swipes SET created_at = now() - interval '2 minutes'`)
	require.NoError(t, err)
	cur, err := f.db.LearnSweepCursor(ctx)
	require.NoError(t, err)

	next, err := f.db.AdvanceLearnSweep(ctx, cur, time.Minute, time.Hour)
	require.NoError(t, err)
	assert.Equal(t, first.ID-1, next.SwipeID, "settled but unlearned: the cursor waits below it")

	_, err = f.db.DeleteStudent(ctx, f.student)
	require.NoError(t, err)
	next, err = f.db.AdvanceLearnSweep(ctx, next, time.Minute, time.Hour)
	require.NoError(t, err)
	assert.Equal(t, gone.ID-1, next.SwipeID, "an erased student's events hold nothing")

	next, err = f.db.AdvanceLearnSweep(ctx, next, time.Minute, 90*time.Second)
	require.NoError(t, err)
	assert.Equal(t, gone.ID, next.SwipeID, "older than the hold-back: passed anyway")
}

// A build from before the binary form saves the model as JSON in model:
// the newer of the two forms when both are there, read as it is, and a
// save moves the state to the binary form. A state at version 0 (the
// column's default: one written by hand) is saved in place.
func TestLearnedStateSavedByAnOlderBuild(t *testing.T) {
	ctx := context.Background()
	f := newWriteFixture(t)
	_, err := f.db.Pool().Exec(ctx, `INSERT INTO learning_state (student_id, model, model_bin, weights)
VALUES ($1, '{"swipes": 3}', '\x4d00'::bytea, '{}')`, f.student)
	require.NoError(t, err)
	st, err := f.db.LearnerState(ctx, f.student)
	require.NoError(t, err)
	assert.JSONEq(t, `{"swipes": 3}`, string(st.Model))
	assert.Zero(t, st.LearningVersion)

	v, saved, err := f.db.SaveLearning(ctx, f.student, 0, domain.LearningUpdate{Model: []byte("M\x01new"),
		Weights: map[string]float64{}, StudentCreatedAt: st.Student.CreatedAt})
	require.NoError(t, err)
	require.True(t, saved, "a state at version 0 is saved in place")
	assert.Equal(t, int64(1), v)
	st, err = f.db.LearnerState(ctx, f.student)
	require.NoError(t, err)
	assert.Equal(t, "M\x01new", string(st.Model))
	var noJSON bool
	require.NoError(t, f.db.Pool().QueryRow(ctx, `SELECT model IS NULL FROM learning_state WHERE student_id = $1`,
		f.student).Scan(&noJSON))
	assert.True(t, noJSON, "the JSON form is cleared")
}
