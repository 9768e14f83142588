package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/collegematch/matching/internal/domain"
)

// StudentState is what the read side needs to build a student's feed: the
// profile, the version of the student's state (students.version, bumped by
// every profile save and, with learning, by every folded swipe) and the
// learned preference weights.
type StudentState struct {
	Student domain.Student
	Version int64
	// Weights are learning_state.weights keyed by their API names; nil
	// when the student has no learning state yet.
	Weights map[string]float64
}

// StudentState loads a student with its version and learned weights in one
// query. An unknown id gives INVALID_STUDENT_ID.
func (s *Store) StudentState(ctx context.Context, id string) (StudentState, error) {
	const q = `SELECT ` + studentColumns + `, version,
	(SELECT weights FROM learning_state WHERE learning_state.student_id = students.id)
FROM students WHERE id = $1`
	var (
		st      StudentState
		weights []byte
	)
	student, err := scanStudent(rowWithExtras{s.pool.QueryRow(ctx, q, id), []any{&st.Version, &weights}})
	if errors.Is(err, pgx.ErrNoRows) {
		return st, domain.StudentNotFound(id)
	}
	if err != nil {
		return st, mapErr(err, "student")
	}
	st.Student = student
	if weights != nil {
		st.Weights, err = numericWeights(weights)
		if err != nil {
			return st, fmt.Errorf("student %s learning_state.weights: %w", id, err)
		}
	}
	return st, nil
}

// StudentVersion is the current version of a student's state.
func (s *Store) StudentVersion(ctx context.Context, id string) (int64, error) {
	var v int64
	err := s.pool.QueryRow(ctx, `SELECT version FROM students WHERE id = $1`, id).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, domain.StudentNotFound(id)
	}
	return v, mapErr(err, "student")
}

// numericWeights reads a weights object, keeping its numeric entries.
func numericWeights(b []byte) (map[string]float64, error) {
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(raw))
	for k, v := range raw {
		if f, ok := v.(float64); ok {
			out[k] = f
		}
	}
	return out, nil
}

// rowWithExtras scans a row whose last columns are extra destinations.
type rowWithExtras struct {
	pgx.Row
	extra []any
}

func (r rowWithExtras) Scan(dest ...any) error { return r.Row.Scan(append(dest, r.extra...)...) }
