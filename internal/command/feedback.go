package command

import (
	"context"
	"fmt"
	"log/slog"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/handover"
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
	// applied this feedback to the model known now (the worker does so
	// within about a second); UpdatedWeights says whether any moved.
	PreferenceWeights map[string]float64
	UpdatedWeights    bool
}

// FeedbackStore is what recording feedback needs from PostgreSQL.
type FeedbackStore interface {
	// RecordFeedback stores the reason in one statement; INVALID_STUDENT_ID
	// for an unknown or erased student, INVALID_SCHOOL_ID for an unknown or
	// inactive school.
	RecordFeedback(ctx context.Context, f domain.Feedback) (domain.RecordedFeedback, error)
	LearnerState(ctx context.Context, studentID string) (domain.LearnerState, error)
}

// Queue hands jobs to the worker fleet in one round trip (handover.Client).
type Queue interface {
	Queue(ctx context.Context, jobs ...handover.Job) (queued int, err error)
}

// FeedbackConfig is what NewFeedback needs; every field is required.
type FeedbackConfig struct {
	Store    FeedbackStore
	Redis    SwipeRedis // the student's model is read as before a swipe
	Queue    Queue
	Catalogs Catalogs
	Log      *slog.Logger
	Count    Counter // optional: each reason recorded is counted here
}

// Feedback records learning feedback (POST /feedback).
type Feedback struct {
	store    FeedbackStore
	redis    SwipeRedis
	queue    Queue
	catalogs Catalogs
	log      *slog.Logger
	count    Counter
}

// NewFeedback builds the feedback recorder.
func NewFeedback(c FeedbackConfig) *Feedback {
	if c.Store == nil || c.Redis == nil || c.Queue == nil || c.Catalogs == nil || c.Log == nil {
		panic("command.NewFeedback: missing dependency")
	}
	return &Feedback{store: c.Store, redis: c.Redis, queue: c.Queue, catalogs: c.Catalogs, log: c.Log, count: orNoCount(c.Count)}
}

// ValidateFeedback is the one check of a feedback reason, whatever carried
// it (POST /feedback, a sync push): UUIDs in canonical form, a known
// reason, a comment of valid UTF-8 without NUL within MaxCommentLength.
func ValidateFeedback(in FeedbackInput) (domain.Feedback, map[string]string) {
	problems := map[string]string{}
	out := domain.Feedback{Reason: in.Reason, Comment: in.Comment}
	for field, v := range map[string]struct {
		in  string
		out *string
	}{"student_id": {in.StudentID, &out.StudentID}, "school_id": {in.SchoolID, &out.SchoolID}} {
		u, err := uuid.Parse(v.in)
		if err != nil || len(v.in) != 36 {
			problems[field] = "must be a UUID"
			continue
		}
		*v.out = u.String()
	}
	if !match.ValidReason(in.Reason) {
		problems["reason"] = "must be one of too_expensive, wrong_location, not_my_major, too_selective, perfect_match"
	}
	switch n := utf8.RuneCountInString(in.Comment); {
	case n > MaxCommentLength || !utf8.ValidString(in.Comment):
		problems["comment"] = fmt.Sprintf("must be at most %d characters", MaxCommentLength)
	case containsNUL(in.Comment):
		problems["comment"] = "must not contain NUL characters"
	}
	return out, problems
}

func containsNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}

// Record stores one feedback reason in one statement, then hands the
// student:learn task to the queue (best effort: the worker's learn sweep
// queues it again when it is lost). The school need not have been swiped:
// feedback is about the school.
func (f *Feedback) Record(ctx context.Context, in FeedbackInput) (FeedbackResult, error) {
	fb, problems := ValidateFeedback(in)
	if len(problems) > 0 {
		return FeedbackResult{}, domain.Invalid(summarize(problems), problems)
	}
	p, model, ok := f.model(ctx, fb.StudentID)
	rec, err := f.store.RecordFeedback(ctx, fb)
	if err != nil {
		return FeedbackResult{}, err
	}
	f.count.Feedback(fb.Reason)
	qctx := context.WithoutCancel(ctx)
	if _, err := f.queue.Queue(qctx, tasks.LearnJob(rec.StudentID, 0, rec.ID)); err != nil {
		f.log.DebugContext(ctx, "learn task not queued; the worker's learn sweep does it", "student_id", rec.StudentID, "err", err)
	}
	after, updated := model, false
	if cat := f.catalogs.Scoring(); cat != nil && ok {
		if idx, known := cat.Index(fb.SchoolID); known {
			after, updated = model.ObserveWeights(p, cat, match.FeedbackObservation(idx, fb.Reason))
		}
	}
	return FeedbackResult{ID: rec.ID, PreferenceWeights: after.Weights().Map(), UpdatedWeights: updated}, nil
}

// model is the student's profile and learned model: from the stored feed,
// else from PostgreSQL; ok is false when neither answered.
func (f *Feedback) model(ctx context.Context, studentID string) (match.Profile, match.Model, bool) {
	view, err := f.redis.BeforeSwipe(ctx, studentID)
	if err == nil {
		if p, m, ok := viewModel(view); ok {
			return p, m, true
		}
	}
	st, err := f.store.LearnerState(ctx, studentID)
	if err != nil || st.Student.DeletedAt != nil {
		return match.Profile{}, match.NewModel(match.DefaultWeights()), false
	}
	p, m, _ := match.Start(st)
	return p, m, true
}
