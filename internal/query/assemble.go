package query

import (
	"sync"

	"github.com/collegematch/matching/internal/domain"
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

// FeedPageSize is the page the feed's per-page rules (the geographic mix,
// no exploration pick at position 1) apply to: the default limit of POST
// /recommendations and the compact page.
const FeedPageSize = 20

// AssembleInput is everything feed assembly may read. It is plain data; no
// clock, no global random source.
type AssembleInput struct {
	Ranked []match.Scored // the whole catalogue ranked for the student, best first (match.RankModel)
	// Ranking is the ranking made lean from the student's factors
	// (match.RankFactorsLean), in place of Ranked; Factors are then the
	// ranking's.
	Ranking     *match.Ranking
	Catalog     *match.Catalog
	Profile     match.Profile
	Model       match.Model // the student's learned model (probe boundaries, exploration picks)
	TotalSwipes int         // counted swipes: the phase and the probe positions
	// Excluded marks, by catalogue index, schools that must not appear (the
	// ones the student swiped); nil excludes nothing.
	Excluded []bool
	// SwipedRegions are the census regions of the swiped schools (the
	// discovery band is the others).
	SwipedRegions []domain.Region
	Seed          uint64 // FeedSeed(student, TotalSwipes)
	Size          int    // how many items to return
	PageSize      int    // FeedPageSize when 0
	// Factors are the student's weight-free score factors (optional,
	// match.FeedInput.Factors): the same feed, assembled with less work.
	Factors *match.Factors
}

// Slot is one position of an assembled feed.
type Slot struct {
	match.Scored
	Probe       bool // a probe: chosen just past a learned preference boundary
	Exploration bool // an exploration pick rather than the next best match
}

// Assemble turns the ranked catalogue into the feed a student is shown:
// the first Size positions (fewer when the catalogue runs out), appended to
// dst[:0].
//
// It is the one place the feed's composition is decided, and it is pure:
// the same input gives the same output. It is match.AssembleFeed with the
// rules of decisions.md: a 1-based position p is a probe when TotalSwipes
// + p is a multiple of 4; the phase's exploration share (30/20/10 %) of
// the other positions goes to uncertainty-guided exploration picks, never
// at position 1 of a page; each page mixes 50 % schools within the
// student's max distance, 30 % within one to two times it and 20 % from
// census regions the student has not swiped in, falling back to the next
// band when one is empty; excluded schools never appear. Every caller
// relies on two properties:
//
//   - prefix stability: Assemble with Size n returns the first n items of
//     Assemble with any larger Size (whole pages are assembled), so pages of
//     any size tile one list;
//   - every school appears at most once.
func Assemble(in AssembleInput, dst []Slot) []Slot {
	dst = dst[:0]
	if in.Size <= 0 || len(in.Ranked) == 0 && (in.Ranking == nil || in.Ranking.Len() == 0) {
		return dst
	}
	page := in.PageSize
	if page <= 0 {
		page = FeedPageSize
	}
	buf := assembled.Get().(*[]match.FeedItem)
	items := match.AssembleFeedTo(*buf, match.FeedInput{
		Catalog: in.Catalog, Profile: in.Profile, Model: in.Model, Ranked: in.Ranked, Ranking: in.Ranking,
		Swipes: in.TotalSwipes, Length: in.Size, PageSize: page,
		Excluded: in.Excluded, SwipedRegions: in.SwipedRegions, Seed: in.Seed, Factors: in.Factors,
	})
	for _, it := range items {
		dst = append(dst, Slot{Scored: it.Scored, Probe: it.IsProbe, Exploration: it.IsExploration})
	}
	if cap(items) > cap(*buf) {
		*buf = items[:0]
	}
	assembled.Put(buf)
	return dst
}

// assembled are Assemble's buffers (*[]match.FeedItem).
var assembled = sync.Pool{New: func() any { return new([]match.FeedItem) }}

// IsProbePosition reports whether 1-based position p of a feed is a probe
// position for a student with totalSwipes counted swipes (decisions.md:
// the item served at every 4th swipe is a probe).
func IsProbePosition(totalSwipes, p int) bool { return (totalSwipes+p)%4 == 0 }
