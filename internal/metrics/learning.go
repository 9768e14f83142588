package metrics

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// Label values of the learning counters: fixed sets, so no client input
// becomes a label. A value outside its set is counted as LabelOther, which
// only a bug can produce.
var (
	// SwipeDirections: left is a dislike, right a like.
	SwipeDirections = []string{"left", "right"}
	// LearningPhases are the phases a counted swipe can put a student in
	// (match.PhaseFor of the count including the swipe).
	LearningPhases = []string{"discovery", "refinement", "stable"}
	// FeedSlots are the kinds of feed slot a swiped school was served in:
	// the learned ranking, an exploration pick or a probe.
	FeedSlots = []string{"ranked", "exploration", "probe"}
	// FeedbackReasons are the reasons of POST /feedback (match.FeedbackOptions).
	FeedbackReasons = []string{"too_expensive", "wrong_location", "not_my_major", "too_selective", "perfect_match"}
	// FeedPatchResults are what a write's patch did to the stored feed
	// (cache.PatchResults).
	FeedPatchResults = []string{"patched", "dropped", "tombstone", "stale", "none"}
)

// LabelOther stands for a label value outside its fixed set.
const LabelOther = "other"

// Learning counts what students do with what they are shown, so the like
// rate per phase and the probe like rate that `matchctl simulate` reports
// can be watched in production:
//
//	like rate per phase:  sum by (phase) (rate(matching_swipes_total{direction="right"}[1h]))
//	                      / sum by (phase) (rate(matching_swipes_total[1h]))
//	probe like rate:      sum(rate(matching_swipes_total{slot="probe",direction="right"}[1h]))
//	                      / sum(rate(matching_swipes_total{slot="probe"}[1h]))
//
// It also counts what each write's patch did to the stored feed: a swipe
// on the feed's next card patches it in place; one on another school drops
// it, and the next read before the worker's rebuild builds it on the API.
type Learning struct {
	swipes   *prometheus.CounterVec
	feedback *prometheus.CounterVec
	patches  *prometheus.CounterVec
}

// NewLearning creates the learning counters, registers them on reg and
// starts every series of the fixed label sets at zero (so a rate exists
// before the first swipe of a kind).
func NewLearning(reg prometheus.Registerer) *Learning {
	m := &Learning{
		swipes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matching_swipes_total",
			Help: "Counted swipes recorded (POST /swipe, the swipes of POST /continuous-feed and POST /m/sync/push; retries not counted), by direction (left = dislike, right = like), the phase the swipe put the student in, and the feed slot the school was served in (ranked, exploration, probe).",
		}, []string{"direction", "phase", "slot"}),
		feedback: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matching_feedback_total",
			Help: "Feedback recorded (POST /feedback and the feedback of POST /m/sync/push), by reason.",
		}, []string{"reason"}),
		patches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matching_feed_patches_total",
			Help: "What each committed write (a swipe, a batch of the continuous feed or a sync push) did to the student's stored feed: patched (the swiped schools were its next items, or the write swiped none), dropped (a school further down: the feed was dropped until the next build), tombstone (a tombstone of a dropped or invalidated feed took the new version), stale (a feed or tombstone of the same version or newer was there), none (nothing stored).",
		}, []string{"result"}),
	}
	reg.MustRegister(m.swipes, m.feedback, m.patches)
	for _, d := range SwipeDirections {
		for _, p := range LearningPhases {
			for _, s := range FeedSlots {
				m.swipes.WithLabelValues(d, p, s)
			}
		}
	}
	for _, r := range FeedbackReasons {
		m.feedback.WithLabelValues(r)
	}
	for _, r := range FeedPatchResults {
		m.patches.WithLabelValues(r)
	}
	return m
}

// Swipe counts one recorded swipe.
func (m *Learning) Swipe(direction, phase, slot string) {
	m.swipes.WithLabelValues(fixed(direction, SwipeDirections), fixed(phase, LearningPhases), fixed(slot, FeedSlots)).Inc()
}

// Feedback counts one recorded feedback reason.
func (m *Learning) Feedback(reason string) {
	m.feedback.WithLabelValues(fixed(reason, FeedbackReasons)).Inc()
}

// FeedPatch counts what one write's patch did to the stored feed.
func (m *Learning) FeedPatch(result string) {
	m.patches.WithLabelValues(fixed(result, FeedPatchResults)).Inc()
}

func fixed(v string, set []string) string {
	if slices.Contains(set, v) {
		return v
	}
	return LabelOther
}
