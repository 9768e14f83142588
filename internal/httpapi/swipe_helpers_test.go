package httpapi_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/command"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/tasks"
)

// writeStore is the store as the write side sees it, wired as cmd/api
// wires it.
type writeStore struct{ *store.Store }

func (w writeStore) ScoringState(ctx context.Context, id string) (command.ScoringState, error) {
	st, err := w.Store.LearnerState(ctx, id, false)
	if err != nil {
		return command.ScoringState{}, err
	}
	out := command.ScoringState{Student: st.Student, Model: st.Model, Weights: st.Weights}
	for _, p := range st.Categories {
		out.Categories = append(out.Categories, match.CategoryPreferenceFrom(p.CategoryID, p.Direction))
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

type matchCatalogs struct{ *query.CatalogHolder }

func (c matchCatalogs) Current() *match.Catalog { return c.CatalogHolder.Current().Catalog }

func learnRouter() *tasks.Router {
	r := tasks.NewRouter()
	tasks.AddLearnRoutes(r)
	return r
}

func newSwipes(t testing.TB, db *store.Store, rdb redis.UniversalClient, cat *query.CatalogHolder, log *slog.Logger) *command.Swipes {
	q := asynq.NewClientFromRedisClient(rdb)
	t.Cleanup(func() { _ = q.Close() })
	return command.NewSwipes(command.SwipesConfig{Store: writeStore{db}, Probes: cache.NewProbes(rdb, 5*time.Minute),
		Feeds: cache.NewFeeds(rdb, 5*time.Minute), Catalogs: matchCatalogs{cat}, Queue: q, Router: learnRouter(), Log: log})
}

func newFeedback(t testing.TB, db *store.Store, rdb redis.UniversalClient, cat *query.CatalogHolder, log *slog.Logger) *command.Feedback {
	q := asynq.NewClientFromRedisClient(rdb)
	t.Cleanup(func() { _ = q.Close() })
	return command.NewFeedback(command.FeedbackConfig{Store: writeStore{db}, Catalogs: matchCatalogs{cat}, Queue: q,
		Router: learnRouter(), Log: log})
}
