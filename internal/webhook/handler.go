package webhook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/hibiken/asynq"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/tasks"
)

// Deps are webhook delivery's task dependencies, injected by cmd/worker.
type Deps struct {
	Log   *slog.Logger
	Relay *Relay // outbox:relay

	// Delivery (webhook:deliver): store, poster and metrics together, or
	// none, in which case webhook:deliver is not registered (and must not
	// be routed).
	Store   Store
	Poster  Poster
	Metrics *Metrics
	Retry   RetryConfig // optional
}

// Handler runs webhook delivery's tasks (tasks.TypeWebhookDeliver,
// tasks.TypeOutboxRelay). Every handler is safe to run twice.
type Handler struct {
	log   *slog.Logger
	relay *Relay
	hooks *webhooks // nil without delivery's dependencies
}

var errNoDelivery = errors.New("webhook: delivery needs Store, Poster and Metrics together")

// NewHandler builds the handler; Log and Relay are required, and
// delivery's dependencies come all together or not at all.
func NewHandler(d Deps) *Handler {
	if d.Log == nil || d.Relay == nil {
		panic("webhook.NewHandler: nil dependency")
	}
	h := &Handler{log: d.Log, relay: d.Relay}
	switch n := btoi(d.Store != nil) + btoi(d.Poster != nil) + btoi(d.Metrics != nil); n {
	case 0:
	case 3:
		h.hooks = &webhooks{log: d.Log.With("component", "webhooks"), store: d.Store, sender: d.Poster,
			m: d.Metrics, cfg: d.Retry.withDefaults(), lease: d.Relay.lease}
		if bs, ok := d.Store.(AttemptBatchStore); ok {
			h.hooks.batch = newAttemptBatcher(bs)
		}
	default:
		panic(errNoDelivery)
	}
	return h
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Register routes webhook delivery's task types to their handlers.
func (h *Handler) Register(mux *asynq.ServeMux) {
	mux.HandleFunc(tasks.TypeOutboxRelay, h.handleOutboxRelay)
	if h.hooks != nil {
		// The queue stores the error a task returns (its last error, kept
		// with retried and archived tasks) and the worker logs it: scrubbed
		// of the endpoint's secrets and the subscriber's raw bytes.
		mux.HandleFunc(tasks.TypeWebhookDeliver, func(ctx context.Context, t *asynq.Task) error {
			return domain.Scrub(h.hooks.handle(ctx, t))
		})
	}
}

// HandleDeliver runs one webhook:deliver task (for callers that drive the
// handler without a task server).
func (h *Handler) HandleDeliver(ctx context.Context, t *asynq.Task) error {
	if h.hooks == nil {
		return fmt.Errorf("webhook:deliver: %w", errNoDelivery)
	}
	return domain.Scrub(h.hooks.handle(ctx, t))
}

func (h *Handler) handleOutboxRelay(ctx context.Context, _ *asynq.Task) error {
	n, err := h.relay.Drain(ctx)
	if err != nil {
		return fmt.Errorf("relay the outbox after %d rows: %w", n, err)
	}
	h.log.DebugContext(ctx, "outbox relay task done", "handed_over", n)
	return nil
}
