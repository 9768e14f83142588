package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/hibiken/asynq"

	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/tasks"
)

// outboxSource lets the relay read the outbox through the store, whose
// rows it sees as tasks.OutboxRow (the store does not import tasks).
type outboxSource struct{ *store.Store }

func (s outboxSource) RelayOutbox(ctx context.Context, topics []string, limit int, hand func(context.Context, []tasks.OutboxRow) ([]int64, error)) (int, error) {
	return s.Store.RelayOutbox(ctx, topics, limit, func(ctx context.Context, rows []store.OutboxRow) ([]int64, error) {
		out := make([]tasks.OutboxRow, len(rows))
		for i, r := range rows {
			out[i] = tasks.OutboxRow(r)
		}
		return hand(ctx, out)
	})
}

// learningStore lets the learner fold through the store, whose types it
// sees as the tasks package's.
type learningStore struct{ *store.Store }

func (l learningStore) FoldLearning(ctx context.Context, studentID string, fold tasks.LearnFold) (tasks.LearnOutcome, error) {
	out, err := l.Store.FoldLearning(ctx, studentID, func(in store.LearnInput, history func() ([]store.LearnEvent, error)) (store.LearnUpdate, error) {
		tin := tasks.LearnInput{Student: in.Student, Model: in.Model, New: learnEvents(in.New),
			Categories: make([]match.CategoryPreference, len(in.Categories))}
		for i, p := range in.Categories {
			tin.Categories[i] = match.CategoryPreferenceFrom(p.CategoryID, p.Direction)
		}
		up, err := fold(tin, func() ([]tasks.LearnEvent, error) {
			all, err := history()
			return learnEvents(all), err
		})
		return store.LearnUpdate(up), err
	})
	return tasks.LearnOutcome{Erased: out.Erased, Folded: learnEvents(out.Folded), StudentVersion: out.StudentVersion}, err
}

func learnEvents(in []store.LearnEvent) []tasks.LearnEvent {
	out := make([]tasks.LearnEvent, len(in))
	for i, e := range in {
		out[i] = tasks.LearnEvent{SwipeID: e.SwipeID, FeedbackID: e.FeedbackID, SchoolID: e.SchoolID,
			Direction: e.Direction, Interaction: e.Interaction, Reason: e.Reason, Repeat: e.Repeat, CreatedAt: e.CreatedAt}
	}
	return out
}

// students lets the read side, which rebuilds feeds here as the API does,
// load students through the store.
type students struct{ *store.Store }

func (s students) StudentState(ctx context.Context, id string) (query.StudentState, error) {
	st, err := s.Store.LearnerState(ctx, id, true)
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

// matchCatalogs gives the learner the catalogue the read side holds.
type matchCatalogs struct{ *query.CatalogHolder }

func (c matchCatalogs) Current() *match.Catalog { return c.CatalogHolder.Current().Catalog }

// redisLogger sends go-redis's own log lines (failed dials while Redis is
// down) to the worker's JSON log.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, fmt.Sprintf(format, v...))
}

// asynqLogger sends asynq's own log lines to the worker's JSON log.
type asynqLogger struct{ log *slog.Logger }

func (l asynqLogger) Debug(args ...any) { l.log.Debug(fmt.Sprint(args...)) }
func (l asynqLogger) Info(args ...any)  { l.log.Info(fmt.Sprint(args...)) }
func (l asynqLogger) Warn(args ...any)  { l.log.Warn(fmt.Sprint(args...)) }
func (l asynqLogger) Error(args ...any) { l.log.Error(fmt.Sprint(args...)) }

// Fatal keeps asynq's contract: log, then exit with status 1.
func (l asynqLogger) Fatal(args ...any) {
	l.log.Error(fmt.Sprint(args...))
	os.Exit(1)
}

// asynqLevel maps the service's log level onto asynq's.
func asynqLevel(l slog.Level) asynq.LogLevel {
	switch {
	case l <= slog.LevelDebug:
		return asynq.DebugLevel
	case l <= slog.LevelInfo:
		return asynq.InfoLevel
	case l <= slog.LevelWarn:
		return asynq.WarnLevel
	default:
		return asynq.ErrorLevel
	}
}
