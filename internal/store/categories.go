package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/collegematch/matching/internal/domain"
)

// CategoryPreference is a student's latest swipe on one onboarding
// category.
type CategoryPreference struct {
	CategoryID string    `json:"category_id"`
	Direction  string    `json:"direction"` // "right" likes the category, "left" does not
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// CategorySwipe is what SaveCategorySwipe stored.
type CategorySwipe struct {
	// Preference is the swipe as stored.
	Preference CategoryPreference
	// Preferences are all of the student's category preferences after the
	// save, by category id: what the prior weights are computed from.
	Preferences []CategoryPreference
	// Version is the student's version after the save: read models built
	// from an older version are out of date.
	Version int64
}

// SaveCategorySwipe records a student's swipe on an onboarding category:
// one row per (student, category), the latest direction winning (a new
// swipe on the same category replaces the direction and sets updated_at).
// In the same transaction it bumps the student's version, so feeds and
// other read models built before the swipe are superseded.
//
// direction must be "left" or "right" (INVALID_REQUEST otherwise). The
// category id is stored as given; the caller checks it against the known
// categories. An unknown student, and a student whose data was erased
// (see DeleteStudent; a new onboarding restores them), is
// INVALID_STUDENT_ID.
func (s *Store) SaveCategorySwipe(ctx context.Context, studentID, categoryID, direction string) (CategorySwipe, error) {
	if direction != "left" && direction != "right" {
		return CategorySwipe{}, domain.Invalid("direction must be left or right",
			map[string]string{"direction": "must be left or right"})
	}
	if categoryID == "" {
		return CategorySwipe{}, domain.Invalid("category_id is required", map[string]string{"category_id": "is required"})
	}
	var out CategorySwipe
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Bumping the version first locks the student's row, so concurrent
		// swipes of one student are applied one after the other.
		const bump = `
UPDATE students SET version = version + 1, updated_at = now()
WHERE id = $1 AND deleted_at IS NULL
RETURNING version`
		if err := tx.QueryRow(ctx, bump, studentID).Scan(&out.Version); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return domain.StudentNotFound(studentID)
			}
			return err
		}
		const upsert = `
INSERT INTO category_preferences (student_id, category_id, direction)
VALUES ($1, $2, $3)
ON CONFLICT (student_id, category_id) DO UPDATE SET direction = excluded.direction, updated_at = now()
RETURNING category_id, direction, created_at, updated_at`
		p := &out.Preference
		if err := tx.QueryRow(ctx, upsert, studentID, categoryID, direction).Scan(
			&p.CategoryID, &p.Direction, &p.CreatedAt, &p.UpdatedAt); err != nil {
			return err
		}
		var err error
		out.Preferences, err = categoryPreferences(ctx, tx, studentID)
		return err
	})
	if err != nil {
		var de *domain.Error
		if errors.As(err, &de) {
			return CategorySwipe{}, err
		}
		return CategorySwipe{}, mapErr(err, "category preference")
	}
	return out, nil
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
