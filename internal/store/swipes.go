package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/collegematch/matching/internal/domain"
)

// Every write of a student's swipes or feedback first locks the student's
// row (FOR NO KEY UPDATE) and only then inserts. So a student's swipes and
// feedback are committed in the order of their ids and change_seq, and the
// learner, which reads "everything after the last id folded" while holding
// the same lock, can never miss a row that commits later with a smaller id.
// Any other writer of these tables (offline sync) must do the same.

// NewSwipe is one interaction to record.
type NewSwipe struct {
	StudentID       string
	SchoolID        string
	Direction       string // left or right
	InteractionType string // swipe, tap, detail_view or save
	Counted         bool   // counts toward swipe_count (interaction_type swipe)
	IsProbe         bool   // the school had been served to the student as a probe
	TimeSpent       *float64
	ClientID        string    // the client's id for the swipe; "" when none
	OccurredAt      time.Time // zero means now
}

// SwipeEvent names the outbox event a recorded swipe writes: its topic and
// payload, made from the swipe's row id and creation time.
type SwipeEvent func(swipeID int64, createdAt time.Time) (topic string, payload any)

// RecordedSwipe is what RecordSwipe stored, or found stored under the same
// client id.
type RecordedSwipe struct {
	ID        int64
	CreatedAt time.Time
	// Duplicate is true when the client id had been used already: nothing
	// was stored, and SchoolID, Direction, InteractionType and Response are
	// those of the first swipe.
	Duplicate       bool
	SchoolID        string
	Direction       string
	InteractionType string
	Response        []byte // the stored response (JSON); nil only for an erased student's old swipes
	// SwipeCount and Version are the student's counted swipes and version
	// after this swipe, read in the recording transaction (0 for a duplicate).
	SwipeCount int
	Version    int64
	OutboxID   int64 // the event written with the swipe (0 for a duplicate)
}

// RecordSwipe stores one swipe in one transaction: it locks the student's
// row, returns the first swipe when the client id was used before, checks
// the school is served, inserts the swipe, bumps the student's swipe count
// (counted swipes only) and version, writes the outbox event named by event
// and stores the response respond makes from the exact swipe count.
//
// An unknown or erased student is INVALID_STUDENT_ID; an unknown or
// inactive school is INVALID_SCHOOL_ID. A client id is unique per student
// (UNIQUE (student_id, client_id)), so concurrent retries store one row:
// they queue on the student's row lock and the later ones find the first.
func (s *Store) RecordSwipe(ctx context.Context, in NewSwipe, event SwipeEvent, respond func(swipeCount int) ([]byte, error)) (RecordedSwipe, error) {
	var out RecordedSwipe
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockStudent(ctx, tx, in.StudentID); err != nil {
			return err
		}
		if in.ClientID != "" {
			dup, found, err := swipeByClientID(ctx, tx, in.StudentID, in.ClientID)
			if err != nil || found {
				out = dup
				return err
			}
		}
		if err := activeSchool(ctx, tx, in.SchoolID); err != nil {
			return err
		}
		const insert = `
INSERT INTO swipes (student_id, school_id, direction, interaction_type, counted, is_probe, time_spent, client_id, occurred_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, nullif($8, ''), coalesce($9, now()))
ON CONFLICT (student_id, client_id) DO NOTHING
RETURNING id, created_at`
		var occurred *time.Time
		if !in.OccurredAt.IsZero() {
			occurred = &in.OccurredAt
		}
		err := tx.QueryRow(ctx, insert, in.StudentID, in.SchoolID, in.Direction, in.InteractionType, in.Counted,
			in.IsProbe, in.TimeSpent, in.ClientID, occurred).Scan(&out.ID, &out.CreatedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			// A writer that does not take the student's lock stored the same
			// client id first; ON CONFLICT waited for it, so it is visible now.
			dup, _, err := swipeByClientID(ctx, tx, in.StudentID, in.ClientID)
			out = dup
			return err
		}
		if err != nil {
			return err
		}
		out.SchoolID, out.Direction, out.InteractionType = in.SchoolID, in.Direction, in.InteractionType

		counted := 0
		if in.Counted {
			counted = 1
		}
		const bump = `UPDATE students SET swipe_count = swipe_count + $2, version = version + 1 WHERE id = $1 RETURNING swipe_count, version`
		if err := tx.QueryRow(ctx, bump, in.StudentID, counted).Scan(&out.SwipeCount, &out.Version); err != nil {
			return err
		}
		topic, payload := event(out.ID, out.CreatedAt)
		if out.OutboxID, err = InsertOutbox(ctx, tx, topic, in.StudentID, payload); err != nil {
			return err
		}
		if out.Response, err = respond(out.SwipeCount); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE swipes SET response = $2::jsonb WHERE id = $1`, out.ID, string(out.Response))
		return err
	})
	if err != nil {
		return RecordedSwipe{}, domainErr(err, "swipe")
	}
	return out, nil
}

// lockStudent locks a student's row for the rest of tx; an unknown or
// erased student is INVALID_STUDENT_ID.
func lockStudent(ctx context.Context, tx pgx.Tx, studentID string) error {
	var erased bool
	err := tx.QueryRow(ctx, `SELECT deleted_at IS NOT NULL FROM students WHERE id = $1 FOR NO KEY UPDATE`, studentID).Scan(&erased)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && erased) {
		return domain.StudentNotFound(studentID)
	}
	return err
}

// activeSchool checks that a school exists and is served; INVALID_SCHOOL_ID otherwise.
func activeSchool(ctx context.Context, tx pgx.Tx, schoolID string) error {
	var active bool
	err := tx.QueryRow(ctx, `SELECT active FROM schools WHERE id = $1`, schoolID).Scan(&active)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !active) {
		return domain.SchoolNotFound(schoolID)
	}
	return err
}

// swipeByClientID finds the swipe a student recorded under a client id.
func swipeByClientID(ctx context.Context, tx pgx.Tx, studentID, clientID string) (RecordedSwipe, bool, error) {
	const q = `
SELECT id, created_at, school_id::text, direction, interaction_type, response
FROM swipes WHERE student_id = $1 AND client_id = $2`
	r := RecordedSwipe{Duplicate: true}
	err := tx.QueryRow(ctx, q, studentID, clientID).Scan(&r.ID, &r.CreatedAt, &r.SchoolID, &r.Direction,
		&r.InteractionType, &r.Response)
	if errors.Is(err, pgx.ErrNoRows) {
		return RecordedSwipe{}, false, nil
	}
	return r, err == nil, err
}

// domainErr keeps domain errors as they are and maps the rest.
func domainErr(err error, what string) error {
	var de *domain.Error
	if errors.As(err, &de) {
		return err
	}
	return mapErr(err, what)
}

// NewFeedback is one feedback reason to record.
type NewFeedback struct {
	StudentID string
	SchoolID  string
	Reason    string // one of the feedback options
	Comment   string // "" when none
}

// RecordedFeedback is what RecordFeedback stored.
type RecordedFeedback struct {
	ID        int64
	CreatedAt time.Time
	OutboxID  int64
}

// RecordFeedback stores a feedback reason and its outbox event in one
// transaction, under the student's row lock (see the note at the top of
// this file). An unknown or erased student is INVALID_STUDENT_ID; an
// unknown or inactive school INVALID_SCHOOL_ID. The student's version is
// not bumped: nothing a read model shows changes until the learner has
// folded the feedback in, which bumps it.
func (s *Store) RecordFeedback(ctx context.Context, in NewFeedback, event SwipeEvent) (RecordedFeedback, error) {
	var out RecordedFeedback
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockStudent(ctx, tx, in.StudentID); err != nil {
			return err
		}
		if err := activeSchool(ctx, tx, in.SchoolID); err != nil {
			return err
		}
		const insert = `
INSERT INTO feedback (student_id, school_id, reason, comment) VALUES ($1, $2, $3, nullif($4, ''))
RETURNING id, created_at`
		if err := tx.QueryRow(ctx, insert, in.StudentID, in.SchoolID, in.Reason, in.Comment).Scan(&out.ID, &out.CreatedAt); err != nil {
			return err
		}
		topic, payload := event(out.ID, out.CreatedAt)
		var err error
		out.OutboxID, err = InsertOutbox(ctx, tx, topic, in.StudentID, payload)
		return err
	})
	if err != nil {
		return RecordedFeedback{}, domainErr(err, "feedback")
	}
	return out, nil
}
