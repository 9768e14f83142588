package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
)

// LearningStore is what the learner needs from the database
// (*store.Store).
type LearningStore interface {
	// LearnerState reads the student, the learned state and the events
	// recorded since it was last folded, in one snapshot.
	LearnerState(ctx context.Context, studentID string) (domain.LearnerState, error)
	// SaveLearning stores a fold's result if the learned state is still at
	// version from; saved is false otherwise (another fold got there first).
	SaveLearning(ctx context.Context, studentID string, from int64, up domain.LearningUpdate) (version int64, saved bool, err error)
	// LearnHistory reads what a full re-fold folds, up to the given ids.
	LearnHistory(ctx context.Context, studentID string, lastSwipe, lastFeedback int64) ([]domain.LearnEvent, error)
	// LearnerStates reads several students as LearnerState does, in one
	// statement, each with at most page new events; unknown ids are left out.
	LearnerStates(ctx context.Context, ids []string, page int) ([]domain.LearnerState, error)
	// SaveLearnings stores several folds' results as SaveLearning does, in
	// one statement; saved maps the students stored to their new versions.
	SaveLearnings(ctx context.Context, saves []domain.LearningSave) (saved map[string]int64, err error)
}

// FeedRebuilder rebuilds a student's feed into Redis (the read side's
// projection).
type FeedRebuilder interface {
	// RebuildFeed builds the feed from st, whose events are all folded in,
	// and stores it, newer versions winning; learned, when not nil, is
	// st.Model decoded (a fold's result, not decoded again).
	RebuildFeed(ctx context.Context, st domain.LearnerState, learned *match.Model) error
	// RebuildFeeds is RebuildFeed for several students in one Redis round
	// trip; learned[i] goes with states[i].
	RebuildFeeds(ctx context.Context, states []domain.LearnerState, learned []*match.Model) error
	// LearnedVersion is the student version the stored feed's learned
	// state covers; found is false when there is no feed.
	LearnedVersion(ctx context.Context, studentID string) (version int64, found bool, err error)
}

// Catalogs gives the school catalogue held in memory.
type Catalogs interface {
	Scoring() *match.Catalog
	// Refresh reloads the catalogue when the store's has changed.
	Refresh(ctx context.Context) (bool, error)
}

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
	// Conflicts counts folds that found another fold had stored first and
	// read the state again.
	Conflicts prometheus.Counter
	// Coalesced counts tasks that found their write folded in already, by
	// a fold that took several writes at once.
	Coalesced prometheus.Counter
	// DrainBatch is how many students a learn drain's batch read.
	DrainBatch prometheus.Histogram
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
			Name: "matching_learn_rebuilds_total", Help: "Models rebuilt from the prior over the history (a repeat swipe, or a stored model of another version).",
		}),
		Conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matching_learn_conflicts_total", Help: "Folds that found the learned state moved by another fold, and read it again.",
		}),
		Coalesced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matching_learn_coalesced_total", Help: "student:learn tasks and drain marks whose write an earlier fold had folded in already (no database read).",
		}),
		DrainBatch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "matching_learn_drain_batch_students",
			Help:    "Students a learn drain's batch read (one statement, one save, one Redis round trip for all).",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64},
		}),
	}
	for _, k := range []string{"swipe", "signal", "feedback"} {
		m.Events.WithLabelValues(k)
	}
	reg.MustRegister(m.FeedLag, m.Events, m.Rebuilds, m.Conflicts, m.Coalesced, m.DrainBatch)
	return m
}

// Learn is the fold of student:learn, pure apart from history: it folds
// st.New into the stored model with Model.Observe, in recording order, and
// adds the schools of new counted swipes to st.Swiped. When a new counted
// swipe repeats one on a school already swiped, or the stored model cannot
// be read, it rebuilds the model with match.Fold over history() instead
// (of each school the latest event of each kind), which keeps only the
// latest direction per school. rebuilt reports that. Events on schools cat
// does not hold are left out of the model.
func Learn(st domain.LearnerState, cat *match.Catalog, history func() ([]domain.LearnEvent, error)) (up domain.LearningUpdate, rebuilt bool, err error) {
	up, _, rebuilt, err = learn(st, cat, history)
	return up, rebuilt, err
}

// learn is Learn, also returning the model folded (up.Model encoded).
func learn(st domain.LearnerState, cat *match.Catalog, history func() ([]domain.LearnEvent, error)) (up domain.LearningUpdate, m match.Model, rebuilt bool, err error) {
	p, m, prior, undecodable := match.StartStored(st)
	rebuilt = undecodable // a model of another version: refold it
	up = domain.LearningUpdate{StudentCreatedAt: st.Student.CreatedAt,
		LastSwipeID: st.LastSwipeID, LastFeedbackID: st.LastFeedbackID, LastSeq: st.LastSeq}
	swiped := make(map[string]bool, len(st.Swiped)+len(st.New))
	for _, id := range st.Swiped {
		swiped[id] = true
	}
	for _, e := range st.New {
		up.LastSwipeID, up.LastFeedbackID, up.LastSeq = max(up.LastSwipeID, e.SwipeID),
			max(up.LastFeedbackID, e.FeedbackID), max(up.LastSeq, e.Seq)
		if e.Counted() {
			id := strings.ToLower(e.SchoolID)
			rebuilt = rebuilt || swiped[id]
			swiped[id] = true
		}
	}
	if rebuilt {
		all, err := history()
		if err != nil {
			return domain.LearningUpdate{}, m, true, err
		}
		m = match.Fold(prior, p, cat, Observations(cat, all))
	} else {
		for _, o := range Observations(cat, st.New) {
			m, _ = m.Observe(p, cat, o)
		}
	}
	if up.Model, err = m.MarshalBinary(); err != nil {
		return domain.LearningUpdate{}, m, rebuilt, err
	}
	up.Weights = m.Weights().Map()
	up.Swiped = make([]string, 0, len(swiped))
	for id := range swiped {
		up.Swiped = append(up.Swiped, id)
	}
	slices.Sort(up.Swiped)
	return up, m, rebuilt, nil
}

// Observations turns events into the learner's observations; an event on
// a school the catalogue does not hold (no longer served) is left out.
func Observations(cat *match.Catalog, events []domain.LearnEvent) []match.Observation {
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
	drains   *LearnDrains
	store    LearningStore
	feeds    FeedRebuilder
	catalogs Catalogs
	m        *LearnMetrics
	now      func() time.Time
}

// maxFoldAttempts bounds the reads of one task when other folds of the same
// student keep storing first; the task then fails and is retried.
const maxFoldAttempts = 5

// handleStudentLearn folds the student's new swipes and feedback into the
// learned state and rebuilds the feed from it: one read (the state with
// what is new) and one optimistic write, no lock held while folding. A
// fold that finds another stored first reads again. Running it twice
// changes nothing more: the second run finds nothing new, and rebuilds the
// feed only when none of the current versions is stored. Several swipes in
// quick succession each queue a task; the first folds them all and the
// others find nothing new.
func (h *Handler) handleStudentLearn(ctx context.Context, t *asynq.Task) error {
	var p StudentLearnPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.StudentID == "" {
		return fmt.Errorf("decode %s payload %q: %w", t.Type(), t.Payload(), asynq.SkipRetry)
	}
	l := h.learn
	if p.Version > 0 {
		// Coalescing: a fold that read the student at this version or later
		// (and so folded this write in) has rebuilt the feed already.
		if v, found, err := l.feeds.LearnedVersion(ctx, p.StudentID); err == nil && found && v >= p.Version {
			l.m.Coalesced.Inc()
			return nil
		}
	}
	for range maxFoldAttempts {
		st, err := l.store.LearnerState(ctx, p.StudentID)
		switch {
		case domain.KindOf(err) == domain.KindNotFound:
			h.log.WarnContext(ctx, "student:learn for an unknown student; nothing to do", "student_id", p.StudentID)
			return nil
		case err != nil:
			return fmt.Errorf("read the learning state of %s: %w", p.StudentID, err)
		case st.Student.DeletedAt != nil:
			return nil
		case len(st.New) == 0:
			// Nothing to fold: rebuild only when the stored feed does not
			// cover this state (a fold whose rebuild failed, a lost feed).
			if v, found, err := l.feeds.LearnedVersion(ctx, p.StudentID); err == nil && found && v >= st.Version {
				return nil
			}
			return h.rebuild(ctx, st, nil, nil, false)
		}
		cat := l.catalogs.Scoring()
		if !knowsAll(cat, st.New) {
			// Folding would leave the event out for good: reload the
			// catalogue first. A school still unknown is no longer served.
			if _, err := l.catalogs.Refresh(ctx); err != nil {
				return fmt.Errorf("reload the catalogue: %w", err)
			}
			cat = l.catalogs.Scoring()
		}
		up, learned, rebuilt, err := learn(st, cat, func() ([]domain.LearnEvent, error) {
			return l.store.LearnHistory(ctx, p.StudentID, max(st.LastSwipeID, lastSwipe(st.New)), max(st.LastFeedbackID, lastFeedback(st.New)))
		})
		if err != nil {
			return fmt.Errorf("fold learning of %s: %w", p.StudentID, err)
		}
		version, saved, err := l.store.SaveLearning(ctx, p.StudentID, st.LearningVersion, up)
		if err != nil {
			return fmt.Errorf("store the learning state of %s: %w", p.StudentID, err)
		}
		if !saved {
			l.m.Conflicts.Inc()
			continue
		}
		if rebuilt {
			l.m.Rebuilds.Inc()
		}
		for _, e := range st.New {
			l.m.Events.WithLabelValues(eventKind(e)).Inc()
		}
		folded := st
		folded.Model, folded.Weights, folded.LearningVersion = up.Model, up.Weights, version
		folded.LastSwipeID, folded.LastFeedbackID, folded.LastSeq, folded.Swiped = up.LastSwipeID, up.LastFeedbackID, up.LastSeq, up.Swiped
		folded.New = nil
		return h.rebuild(ctx, folded, &learned, st.New, true)
	}
	return fmt.Errorf("fold learning of %s: the learned state kept moving under %d folds", p.StudentID, maxFoldAttempts)
}

// rebuild rebuilds the student's feed from st and observes the lag of the
// swipes just folded.
func (h *Handler) rebuild(ctx context.Context, st domain.LearnerState, learned *match.Model, folded []domain.LearnEvent, changed bool) error {
	l := h.learn
	if err := l.feeds.RebuildFeed(ctx, st, learned); err != nil {
		if domain.KindOf(err) == domain.KindNotFound {
			return nil // erased meanwhile
		}
		return fmt.Errorf("rebuild the feed of %s: %w", st.Student.ID, err)
	}
	now := l.now()
	for _, e := range folded {
		if e.SwipeID != 0 {
			l.m.FeedLag.Observe(max(0, now.Sub(e.CreatedAt).Seconds()))
		}
	}
	h.log.DebugContext(ctx, "student learned", "student_id", st.Student.ID, "folded", len(folded), "changed", changed,
		"learning_version", st.LearningVersion)
	return nil
}

func lastSwipe(es []domain.LearnEvent) int64 {
	var n int64
	for _, e := range es {
		n = max(n, e.SwipeID)
	}
	return n
}

func lastFeedback(es []domain.LearnEvent) int64 {
	var n int64
	for _, e := range es {
		n = max(n, e.FeedbackID)
	}
	return n
}

// knowsAll reports whether cat holds every event's school.
func knowsAll(cat *match.Catalog, events []domain.LearnEvent) bool {
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

func eventKind(e domain.LearnEvent) string {
	switch {
	case e.FeedbackID != 0:
		return "feedback"
	case e.Interaction == "" || e.Interaction == match.InteractionSwipe:
		return "swipe"
	}
	return "signal"
}

// errNoLearner is returned when the learner's dependencies are incomplete.
var errNoLearner = errors.New("tasks: the learner needs LearnDrains, Learning, Feeds, Catalogs and LearnMetrics together")
