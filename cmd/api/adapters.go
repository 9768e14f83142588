package main

import (
	"context"

	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/store"
)

// students lets the read side load students through the store, whose
// rows it sees as query.StudentState (the store does not import query).
type students struct{ *store.Store }

func (s students) StudentState(ctx context.Context, id string) (query.StudentState, error) {
	return studentState(ctx, s.Store, id)
}

// studentState loads a student with its learned weights and its onboarding
// category swipes.
func studentState(ctx context.Context, db *store.Store, id string) (query.StudentState, error) {
	st, err := db.StudentState(ctx, id)
	if err != nil {
		return query.StudentState{}, err
	}
	prefs, err := db.CategoryPreferences(ctx, id)
	if err != nil {
		return query.StudentState{}, err
	}
	out := query.StudentState{Student: st.Student, Version: st.Version, Weights: st.Weights,
		Categories: make([]match.CategoryPreference, len(prefs))}
	for i, p := range prefs {
		out.Categories[i] = match.CategoryPreferenceFrom(p.CategoryID, p.Direction)
	}
	return out, nil
}

// categorySwipes stores onboarding category swipes through the store.
type categorySwipes struct{ db *store.Store }

func (c categorySwipes) SaveCategorySwipe(ctx context.Context, studentID, categoryID, direction string) error {
	_, err := c.db.SaveCategorySwipe(ctx, studentID, categoryID, direction)
	return err
}
