package query

import (
	"math"
	"slices"
	"sync"
	"time"

	"github.com/collegematch/matching/internal/active"
	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
)

// Feed sizes.
const (
	// DefaultFeedSize is how many ranked items a stored feed keeps: pages
	// within them are served from Redis, deeper pages are ranked per
	// request (Service.deeper) and continue the same list. A student swipes
	// from the top of the feed and the worker rebuilds it after every fold,
	// so the first pages are what is read: 200 items are ten pages of 20
	// (five of 40), and a rebuild assembles only those. The cost falls on
	// the rare deeper page: a build on the API (rank, assemble to the
	// page's end, describe it) and, for a feed read from Redis, a read of
	// the student's swiped schools from PostgreSQL and of the model from
	// Redis.
	DefaultFeedSize = 200
	// CompactPageSize is how many items GET /m/recommendations returns: the
	// first page of the feed, the default limit of POST /recommendations.
	CompactPageSize = 20
	// DescribedItems is how many of a stored feed's first items are kept as
	// POST /recommendations shows them (two default pages), so a cached
	// page is served from stored bytes (cache.Feeds.Page).
	DescribedItems = 2 * CompactPageSize
)

// FeedInput is everything a feed is built from.
type FeedInput struct {
	StudentID       string
	StudentVersion  int64
	LearningVersion int64
	LearnedVersion  int64 // the student version the learned state covers; 0 when not known
	Profile         match.Profile
	// Model is the student's learned model (a model centred on the prior
	// before any learning): the ranking, the probes and the exploration
	// picks come from it, the weights of every score shown from
	// Model.Weights().
	Model       match.Model
	TotalSwipes int
	// Swiped are the schools the student has swiped (counted swipes): never
	// in the feed, and their census regions are not new to the student.
	Swiped []string
	// Exclude are further schools to leave out (optional).
	Exclude []string
	Catalog *active.Catalog
	Size    int // items kept; DefaultFeedSize when 0
	// Describe is how many of the first items to encode as POST
	// /recommendations shows them (cache.Feed.Described); 0 for none.
	Describe int
	Now      time.Time
	// Factors keeps students' weight-free score factors between builds
	// (optional): the ranking is the same with or without it.
	Factors *FactorCache
}

// BuildFeed ranks the catalogue for the student with the learned model
// (match.RankModel's ranking, made lean: match.Ranking), assembles the
// feed (Assemble: probes, exploration, geographic mix, swiped schools left
// out) and encodes its compact first page. It is pure apart from the
// buffers it reuses between builds and the factors in.Factors keeps.
//
// The ranking is lean: every school's score, but the schools sorted one
// geographic band at a time and the components worked out only for the
// items listed, so a rebuild writes and sorts no Scored of the whole
// catalogue; the feed is the one the whole ranking gives, byte for byte
// (TestRebuildIsTheWholeBuild).
//
// The order is the model's: RankModel ranks by the score expected under
// the model's uncertainty about the preferred size and selectivity, plus
// the model's residual. The score shown (match_score, the compact s) is
// the whole model's score, the plain match score with the learned weights
// plus the residual (match.Model.AddResidual), the one GET /match reports
// for the same school, so a list and a detail always agree; while the
// model is unsure of the preferred levels, two neighbours of a page may
// therefore show scores slightly out of order. The components shown are
// the weights' part.
//
// Scores are rounded to 4 decimals and distances to 0.1 mile here, once:
// the stored feed, the compact page and every response show the same
// rounded value, and the compact score s and every grade are derived from
// it, so s = round(match_score * 100) holds for what a client sees.
func BuildFeed(in FeedInput) cache.Feed {
	cat := in.Catalog
	profile := appendProfile(nil, &in.Profile)
	buf := buildBuffers.Get().(*buildBuffer)
	defer buildBuffers.Put(buf)
	// The ranking is made lean: each school's score, each geographic band
	// ordered as the feed reads it, the components worked out for the
	// items listed only. From the student's factors when they are kept.
	var factors *match.Factors
	if in.Factors != nil {
		buf.ranking, factors = in.Factors.RankLean(buf.ranking, in.StudentID, profile, in.Profile, in.Model, cat.Catalog)
	} else {
		buf.ranking = match.RankModelLean(buf.ranking, in.Profile, in.Model, cat.Catalog)
	}
	ex := buf.exclusion(in)
	slots := Assemble(AssembleInput{
		Ranking: buf.ranking, Catalog: cat.Catalog, Profile: in.Profile, Model: in.Model, TotalSwipes: in.TotalSwipes,
		Excluded: ex.excluded, SwipedRegions: ex.swipedRegions,
		Seed: FeedSeed(in.StudentID, in.TotalSwipes), Size: feedSize(in), Factors: factors,
	}, buf.slots[:0])
	buf.slots = slots
	buf.idx = slotIndices(buf.idx, slots)
	if factors != nil {
		buf.scores = match.ShownFactors(buf.scores, factors, in.Profile, in.Model, buf.idx)
	} else {
		buf.scores = match.ScoreAll(buf.scores, in.Profile, in.Model.Weights(), cat.Catalog, buf.idx)
		in.Model.AddResidual(in.Profile, cat.Catalog, buf.scores)
	}
	for i, s := range buf.scores {
		slots[i].Score = s.Score
	}
	return feedOf(in, profile, slots, ex.eligible)
}

// feedSize is how many items the feed keeps.
func feedSize(in FeedInput) int {
	if in.Size <= 0 {
		return DefaultFeedSize
	}
	return in.Size
}

// exclusion is what leaves schools out of a student's feed.
type exclusion struct {
	excluded      []bool // by catalogue index: swiped or excluded
	swipedRegions []domain.Region
	eligible      int // schools not excluded
}

// exclusion marks the schools in.Swiped and in.Exclude name (unknown ids
// are ignored), in buf's mask.
func (buf *buildBuffer) exclusion(in FeedInput) exclusion {
	cat := in.Catalog
	excluded := buf.excluded[:0]
	if cap(excluded) < cat.Len() {
		excluded = make([]bool, 0, cat.Len())
	}
	excluded = excluded[:cat.Len()]
	clear(excluded)
	buf.excluded = excluded
	swipedIdx := make([]int, 0, len(in.Swiped))
	for _, id := range in.Swiped {
		if i, ok := cat.Index(id); ok {
			excluded[i] = true
			swipedIdx = append(swipedIdx, i)
		}
	}
	for _, id := range in.Exclude {
		if i, ok := cat.Index(id); ok {
			excluded[i] = true
		}
	}
	eligible := 0
	for _, x := range excluded {
		if !x {
			eligible++
		}
	}
	return exclusion{excluded: excluded, swipedRegions: match.RegionsOf(cat.Catalog, swipedIdx), eligible: eligible}
}

// slotIndices are the slots' catalogue indices, appended to dst[:0].
func slotIndices(dst []int32, slots []Slot) []int32 {
	dst = dst[:0]
	for i := range slots {
		dst = append(dst, slots[i].Index)
	}
	return dst
}

// feedOf is the stored feed of the assembled slots, their scores the ones
// shown: the items rounded, the first described, the compact page and
// its ETag.
func feedOf(in FeedInput, profile []byte, slots []Slot, eligible int) cache.Feed {
	cat := in.Catalog
	w := in.Model.Weights()
	model, _ := in.Model.MarshalBinary() // cannot fail
	f := cache.Feed{
		StudentID:        in.StudentID,
		StudentVersion:   in.StudentVersion,
		LearningVersion:  in.LearningVersion,
		LearnedVersion:   in.LearnedVersion,
		CatalogVersion:   cat.Version,
		BuiltAt:          in.Now,
		AlgorithmVersion: match.AlgorithmVersion,
		TotalSwipes:      in.TotalSwipes,
		TotalCount:       eligible,
		Weights:          w.Sanitize().Map(),
		Profile:          profile,
		Model:            model,
		Items:            feedItems(cat, slots),
	}
	if k := min(in.Describe, len(slots)); k > 0 {
		d := match.NewModelDescriber(in.Profile, in.Model, cat.Catalog)
		f.Described = describe(cat, &d, slots[:k], f.Items[:k])
		f.ShownWeights = appendWeightsShown(nil, f.Weights)
		f.ShownLearned = appendStrings(nil, match.LearnedTexts(d.Learned()))
	}
	n := min(CompactPageSize, len(slots))
	f.Compact = cache.NewCompact(compactItems(cat, slots[:n], f.Items[:n]))
	return f
}

// buildBuffer is BuildFeed's scratch, kept between builds (buildBuffers):
// nothing in it outlives a build.
type buildBuffer struct {
	ranking  *match.Ranking // the build's ranking, made lean
	excluded []bool
	slots    []Slot
	idx      []int32
	scores   []match.Scored
}

var buildBuffers = sync.Pool{New: func() any { return new(buildBuffer) }}

// StoredProbes are the schools a stored feed's cached pages serve as
// probes: those of its compact first page (GET /m/recommendations) when it
// has one, and those of its described items (POST /recommendations).
// Those pages are answered from Redis without any other round trip, so
// their probes are remembered when the feed is stored.
func StoredProbes(f *cache.Feed) []string {
	var out []string
	if f.Compact.ETag != "" {
		for _, it := range f.Range(0, CompactPageSize) {
			if it.Probe {
				out = append(out, it.SchoolID.String())
			}
		}
	}
	for _, d := range f.Described {
		if d.Probe && !slices.Contains(out, d.SchoolID) {
			out = append(out, d.SchoolID)
		}
	}
	return out
}

// feedItems turns assembled slots into stored items, rounded for display.
func feedItems(cat *active.Catalog, slots []Slot) []cache.FeedItem {
	items := make([]cache.FeedItem, len(slots))
	for i, s := range slots {
		items[i] = cache.FeedItem{
			SchoolID: cat.ID(int(s.Index)),
			Score:    round4(s.Score), Academic: round4(s.Academic), Financial: round4(s.Financial),
			Campus: round4(s.Campus), Outcomes: round4(s.Outcomes),
			Distance:    roundMiles(s.Distance),
			Probe:       s.Probe,
			Exploration: s.Exploration,
		}
	}
	return items
}

// round4 rounds a score to the 4 decimals the API shows.
func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }

// roundMiles rounds a distance to 0.1 mile; unknown (negative) stays -1.
func roundMiles(d float64) float64 {
	if d < 0 || math.IsNaN(d) {
		return -1
	}
	return math.Round(d*10) / 10
}

// compactItem is one item of GET /m/recommendations.
type compactItem struct {
	I  string `json:"i"`
	N  string `json:"n"`
	S  int    `json:"s"`
	G  string `json:"g"`
	C  string `json:"c"`
	St string `json:"st"`
	P  bool   `json:"p,omitempty"`
}

// compactItems encodes the items of GET /m/recommendations for the first
// slots (items are the same positions, rounded), one JSON object each.
// The items share one array.
func compactItems(cat *active.Catalog, slots []Slot, items []cache.FeedItem) [][]byte {
	out := make([][]byte, len(items))
	buf := make([]byte, 0, 128*len(items))
	for i, it := range items {
		s := &cat.Schools[slots[i].Index]
		start := len(buf)
		buf = appendCompactItem(buf, &compactItem{
			I: s.ID, N: s.Name, S: match.Percent(it.Score), G: match.Grade(it.Score), C: s.City, St: s.State, P: it.Probe,
		})
		out[i] = buf[start:len(buf):len(buf)]
	}
	return out
}

// describeChunk is the size of the arrays described items are encoded
// into: a dozen items (1.1-1.5 KB each), and small enough for the
// allocator's size classes (a larger array costs a page allocation of its
// own). An item starts a new chunk when less than describeRoom is left.
const (
	describeChunk = 16 << 10
	describeRoom  = 3 << 10
)

// describe encodes the first items as POST /recommendations shows each
// (recommendation), with the weights a page read from Redis shows. Each
// is encoded, after its stored prefix, straight into a shared chunk: the
// field Feeds.Put stores as it is. An item json.Marshal would refuse (a
// float that is not finite, which the scores never are) is stored with
// its prefix alone, as json.Marshal's error left it.
func describe(cat *active.Catalog, d *match.Describer, slots []Slot, items []cache.FeedItem) []cache.Described {
	out := make([]cache.Described, len(items))
	var chunk []byte
	records := schoolRecords(cat)
	for i, it := range items {
		idx := int(slots[i].Index)
		r, price := describedBare(cat, d, idx, it)
		record := records.of(idx)
		if record != nil {
			r.School.NetPrice = netPriceView(price)
		} else {
			r.School = schoolViewPriced(cat, idx, price)
		}
		id := cat.ID(idx).String()
		if cap(chunk)-len(chunk) < describeRoom {
			chunk = make([]byte, 0, describeChunk)
		}
		start := len(chunk)
		// An item larger than the room left grows the chunk into a new
		// array: the items before it keep the old one.
		chunk, _ = appendRecommendationWith(cache.AppendDescribedPrefix(chunk, id, it.Probe), &r, record)
		out[i] = cache.Described{SchoolID: id, Probe: it.Probe, Field: chunk[start:len(chunk):len(chunk)]}
	}
	return out
}

// CompactPage is a pre-encoded compact page with its ETag.
type CompactPage = cache.Compact
