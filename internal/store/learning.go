package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/collegematch/matching/internal/domain"
)

// LearnerState is a student as the learner and the feed see them: the
// profile, the state's version, the onboarding category preferences (the
// prior before any learning), the learned model and, when asked for, the
// schools the student has swiped.
type LearnerState struct {
	Student    domain.Student
	Version    int64 // students.version
	Categories []CategoryPreference
	// Model is learning_state.model (JSON) and Weights learning_state.weights;
	// both nil when the student has no learning state yet.
	Model   []byte
	Weights map[string]float64
	// Swiped lists, once each, the schools the student has a counted swipe
	// on (interaction_type swipe); nil unless asked for.
	Swiped []string
}

// LearnerState loads everything above in one statement. The student's
// version is read in the same snapshot as the rest, so a read model built
// from it and labelled with the version never claims more than it saw. An
// unknown id is INVALID_STUDENT_ID; an erased student is returned (with
// DeletedAt set) for the caller to refuse.
func (s *Store) LearnerState(ctx context.Context, id string, withSwiped bool) (LearnerState, error) {
	const q = `SELECT ` + studentColumns + `, version,
	(SELECT model FROM learning_state WHERE learning_state.student_id = students.id),
	(SELECT weights FROM learning_state WHERE learning_state.student_id = students.id),
	(SELECT coalesce(json_agg(json_build_object('category_id', cp.category_id, 'direction', cp.direction,
		'created_at', cp.created_at, 'updated_at', cp.updated_at) ORDER BY cp.category_id), '[]')
	 FROM category_preferences cp WHERE cp.student_id = students.id),
	CASE WHEN $2 THEN (SELECT coalesce(array_agg(DISTINCT sw.school_id::text), '{}')
	 FROM swipes sw WHERE sw.student_id = students.id AND sw.counted) END
FROM students WHERE id = $1`
	var (
		st      LearnerState
		weights []byte
		cats    []byte
	)
	student, err := scanStudent(rowWithExtras{s.pool.QueryRow(ctx, q, id, withSwiped),
		[]any{&st.Version, &st.Model, &weights, &cats, &st.Swiped}})
	if errors.Is(err, pgx.ErrNoRows) {
		return st, domain.StudentNotFound(id)
	}
	if err != nil {
		return st, mapErr(err, "student")
	}
	st.Student = student
	if weights != nil {
		if st.Weights, err = numericWeights(weights); err != nil {
			return st, fmt.Errorf("student %s learning_state.weights: %w", id, err)
		}
	}
	if err := json.Unmarshal(cats, &st.Categories); err != nil {
		return st, fmt.Errorf("student %s category preferences: %w", id, err)
	}
	if withSwiped && st.Swiped == nil {
		st.Swiped = []string{}
	}
	return st, nil
}

// LearnEvent is one swipe or feedback reason, as the learner folds it.
type LearnEvent struct {
	// SwipeID is set for a swipe, FeedbackID for feedback.
	SwipeID    int64
	FeedbackID int64
	Seq        int64 // change_seq: the order events of one student were recorded in
	SchoolID   string
	// Swipes: direction and interaction_type. Feedback: the reason.
	Direction   string
	Interaction string
	Reason      string
	// Repeat is true for a counted swipe on a school the student had
	// already swiped (counted) before it.
	Repeat    bool
	CreatedAt time.Time
}

// LearnInput is what a fold reads: the student, the stored learning state
// and the events recorded since it was last folded, in recording order.
type LearnInput struct {
	Student    domain.Student
	Categories []CategoryPreference
	// Model is the stored model (JSON), nil when there is none yet.
	Model           []byte
	LastSwipeID     int64
	LastFeedbackID  int64
	LearningVersion int64
	New             []LearnEvent
}

// LearnUpdate is a fold's result: the model and weights to store.
type LearnUpdate struct {
	Model   []byte
	Weights map[string]float64
}

// LearnFold computes the new learning state. history loads every event of
// the student in recording order (for a rebuild from the prior); it reads
// inside the folding transaction, so it sees what New was taken from.
type LearnFold func(in LearnInput, history func() ([]LearnEvent, error)) (LearnUpdate, error)

// LearnOutcome says what FoldLearning did.
type LearnOutcome struct {
	// Erased is true for an erased student: nothing was folded.
	Erased bool
	// Folded are the events folded in; empty when there was nothing new.
	Folded []LearnEvent
	// StudentVersion is the student's version after the fold (unchanged
	// when nothing was folded); LearningVersion likewise learning_state's.
	StudentVersion  int64
	LearningVersion int64
}

// FoldLearning folds a student's new swipes and feedback into the learning
// state in one transaction:
//
//  1. it locks the student's row, which orders it with every swipe and
//     feedback write of the student (see the note at the top of
//     swipes.go), and the learning_state row;
//  2. it reads the events with ids above learning_state.last_swipe_id and
//     last_feedback_id, in recording order; with none it changes nothing;
//  3. it calls fold, stores the model, weights and last ids with
//     learning_state.version + 1 (a new row starts at version 1), and bumps
//     the student's version, so every read model built before is older.
//
// Running it again finds nothing new and changes nothing, and two runs at
// once take turns on the lock, so an event is folded exactly once. A run
// that fails or is cancelled before its commit leaves everything as it was.
// An erased student is left alone (Erased); an unknown one is
// INVALID_STUDENT_ID.
func (s *Store) FoldLearning(ctx context.Context, studentID string, fold LearnFold) (LearnOutcome, error) {
	var out LearnOutcome
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		const lock = `SELECT ` + studentColumns + `, version FROM students WHERE id = $1 FOR NO KEY UPDATE`
		student, err := scanStudent(rowWithExtras{tx.QueryRow(ctx, lock, studentID), []any{&out.StudentVersion}})
		if errors.Is(err, pgx.ErrNoRows) {
			return domain.StudentNotFound(studentID)
		}
		if err != nil {
			return err
		}
		if student.DeletedAt != nil {
			out.Erased = true
			return nil
		}
		in := LearnInput{Student: student}
		const state = `
SELECT model, last_swipe_id, last_feedback_id, version FROM learning_state WHERE student_id = $1 FOR UPDATE`
		err = tx.QueryRow(ctx, state, studentID).Scan(&in.Model, &in.LastSwipeID, &in.LastFeedbackID, &in.LearningVersion)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		out.LearningVersion = in.LearningVersion
		if in.New, err = learnEvents(ctx, tx, studentID, in.LastSwipeID, in.LastFeedbackID); err != nil {
			return err
		}
		if len(in.New) == 0 {
			return nil
		}
		if in.Categories, err = categoryPreferences(ctx, tx, studentID); err != nil {
			return err
		}
		up, err := fold(in, func() ([]LearnEvent, error) { return learnEvents(ctx, tx, studentID, 0, 0) })
		if err != nil {
			return fmt.Errorf("fold: %w", err)
		}
		lastSwipe, lastFeedback := in.LastSwipeID, in.LastFeedbackID
		for _, e := range in.New {
			lastSwipe, lastFeedback = max(lastSwipe, e.SwipeID), max(lastFeedback, e.FeedbackID)
		}
		weights, err := json.Marshal(up.Weights)
		if err != nil {
			return err
		}
		const save = `
INSERT INTO learning_state (student_id, model, weights, last_swipe_id, last_feedback_id, version)
VALUES ($1, $2::jsonb, $3::jsonb, $4, $5, 1)
ON CONFLICT (student_id) DO UPDATE SET model = excluded.model, weights = excluded.weights,
	last_swipe_id = excluded.last_swipe_id, last_feedback_id = excluded.last_feedback_id,
	version = learning_state.version + 1, updated_at = now()
RETURNING version`
		if err := tx.QueryRow(ctx, save, studentID, string(up.Model), string(weights), lastSwipe, lastFeedback).
			Scan(&out.LearningVersion); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `UPDATE students SET version = version + 1 WHERE id = $1 RETURNING version`,
			studentID).Scan(&out.StudentVersion); err != nil {
			return err
		}
		out.Folded = in.New
		return nil
	})
	if err != nil {
		return LearnOutcome{}, domainErr(err, "learning state")
	}
	return out, nil
}

// learnEvents reads a student's swipes with ids above afterSwipe and
// feedback with ids above afterFeedback, in recording order.
func learnEvents(ctx context.Context, tx pgx.Tx, studentID string, afterSwipe, afterFeedback int64) ([]LearnEvent, error) {
	const q = `
SELECT s.id, 0::bigint, s.change_seq, s.school_id::text, s.direction, s.interaction_type, '',
	s.counted AND EXISTS (SELECT 1 FROM swipes p
		WHERE p.student_id = s.student_id AND p.school_id = s.school_id AND p.counted AND p.id < s.id),
	s.created_at
FROM swipes s WHERE s.student_id = $1 AND s.id > $2
UNION ALL
SELECT 0::bigint, f.id, f.change_seq, f.school_id::text, '', '', f.reason, false, f.created_at
FROM feedback f WHERE f.student_id = $1 AND f.id > $3
ORDER BY 3`
	rows, err := tx.Query(ctx, q, studentID, afterSwipe, afterFeedback)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (LearnEvent, error) {
		var e LearnEvent
		err := row.Scan(&e.SwipeID, &e.FeedbackID, &e.Seq, &e.SchoolID, &e.Direction, &e.Interaction, &e.Reason,
			&e.Repeat, &e.CreatedAt)
		return e, err
	})
}
