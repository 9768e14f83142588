package store_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
)

// newStudent saves a minimal student and returns its id.
func newStudent(t *testing.T, db *store.Store) string {
	t.Helper()
	id := uuid.NewString()
	_, created, err := db.SaveStudent(context.Background(), domain.Student{
		ID: id, Name: "Avery Quinn", Email: "avery.quinn@example.com", GraduationYear: "2027",
	})
	require.NoError(t, err)
	require.True(t, created)
	return id
}

func studentVersion(t *testing.T, db *store.Store, id string) int64 {
	t.Helper()
	var v int64
	require.NoError(t, db.Pool().QueryRow(context.Background(), `SELECT version FROM students WHERE id = $1`, id).Scan(&v))
	return v
}

func TestSaveCategorySwipe(t *testing.T) {
	ctx := context.Background()
	db := store.New(testutil.NewDB(t))
	id := newStudent(t, db)

	prefs, err := db.CategoryPreferences(ctx, id)
	require.NoError(t, err)
	assert.Empty(t, prefs)
	assert.NotNil(t, prefs, "an empty list, not nil")

	v0 := studentVersion(t, db, id)
	pref := func(st domain.LearnerState, category string) domain.CategoryPreference {
		t.Helper()
		for _, p := range st.Categories {
			if p.CategoryID == category {
				return p
			}
		}
		t.Fatalf("no preference for %s in %+v", category, st.Categories)
		return domain.CategoryPreference{}
	}
	got, err := db.SaveCategorySwipe(ctx, id, "liberal-arts", "right")
	require.NoError(t, err)
	assert.Equal(t, "right", pref(got, "liberal-arts").Direction)
	assert.Equal(t, v0+1, got.Version, "the swipe bumps the student's version")
	assert.Equal(t, got.Version, studentVersion(t, db, id))
	assert.Equal(t, id, got.Student.ID, "the student comes back with the preferences, for the prior")
	require.Len(t, got.Categories, 1)
	first := pref(got, "liberal-arts")

	got, err = db.SaveCategorySwipe(ctx, id, "community-college", "left")
	require.NoError(t, err)
	assert.Equal(t, v0+2, got.Version)
	require.Len(t, got.Categories, 2)
	assert.Equal(t, "community-college", got.Categories[0].CategoryID, "by category id")

	// A new swipe on the same category: the latest direction wins.
	got, err = db.SaveCategorySwipe(ctx, id, "liberal-arts", "left")
	require.NoError(t, err)
	assert.Equal(t, "left", pref(got, "liberal-arts").Direction)
	assert.True(t, first.CreatedAt.Equal(pref(got, "liberal-arts").CreatedAt))
	assert.False(t, pref(got, "liberal-arts").UpdatedAt.Before(first.UpdatedAt))
	assert.Equal(t, v0+3, got.Version)
	require.Len(t, got.Categories, 2)

	prefs, err = db.CategoryPreferences(ctx, id)
	require.NoError(t, err)
	dirs := map[string]string{}
	for _, p := range prefs {
		dirs[p.CategoryID] = p.Direction
	}
	assert.Equal(t, map[string]string{"liberal-arts": "left", "community-college": "left"}, dirs)

	var rows int
	require.NoError(t, db.Pool().QueryRow(ctx, `SELECT count(*) FROM category_preferences WHERE student_id = $1`, id).Scan(&rows))
	assert.Equal(t, 2, rows, "one row per category")
}

func TestSaveCategorySwipeErrors(t *testing.T) {
	ctx := context.Background()
	db := store.New(testutil.NewDB(t))
	id := newStudent(t, db)
	v0 := studentVersion(t, db, id)

	unknown := uuid.NewString()
	_, err := db.SaveCategorySwipe(ctx, unknown, "liberal-arts", "right")
	assertStudentNotFound(t, err, unknown)
	_, err = db.CategoryPreferences(ctx, unknown)
	assertStudentNotFound(t, err, unknown)

	for _, dir := range []string{"", "up", "RIGHT"} {
		_, err = db.SaveCategorySwipe(ctx, id, "liberal-arts", dir)
		var de *domain.Error
		require.ErrorAs(t, err, &de, dir)
		assert.Equal(t, domain.CodeInvalidRequest, de.Code)
		assert.Equal(t, map[string]any{"fields": map[string]string{"direction": "must be left or right"}}, de.Details)
	}
	_, err = db.SaveCategorySwipe(ctx, id, "", "right")
	assert.Equal(t, domain.KindInvalid, domain.KindOf(err))
	assert.Equal(t, v0, studentVersion(t, db, id), "a refused swipe changes nothing")

	// An erased student takes no new category swipes.
	_, err = db.DeleteStudent(ctx, id)
	require.NoError(t, err)
	_, err = db.SaveCategorySwipe(ctx, id, "liberal-arts", "right")
	assertStudentNotFound(t, err, id)
}

func assertStudentNotFound(t *testing.T, err error, id string) {
	t.Helper()
	var de *domain.Error
	require.ErrorAs(t, err, &de)
	assert.Equal(t, domain.KindNotFound, de.Kind)
	assert.Equal(t, domain.CodeInvalidStudentID, de.Code)
	assert.Equal(t, id, de.Details["student_id"])
}
