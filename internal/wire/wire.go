// Package wire adapts the PostgreSQL store to the interfaces the use cases
// declare (query, command, tasks), whose types the store does not import.
// cmd/api and cmd/worker wire the service with these adapters, and tests
// that need the real wiring use the same ones.
package wire

import (
	"context"
	"time"

	"github.com/collegematch/matching/internal/command"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/webhook"
)

// Students lets the read side load students through the store.
type Students struct{ *store.Store }

// StudentState implements the read side's student source.
func (s Students) StudentState(ctx context.Context, id string) (query.StudentState, error) {
	return StudentState(ctx, s.Store, id)
}

// StudentState loads a student with what their feed is built from: the
// learned model and weights, the onboarding category swipes and the swiped
// schools, in one snapshot.
func StudentState(ctx context.Context, db *store.Store, id string) (query.StudentState, error) {
	st, err := db.LearnerState(ctx, id, true)
	if err != nil {
		return query.StudentState{}, err
	}
	return query.StudentState{Student: st.Student, Version: st.Version, Weights: st.Weights, Model: st.Model,
		Swiped: st.Swiped, Categories: categoryPrefs(st.Categories)}, nil
}

func categoryPrefs(in []store.CategoryPreference) []match.CategoryPreference {
	out := make([]match.CategoryPreference, len(in))
	for i, p := range in {
		out[i] = match.CategoryPreferenceFrom(p.CategoryID, p.Direction)
	}
	return out
}

// CategorySwipes stores onboarding category swipes through the store.
type CategorySwipes struct{ *store.Store }

// SaveCategorySwipe implements the onboarding handler's store.
func (c CategorySwipes) SaveCategorySwipe(ctx context.Context, studentID, categoryID, direction string) error {
	_, err := c.Store.SaveCategorySwipe(ctx, studentID, categoryID, direction)
	return err
}

// WriteStore lets the write side record swipes and feedback through the
// store, whose types it sees as the command package's.
type WriteStore struct{ *store.Store }

// ScoringState implements command's store.
func (w WriteStore) ScoringState(ctx context.Context, id string) (command.ScoringState, error) {
	st, err := w.Store.LearnerState(ctx, id, false)
	if err != nil {
		return command.ScoringState{}, err
	}
	return command.ScoringState{Student: st.Student, Model: st.Model, Weights: st.Weights,
		Categories: categoryPrefs(st.Categories)}, nil
}

// RecordSwipe implements command's store.
func (w WriteStore) RecordSwipe(ctx context.Context, r command.SwipeRecord, event func(int64, time.Time) command.Event,
	respond func(int) ([]byte, error)) (command.StoredSwipe, error) {
	rec, err := w.Store.RecordSwipe(ctx, store.NewSwipe(r), func(id int64, at time.Time) (string, any) {
		e := event(id, at)
		return e.Topic, e.Payload
	}, respond)
	return command.StoredSwipe{ID: rec.ID, Duplicate: rec.Duplicate, SchoolID: rec.SchoolID, Direction: rec.Direction,
		InteractionType: rec.InteractionType, Response: rec.Response, SwipeCount: rec.SwipeCount, Version: rec.Version,
		OutboxID: rec.OutboxID}, err
}

// RecordFeedback implements command's store.
func (w WriteStore) RecordFeedback(ctx context.Context, r command.FeedbackRecord, event func(int64, time.Time) command.Event) (command.StoredFeedback, error) {
	rec, err := w.Store.RecordFeedback(ctx, store.NewFeedback(r), func(id int64, at time.Time) (string, any) {
		e := event(id, at)
		return e.Topic, e.Payload
	})
	return command.StoredFeedback{ID: rec.ID, OutboxID: rec.OutboxID}, err
}

// Catalogs gives the write side and the learner the catalogue the read
// side holds.
type Catalogs struct{ *query.CatalogHolder }

// Current is the catalogue loaded now.
func (c Catalogs) Current() *match.Catalog { return c.CatalogHolder.Current().Catalog }

// Learning lets the learner fold through the store, whose types it sees as
// the tasks package's.
type Learning struct{ *store.Store }

// FoldLearning implements the learner's store.
func (l Learning) FoldLearning(ctx context.Context, studentID string, fold tasks.LearnFold) (tasks.LearnOutcome, error) {
	out, err := l.Store.FoldLearning(ctx, studentID, func(in store.LearnInput, history func() ([]store.LearnEvent, error)) (store.LearnUpdate, error) {
		tin := tasks.LearnInput{Student: in.Student, Model: in.Model, New: learnEvents(in.New),
			Categories: categoryPrefs(in.Categories)}
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

// Outbox lets the relay read the outbox through the store, whose rows it
// sees as tasks.OutboxRow.
type Outbox struct{ *store.Store }

// RelayOutbox implements the relay's source.
func (s Outbox) RelayOutbox(ctx context.Context, topics []string, limit int,
	hand func(context.Context, []tasks.OutboxRow, tasks.DeliveryLedger) ([]int64, error)) (int, error) {
	return s.Store.RelayOutbox(ctx, topics, limit, func(ctx context.Context, rows []store.OutboxRow, record store.DeliveryRecorder) ([]int64, error) {
		out := make([]tasks.OutboxRow, len(rows))
		for i, r := range rows {
			out[i] = tasks.OutboxRow(r)
		}
		return hand(ctx, out, tasks.LedgerFunc(func(ctx context.Context, keys []tasks.WebhookDeliveryKey) ([]int64, error) {
			return record(ctx, deliveryRefs(keys))
		}))
	})
}

// Webhooks lets webhook delivery record its deliveries through the store.
type Webhooks struct{ *store.Store }

// BeginWebhookDelivery implements tasks.WebhookStore.
func (w Webhooks) BeginWebhookDelivery(ctx context.Context, k tasks.WebhookDeliveryKey) (tasks.WebhookDelivery, error) {
	d, err := w.Store.BeginWebhookDelivery(ctx, k.OutboxID, k.Endpoint, k.MessageID, tasks.WebhookLease, tasks.WebhookClockSlack)
	return tasks.WebhookDelivery{ID: d.ID, Status: d.Status, Attempts: d.Attempts, RoundStart: d.RoundStart,
		Replays: d.Replays, EndpointDisabled: d.EndpointDisabled, Claimed: d.Claimed, NextAttemptAt: d.NextAttemptAt,
		Event: tasks.WebhookEvent{Topic: d.Event.Topic, Payload: d.Event.Payload, CreatedAt: d.Event.CreatedAt}}, err
}

// RecordWebhookDeliveries implements tasks.DeliveryLedger.
func (w Webhooks) RecordWebhookDeliveries(ctx context.Context, keys []tasks.WebhookDeliveryKey) ([]int64, error) {
	return w.Store.RecordWebhookDeliveries(ctx, deliveryRefs(keys))
}

func deliveryRefs(keys []tasks.WebhookDeliveryKey) []store.WebhookDeliveryRef {
	refs := make([]store.WebhookDeliveryRef, len(keys))
	for i, k := range keys {
		refs[i] = store.WebhookDeliveryRef{OutboxID: k.OutboxID, Endpoint: k.Endpoint, WebhookID: k.MessageID}
	}
	return refs
}

// RecordWebhookAttempt implements tasks.WebhookStore.
func (w Webhooks) RecordWebhookAttempt(ctx context.Context, id int64, a tasks.WebhookAttempt, status string, next time.Time, replays int) error {
	return w.Store.RecordWebhookAttempt(ctx, id, store.WebhookAttempt{StatusCode: a.StatusCode, Latency: a.Latency, Error: a.Error},
		status, next, replays)
}

// StaleWebhookDeliveries implements tasks.WebhookStore.
func (w Webhooks) StaleWebhookDeliveries(ctx context.Context, overdue time.Duration, afterID int64, limit int) ([]tasks.StaleDelivery, error) {
	ds, err := w.Store.StaleWebhookDeliveries(ctx, overdue, afterID, limit)
	out := make([]tasks.StaleDelivery, len(ds))
	for i, d := range ds {
		out[i] = tasks.StaleDelivery{ID: d.ID, OutboxID: d.OutboxID, Endpoint: d.Endpoint, Replays: d.Replays}
	}
	return out, err
}

// WebhookSender lets webhook delivery send through internal/webhook.
type WebhookSender struct{ *webhook.Sender }

// Configured implements tasks.WebhookSender.
func (s WebhookSender) Configured(url string) bool {
	_, ok := s.Sender.Endpoint(url)
	return ok
}

// Send implements tasks.WebhookSender.
func (s WebhookSender) Send(ctx context.Context, url, id string, body []byte) tasks.WebhookResult {
	r := s.Sender.Send(ctx, url, id, body)
	out := tasks.WebhookResult{StatusCode: r.StatusCode, Latency: r.Latency, Err: r.Err, RetryAfter: r.RetryAfter}
	switch r.Outcome {
	case webhook.Delivered:
		out.Outcome = tasks.WebhookDelivered
	case webhook.Gone:
		out.Outcome = tasks.WebhookGone
	default:
		out.Outcome = tasks.WebhookFailed
	}
	return out
}

// WebhookSubscriptions lists endpoints as the outbox router sees them.
func WebhookSubscriptions(eps []webhook.Endpoint) []tasks.WebhookSubscription {
	out := make([]tasks.WebhookSubscription, len(eps))
	for i, e := range eps {
		out[i] = tasks.WebhookSubscription{URL: e.URL, Events: e.Events}
	}
	return out
}
