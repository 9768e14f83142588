package domain

import (
	"strings"
	"time"
)

// CategoryPreference is a student's latest swipe on one onboarding
// category.
type CategoryPreference struct {
	CategoryID string    `json:"category_id"`
	Direction  string    `json:"direction"` // "right" likes the category, "left" does not
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// LearnEvent is one swipe or feedback reason as the learner folds it.
type LearnEvent struct {
	SwipeID    int64 // set for a swipe
	FeedbackID int64 // set for feedback
	Seq        int64 // change_seq: the order the student's events were recorded in
	SchoolID   string
	// Swipes: direction and interaction type. Feedback: the reason.
	Direction   string
	Interaction string
	Reason      string
	CreatedAt   time.Time
}

// Counted reports whether e is a counted swipe.
func (e LearnEvent) Counted() bool { return e.SwipeID != 0 && e.Interaction == InteractionSwipe }

// LearnerState is a student as the learner and the feed see them, read in
// one snapshot: the profile, the onboarding category preferences (the prior
// before any learning), the learned state and the events recorded since it
// was last folded.
type LearnerState struct {
	Student    Student
	Version    int64 // students.version
	Categories []CategoryPreference

	// The learned state (learning_state); all zero before any learning.
	Model           []byte             // the serialised model (match.DecodeModel), nil before any learning
	Weights         map[string]float64 // the model's preference weights, nil before any learning
	LearningVersion int64              // increases with every fold
	LastSwipeID     int64              // the last swipe folded in
	LastFeedbackID  int64              // the last feedback folded in
	LastSeq         int64              // the change_seq of the last event folded in
	// Swiped are the schools with a counted swipe folded in, as sorted
	// lower-case UUIDs: a feed leaves them out.
	Swiped []string

	// New are the events recorded after the last folded ones, in recording
	// order.
	New []LearnEvent
}

// LearningUpdate is what a fold stores.
type LearningUpdate struct {
	// StudentCreatedAt is the created_at of the student the fold read
	// (Student.CreatedAt): a student's first learned state is stored only
	// for that life of the id (an erased student onboarding again under
	// the same id starts a new one).
	StudentCreatedAt time.Time
	Model            []byte // match.Model's binary form
	Weights          map[string]float64
	LastSwipeID      int64
	LastFeedbackID   int64
	LastSeq          int64
	Swiped           []string // sorted lower-case UUIDs
}

// LearningSave is one fold's result to store: the student's update, stored
// only when their learned state is still at version From (0: none yet).
type LearningSave struct {
	StudentID string
	From      int64
	Update    LearningUpdate
}

// SwipedSchools are the schools the student has a counted swipe on: those
// folded in and those among the new events.
func (st LearnerState) SwipedSchools() []string {
	out := st.Swiped
	for i, e := range st.New {
		if !e.Counted() {
			continue
		}
		if i == 0 || len(out) == len(st.Swiped) {
			out = append([]string(nil), out...) // never append to the stored slice
		}
		out = append(out, strings.ToLower(e.SchoolID))
	}
	return out
}
