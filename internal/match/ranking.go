package match

import "slices"

// Ranking is a student's ranking kept lean: each school's ranking score and
// distance, by catalogue index, and what works out the rest of a school's
// Scored when it is read. Its order is RankModel's (RankFactors' when made
// from the student's factors): the schools by score, best first, ties by
// index (Order).
//
// Feed assembly reads the score and the distance of every school but the
// components only of the schools it lists (a few hundred of thousands),
// and it orders the schools of each geographic band rather than the whole
// catalogue (FeedInput.Ranking): a rebuild from a Ranking writes and
// sorts no Scored. A Ranking is reused by the functions that make one; it
// is not safe for concurrent use while it is being made, and read-only
// after.
type Ranking struct {
	cat   *Catalog
	f     *Factors // the factors the scores were made from; nil: from the features
	kit   rankKit
	score []float64 // ranking score by catalogue index
	dist  []float32 // distance by catalogue index: the factors', in a column
}

// RankFactorsLean ranks f's catalogue for the student with the profile p
// (the one f was made for) and the model m, as RankFactors does, reusing
// dst's buffers (a new Ranking when dst is nil).
func RankFactorsLean(dst *Ranking, f *Factors, p Profile, m Model) *Ranking {
	r := dst.reset(f.cat, f, p, m)
	cat := f.cat
	n := cat.Len()
	school, score, dist := f.school[:n], r.score[:n], r.dist[:n]
	for i := range school {
		s, _, _, _, _ := r.kit.at(&school[i], cat, i)
		score[i], dist[i] = s, school[i].dist
	}
	return r
}

// RankModelLean is RankModel(nil, p, m, cat) made lean, into dst (a new
// Ranking when dst is nil): every school worked out from its features.
func RankModelLean(dst *Ranking, p Profile, m Model, cat *Catalog) *Ranking {
	return rankModelLean(dst.reset(cat, nil, p, m), nil)
}

// RankModelFactorsLean is RankModelLean that also works out the student's
// factors (NewFactors(p, cat)) in the same pass, as RankModelFactors does;
// the ranking then reads its Scored from them.
func RankModelFactorsLean(dst *Ranking, p Profile, m Model, cat *Catalog) (*Ranking, *Factors) {
	f := &Factors{cat: cat, school: make([]schoolFactors, cat.Len())}
	r := rankModelLean(dst.reset(cat, nil, p, m), f.school)
	r.f = f
	return r, f
}

// rankModelLean fills r from the features, keeping each school's factors
// in keep when it is not nil (len(keep) == cat.Len()).
func rankModelLean(r *Ranking, keep []schoolFactors) *Ranking {
	var b breakdown
	for i := range r.score {
		r.score[i] = r.kit.scoreModel(r.cat, i, &b)
		r.dist[i] = float32(b.distance) // at float32 precision already, or -1
		if keep != nil {
			keep[i] = b.factors()
		}
	}
	return r
}

// reset makes r (a new Ranking when r is nil) the ranking of the student p
// with the model m on cat, from f (nil: from the features), before its
// scores are worked out.
func (r *Ranking) reset(cat *Catalog, f *Factors, p Profile, m Model) *Ranking {
	if r == nil {
		r = new(Ranking)
	}
	r.cat, r.f = cat, f
	r.kit.init(p, m.orDefault(), cat)
	r.score = resized(r.score, cat.Len())
	r.dist = resized(r.dist, cat.Len())
	return r
}

// Len is the number of schools ranked: the catalogue's.
func (r *Ranking) Len() int { return len(r.score) }

// Scored is school i (a catalogue index) as the ranking lists it: its
// ranking score, the weights' components and its distance; from factors
// as RankFactors lists it (Confidence 0), else as RankModel does.
func (r *Ranking) Scored(i int) Scored {
	if r.f != nil {
		return r.kit.scored(&r.f.school[i], r.cat, i)
	}
	var b breakdown
	score := r.kit.scoreModel(r.cat, i, &b)
	s := b.scored(i)
	s.Score = score
	return s
}

// Order is the schools' catalogue indices best first, RankFactors' order,
// appended to dst[:0].
func (r *Ranking) Order(dst []int32) []int32 {
	dst = dst[:0]
	for i := range r.score {
		dst = append(dst, int32(i))
	}
	slices.SortFunc(dst, r.compare)
	return dst
}

// compare is the ranking order of schools i and j (catalogue indices):
// better's, score descending, then index ascending.
func (r *Ranking) compare(i, j int32) int {
	return better(Scored{Score: r.score[i], Index: i}, Scored{Score: r.score[j], Index: j})
}

// Factors are the factors the ranking reads (nil when it works schools
// out from their features).
func (r *Ranking) Factors() *Factors { return r.f }

// resized is s with length n, its array reused when large enough; the
// values are left as they are.
func resized[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// rankKit is what ranking from factors reads for every school: the
// student's scorer at the model's weights, the model's expected-fit tables
// and the residual's tables.
type rankKit struct {
	sc              scorer
	sizeTab, selTab [fitTable + 1]float64
	res             residualTables
	kSize, kSel     float64
}

// init makes k the kit of the student p with the model m (orDefault) on cat.
func (k *rankKit) init(p Profile, m Model, cat *Catalog) {
	k.sc = newScorer(p, m.Weights(), cat)
	k.sizeTab, k.selTab = expectedFits(&k.sc, m)
	k.res = newResidualTables(&m.rmean, k.sc.strength())
	k.kSize, k.kSel = k.sc.fw.Campus*k.sc.wSize, k.sc.fw.Academic*k.sc.wSel
}

// at is school i, whose factors are sf, as the ranking lists it: the score
// RankModel ranks by (the expected fits and the residual added) and the
// components as weigh (and so score) works them out. It returns values,
// not a Scored: a struct returned is copied through memory in the loop.
func (k *rankKit) at(sf *schoolFactors, cat *Catalog, i int) (score, academic, financial, campus, outcomes float64) {
	sc := &k.sc
	level, sz := cat.levels[i], cat.sizes[i]
	// As weigh computes them, written out: this is the loop every rebuild
	// runs over the whole catalogue.
	selFit := Neutral
	if level >= 0 {
		selFit = selectivityFit(float64(level), sc.target)
	}
	academic = sc.wSAT*unpack16(sf.sat) + sc.wSel*selFit + sc.wProg*unpack16(sf.prog)
	financial = sc.wAff*unpack16(sf.afford) + sc.wAid*unpack16(sf.aid) + sc.wVal*unpack16(sf.value)
	size := Neutral
	if sz >= 0 {
		size = sizeFit(float64(sz), sc.sizePref)
	}
	campus = sc.wLoc*unpack16(sf.loc) + sc.wSize*size + sc.wSet*unpack16(sf.setting)
	outcomes = float64(cat.feat[i].outcomes)
	fw := &sc.fw
	plain := clamp01(fw.Academic*academic + fw.Financial*financial + fw.Campus*campus + fw.Outcomes*outcomes)
	score = plain
	// As RankModel adjusts it.
	if sz >= 0 {
		score += k.kSize * (lookup(&k.sizeTab, float64(sz)) - size)
	}
	if level >= 0 {
		score += k.kSel * (lookup(&k.selTab, float64(level)) - selFit)
	}
	if k.res.on {
		// Field by field: a composite literal is built aside and copied.
		var in residualIn
		in.afford, in.aid, in.value = unpack16(sf.afford), unpack16(sf.aid), unpack16(sf.value)
		in.sat, in.prog, in.outcomes, in.score = unpack16(sf.sat), unpack16(sf.prog), outcomes, plain
		in.dist, in.level, in.size, in.setting = float64(sf.dist), float64(level), float64(sz), cat.feat[i].setting
		score += k.res.of(&in)
	}
	return clamp01(score), academic, financial, campus, outcomes
}

// scoreModel works school i out from its features into b (as score does)
// and returns the score RankModel ranks it by.
func (k *rankKit) scoreModel(cat *Catalog, i int, b *breakdown) float64 {
	f := &cat.feat[i]
	k.sc.score(f, i, b)
	s := b.score
	if f.hasSize {
		s += k.kSize * (lookup(&k.sizeTab, float64(f.sizeScale)) - b.size)
	}
	if f.selK > 0 {
		s += k.kSel * (lookup(&k.selTab, float64(f.selLevel)) - b.selFit)
	}
	if k.res.on {
		in := residualInOf(cat, i, b)
		s += k.res.of(&in)
	}
	return clamp01(s)
}

// scored is school i, whose factors are sf, as the ranking lists it
// (Confidence 0).
func (k *rankKit) scored(sf *schoolFactors, cat *Catalog, i int) Scored {
	s, a, f, c, o := k.at(sf, cat, i)
	return Scored{Score: s, Academic: a, Financial: f, Campus: c, Outcomes: o, Distance: float64(sf.dist), Index: int32(i)}
}
