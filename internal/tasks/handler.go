package tasks

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
)

// Deps are the learner's dependencies, injected by cmd/worker.
type Deps struct {
	Log *slog.Logger

	// The learner (student:learn, learn:drain): all five together, or
	// none, in which case neither is registered (and must not be routed).
	LearnDrains  *LearnDrains
	Learning     LearningStore
	Feeds        FeedRebuilder
	Catalogs     Catalogs
	LearnMetrics *LearnMetrics
	Now          func() time.Time // optional, time.Now
}

// Handler runs the learner's tasks. Every handler is safe to run twice.
// Webhook delivery's task types are registered by internal/webhook.
type Handler struct {
	log   *slog.Logger
	learn *learner // nil without the learner's dependencies
}

// NewHandler builds the handler; Log is required, and the learner's
// dependencies come all together or not at all.
func NewHandler(d Deps) *Handler {
	if d.Log == nil {
		panic("tasks.NewHandler: nil dependency")
	}
	h := &Handler{log: d.Log}
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
// together with its handler, and only then may a route produce it: the mux
// answers an unregistered type with an error, which asynq retries and then
// archives.
func (h *Handler) Register(mux *asynq.ServeMux) {
	if h.learn != nil {
		mux.HandleFunc(TypeStudentLearn, h.handleStudentLearn)
		mux.HandleFunc(TypeLearnDrain, h.handleLearnDrain)
	}
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
