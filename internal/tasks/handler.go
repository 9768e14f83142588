package tasks

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/hibiken/asynq"
)

// Deps are the worker's task dependencies, injected by cmd/worker.
type Deps struct {
	Log   *slog.Logger
	Relay *Relay
}

// Handler runs the worker's tasks. Every handler is safe to run twice.
type Handler struct {
	log   *slog.Logger
	relay *Relay
}

// NewHandler builds the handler; every dependency is required.
func NewHandler(d Deps) *Handler {
	if d.Log == nil || d.Relay == nil {
		panic("tasks.NewHandler: nil dependency")
	}
	return &Handler{log: d.Log, relay: d.Relay}
}

// Register routes each task type to its handler. A type is registered here
// together with its handler, and only then may a route produce it (see
// Router): the mux answers an unregistered type with an error, which asynq
// retries and then archives.
func (h *Handler) Register(mux *asynq.ServeMux) {
	mux.HandleFunc(TypeOutboxRelay, h.handleOutboxRelay)
}

func (h *Handler) handleOutboxRelay(ctx context.Context, _ *asynq.Task) error {
	n, err := h.relay.Drain(ctx)
	if err != nil {
		return fmt.Errorf("relay outbox after %d rows: %w", n, err)
	}
	h.log.DebugContext(ctx, "outbox relay task done", "handed_over", n)
	return nil
}
