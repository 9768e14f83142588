package domain

import "time"

// Interaction kinds of a swipe (interaction_type). Only InteractionSwipe is
// counted toward the swipe count and the phase and is published as
// swipe.recorded; the others are weak signals for the learner.
const (
	InteractionSwipe      = "swipe"
	InteractionTap        = "tap"
	InteractionDetailView = "detail_view"
	InteractionSave       = "save"
)

// Swipe is one interaction of a student with a school, ready to be stored:
// validated, ids in canonical form, and what its answer says decided
// before it is stored (so the answer to a retry is derived from the row).
type Swipe struct {
	StudentID   string
	SchoolID    string
	Direction   string // left or right
	Interaction string // InteractionSwipe, InteractionTap, ...
	TimeSpent   *float64
	// ClientID is the client's id that makes a retry store nothing twice (a
	// swipe_id, an Idempotency-Key or a sync change id); "" when none.
	ClientID   string
	OccurredAt time.Time // zero means now

	IsProbe         bool // the school had been served to the student as a probe
	TriggerFeedback bool // the answer asks for feedback
	UpdatedWeights  bool // folding the swipe moves a preference weight
}

// Counted reports whether the swipe counts toward the swipe count.
func (s Swipe) Counted() bool { return s.Interaction == InteractionSwipe }

// RecordedSwipe is a swipe as stored, or as found stored under the same
// client id (Duplicate).
type RecordedSwipe struct {
	Swipe
	ID        int64
	CreatedAt time.Time
	// Duplicate: the client id had been used already; nothing was stored and
	// Swipe is the first swipe's.
	Duplicate bool
	// SwipeCount is the student's counted swipes once this swipe was
	// recorded; Version the student's version after it (0 for a duplicate).
	SwipeCount int
	Version    int64
	OutboxID   int64 // the swipe.recorded event written with it; 0 when none
}

// Feedback is one feedback reason about a school, ready to be stored.
type Feedback struct {
	StudentID  string
	SchoolID   string
	Reason     string
	Comment    string // "" when none
	ClientID   string // a sync change id; "" when none
	OccurredAt time.Time
}

// RecordedFeedback is a feedback reason as stored.
type RecordedFeedback struct {
	Feedback
	ID        int64
	CreatedAt time.Time
}

// Change types of a batch of writes (a sync push, the swipes carried by a
// continuous-feed request).
const (
	ChangeSwipe    = "swipe"
	ChangeFeedback = "feedback"
)

// Change is one write of a batch: a swipe or a feedback reason under a
// client id, validated by the caller. A change with Problem set is only
// looked up: it is a duplicate when its id is stored with the same content,
// and rejected with Problem otherwise.
type Change struct {
	Type     string // ChangeSwipe or ChangeFeedback
	Swipe    Swipe  // a swipe's fields (ClientID, StudentID included)
	Feedback Feedback
	Problem  string
}

// ClientID is the change's client id.
func (c Change) ClientID() string {
	if c.Type == ChangeFeedback {
		return c.Feedback.ClientID
	}
	return c.Swipe.ClientID
}

// Outcome is what became of one change of a batch.
type Outcome int

// Outcomes of a change.
const (
	Accepted Outcome = iota
	Duplicate
	Rejected
)

// BatchResult is what a batch did, change by change in the order given.
type BatchResult struct {
	Outcomes []Outcome
	Errors   []string // why each rejected change was, "" for the others
	// Swipes are the accepted swipes as stored, in the order given.
	Swipes []RecordedSwipe
	// SwipeCount and Version are the student's after the batch.
	SwipeCount int
	Version    int64
	// LastFeedbackID is the id of the last feedback stored (0 when none).
	LastFeedbackID int64
}

// SyncRead is what a pull reads below its watermark in one round trip:
// the changes, the student as the learner sees them and the schools up to
// UpTo.
type SyncRead struct {
	Swipes   []SyncSwipe
	Feedback []SyncFeedback
	UpTo     int64 // the watermark, or the last change read when More
	More     bool  // the limit cut the changes short
	State    LearnerState
	Schools  []School
}

// SyncSwipe is a swipe as a sync pull returns it.
type SyncSwipe struct {
	Seq             int64
	ClientID        *string
	SchoolID        string
	Direction       string
	InteractionType string
	TimeSpent       *float64
	OccurredAt      time.Time
	RecordedAt      time.Time
}

// SyncFeedback is a feedback reason as a sync pull returns it.
type SyncFeedback struct {
	Seq        int64
	ClientID   *string
	SchoolID   string
	Reason     string
	Comment    *string
	OccurredAt time.Time
	RecordedAt time.Time
}
