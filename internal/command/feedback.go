package command

import (
	"context"
	"fmt"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/tasks"
)

// MaxCommentLength bounds a feedback comment, in characters.
const MaxCommentLength = 1000

// FeedbackInput is one feedback reason about a school (POST /feedback).
type FeedbackInput struct {
	StudentID string
	SchoolID  string
	Reason    string // too_expensive, wrong_location, not_my_major, too_selective, perfect_match
	Comment   string // optional free text
}

// FeedbackResult is what recorded feedback answers.
type FeedbackResult struct {
	ID int64
	// PreferenceWeights are the weights the learner holds once it has
	// applied this feedback to the model stored now (the worker does so
	// within about a second); UpdatedWeights says whether any moved.
	PreferenceWeights map[string]float64
	UpdatedWeights    bool
}

// FeedbackRecord is one feedback reason as the store records it.
type FeedbackRecord struct {
	StudentID string
	SchoolID  string
	Reason    string
	Comment   string
}

// StoredFeedback is what the store recorded.
type StoredFeedback struct {
	ID       int64
	OutboxID int64
}

// FeedbackStore is what recording feedback needs from the database.
type FeedbackStore interface {
	ScoringState(ctx context.Context, studentID string) (ScoringState, error)
	// RecordFeedback stores the reason and the event made by event in one
	// transaction; see store.Store.RecordFeedback.
	RecordFeedback(ctx context.Context, r FeedbackRecord, event func(id int64, at time.Time) Event) (StoredFeedback, error)
	MarkOutboxPublished(ctx context.Context, ids []int64) error
}

// FeedbackConfig is what NewFeedback needs; every field is required.
type FeedbackConfig struct {
	Store    FeedbackStore
	Catalogs Catalogs
	Queue    tasks.Enqueuer
	Router   *tasks.Router // as SwipesConfig.Router
	Log      *slog.Logger
}

// Feedback records learning feedback (POST /feedback).
type Feedback struct {
	store    FeedbackStore
	catalogs Catalogs
	queue    tasks.Enqueuer
	router   *tasks.Router
	log      *slog.Logger
	redis    breaker
}

// NewFeedback builds the feedback recorder.
func NewFeedback(c FeedbackConfig) *Feedback {
	if c.Store == nil || c.Catalogs == nil || c.Queue == nil || c.Router == nil || c.Log == nil {
		panic("command.NewFeedback: missing dependency")
	}
	return &Feedback{store: c.Store, catalogs: c.Catalogs, queue: c.Queue, router: c.Router, log: c.Log}
}

// FeedbackPayload is the payload of the feedback.recorded outbox event
// (the comment stays in the database).
type FeedbackPayload struct {
	StudentID  string `json:"student_id"`
	SchoolID   string `json:"school_id"`
	Reason     string `json:"reason"`
	Timestamp  string `json:"timestamp"`
	FeedbackID int64  `json:"feedback_id"`
}

// Record stores one feedback reason with its feedback.recorded event in
// one transaction, then hands the student:learn task to the queue (best
// effort, as for swipes). The school need not have been swiped: feedback
// is about the school. An unknown or erased student is INVALID_STUDENT_ID,
// an unknown or inactive school INVALID_SCHOOL_ID.
func (f *Feedback) Record(ctx context.Context, in FeedbackInput) (FeedbackResult, error) {
	problems := map[string]string{}
	for field, v := range map[string]*string{"student_id": &in.StudentID, "school_id": &in.SchoolID} {
		u, err := uuid.Parse(*v)
		if err != nil || len(*v) != 36 {
			problems[field] = "must be a UUID"
			continue
		}
		*v = u.String()
	}
	if !match.ValidReason(in.Reason) {
		problems["reason"] = "must be one of too_expensive, wrong_location, not_my_major, too_selective, perfect_match"
	}
	if n := utf8.RuneCountInString(in.Comment); n > MaxCommentLength || !utf8.ValidString(in.Comment) {
		problems["comment"] = fmt.Sprintf("must be at most %d characters", MaxCommentLength)
	}
	if len(problems) > 0 {
		return FeedbackResult{}, domain.Invalid(summarize(problems), problems)
	}
	st, err := f.store.ScoringState(ctx, in.StudentID)
	if err != nil {
		return FeedbackResult{}, err
	}
	if st.Student.DeletedAt != nil {
		return FeedbackResult{}, domain.StudentNotFound(in.StudentID)
	}
	p, prior := match.CategoryStart(match.NewProfile(st.Student), st.Categories)
	model := StudentModel(st.Model, st.Weights, prior)
	after, updated := model, false
	if cat := f.catalogs.Current(); cat != nil {
		if idx, ok := cat.Index(in.SchoolID); ok {
			after, updated = model.Observe(p, cat, match.FeedbackObservation(idx, in.Reason))
		}
	}

	event := func(id int64, at time.Time) Event {
		return Event{Topic: tasks.TopicFeedbackRecorded, Payload: FeedbackPayload{StudentID: in.StudentID,
			SchoolID: in.SchoolID, Reason: in.Reason, Timestamp: Timestamp(at), FeedbackID: id}}
	}
	stored, err := f.store.RecordFeedback(ctx, FeedbackRecord(in), event)
	if err != nil {
		return FeedbackResult{}, err
	}
	handOver(context.WithoutCancel(ctx), f.log, &f.redis, f.store, f.queue, f.router,
		tasks.OutboxRow{ID: stored.OutboxID, Topic: tasks.TopicFeedbackRecorded, StudentID: in.StudentID})
	return FeedbackResult{ID: stored.ID, PreferenceWeights: after.Weights().Map(), UpdatedWeights: updated}, nil
}
