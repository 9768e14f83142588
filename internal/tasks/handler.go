package tasks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"

	"github.com/collegematch/matching/internal/domain"
)

// Deps are the worker's task dependencies, injected by cmd/worker.
type Deps struct {
	Log   *slog.Logger
	Relay *Relay

	// The learner (student:learn, learn:drain): all five together, or
	// none, in which case neither is registered (and must not be routed).
	LearnDrains  *LearnDrains
	Learning     LearningStore
	Feeds        FeedRebuilder
	Catalogs     Catalogs
	LearnMetrics *LearnMetrics
	Now          func() time.Time // optional, time.Now

	// Webhook delivery (webhook:deliver): store, sender and metrics
	// together, or none, in which case webhook:deliver is not registered
	// (and must not be routed).
	WebhookStore   WebhookStore
	WebhookSender  WebhookSender
	WebhookMetrics *WebhookMetrics
	WebhookConfig  WebhookConfig // optional
}

// Handler runs the worker's tasks. Every handler is safe to run twice.
type Handler struct {
	log   *slog.Logger
	relay *Relay
	learn *learner  // nil without the learner's dependencies
	hooks *webhooks // nil without webhook delivery's dependencies
}

// NewHandler builds the handler; Log and Relay are required, and the
// learner's dependencies come all together or not at all.
func NewHandler(d Deps) *Handler {
	if d.Log == nil || d.Relay == nil {
		panic("tasks.NewHandler: nil dependency")
	}
	h := &Handler{log: d.Log, relay: d.Relay}
	switch n := countSet(d.LearnDrains != nil, d.Learning != nil, d.Feeds != nil, d.Catalogs != nil, d.LearnMetrics != nil); n {
	case 0:
	case 5:
		if d.Now == nil {
			d.Now = time.Now
		}
		h.learn = &learner{drains: d.LearnDrains, store: d.Learning, feeds: d.Feeds, catalogs: d.Catalogs, m: d.LearnMetrics, now: d.Now}
	default:
		panic(errNoLearner)
	}
	switch countSet(d.WebhookStore != nil, d.WebhookSender != nil, d.WebhookMetrics != nil) {
	case 0:
	case 3:
		h.hooks = &webhooks{log: d.Log.With("component", "webhooks"), store: d.WebhookStore, sender: d.WebhookSender,
			m: d.WebhookMetrics, cfg: d.WebhookConfig.withDefaults(), lease: d.Relay.lease}
		if bs, ok := d.WebhookStore.(AttemptBatchStore); ok {
			h.hooks.batch = newAttemptBatcher(bs)
		}
	default:
		panic(errNoWebhooks)
	}
	return h
}

func countSet(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// Register routes each task type to its handler. A type is registered here
// together with its handler, and only then may a route produce it (see
// Router): the mux answers an unregistered type with an error, which asynq
// retries and then archives.
func (h *Handler) Register(mux *asynq.ServeMux) {
	mux.HandleFunc(TypeOutboxRelay, h.handleOutboxRelay)
	if h.learn != nil {
		mux.HandleFunc(TypeStudentLearn, h.handleStudentLearn)
		mux.HandleFunc(TypeLearnDrain, h.handleLearnDrain)
	}
	if h.hooks != nil {
		// The queue stores the error a task returns (its last error, kept
		// with retried and archived tasks) and the worker logs it: scrubbed
		// of the endpoint's secrets and the subscriber's raw bytes.
		mux.HandleFunc(TypeWebhookDeliver, func(ctx context.Context, t *asynq.Task) error {
			return domain.Scrub(h.hooks.handle(ctx, t))
		})
	}
}

var errNoWebhooks = errors.New("tasks: webhook delivery needs WebhookStore, WebhookSender and WebhookMetrics together")

// HandleWebhookDeliver runs one webhook:deliver task (for callers that
// drive the handler without a task server).
func (h *Handler) HandleWebhookDeliver(ctx context.Context, t *asynq.Task) error {
	if h.hooks == nil {
		return fmt.Errorf("webhook:deliver: %w", errNoWebhooks)
	}
	return domain.Scrub(h.hooks.handle(ctx, t))
}

// HandleLearnDrain runs one learn:drain task (for callers that drive the
// handler without a task server, such as benchmarks and tests).
func (h *Handler) HandleLearnDrain(ctx context.Context, t *asynq.Task) error {
	if h.learn == nil {
		return fmt.Errorf("learn:drain: %w", errNoLearner)
	}
	return h.handleLearnDrain(ctx, t)
}

// HandleStudentLearn runs one student:learn task (for callers that drive
// the handler without a task server, such as benchmarks and tests).
func (h *Handler) HandleStudentLearn(ctx context.Context, t *asynq.Task) error {
	if h.learn == nil {
		return fmt.Errorf("student:learn: %w", errNoLearner)
	}
	return h.handleStudentLearn(ctx, t)
}

func (h *Handler) handleOutboxRelay(ctx context.Context, _ *asynq.Task) error {
	n, err := h.relay.Drain(ctx)
	if err != nil {
		return fmt.Errorf("relay outbox after %d rows: %w", n, err)
	}
	h.log.DebugContext(ctx, "outbox relay task done", "handed_over", n)
	return nil
}
