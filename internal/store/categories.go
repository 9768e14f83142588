package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/collegematch/matching/internal/domain"
)

// CategoryPreference is a student's latest swipe on one onboarding
// category.
type CategoryPreference = domain.CategoryPreference

// saveCategorySwipe is POST /v2/onboarding/category-swipe's one statement:
// it bumps the live student's version (which locks the row, so concurrent
// swipes of one student take turns), upserts the preference, and returns
// the version with the student and their other preferences as they were
// (a statement does not see its own writes; the caller adds the new one).
const saveCategorySwipe = `
WITH bump AS (
	UPDATE students SET version = version + 1, updated_at = now()
	WHERE id = $1 AND deleted_at IS NULL
	RETURNING version
), up AS (
	INSERT INTO category_preferences (student_id, category_id, direction)
	SELECT $1, $2, $3 FROM bump
	ON CONFLICT (student_id, category_id) DO UPDATE SET direction = excluded.direction, updated_at = now()
	RETURNING category_id, direction, created_at, updated_at
)
SELECT ` + studentColumns + `, (SELECT version FROM bump),
	(SELECT json_build_object('category_id', category_id, 'direction', direction, 'created_at', created_at,
		'updated_at', updated_at) FROM up),
	(SELECT coalesce(json_agg(json_build_object('category_id', cp.category_id, 'direction', cp.direction,
		'created_at', cp.created_at, 'updated_at', cp.updated_at) ORDER BY cp.category_id), '[]')
	 FROM category_preferences cp WHERE cp.student_id = students.id AND cp.category_id <> $2)
FROM students WHERE id = $1`

// SaveCategorySwipe records a student's swipe on an onboarding category in
// one statement: one row per (student, category), the latest direction
// winning (a new swipe on the same category replaces the direction and sets
// updated_at), and the student's version bumped, so read models built
// before the swipe are superseded. It returns the student with every
// category preference after the save (what the prior is computed from) and
// the new version.
//
// direction must be "left" or "right" (INVALID_REQUEST otherwise). The
// category id is stored as given; the caller checks it against the known
// categories. An unknown or erased student is INVALID_STUDENT_ID.
func (s *Store) SaveCategorySwipe(ctx context.Context, studentID, categoryID, direction string) (domain.LearnerState, error) {
	if direction != "left" && direction != "right" {
		return domain.LearnerState{}, domain.Invalid("direction must be left or right",
			map[string]string{"direction": "must be left or right"})
	}
	if categoryID == "" {
		return domain.LearnerState{}, domain.Invalid("category_id is required", map[string]string{"category_id": "is required"})
	}
	var (
		st      domain.LearnerState
		version *int64
		saved   []byte
		others  []byte
	)
	student, err := scanStudent(rowWithExtras{s.pool.QueryRow(ctx, saveCategorySwipe, studentID, categoryID, direction),
		[]any{&version, &saved, &others}})
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && version == nil) {
		return st, domain.StudentNotFound(studentID)
	}
	if err != nil {
		return st, mapErr(err, "category preference")
	}
	st.Student, st.Version = student, *version
	if err := json.Unmarshal(others, &st.Categories); err != nil {
		return st, fmt.Errorf("student %s category preferences: %w", studentID, err)
	}
	var p CategoryPreference
	if err := json.Unmarshal(saved, &p); err != nil {
		return st, fmt.Errorf("student %s category preference: %w", studentID, err)
	}
	st.Categories = append(st.Categories, p)
	slices.SortFunc(st.Categories, func(a, b CategoryPreference) int { return strings.Compare(a.CategoryID, b.CategoryID) })
	return st, nil
}

// CategoryPreferences returns a student's category preferences by category
// id, an empty slice when the student has swiped none. An unknown student
// is INVALID_STUDENT_ID; an erased student's preferences are returned (they
// are kept as anonymous statistics).
func (s *Store) CategoryPreferences(ctx context.Context, studentID string) ([]CategoryPreference, error) {
	// One statement tells "no preferences" from "no such student".
	const q = `
SELECT cp.category_id, cp.direction, cp.created_at, cp.updated_at
FROM students s
LEFT JOIN category_preferences cp ON cp.student_id = s.id
WHERE s.id = $1
ORDER BY cp.category_id`
	rows, err := s.pool.Query(ctx, q, studentID)
	if err != nil {
		return nil, mapErr(err, "category preferences")
	}
	found := false
	out := []CategoryPreference{}
	for rows.Next() {
		found = true
		var (
			id, dir          *string
			created, updated *time.Time
		)
		if err := rows.Scan(&id, &dir, &created, &updated); err != nil {
			rows.Close()
			return nil, mapErr(err, "category preferences")
		}
		if id != nil {
			out = append(out, CategoryPreference{CategoryID: *id, Direction: *dir, CreatedAt: *created, UpdatedAt: *updated})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err, "category preferences")
	}
	if !found {
		return nil, domain.StudentNotFound(studentID)
	}
	return out, nil
}

// categoryPreferences reads a student's category preferences inside tx.
func categoryPreferences(ctx context.Context, tx pgx.Tx, studentID string) ([]CategoryPreference, error) {
	const q = `
SELECT category_id, direction, created_at, updated_at
FROM category_preferences WHERE student_id = $1
ORDER BY category_id`
	rows, err := tx.Query(ctx, q, studentID)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (CategoryPreference, error) {
		var p CategoryPreference
		err := row.Scan(&p.CategoryID, &p.Direction, &p.CreatedAt, &p.UpdatedAt)
		return p, err
	})
	if out == nil {
		out = []CategoryPreference{}
	}
	return out, err
}
