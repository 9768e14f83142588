package query

import (
	"github.com/collegematch/matching/internal/match"
)

// Learning phases, by counted swipes (match.PhaseFor).
const (
	PhaseDiscovery  = string(match.PhaseDiscovery)  // 0-10 swipes
	PhaseRefinement = string(match.PhaseRefinement) // 11-30
	PhaseStable     = string(match.PhaseStable)     // 31+
)

// PhaseFor is the learning phase of a student with swipes counted swipes.
func PhaseFor(swipes int) string { return string(match.PhaseFor(swipes)) }

// Progress is swipes / 31, capped at 1: how far the student is through
// learning (stable starts at 31 swipes).
func Progress(swipes int) float64 { return match.Progress(swipes) }

// FeedSeed is the seed of a student's feed (match.FeedSeed): the same
// student state (id and swipe count) always gives the same feed.
func FeedSeed(studentID string, swipes int) uint64 { return match.FeedSeed(studentID, swipes) }

// AssembleInput is everything feed assembly may read. It is plain data; no
// clock, no global random source.
type AssembleInput struct {
	Ranked      []match.Scored // the whole catalogue scored for the student, best first (match.Rank)
	Catalog     *match.Catalog
	Profile     match.Profile
	Weights     match.Weights
	Phase       string // PhaseFor(TotalSwipes)
	TotalSwipes int
	Seed        uint64 // FeedSeed(student, TotalSwipes)
	Size        int    // how many items to return
}

// Slot is one position of an assembled feed.
type Slot struct {
	match.Scored
	Probe       bool // a probe: chosen just past a learned preference boundary
	Exploration bool // an exploration pick rather than the next best match
}

// Assemble turns the ranked catalogue into the feed a student is shown:
// the first Size positions (fewer when the catalogue is smaller), appended
// to dst[:0].
//
// It is the one place the feed's composition is decided, and it is pure:
// the same input gives the same output. Every caller relies on two
// properties that any composition must keep:
//
//   - prefix stability: Assemble with Size n returns the first n items of
//     Assemble with any larger Size, so pages of any size tile one list;
//   - every school appears at most once.
//
// Today the feed is the ranked list itself, with no probes and no
// exploration picks. The learning loop composes it here: a 1-based
// position p is a probe when TotalSwipes + p is a multiple of 4; the
// phase's exploration share (30/20/10 %) of the other positions goes to
// exploration picks, never at position 1; and each page mixes 50 % schools
// within the student's max distance, 30 % within one to two times it and
// 20 % from census regions the student has not swiped in, falling back to
// the next band when one is empty. match.AssembleFeed does all of that;
// calling it here needs the student's learned model (learning_state.model),
// swiped schools and swiped regions, which the read side does not load yet.
func Assemble(in AssembleInput, dst []Slot) []Slot {
	n := min(max(in.Size, 0), len(in.Ranked))
	dst = dst[:0]
	for _, s := range in.Ranked[:n] {
		dst = append(dst, Slot{Scored: s})
	}
	return dst
}

// IsProbePosition reports whether 1-based position p of a feed is a probe
// position for a student with totalSwipes counted swipes (decisions.md:
// the item served at every 4th swipe is a probe).
func IsProbePosition(totalSwipes, p int) bool { return (totalSwipes+p)%4 == 0 }
