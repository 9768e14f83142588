package command

import "time"

// SwipeInput is one interaction of a student with a school, as POST /swipe,
// the swipes sent along with POST /continuous-feed and offline sync all
// record it.
type SwipeInput struct {
	StudentID       string
	SchoolID        string
	Direction       string   // "left" (dislike) or "right" (like)
	InteractionType string   // "swipe" (default), "tap", "detail_view", "save"
	TimeSpent       *float64 // seconds spent viewing, when the client sent it
	// ClientID is the client-generated id that makes a retry store nothing
	// twice: the body's swipe_id, the Idempotency-Key header, or a sync
	// change id. "" when the client sent none.
	ClientID   string
	OccurredAt time.Time // when the student swiped; zero means now
}

// SwipeResult is what a recorded swipe answers: exact counts read back in
// the recording transaction, and what the client should show next.
type SwipeResult struct {
	SwipeCount      int      // counted swipes of the student, this one included
	Phase           string   // discovery, refinement or stable
	UIMessage       string   // the spec's text for the phase
	Progress        float64  // swipes / 31, capped at 1
	UpdatedWeights  bool     // the swipe changed the student's preference weights
	TriggerFeedback bool     // a probe swipe or a pattern break: ask for feedback
	FeedbackOptions []string // the reasons the client may offer
	IsProbe         bool     // the school had been served to the student as a probe
	Duplicate       bool     // a retry of an already recorded swipe; the first answer is repeated
	// Slot is where the school stood in the student's stored feed when it
	// was swiped: cache.SlotRanked, SlotExploration or SlotProbe; "" when it
	// was not among the feed's items (or Redis did not say).
	Slot string
}
