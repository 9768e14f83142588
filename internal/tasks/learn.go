package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
)

// Outbox topics the learner reads beside TopicSwipeRecorded. Only
// swipe.recorded (a counted swipe) is a webhook event; these two exist so
// that every fact the learner needs has an outbox row, and so a relay
// hands its task over when the API could not.
const (
	// TopicInteractionRecorded: a tap, detail_view or save was stored.
	TopicInteractionRecorded = "interaction.recorded"
	// TopicFeedbackRecorded: a feedback reason was stored.
	TopicFeedbackRecorded = "feedback.recorded"
	// TopicSyncPushed: an offline sync push stored swipes or feedback; its
	// one row asks for the one student:learn task of the whole push.
	TopicSyncPushed = "sync.pushed"
)

// LearnTopics are the topics whose rows ask for a student:learn task.
func LearnTopics() []string {
	return []string{TopicSwipeRecorded, TopicInteractionRecorded, TopicFeedbackRecorded, TopicSyncPushed}
}

// AddLearnRoutes routes every learn topic to LearnRoute. The API (fast
// path) and the worker (relay) both add them, so both derive the same task
// ids from a row.
func AddLearnRoutes(r *Router) {
	for _, t := range LearnTopics() {
		r.Add(t, LearnRoute)
	}
}

// LearnEvent is one swipe or feedback reason of a student, as folded.
type LearnEvent struct {
	SwipeID     int64 // set for a swipe
	FeedbackID  int64 // set for feedback
	SchoolID    string
	Direction   string // swipes: left or right
	Interaction string // swipes: swipe, tap, detail_view or save
	Reason      string // feedback
	// Repeat is true for a counted swipe on a school the student had
	// already swiped (counted) before.
	Repeat    bool
	CreatedAt time.Time
}

// LearnInput is the state a fold starts from and the events recorded
// since, in recording order.
type LearnInput struct {
	Student    domain.Student
	Categories []match.CategoryPreference
	Model      []byte // the stored model (JSON); nil before any learning
	New        []LearnEvent
}

// LearnUpdate is the learning state a fold produces.
type LearnUpdate struct {
	Model   []byte // JSON
	Weights map[string]float64
}

// LearnFold computes the new learning state; history loads all of the
// student's events in recording order, in the folding transaction.
type LearnFold func(in LearnInput, history func() ([]LearnEvent, error)) (LearnUpdate, error)

// LearnOutcome says what a fold did.
type LearnOutcome struct {
	Erased         bool         // an erased student: nothing done
	Folded         []LearnEvent // the events folded in, none when there was nothing new
	StudentVersion int64        // the student's version after the fold
}

// LearningStore folds a student's new events into the stored learning
// state in one transaction, exactly once each (store.Store.FoldLearning,
// through an adapter in cmd/worker).
type LearningStore interface {
	FoldLearning(ctx context.Context, studentID string, fold LearnFold) (LearnOutcome, error)
}

// FeedRebuilder rebuilds a student's feed into Redis the way the API does
// on a miss (query.Service).
type FeedRebuilder interface {
	// StoredFeedVersion is the student version the stored feed was built
	// from; found is false when there is none.
	StoredFeedVersion(ctx context.Context, studentID string) (version int64, found bool, err error)
	// RebuildFeed builds the feed from the current state and stores it with
	// FEED_CACHE_TTL, newer version wins; an erased or unknown student is
	// INVALID_STUDENT_ID.
	RebuildFeed(ctx context.Context, studentID string) error
}

// Catalogs gives the school catalogue held in memory.
type Catalogs interface {
	Current() *match.Catalog
	// Refresh reloads the catalogue when the store's has changed.
	Refresh(ctx context.Context) (bool, error)
}

// errUnknownSchool stops a fold that met a school the catalogue held does
// not know: a school added since it was loaded, most likely.
var errUnknownSchool = errors.New("an event names a school the catalogue does not hold")

// LearnMetrics are the learner's collectors.
type LearnMetrics struct {
	// FeedLag is the time from a swipe being stored to the student's feed
	// rebuilt with it folded in.
	FeedLag prometheus.Histogram
	// Events counts the events folded in, by kind (swipe, signal, feedback).
	Events *prometheus.CounterVec
	// Rebuilds counts full rebuilds of a model from the prior (a repeat
	// swipe, or a stored model of another version).
	Rebuilds prometheus.Counter
}

// NewLearnMetrics creates the learner's collectors and registers them on reg.
func NewLearnMetrics(reg prometheus.Registerer) *LearnMetrics {
	m := &LearnMetrics{
		FeedLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "matching_feed_lag_seconds",
			Help:    "Time from a swipe being stored to the student's feed rebuilt in Redis with it learned.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60},
		}),
		Events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matching_learn_events_total", Help: "Swipes, weak signals and feedback folded into learning states, by kind.",
		}, []string{"kind"}),
		Rebuilds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matching_learn_rebuilds_total", Help: "Models rebuilt from the prior over the whole history (a repeat swipe, or a stored model of another version).",
		}),
	}
	for _, k := range []string{"swipe", "signal", "feedback"} {
		m.Events.WithLabelValues(k)
	}
	reg.MustRegister(m.FeedLag, m.Events, m.Rebuilds)
	return m
}

// Learn is the fold of student:learn, pure apart from history: it decodes
// the stored model (or starts from the prior of match.CategoryStart) and
// folds the new events in with Model.Observe, in recording order. When a
// new counted swipe repeats an earlier one on the same school, or the
// stored model cannot be read, it rebuilds the model with match.Fold over
// the whole history instead, which keeps only the latest direction per
// school. rebuilt reports that.
func Learn(in LearnInput, cat *match.Catalog, history func() ([]LearnEvent, error)) (up LearnUpdate, rebuilt bool, err error) {
	p, prior := match.CategoryStart(match.NewProfile(in.Student), in.Categories)
	m := match.NewModel(prior)
	if in.Model != nil {
		if json.Unmarshal(in.Model, &m) != nil {
			rebuilt = true
		}
	}
	for _, e := range in.New {
		rebuilt = rebuilt || e.Repeat
	}
	if rebuilt {
		all, err := history()
		if err != nil {
			return LearnUpdate{}, true, err
		}
		m = match.Fold(prior, p, cat, observations(cat, all))
	} else {
		for _, o := range observations(cat, in.New) {
			m, _ = m.Observe(p, cat, o)
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return LearnUpdate{}, rebuilt, err
	}
	return LearnUpdate{Model: b, Weights: m.Weights().Map()}, rebuilt, nil
}

// observations turns events into the learner's observations; an event on
// a school the catalogue does not hold (no longer served) is left out.
func observations(cat *match.Catalog, events []LearnEvent) []match.Observation {
	out := make([]match.Observation, 0, len(events))
	for _, e := range events {
		idx, ok := -1, false
		if cat != nil {
			idx, ok = cat.Index(e.SchoolID)
		}
		if !ok {
			continue
		}
		if e.FeedbackID != 0 {
			out = append(out, match.FeedbackObservation(idx, e.Reason))
			continue
		}
		d, _ := match.ParseDirection(e.Direction)
		out = append(out, match.Observation{Index: idx, Interaction: e.Interaction, Direction: d})
	}
	return out
}

// learner is the student:learn handler's part of Handler.
type learner struct {
	store    LearningStore
	feeds    FeedRebuilder
	catalogs Catalogs
	m        *LearnMetrics
	now      func() time.Time
}

// handleStudentLearn folds the student's new swipes and feedback into the
// learning state and rebuilds the feed. Running it twice changes nothing
// more: the second run finds nothing new to fold and a feed already built
// from the current version. Several swipes in quick succession each queue
// a task; the first folds them all and the others are cheap no-ops.
func (h *Handler) handleStudentLearn(ctx context.Context, t *asynq.Task) error {
	var p StudentLearnPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.StudentID == "" {
		return fmt.Errorf("decode %s payload %q: %w", t.Type(), t.Payload(), asynq.SkipRetry)
	}
	l := h.learn
	var rebuilt bool
	fold := func(strict bool) (LearnOutcome, error) {
		cat := l.catalogs.Current()
		return l.store.FoldLearning(ctx, p.StudentID, func(in LearnInput, history func() ([]LearnEvent, error)) (LearnUpdate, error) {
			if strict && !knowsAll(cat, in.New) {
				return LearnUpdate{}, errUnknownSchool
			}
			up, r, err := Learn(in, cat, history)
			rebuilt = r
			return up, err
		})
	}
	out, err := fold(true)
	if errors.Is(err, errUnknownSchool) {
		// Folding would skip the event for good: reload the catalogue and
		// fold again. A school still unknown is no longer served, and its
		// event is left out.
		if _, rerr := l.catalogs.Refresh(ctx); rerr != nil {
			return fmt.Errorf("reload the catalogue: %w", rerr)
		}
		out, err = fold(false)
	}
	switch {
	case domain.KindOf(err) == domain.KindNotFound:
		h.log.WarnContext(ctx, "student:learn for an unknown student; nothing to do", "student_id", p.StudentID)
		return nil
	case err != nil:
		return fmt.Errorf("fold learning of %s: %w", p.StudentID, err)
	case out.Erased:
		return nil
	}
	if len(out.Folded) > 0 {
		if rebuilt {
			l.m.Rebuilds.Inc()
		}
		for _, e := range out.Folded {
			l.m.Events.WithLabelValues(eventKind(e)).Inc()
		}
	} else {
		// Nothing new: rebuild only when no feed of the current version is
		// stored (a run that folded and then failed to store, say).
		v, found, err := l.feeds.StoredFeedVersion(ctx, p.StudentID)
		if err == nil && found && v >= out.StudentVersion {
			return nil
		}
	}
	if err := l.feeds.RebuildFeed(ctx, p.StudentID); err != nil {
		if domain.KindOf(err) == domain.KindNotFound {
			return nil // erased meanwhile
		}
		return fmt.Errorf("rebuild the feed of %s: %w", p.StudentID, err)
	}
	now := l.now()
	for _, e := range out.Folded {
		if e.SwipeID != 0 {
			l.m.FeedLag.Observe(max(0, now.Sub(e.CreatedAt).Seconds()))
		}
	}
	h.log.DebugContext(ctx, "student learned", "student_id", p.StudentID, "folded", len(out.Folded),
		"rebuilt", rebuilt, "student_version", out.StudentVersion)
	return nil
}

// knowsAll reports whether cat holds every event's school.
func knowsAll(cat *match.Catalog, events []LearnEvent) bool {
	for _, e := range events {
		if cat == nil {
			return false
		}
		if _, ok := cat.Index(e.SchoolID); !ok {
			return false
		}
	}
	return true
}

func eventKind(e LearnEvent) string {
	switch {
	case e.FeedbackID != 0:
		return "feedback"
	case e.Interaction == "" || e.Interaction == match.InteractionSwipe:
		return "swipe"
	}
	return "signal"
}

// errNoLearner is returned when the learner's dependencies are incomplete.
var errNoLearner = errors.New("tasks: the learner needs Learning, Feeds, Catalogs and LearnMetrics together")
