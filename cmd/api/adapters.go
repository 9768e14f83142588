package main

import (
	"context"
	"time"

	"github.com/collegematch/matching/internal/command"
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

// studentState loads a student with what their feed is built from: the
// learned model and weights, the onboarding category swipes and the
// swiped schools, in one snapshot.
func studentState(ctx context.Context, db *store.Store, id string) (query.StudentState, error) {
	st, err := db.LearnerState(ctx, id, true)
	if err != nil {
		return query.StudentState{}, err
	}
	out := query.StudentState{Student: st.Student, Version: st.Version, Weights: st.Weights, Model: st.Model,
		Swiped: st.Swiped, Categories: make([]match.CategoryPreference, len(st.Categories))}
	for i, p := range st.Categories {
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

// writeStore lets the write side record swipes and feedback through the
// store, whose types it sees as the command package's.
type writeStore struct{ *store.Store }

func (w writeStore) ScoringState(ctx context.Context, id string) (command.ScoringState, error) {
	st, err := w.Store.LearnerState(ctx, id, false)
	if err != nil {
		return command.ScoringState{}, err
	}
	out := command.ScoringState{Student: st.Student, Model: st.Model, Weights: st.Weights,
		Categories: make([]match.CategoryPreference, len(st.Categories))}
	for i, p := range st.Categories {
		out.Categories[i] = match.CategoryPreferenceFrom(p.CategoryID, p.Direction)
	}
	return out, nil
}

func (w writeStore) RecordSwipe(ctx context.Context, r command.SwipeRecord, event func(int64, time.Time) command.Event,
	respond func(int) ([]byte, error)) (command.StoredSwipe, error) {
	rec, err := w.Store.RecordSwipe(ctx, store.NewSwipe(r), func(id int64, at time.Time) (string, any) {
		e := event(id, at)
		return e.Topic, e.Payload
	}, respond)
	return command.StoredSwipe{ID: rec.ID, Duplicate: rec.Duplicate, SchoolID: rec.SchoolID, Direction: rec.Direction,
		InteractionType: rec.InteractionType, Response: rec.Response, SwipeCount: rec.SwipeCount, Version: rec.Version,
		OutboxID: rec.OutboxID}, err
}

func (w writeStore) RecordFeedback(ctx context.Context, r command.FeedbackRecord, event func(int64, time.Time) command.Event) (command.StoredFeedback, error) {
	rec, err := w.Store.RecordFeedback(ctx, store.NewFeedback(r), func(id int64, at time.Time) (string, any) {
		e := event(id, at)
		return e.Topic, e.Payload
	})
	return command.StoredFeedback{ID: rec.ID, OutboxID: rec.OutboxID}, err
}

// matchCatalogs gives the write side the catalogue the read side holds.
type matchCatalogs struct{ *query.CatalogHolder }

func (c matchCatalogs) Current() *match.Catalog { return c.CatalogHolder.Current().Catalog }
