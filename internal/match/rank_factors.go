package match

import "unsafe"

// Factors are, for one student's profile on one catalogue, the factors of
// every school's score that the preference weights do not move: SAT match,
// program strength, affordability, aid, value, location and setting fit,
// and the distance. Between two rebuilds of a student's feed only the
// learned weights change, so a rebuild that has them scores a school with
// a few multiply-adds (RankFactors) instead of working each factor out
// again. The two factors the weights aim (selectivity and size fit) are
// not kept.
//
// Factors are immutable once made and safe to share.
type Factors struct {
	cat    *Catalog
	school []schoolFactors // by catalogue index
}

// schoolFactors are one school's weight-free factors, with the school's
// values the weighted factors and the outcomes read (so a pass over the
// factors reads one record per school, in order).
type schoolFactors struct {
	sat, prog, afford, aid, value, loc, setting, dist float64
	outcomes                                          float32
	level, size                                       float32 // -1 when unknown (Catalog.levels, sizes)
}

// FactorBytesPerSchool is the memory Factors hold per school of their
// catalogue.
const FactorBytesPerSchool = int(unsafe.Sizeof(schoolFactors{}))

// NewFactors works out the weight-free factors of every school of cat for
// the profile p: the cost of one ranking pass.
func NewFactors(p Profile, cat *Catalog) *Factors {
	n := cat.Len()
	f := &Factors{cat: cat, school: make([]schoolFactors, n)}
	// The factors kept do not depend on the weights (score reads the
	// weights only for the selectivity target, the size preference and the
	// sums).
	sc := newScorer(p, DefaultWeights(), cat)
	var b breakdown
	for i := range n {
		sc.score(&cat.feat[i], i, &b)
		f.school[i] = b.factors(cat, i)
	}
	return f
}

// factors are the weight-free factors of school i of cat, b its breakdown.
func (b *breakdown) factors(cat *Catalog, i int) schoolFactors {
	return schoolFactors{sat: b.satMatch, prog: b.program, afford: b.afford, aid: b.aid, value: b.value,
		loc: b.loc, setting: b.setting, dist: b.distance,
		outcomes: cat.feat[i].outcomes, level: cat.levels[i], size: cat.sizes[i]}
}

// Catalog is the catalogue the factors were worked out on.
func (f *Factors) Catalog() *Catalog { return f.cat }

// Bytes is the memory the factors hold.
func (f *Factors) Bytes() int { return FactorBytesPerSchool * len(f.school) }

// weigh fills b's components and score for a school whose factors are sf,
// exactly as sc.score does; sc is the student's scorer with the weights at
// hand.
func (sf *schoolFactors) weigh(sc *scorer, b *breakdown) {
	b.satMatch, b.program = sf.sat, sf.prog
	b.selFit = Neutral
	if sf.level >= 0 { // selK > 0
		b.selFit = selectivityFit(float64(sf.level), sc.target)
	}
	b.academic = sc.wSAT*b.satMatch + sc.wSel*b.selFit + sc.wProg*b.program
	b.afford, b.aid, b.value = sf.afford, sf.aid, sf.value
	b.financial = sc.wAff*b.afford + sc.wAid*b.aid + sc.wVal*b.value
	b.loc, b.setting, b.distance = sf.loc, sf.setting, sf.dist
	b.size = Neutral
	if sf.size >= 0 { // hasSize
		b.size = sizeFit(float64(sf.size), sc.sizePref)
	}
	b.campus = sc.wLoc*b.loc + sc.wSize*b.size + sc.wSet*b.setting
	b.outcomes = float64(sf.outcomes)
	fw := &sc.fw
	b.score = clamp01(fw.Academic*b.academic + fw.Financial*b.financial + fw.Campus*b.campus + fw.Outcomes*b.outcomes)
}

// breakdown fills what feed assembly reads of b for school i (the
// components, the score and the factors the gradient in the weights
// reads), exactly as sc.score does.
func (f *Factors) breakdown(sc *scorer, i int, b *breakdown) { f.school[i].weigh(sc, b) }

// ScoreFactors is ScoreAll from the student's factors: dst[k] is Score(p,
// w, f.Catalog(), idx[k]) but for Confidence, left 0. dst is reused when it
// is large enough.
func ScoreFactors(dst []Scored, f *Factors, p Profile, w Weights, idx []int32) []Scored {
	if cap(dst) < len(idx) {
		dst = make([]Scored, len(idx))
	}
	dst = dst[:len(idx)]
	if len(idx) == 0 {
		return dst
	}
	sc := newScorer(p, w, f.cat)
	var b breakdown
	for k, i := range idx {
		f.breakdown(&sc, int(i), &b)
		dst[k] = Scored{Score: b.score, Academic: b.academic, Financial: b.financial, Campus: b.campus,
			Outcomes: b.outcomes, Distance: b.distance, Index: i}
	}
	return dst
}

// RankFactors is RankModel(dst, p, m, f.Catalog()) from the student's
// factors (NewFactors(p, f.Catalog())): the same ranking, the same scores
// and components, bit for bit, except that Confidence is left 0 (a feed
// does not show it; Score and Detail give it). p must be the profile the
// factors were made for.
func RankFactors(dst []Scored, f *Factors, p Profile, m Model) []Scored {
	cat := f.cat
	m = m.orDefault()
	n := cat.Len()
	if cap(dst) < 2*n {
		dst = make([]Scored, 2*n)
	}
	out, tmp := dst[:n], dst[n:2*n]
	if n == 0 {
		return out
	}
	sc := newScorer(p, m.Weights(), cat)
	sizeTab, selTab := expectedFits(&sc, m)
	kSize, kSel := sc.fw.Campus*sc.wSize, sc.fw.Academic*sc.wSel
	fw := sc.fw
	school := f.school[:len(tmp)]
	for i := range school {
		sf := &school[i]
		// As weigh (and so score) computes them, written out here: this
		// is the loop every rebuild runs over the whole catalogue.
		selFit := Neutral
		if sf.level >= 0 {
			selFit = selectivityFit(float64(sf.level), sc.target)
		}
		academic := sc.wSAT*sf.sat + sc.wSel*selFit + sc.wProg*sf.prog
		financial := sc.wAff*sf.afford + sc.wAid*sf.aid + sc.wVal*sf.value
		size := Neutral
		if sf.size >= 0 {
			size = sizeFit(float64(sf.size), sc.sizePref)
		}
		campus := sc.wLoc*sf.loc + sc.wSize*size + sc.wSet*sf.setting
		outcomes := float64(sf.outcomes)
		s := Scored{
			Score:    clamp01(fw.Academic*academic + fw.Financial*financial + fw.Campus*campus + fw.Outcomes*outcomes),
			Academic: academic, Financial: financial, Campus: campus, Outcomes: outcomes,
			Distance: sf.dist, Index: int32(i),
		}
		// As RankModel adjusts it.
		if sf.size >= 0 {
			s.Score += kSize * (lookup(&sizeTab, float64(sf.size)) - size)
		}
		if sf.level >= 0 {
			s.Score += kSel * (lookup(&selTab, float64(sf.level)) - selFit)
		}
		s.Score = clamp01(s.Score)
		tmp[i] = s
	}
	rankInto(out, tmp)
	return out
}
