package match

// Phase is a student's learning phase, decided by the count of counted
// swipes (spec 3.1).
type Phase string

const (
	PhaseDiscovery  Phase = "discovery"  // 0-10 swipes: learn basic preferences with high diversity
	PhaseRefinement Phase = "refinement" // 11-30 swipes: test preference boundaries
	PhaseStable     Phase = "stable"     // 31 or more: exploit what was learned
)

// Phase boundaries: the last swipe count of discovery and of refinement.
const (
	DiscoveryMaxSwipes  = 10
	RefinementMaxSwipes = 30
)

// ProgressSwipes is the swipe count at which learning progress reaches 1:
// progress is swipes / 31, capped at 1.
const ProgressSwipes = RefinementMaxSwipes + 1

// PhaseFor is the phase of a student with the given number of counted
// swipes: discovery for 0-10 (and for a negative count), refinement for
// 11-30, stable from 31.
func PhaseFor(swipes int) Phase {
	switch {
	case swipes <= DiscoveryMaxSwipes:
		return PhaseDiscovery
	case swipes <= RefinementMaxSwipes:
		return PhaseRefinement
	}
	return PhaseStable
}

// Progress is learning_state.progress: swipes / 31, within [0,1].
func Progress(swipes int) float64 {
	return clamp01(float64(swipes) / ProgressSwipes)
}

// UIMessage is the text the app shows for the phase (spec 3.1).
func (p Phase) UIMessage() string {
	switch p {
	case PhaseRefinement:
		return "Refining matches..."
	case PhaseStable:
		return "Personalized for you"
	}
	return "Learning your preferences..."
}

// ExplorationRate is the share of the feed's non-probe slots filled with
// exploration picks: 30 % in discovery, 20 % in refinement, 10 % when stable.
func (p Phase) ExplorationRate() float64 {
	switch p {
	case PhaseRefinement:
		return 0.2
	case PhaseStable:
		return 0.1
	}
	return 0.3
}
