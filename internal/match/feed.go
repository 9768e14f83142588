package match

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/collegematch/matching/internal/domain"
)

// Feed assembly: from a ranked catalogue to the list a student is served,
// with the rules of decisions.md ("Learning and the feed").
//
//   - Probes: the item at 1-based position p (p = offset + index + 1) is a
//     probe when swipes + p is a multiple of 4. A probe is a school just past
//     one of the student's learned boundaries: pricier than the budget (by
//     up to 15-60 %, less the more cost_weight has grown), more selective
//     than the learned selectivity target (by 0.1-0.35 in level), farther
//     than the max distance (up to 1.25-2x, less the more distance_weight
//     has grown), or another size than size_preference (0.3-0.6 away on the
//     size scale). Among the ProbePool best-ranked such schools of each kind,
//     the probe is the one a swipe would teach the model most about.
//   - Exploration: the phase's rate (30/20/10 %) of the non-probe slots are
//     exploration picks, never at position 1 of a page. A pick is the school,
//     among the next ExplorePool of its geographic band after the page's
//     ranked picks, that a swipe would teach the model most about
//     (Prediction.Information, uncertainty-guided). Each probe and pick
//     takes off the uncertainty its swipe would remove before the next is
//     chosen, so that one page asks about several things.
//   - Geographic mix, per page: 50 % near (within max_distance_miles), 30 %
//     beyond (1-2x that), 20 % discovery (farther, in a census region the
//     student has not swiped in yet). A band with nothing left falls back
//     to the next band (near, beyond, discovery, near, ...), and schools in
//     none of the bands (farther, in a region already swiped in) are used
//     when all three are empty. A student with no location has no mix.
//   - Order: the ranked (exploit) items of a page are in ranked order, best
//     first, in the page's non-probe, non-exploration slots; probes and
//     exploration picks sit at their positions. Whole pages are assembled,
//     so the list is the same whatever the offset and length asked for.
//
// Everything is deterministic: the same input, including the seed (see
// FeedSeed), gives the same feed.

// Defaults of FeedInput.
const (
	DefaultPageSize = 20
	// ExplorePool is how many of a band's next ranked schools an
	// exploration pick is chosen from.
	ExplorePool = 32
	// ProbePool is how many of the best-ranked schools past a boundary a
	// probe is chosen from.
	ProbePool = 8
)

// Geographic mix of a page: shares of the near, beyond and discovery bands.
var geoMix = [3]float64{0.5, 0.3, 0.2}

// GeoBand is a school's place in the geographic mix, relative to the student.
type GeoBand uint8

const (
	GeoNear      GeoBand = iota // within max_distance_miles
	GeoBeyond                   // within 1-2x max_distance_miles
	GeoDiscovery                // farther, in a census region the student has not swiped in
	GeoOther                    // farther, in a region already swiped in, or location unknown
	nGeoBands
)

// String is the band's name: near, beyond, discovery or other.
func (g GeoBand) String() string {
	switch g {
	case GeoNear:
		return "near"
	case GeoBeyond:
		return "beyond"
	case GeoDiscovery:
		return "discovery"
	}
	return "other"
}

// Probe kinds: which learned boundary a probe tests.
const (
	ProbePricier       = "pricier"
	ProbeMoreSelective = "more_selective"
	ProbeFarther       = "farther"
	ProbeOtherSize     = "other_size"
)

var probeKinds = [...]string{probePricier: ProbePricier, probeMoreSelective: ProbeMoreSelective,
	probeFarther: ProbeFarther, probeOtherSize: ProbeOtherSize}

// Positions of the probe kinds in probeKinds.
const (
	probePricier = iota
	probeMoreSelective
	probeFarther
	probeOtherSize
)

// ExplorationStrategy chooses how exploration slots are filled.
type ExplorationStrategy uint8

const (
	// ExploreUncertainty picks what the model would learn most from (the default).
	ExploreUncertainty ExplorationStrategy = iota
	// ExploreUniform picks uniformly at random from the same pool; it is
	// here to measure what uncertainty guidance is worth.
	ExploreUniform
)

// FeedInput is everything a feed is assembled from.
type FeedInput struct {
	Catalog *Catalog
	Profile Profile
	// Model is the student's learned model (the zero Model when none): its
	// weights set the probe boundaries, its uncertainty the exploration picks.
	Model Model
	// Ranked is every school, best first: RankModel(dst, Profile, Model,
	// Catalog), or Rank with Model.Weights(). Ranked items are taken in
	// this order.
	Ranked []Scored
	// Ranking is the ranking made lean from the student's factors
	// (RankFactorsLean), in place of Ranked: the feed is the one Ranked =
	// RankFactors gives, and Factors are the ranking's.
	Ranking *Ranking
	// Swipes is the student's count of counted swipes (phase, probe rule).
	Swipes int
	// Offset is the position before the first item returned: item i is at
	// position Offset+i+1. The list is the same whatever the offset, so
	// pages of any size tile it.
	Offset int
	// Length is how many items to return (default PageSize); fewer come
	// back only when the catalogue runs out.
	Length int
	// PageSize is the page the mix and the position-1 rule apply to
	// (default 20).
	PageSize int
	// Excluded marks, by catalogue index, schools that must not appear:
	// swiped ones and those cooling down (see Catalog.Mask). nil excludes
	// nothing.
	Excluded []bool
	// SwipedRegions are the census regions of the schools the student has
	// swiped (see RegionsOf).
	SwipedRegions []domain.Region
	// Seed makes the feed's choices; use FeedSeed(studentID, swipes).
	Seed uint64
	// Exploration is the exploration strategy (default ExploreUncertainty).
	Exploration ExplorationStrategy
	// Factors are the student's weight-free factors on Catalog (optional,
	// NewFactors(Profile, Catalog)): probes and exploration picks are then
	// weighed without scoring each candidate again. The feed is the same.
	Factors *Factors
}

// FeedItem is one school of a feed.
type FeedItem struct {
	Scored
	Position      int     // 1-based position in the whole list
	IsProbe       bool    // served as a probe (is_probe)
	IsExploration bool    // an exploration pick
	ProbeKind     string  // the boundary a probe tests; "" otherwise (or when no school was past any boundary)
	Geo           GeoBand // the school's geographic band
}

// FeedSeed is the seed of a student's feed: a hash of the student id and
// swipe count, so the same state gives the same feed and every swipe a new one.
func FeedSeed(studentID string, swipes int) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(studentID); i++ {
		h ^= uint64(studentID[i])
		h *= 1099511628211
	}
	return splitmix64(h ^ splitmix64(uint64(int64(swipes))))
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Mask returns a []bool by catalogue index, true for the schools whose ids
// are listed (unknown ids are ignored): FeedInput.Excluded from the ids of
// swiped and cooling-down schools.
func (c *Catalog) Mask(ids []string) []bool {
	m := make([]bool, c.Len())
	for _, id := range ids {
		if i, ok := c.Index(id); ok {
			m[i] = true
		}
	}
	return m
}

// RegionsOf lists, once each, the census regions of the schools at the
// given catalogue indices (out-of-range indices are ignored):
// FeedInput.SwipedRegions from the swiped schools.
func RegionsOf(cat *Catalog, indices []int) []domain.Region {
	var seen [4]bool
	var out []domain.Region
	for _, i := range indices {
		if i < 0 || i >= cat.Len() {
			continue
		}
		if r := regionIndex(schoolRegion(&cat.Schools[i])); r >= 0 && !seen[r] {
			seen[r] = true
			out = append(out, regionNames[r])
		}
	}
	return out
}

var regionNames = [4]domain.Region{domain.RegionNortheast, domain.RegionMidwest, domain.RegionSouth, domain.RegionWest}

func regionIndex(r domain.Region) int {
	switch r {
	case domain.RegionNortheast:
		return 0
	case domain.RegionMidwest:
		return 1
	case domain.RegionSouth:
		return 2
	case domain.RegionWest:
		return 3
	}
	return -1
}

// stateRegion is the census region index of each state of domain.States.
var stateRegion = func() []int8 {
	out := make([]int8, len(domain.States))
	for i, s := range domain.States {
		out[i] = int8(regionIndex(s.Region))
	}
	return out
}()

// region is the census region index of school i, -1 when unknown.
func (a *assembler) region(i int) int { return int(a.cat.region[i]) }

// schoolRegion is the school's census region, from its state when the
// record has none.
func schoolRegion(s *domain.School) domain.Region {
	if s.Region != "" {
		return s.Region
	}
	st, _ := domain.LookupState(s.State)
	return st.Region
}

// slot kinds
const (
	slotExploit uint8 = iota
	slotProbe
	slotExplore
)

type assembler struct {
	in      *FeedInput
	lean    *Ranking // in.Ranking: the ranking, when it is not in.Ranked
	cat     *Catalog
	m       Model
	w       Weights
	le      learnEval
	rng     *rand.Rand
	geo     bool // the mix applies (the student has a location)
	maxDist float64
	rate    float64
	acc     float64   // exploration accumulator over non-probe slots
	pattern []GeoBand // band of each slot of a page

	// Schools are named by catalogue index.
	bands  [nGeoBands][]int32 // schools by band, in ranked order
	cursor [nGeoBands]int     // first possibly unused entry of each band
	pmatch [len(probeKinds)][nGeoBands]probeMatches
	pbuf   []int32
	all    []int32  // the bands' array
	keys   []uint64 // the lean layout's sort buffer
	// A lean layout puts each band in exact order lazily, one bucket of
	// its keys at a time, as far as assembly reads it (see layoutLean):
	// bands[c][:ordered[c]] is in order; the rest is in buckets of
	// bucketed, at offset base[c].
	ordered   [nGeoBands]int
	base      [nGeoBands]int
	bucketed  []uint64 // keys grouped by bucket, the buckets in ranked order
	bucketEnd []int32  // end of each bucket in bucketed, by bucket
	pkeys     []uint64 // a probe scan's buffer
	listAt    []uint8  // the layout's buffer
	used      []bool   // by school
	bandOf    []GeoBand
	rank      []int32 // position in Ranked by school (not with a lean ranking)

	// probe boundaries
	budget, priceHi float64
	selLo, selHi    float64
	distHi          float64
	sizeLo, sizeHi  float64

	// exploration
	cov     [nParams][nParams]float64 // covariance after the picks made so far
	version int                       // bumped by every pick; starts at 1
	candAt  []int32                   // by school: 1 + index in cand, 0 when not computed
	entries []int32                   // buffer of probe and explore: indices in cand
	cand    []exploreCand
	slope   [nWeights]float64 // Model.featureSlopes
	res     *residualTables   // the model's residual as the ranking tabulates it

	// buffers of page
	kinds  []uint8
	items  []FeedItem
	filled []bool
	picks  []int32
}

// probeMatches are the schools of one band found past one boundary so far.
type probeMatches struct {
	found   []int32 // schools, in ranked order
	head    int     // found[:head] are all used
	scanned int     // how much of the band has been tested
}

type exploreCand struct {
	x     [nParams]float64
	z     float64
	u     float64 // seeded jitter in [0,1)
	value float64 // value under the covariance of version stamp
	stamp int     // 0: not computed yet
}

// AssembleFeed assembles a student's feed (see the rules at the top of this
// file). It returns Length items from position Offset+1, fewer only when no
// school is left.
func AssembleFeed(in FeedInput) []FeedItem { return AssembleFeedTo(nil, in) }

// AssembleFeedTo is AssembleFeed reusing dst's array when it is large
// enough (whole pages to the end of the items asked for).
func AssembleFeedTo(dst []FeedItem, in FeedInput) []FeedItem {
	cat := in.Catalog
	if in.Ranking != nil {
		in.Ranked, in.Factors = nil, in.Ranking.f
	}
	if cat == nil || len(in.Ranked) == 0 && (in.Ranking == nil || in.Ranking.Len() == 0) {
		return []FeedItem{}
	}
	page := in.PageSize
	if page <= 0 {
		page = DefaultPageSize
	}
	length := in.Length
	if length <= 0 {
		length = page
	}
	offset := max(0, in.Offset)
	total := offset + length
	a := newAssembler(&in, page)
	defer a.release()
	// Whole pages are assembled, so that a list cut at any length is a
	// prefix of a longer one.
	out := dst[:0]
	if n := (total + page - 1) / page * page; cap(out) < n {
		out = make([]FeedItem, 0, n)
	}
	for start := 0; start < total; start += page {
		if !a.page(start, page, &out) {
			break
		}
	}
	if len(out) <= offset {
		return []FeedItem{}
	}
	return out[offset:min(len(out), total)]
}

func newAssembler(in *FeedInput, page int) *assembler {
	cat := in.Catalog
	m := in.Model.orDefault()
	w := m.Weights()
	// The buffers of an assembler released before, cleared.
	old := assemblers.Get().(*assembler)
	a := &assembler{
		in: in, lean: in.Ranking, cat: cat, m: m, w: w,
		le:      newLearnEval(in.Profile, w, cat),
		rng:     rand.New(rand.NewPCG(in.Seed, in.Seed^0x6a09e667f3bcc909)),
		maxDist: in.Profile.MaxDistanceMiles,
		rate:    PhaseFor(in.Swipes).ExplorationRate(),
		used:    cleared(old.used, cat.Len()),
		bandOf:  cleared(old.bandOf, cat.Len()),
		cov:     m.cov,
		version: 1,
		candAt:  cleared(old.candAt, cat.Len()),
		cand:    old.cand[:0],
		all:     old.all, keys: old.keys, listAt: old.listAt, rank: old.rank,
		bucketEnd: old.bucketEnd, pkeys: old.pkeys,
		pbuf:    old.pbuf[:0],
		entries: old.entries[:0],
		kinds:   old.kinds, items: old.items, filled: old.filled, picks: old.picks,
	}
	for k := range a.pmatch {
		for c := range a.pmatch[k] {
			a.pmatch[k][c].found = old.pmatch[k][c].found[:0]
		}
	}
	if a.cand == nil {
		a.cand = make([]exploreCand, 0, 256)
	}
	a.slope = m.featureSlopes()
	if in.Ranking != nil {
		a.res = &in.Ranking.kit.res
	} else {
		t := newResidualTables(&m.rmean, a.le.sc.strength())
		a.res = &t
	}
	if !(a.maxDist > 0) || math.IsInf(a.maxDist, 0) {
		a.maxDist = domain.DefaultMaxDistanceMiles
	}
	a.acc = a.rng.Float64()
	a.geo = a.le.sc.hasHome
	a.pattern = geoPattern(page)
	if !a.geo {
		for k := range a.pattern {
			a.pattern[k] = GeoNear // no mix: one list
		}
	}

	a.layout()

	// Probe boundaries, from the learned weights and the profile.
	sc := &a.le.sc
	a.budget = max(sc.budget, 500)
	a.priceHi = a.budget * (1 + 0.15 + 0.45*(1-w.CostWeight))
	a.selLo, a.selHi = sc.target+0.1, sc.target+0.35
	a.distHi = a.maxDist * (1.25 + 0.75*(1-w.DistanceWeight))
	a.sizeLo, a.sizeHi = 0.3, 0.6
	return a
}

// Marks of bandOf while the layout classifies the schools.
const (
	unseen          = nGeoBands     // eligible, not classified yet
	unseenDiscovery = nGeoBands + 1 // the same, in a region not swiped in
	excluded        = nGeoBands + 2 // never listed
)

// layout classifies every eligible school (bandOf) and lays the bands out
// in one array, each in ranked order.
func (a *assembler) layout() {
	var swiped [4]bool
	for _, r := range a.in.SwipedRegions {
		if i := regionIndex(r); i >= 0 {
			swiped[i] = true
		}
	}
	if a.lean != nil {
		a.layoutLean(&swiped)
	} else {
		a.layoutRanked(&swiped)
	}
}

// band is the band of an eligible school at distance d; discovery
// reports whether it is in a region the student has not swiped in.
func (a *assembler) band(d float64, discovery bool) GeoBand {
	switch {
	case d >= 0 && d <= a.maxDist:
		return GeoNear
	case d >= 0 && d <= 2*a.maxDist:
		return GeoBeyond
	case discovery:
		return GeoDiscovery
	}
	return GeoOther
}

// layoutRanked lays the bands out from in.Ranked: one pass down the
// ranking.
func (a *assembler) layoutRanked(swiped *[4]bool) {
	ranked, bandOf := a.in.Ranked, a.bandOf
	// What does not depend on the rank (excluded, in a region the student
	// has not swiped in) is marked in catalogue order first, so the ranked
	// pass reads one byte per school.
	for i := range bandOf {
		bandOf[i] = unseen
		if r := a.region(i); r >= 0 && !swiped[r] {
			bandOf[i] = unseenDiscovery
		}
	}
	for i, x := range a.in.Excluded[:min(len(a.in.Excluded), len(bandOf))] {
		if x {
			bandOf[i] = excluded
		}
	}
	var count [nGeoBands]int
	listAt := cleared(a.listAt, len(ranked)) // list of each position + 1; 0: not listed
	a.listAt = listAt
	a.rank = resized(a.rank, len(bandOf))
	for pos := range ranked {
		i := int(ranked[pos].Index)
		if uint(i) >= uint(len(bandOf)) {
			continue
		}
		mark := bandOf[i]
		if mark != unseen && mark != unseenDiscovery {
			continue // excluded, or a duplicate in Ranked (listed once)
		}
		b := a.band(ranked[pos].Distance, mark == unseenDiscovery)
		bandOf[i], a.rank[i] = b, int32(pos)
		l := a.listOf(b)
		listAt[pos] = uint8(l) + 1
		count[l]++
	}
	all := a.lists(&count)
	var at [nGeoBands]int // where each band's next school goes in all
	for b := 1; b < int(nGeoBands); b++ {
		at[b] = at[b-1] + count[b-1]
	}
	for pos, l := range listAt {
		if l != 0 {
			all[at[l-1]] = ranked[pos].Index
			at[l-1]++
		}
	}
}

// lists makes the bands' array for count schools of each band and points
// the bands into it.
func (a *assembler) lists(count *[nGeoBands]int) []int32 {
	total := count[0] + count[1] + count[2] + count[3]
	all := resized(a.all, total)
	a.all = all
	at := 0
	for b := range a.bands {
		a.bands[b] = all[at : at+count[b] : at+count[b]]
		a.base[b], a.ordered[b] = at, count[b]
		at += count[b]
	}
	return all
}

// layoutLean lays the bands out from a lean ranking: every eligible
// school gets a key (its band above its quantised score, then its
// index), and the keys are grouped by their top digit in one pass
// (bucketed), which leaves each band as a run of buckets in ranked order.
// A bucket is put in exact order only when assembly reads into it
// (order): the feed reads the top of each band, and the probe scans,
// which test a band to its end, test each bucket unordered and order only
// the schools they find (scanBucket).
func (a *assembler) layoutLean(swiped *[4]bool) {
	r, bandOf := a.lean, a.bandOf
	n := len(bandOf)
	a.keys = resized(a.keys, 2*n)
	keys := a.keys[:0]
	var count [nGeoBands]int
	a.bucketEnd = cleared(a.bucketEnd, layoutBuckets)
	ends := a.bucketEnd[:layoutBuckets]
	ex := a.in.Excluded[:min(len(a.in.Excluded), n)]
	region, dist, score := a.cat.region[:n], r.dist[:n], r.score[:n]
	for i := range bandOf {
		if i < len(ex) && ex[i] {
			bandOf[i] = excluded
			continue
		}
		reg := region[i]
		b := a.band(float64(dist[i]), reg >= 0 && !swiped[reg])
		bandOf[i] = b
		l := a.listOf(b)
		count[l]++
		k := uint32(l)<<(2*radixBits) | sortKey(score[i])
		keys = append(keys, uint64(k)<<32|uint64(i))
		ends[k>>layoutShift]++
	}
	a.lists(&count)
	pos := int32(0)
	for j := range ends {
		ends[j], pos = pos, pos+ends[j]
	}
	bucketed := a.keys[n : n+len(keys)]
	for _, k := range keys {
		j := k >> (32 + layoutShift)
		bucketed[ends[j]] = k
		ends[j]++
	}
	a.bucketed = bucketed
	a.ordered = [nGeoBands]int{}
}

// The lean layout's buckets: the top 12 of the keys' 24 bits (the band
// and the score's top 10).
const (
	layoutShift   = radixBits + 1
	layoutBuckets = 1 << (2*radixBits + 2 - layoutShift)
)

// at is school j of band c's list in ranked order (j < len(a.bands[c])).
func (a *assembler) at(c GeoBand, j int) int32 {
	if j >= a.ordered[c] {
		a.order(c, j)
	}
	return a.bands[c][j]
}

// order puts band c's list in exact order up to position j, a bucket at
// a time.
func (a *assembler) order(c GeoBand, j int) {
	base := a.base[c]
	for a.ordered[c] <= j {
		start := base + a.ordered[c]
		end := int(a.bucketEnd[a.bucketed[start]>>(32+layoutShift)])
		keys := a.bucketed[start:end]
		a.sortKeys(keys)
		for x, k := range keys {
			a.all[start+x] = int32(uint32(k))
		}
		a.ordered[c] = end - base
	}
}

// sortKeys sorts a bucket's keys (or some of them) into exact ranked
// order: by key, then, for equal quantised scores, by the exact order
// (Ranking.compare).
func (a *assembler) sortKeys(keys []uint64) {
	less := func(x, y uint64) bool {
		if x>>32 != y>>32 {
			return x>>32 < y>>32
		}
		return a.lean.compare(int32(uint32(x)), int32(uint32(y))) < 0
	}
	if len(keys) <= 16 {
		for i := 1; i < len(keys); i++ {
			for j := i; j > 0 && less(keys[j], keys[j-1]); j-- {
				keys[j], keys[j-1] = keys[j-1], keys[j]
			}
		}
		return
	}
	slices.SortFunc(keys, func(x, y uint64) int {
		if less(x, y) {
			return -1
		}
		if less(y, x) {
			return 1
		}
		return 0
	})
}

// assemblers keeps released assemblers (*assembler) for their buffers.
var assemblers = sync.Pool{New: func() any { return new(assembler) }}

// release gives the assembler's buffers back for the next feed; a is not
// used after.
func (a *assembler) release() {
	a.in, a.lean, a.cat, a.le, a.res = nil, nil, nil, learnEval{}, nil
	assemblers.Put(a)
}

// cleared is s resized to n zero values, reusing its array when it is
// large enough.
func cleared[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// listOf is the list a school of band b is kept in: its band, or the one
// list when the mix does not apply.
func (a *assembler) listOf(b GeoBand) GeoBand {
	if !a.geo {
		return GeoNear
	}
	return b
}

// geoPattern is the band of each slot of a page of n slots: the bands in
// the proportions of geoMix, interleaved (largest remaining deficit first),
// position 1 near.
func geoPattern(n int) []GeoBand {
	out := make([]GeoBand, n)
	var got [3]int
	for k := range out {
		best, bestDef := 0, math.Inf(-1)
		for b := range 3 {
			if def := geoMix[b]*float64(k+1) - float64(got[b]); def > bestDef+1e-9 {
				best, bestDef = b, def
			}
		}
		got[best]++
		out[k] = GeoBand(best)
	}
	return out
}

// chain is the order bands are tried in for a slot of band b.
func chain(b GeoBand) [nGeoBands]GeoBand {
	if b >= GeoOther {
		return [nGeoBands]GeoBand{GeoOther, GeoNear, GeoBeyond, GeoDiscovery}
	}
	return [nGeoBands]GeoBand{b, (b + 1) % 3, (b + 2) % 3, GeoOther}
}

// page fills the slots of one page, positions start+1..start+n, appending
// them to out. It reports false when the catalogue ran out.
func (a *assembler) page(start, n int, out *[]FeedItem) bool {
	pattern := a.pattern
	if cap(a.kinds) < n {
		a.kinds, a.items, a.filled = make([]uint8, n), make([]FeedItem, n), make([]bool, n)
	}
	kinds, items, filled := a.kinds[:n], a.items[:n], a.filled[:n]
	clear(kinds)
	clear(items)
	clear(filled)
	swipes := max(0, a.in.Swipes)
	for k := range n {
		p := start + k + 1
		switch {
		case (swipes+p)%4 == 0:
			kinds[k] = slotProbe
		default:
			a.acc += a.rate
			if a.acc >= 1 && k != 0 {
				kinds[k] = slotExplore
				a.acc--
			}
		}
	}
	// Ranked picks of the page, band by band, then put in ranked order.
	exploit := a.picks[:0]
	for k := range n {
		if kinds[k] == slotExploit {
			if i, ok := a.next(pattern[k]); ok {
				a.used[i] = true
				exploit = append(exploit, i)
			}
		}
	}
	a.sortRanked(exploit)
	a.picks = exploit
	e := 0
	for k := range n {
		if kinds[k] == slotExploit && e < len(exploit) {
			items[k], filled[k] = a.item(exploit[e]), true
			e++
		}
	}
	// Probes.
	for k := range n {
		if kinds[k] != slotProbe {
			continue
		}
		p := start + k + 1
		pos, kind, ok := a.probe(pattern[k], (swipes+p)/4)
		if !ok {
			pos, ok = a.next(pattern[k])
		}
		if ok {
			items[k], filled[k] = a.item(pos), true
			items[k].IsProbe, items[k].ProbeKind = true, kind
		}
	}
	// Exploration picks.
	for k := range n {
		if kinds[k] != slotExplore {
			continue
		}
		pos, ok := a.explore(pattern[k])
		if !ok {
			pos, ok = a.next(pattern[k])
		}
		if ok {
			items[k], filled[k] = a.item(pos), true
			items[k].IsExploration = true
		}
	}
	complete := true
	for k := range n {
		if !filled[k] {
			complete = false // the catalogue ran out
			continue
		}
		items[k].Position = len(*out) + 1
		*out = append(*out, items[k])
	}
	return complete
}

// item takes school i.
func (a *assembler) item(i int32) FeedItem {
	var s Scored
	if a.lean != nil {
		s = a.lean.Scored(int(i))
	} else {
		s = a.in.Ranked[a.rank[i]]
	}
	a.used[i] = true
	return FeedItem{Scored: s, Geo: a.bandOf[i]}
}

// distance is school i's distance as the ranking lists it.
func (a *assembler) distance(i int32) float64 {
	if a.lean != nil {
		return float64(a.lean.dist[i])
	}
	return a.in.Ranked[a.rank[i]].Distance
}

// next is the best-ranked unused school of band b, falling back along the
// band chain.
func (a *assembler) next(b GeoBand) (int32, bool) {
	for _, c := range chain(b) {
		for ; a.cursor[c] < len(a.bands[c]); a.cursor[c]++ {
			if i := a.at(c, a.cursor[c]); !a.used[i] {
				return i, true
			}
		}
	}
	return 0, false
}

// probe is the best-ranked unused school past one of the learned
// boundaries, preferring band b and, within a band, the kind whose turn it
// is (ordinal).
func (a *assembler) probe(b GeoBand, ordinal int) (int32, string, bool) {
	for _, c := range chain(b) {
		var pos [len(probeKinds) * ProbePool]int32
		var kinds [len(probeKinds) * ProbePool]uint8
		entries := a.entries[:0]
		for t := range probeKinds {
			kind := (ordinal + t) % len(probeKinds)
			for _, p := range a.pastBoundaryIn(kind, c, ProbePool) {
				pos[len(entries)], kinds[len(entries)] = p, uint8(kind)
				entries = append(entries, a.candIndex(p))
			}
		}
		a.entries = entries
		if k := a.best(entries); k >= 0 {
			a.observeVirtually(&a.cand[entries[k]])
			return pos[k], probeKinds[kinds[k]], true
		}
	}
	return 0, "", false
}

// pastBoundaryIn lists (in a reused buffer) the first n unused schools of
// band c past the boundary of the given kind, best-ranked first. Each
// school is tested against each kind at most once per feed.
func (a *assembler) pastBoundaryIn(kind int, c GeoBand, n int) []int32 {
	pm := &a.pmatch[kind][c]
	list, used := a.bands[c], a.used
	found, scanned := pm.found, pm.scanned
	if scanned == 0 && a.noneFarther(kind, c) {
		scanned = len(list) // what testing each school would find: none
	}
	out := a.pbuf[:0]
	// The used schools met on the way are dropped: the unused ones before j
	// are moved up to just before j, in order, and head passes the rest.
	j := pm.head
	for ; len(out) < n; j++ {
		for j == len(found) && scanned < len(list) {
			if scanned < a.ordered[c] {
				i := list[scanned]
				scanned++
				if a.pastBoundary(kind, int(i), a.distance(i)) {
					found = append(found, i)
				}
				continue
			}
			found, scanned = a.scanBucket(kind, c, found, scanned)
		}
		if j == len(found) {
			break
		}
		if !used[found[j]] {
			out = append(out, found[j])
		}
	}
	pm.head = j - len(out)
	copy(found[pm.head:j], out)
	pm.found, pm.scanned = found, scanned
	a.pbuf = out
	return out
}

// scanBucket tests the bucket of band c's list that starts at position
// scanned (not yet in order) against the boundary of the given kind,
// appends the schools past it to found in ranked order, and returns
// found and the position after the bucket.
func (a *assembler) scanBucket(kind int, c GeoBand, found []int32, scanned int) ([]int32, int) {
	start := a.base[c] + scanned
	end := int(a.bucketEnd[a.bucketed[start]>>(32+layoutShift)])
	past := a.pkeys[:0]
	for _, k := range a.bucketed[start:end] {
		if i := int32(uint32(k)); a.pastBoundary(kind, int(i), a.distance(i)) {
			past = append(past, k)
		}
	}
	a.sortKeys(past)
	for _, k := range past {
		found = append(found, int32(uint32(k)))
	}
	a.pkeys = past
	return found, end - a.base[c]
}

// noneFarther reports whether no school of band c can be past the distance
// boundary when kind is that boundary: with the mix, a near school is
// within the max distance, and one farther than twice it or at an unknown
// distance is beyond distHi when distHi is at most twice the max distance.
func (a *assembler) noneFarther(kind int, c GeoBand) bool {
	if kind != probeFarther || !a.geo {
		return false
	}
	return c == GeoNear || c != GeoBeyond && a.distHi <= 2*a.maxDist
}

// pastBoundary reports whether school i, at distance dist, is just past
// the learned boundary of the given kind.
func (a *assembler) pastBoundary(kind, i int, dist float64) bool {
	sc := &a.le.sc
	switch kind {
	case probePricier:
		price, src := float64(sc.price[i]), sc.priceSrc[i]
		if src == srcTuition {
			price, src = sc.tuition(&a.cat.feat[i])
		}
		return src != srcNone && price > a.budget && price <= a.priceHi
	case probeMoreSelective:
		// levels[i] is -1 without a level; selLo > 0.
		l := float64(a.cat.levels[i])
		return l > a.selLo && l <= a.selHi
	case probeFarther:
		return dist > a.maxDist && dist <= a.distHi
	case probeOtherSize:
		// sizes[i] is -1 without a size: |-1 - pref| > sizeHi.
		d := math.Abs(float64(a.cat.sizes[i]) - sc.sizePref)
		return d >= a.sizeLo && d <= a.sizeHi
	}
	return false
}

// explore picks the exploration school for a slot of band b: among the
// next ExplorePool unused schools of the band, the one a swipe would teach
// the model most about (or a uniform pick with ExploreUniform).
func (a *assembler) explore(b GeoBand) (int32, bool) {
	for _, c := range chain(b) {
		list := a.bands[c]
		for a.cursor[c] < len(list) && a.used[a.at(c, a.cursor[c])] {
			a.cursor[c]++
		}
		var pool [ExplorePool]int32
		n := 0
		for j := a.cursor[c]; j < len(list) && n < ExplorePool; j++ {
			if i := a.at(c, j); !a.used[i] {
				pool[n] = i
				n++
			}
		}
		if n == 0 {
			continue
		}
		if a.in.Exploration == ExploreUniform {
			return pool[a.rng.IntN(n)], true
		}
		entries := a.entries[:0]
		for _, pos := range pool[:n] {
			entries = append(entries, a.candIndex(pos))
		}
		a.entries = entries
		k := a.best(entries)
		if k < 0 {
			continue
		}
		a.observeVirtually(&a.cand[entries[k]])
		return pool[k], true
	}
	return 0, false
}

// candidate is the linearised model at school i, computed once.
func (a *assembler) candidate(i int32) *exploreCand { return &a.cand[a.candIndex(i)] }

// candIndex is candidate's index in a.cand (a pointer into a.cand does not
// outlive the next candidate computed).
func (a *assembler) candIndex(school int32) int32 {
	if k := a.candAt[school]; k > 0 {
		return k - 1
	}
	i := int(school)
	var b breakdown
	var s float64
	var g [nWeights]float64
	if f := a.in.Factors; f != nil && f.cat == a.cat {
		f.breakdown(&a.le.sc, i, &b)
		s, g = a.le.gradient(i, &b)
	} else {
		s, g = a.le.eval(i, &b)
	}
	if a.m.nhist > 0 {
		// The residual as the ranking adds it (tabulated): the picks are
		// valued on the ranking's own scores, without the exact curves'
		// exponentials.
		in := residualInOf(a.cat, i, &b)
		s += a.res.of(&in)
	}
	x, z, ok := a.m.featuresWith(&a.slope, s, g)
	c := exploreCand{u: float64(splitmix64(a.in.Seed^uint64(i))>>11) / (1 << 53)}
	if ok {
		c.x, c.z = x, z
	}
	a.cand = append(a.cand, c)
	a.candAt[school] = int32(len(a.cand))
	return int32(len(a.cand) - 1)
}

// best is the entry of entries (indices in a.cand) whose candidate has the
// highest value, the first of equal ones, or -1 when there are none: what
// going through the entries in order and keeping the best value finds.
// Candidates never valued, or valued since the last pick, are valued
// first. A value computed before the last pick bounds the candidate's
// value now (see value), so such a candidate is valued again only when its
// bound reaches the best value found, highest bound first.
func (a *assembler) best(entries []int32) int {
	// entries are a probe list (every kind's pool) or an exploration pool.
	const most = max(len(probeKinds)*ProbePool, ExplorePool)
	var valued [most]bool
	var stale [most]uint8
	ns := 0
	bestV := math.Inf(-1)
	for k, ci := range entries {
		c := &a.cand[ci]
		if c.stamp != 0 && c.stamp != a.version {
			stale[ns] = uint8(k)
			ns++
			continue
		}
		valued[k] = true
		if v := a.value(c); v > bestV {
			bestV = v
		}
	}
	var bound [most]float64
	for j, k := range stale[:ns] {
		bound[j] = a.cand[entries[k]].value
	}
	for ns > 0 {
		// Drop the candidates whose bound is under the best value, and
		// value the one with the highest bound.
		next, m := -1, 0
		for j := range ns {
			if bound[j] < bestV {
				continue
			}
			stale[m], bound[m] = stale[j], bound[j]
			if next < 0 || bound[m] > bound[next] {
				next = m
			}
			m++
		}
		if next < 0 {
			break
		}
		k := stale[next]
		valued[k] = true
		if v := a.value(&a.cand[entries[k]]); v > bestV {
			bestV = v
		}
		m--
		stale[next], bound[next] = stale[m], bound[m]
		ns = m
	}
	for k := range entries {
		if valued[k] && a.cand[entries[k]].value == bestV {
			return k
		}
	}
	return -1
}

// value is candidate c's value: p(1-p)*v, a monotone function of its
// Prediction.Information, under the covariance left by the picks so far,
// with a little seeded jitter so that near-ties do not go the same way for
// every student. A pick only takes variance away, so a value never rises:
// a value computed earlier is an upper bound (best relies on it).
func (a *assembler) value(c *exploreCand) float64 {
	if c.stamp != a.version {
		like, _, vw := moments(&c.x, c.z, &a.cov)
		c.value = like * (1 - like) * vw * (1 + 0.1*c.u) // monotone in Information
		c.stamp = a.version
	}
	return c.value
}

// observeVirtually takes off the variance a swipe on the candidate would
// remove, whatever its direction (the variance update of Model.update does
// not depend on the outcome), so the next pick looks elsewhere.
func (a *assembler) observeVirtually(c *exploreCand) {
	var u [nParams]float64 // cov x, unrolled over the columns (nParams is 9)
	x := &c.x
	for i := range nParams {
		r := &a.cov[i]
		u[i] = r[0]*x[0] + r[1]*x[1] + r[2]*x[2] + r[3]*x[3] + r[4]*x[4] + r[5]*x[5] + r[6]*x[6] + r[7]*x[7] + r[8]*x[8]
	}
	like, v, _ := moments(&c.x, c.z, &a.cov)
	w := like * (1 - like)
	shrink := w / (1 + v*w)
	for i := range nParams {
		r, ui := &a.cov[i], u[i]
		r[0] -= ui * u[0] * shrink
		r[1] -= ui * u[1] * shrink
		r[2] -= ui * u[2] * shrink
		r[3] -= ui * u[3] * shrink
		r[4] -= ui * u[4] * shrink
		r[5] -= ui * u[5] * shrink
		r[6] -= ui * u[6] * shrink
		r[7] -= ui * u[7] * shrink
		r[8] -= ui * u[8] * shrink
	}
	a.version++
}

// sortRanked sorts schools into ranked order.
func (a *assembler) sortRanked(s []int32) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && a.before(s[j], s[j-1]); j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// before reports whether school i comes before school j in the ranking.
func (a *assembler) before(i, j int32) bool {
	if a.lean != nil {
		return a.lean.compare(i, j) < 0
	}
	return a.rank[i] < a.rank[j]
}
