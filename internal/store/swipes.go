package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/collegematch/matching/internal/domain"
)

// Every write of a student's swipes or feedback locks the student's row
// (FOR NO KEY UPDATE) before its rows take their ids. So a student's swipes
// and feedback are committed in the order of their ids and change_seq, and
// the learner, which reads "everything after the last id folded", can
// never miss a row that commits later with a smaller id. Any other writer
// of these tables (offline sync) must do the same.

// TopicSwipeRecorded is the outbox topic of a counted swipe: the
// swipe.recorded event published to webhook subscribers.
const TopicSwipeRecorded = "swipe.recorded"

// recordSwipe is POST /swipe's one statement: it locks the student's row,
// finds a swipe stored under the same client id, checks the school is
// served, inserts the swipe with what its answer says (the count once it is
// recorded, the flags), bumps the student's count (counted swipes only) and
// version, and writes the swipe.recorded outbox event of a counted swipe,
// all in one round trip. ins runs only for a live student, a served school
// and an unused client id; everything after it runs only when it inserted.
//
// A retry that raced the first swipe (both waited on the student's lock)
// finds no duplicate in its snapshot and inserts nothing (ON CONFLICT); the
// caller then reads the first swipe (swipeByClientID).
const recordSwipe = `
WITH st AS (
	SELECT id, swipe_count, deleted_at IS NULL AS live FROM students WHERE id = $1 FOR NO KEY UPDATE
), sc AS (
	SELECT id FROM schools WHERE id = $2 AND active
), dup AS (
	SELECT ` + storedSwipeColumns + ` FROM swipes WHERE student_id = $1 AND client_id = nullif($8, '')
), ins AS (
	INSERT INTO swipes (student_id, school_id, direction, interaction_type, counted, is_probe, time_spent,
		client_id, occurred_at, swipe_count, trigger_feedback, updated_weights)
	SELECT st.id, sc.id, $3, $4, $5::boolean, $6, $7, nullif($8, ''), coalesce($9::timestamptz, now()),
		st.swipe_count + CASE WHEN $5::boolean THEN 1 ELSE 0 END, $10, $11
	FROM st, sc WHERE st.live AND NOT EXISTS (SELECT 1 FROM dup)
	ON CONFLICT (student_id, client_id) DO NOTHING
	RETURNING id, created_at, swipe_count
), bump AS (
	UPDATE students s SET swipe_count = ins.swipe_count, version = s.version + 1
	FROM ins WHERE s.id = $1
	RETURNING s.version
), ev AS (
	INSERT INTO outbox (topic, student_id, payload)
	SELECT '` + TopicSwipeRecorded + `', $1, jsonb_build_object('student_id', $1::text, 'school_id', $2::text,
		'direction', $3::text, -- the events' timestamps: ISO 8601 in UTC with milliseconds
		'timestamp', to_char(ins.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'swipe_id', ins.id)
	FROM ins WHERE $5::boolean
	RETURNING id
)
SELECT coalesce((SELECT live FROM st), false), EXISTS (SELECT 1 FROM sc),
	ins.id, ins.created_at, ins.swipe_count, bump.version, ev.id, dup.*
FROM (SELECT 1) AS one
LEFT JOIN ins ON true LEFT JOIN bump ON true LEFT JOIN ev ON true LEFT JOIN dup ON true`

// storedSwipeColumns are what a stored swipe's answer is derived from.
const storedSwipeColumns = `id, created_at, school_id::text, direction, interaction_type, is_probe,
	trigger_feedback, updated_weights, swipe_count, response`

// RecordSwipe stores one swipe in one statement (see recordSwipe) and
// returns it as stored, or the swipe first stored under its client id
// (Duplicate, nothing stored). An unknown or erased student is
// INVALID_STUDENT_ID; an unknown or inactive school INVALID_SCHOOL_ID.
func (s *Store) RecordSwipe(ctx context.Context, in domain.Swipe) (domain.RecordedSwipe, error) {
	var occurred *time.Time
	if !in.OccurredAt.IsZero() {
		occurred = &in.OccurredAt
	}
	var row recordedRow
	err := s.pool.QueryRow(ctx, recordSwipe, in.StudentID, in.SchoolID, in.Direction, in.Interaction, in.Counted(),
		in.IsProbe, in.TimeSpent, in.ClientID, occurred, in.TriggerFeedback, in.UpdatedWeights).
		Scan(row.dest()...)
	if err != nil {
		return domain.RecordedSwipe{}, mapErr(err, "swipe")
	}
	switch {
	case !row.live:
		return domain.RecordedSwipe{}, domain.StudentNotFound(in.StudentID)
	case row.dup.ID.Valid:
		return row.dup.recorded(in), nil
	case !row.served:
		return domain.RecordedSwipe{}, domain.SchoolNotFound(in.SchoolID)
	case !row.id.Valid:
		// A retry with the same client id committed while this one waited
		// for the student's lock: it is visible to a new statement.
		return s.swipeByClientID(ctx, in)
	}
	return domain.RecordedSwipe{Swipe: in, ID: row.id.Int64, CreatedAt: row.createdAt.Time, SwipeCount: int(row.count.Int32),
		Version: row.version.Int64, OutboxID: row.outboxID.Int64}, nil
}

// recordedRow is the row recordSwipe answers. Its nullable columns are
// pgtype values (a Valid flag beside the value), which pgx scans into in
// place: a pointer to a pointer would cost an allocation each.
type recordedRow struct {
	live, served bool
	id           pgtype.Int8
	createdAt    pgtype.Timestamptz
	count        pgtype.Int4
	version      pgtype.Int8
	outboxID     pgtype.Int8
	dup          nullableStored
}

func (r *recordedRow) dest() []any {
	return append([]any{&r.live, &r.served, &r.id, &r.createdAt, &r.count, &r.version, &r.outboxID}, r.dup.dest()...)
}

// nullableStored scans storedSwipeColumns from a LEFT JOIN.
type nullableStored struct {
	ID              pgtype.Int8
	CreatedAt       pgtype.Timestamptz
	SchoolID        pgtype.Text
	Direction       pgtype.Text
	Interaction     pgtype.Text
	IsProbe         pgtype.Bool
	TriggerFeedback pgtype.Bool
	UpdatedWeights  pgtype.Bool
	SwipeCount      pgtype.Int4
	Response        []byte
}

func (n *nullableStored) dest() []any {
	return []any{&n.ID, &n.CreatedAt, &n.SchoolID, &n.Direction, &n.Interaction, &n.IsProbe,
		&n.TriggerFeedback, &n.UpdatedWeights, &n.SwipeCount, &n.Response}
}

// recorded is the first swipe, as a duplicate of in.
func (n *nullableStored) recorded(in domain.Swipe) domain.RecordedSwipe {
	r := domain.RecordedSwipe{Duplicate: true, ID: n.ID.Int64, CreatedAt: n.CreatedAt.Time, Swipe: domain.Swipe{
		StudentID: in.StudentID, SchoolID: n.SchoolID.String, Direction: n.Direction.String, Interaction: n.Interaction.String,
		ClientID: in.ClientID, IsProbe: n.IsProbe.Bool, TriggerFeedback: n.TriggerFeedback.Bool, UpdatedWeights: n.UpdatedWeights.Bool}}
	if n.SwipeCount.Valid {
		r.SwipeCount = int(n.SwipeCount.Int32)
	} else if n.Response != nil {
		// Recorded before the count was stored on the row: the answer kept
		// then says it.
		var old struct {
			SwipeCount      int  `json:"swipe_count"`
			UpdatedWeights  bool `json:"updated_weights"`
			TriggerFeedback bool `json:"trigger_feedback"`
			IsProbe         bool `json:"is_probe"`
		}
		if json.Unmarshal(n.Response, &old) == nil {
			r.SwipeCount, r.UpdatedWeights, r.TriggerFeedback, r.IsProbe = old.SwipeCount, old.UpdatedWeights,
				old.TriggerFeedback, old.IsProbe
		}
	}
	return r
}

// swipeByClientID reads the swipe a student recorded under in's client id.
func (s *Store) swipeByClientID(ctx context.Context, in domain.Swipe) (domain.RecordedSwipe, error) {
	const q = `SELECT ` + storedSwipeColumns + ` FROM swipes WHERE student_id = $1 AND client_id = $2`
	var n nullableStored
	err := s.pool.QueryRow(ctx, q, in.StudentID, in.ClientID).Scan(n.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.RecordedSwipe{}, errors.New("store: a swipe conflicted on its client id, which names no swipe")
	}
	if err != nil {
		return domain.RecordedSwipe{}, mapErr(err, "swipe")
	}
	return n.recorded(in), nil
}

// recordFeedback is POST /feedback's one statement: the student's lock (see
// the note at the top of this file), the school check and the insert.
const recordFeedback = `
WITH st AS (
	SELECT id, deleted_at IS NULL AS live FROM students WHERE id = $1 FOR NO KEY UPDATE
), sc AS (
	SELECT id FROM schools WHERE id = $2 AND active
), ins AS (
	INSERT INTO feedback (student_id, school_id, reason, comment)
	SELECT st.id, sc.id, $3, nullif($4, '') FROM st, sc WHERE st.live
	RETURNING id, created_at
)
SELECT coalesce((SELECT live FROM st), false), EXISTS (SELECT 1 FROM sc), ins.id, ins.created_at
FROM (SELECT 1) AS one LEFT JOIN ins ON true`

// RecordFeedback stores a feedback reason in one statement. An unknown or
// erased student is INVALID_STUDENT_ID; an unknown or inactive school
// INVALID_SCHOOL_ID. The student's version is not bumped: nothing a read
// model shows changes until the learner has folded the feedback in.
func (s *Store) RecordFeedback(ctx context.Context, in domain.Feedback) (domain.RecordedFeedback, error) {
	var (
		live, served bool
		id           *int64
		createdAt    *time.Time
	)
	err := s.pool.QueryRow(ctx, recordFeedback, in.StudentID, in.SchoolID, in.Reason, in.Comment).
		Scan(&live, &served, &id, &createdAt)
	switch {
	case err != nil:
		return domain.RecordedFeedback{}, mapErr(err, "feedback")
	case !live:
		return domain.RecordedFeedback{}, domain.StudentNotFound(in.StudentID)
	case !served || id == nil:
		return domain.RecordedFeedback{}, domain.SchoolNotFound(in.SchoolID)
	}
	return domain.RecordedFeedback{Feedback: in, ID: *id, CreatedAt: *createdAt}, nil
}
