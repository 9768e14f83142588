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

// schoolFactors are one school's weight-free factors for one student, as
// score keeps them: the distance at float32 precision, the seven factors
// in [0, 1] in steps of 1/32768 (pack16): 20 bytes. What the weighted
// factors and the outcomes read of the school alone (its selectivity
// level, size and outcomes) is the catalogue's, shared by every student.
type schoolFactors struct {
	dist                                        float32
	sat, prog, afford, aid, value, loc, setting uint16
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
		f.school[i] = b.factors()
	}
	return f
}

// factors are the weight-free factors of school i of cat, b its breakdown.
func (b *breakdown) factors() schoolFactors {
	return schoolFactors{dist: float32(b.distance), sat: pack16(b.satMatch), prog: pack16(b.program),
		afford: pack16(b.afford), aid: pack16(b.aid), value: pack16(b.value), loc: pack16(b.loc),
		setting: pack16(b.setting)}
}

// Catalog is the catalogue the factors were worked out on.
func (f *Factors) Catalog() *Catalog { return f.cat }

// Bytes is the memory the factors hold.
func (f *Factors) Bytes() int { return FactorBytesPerSchool * len(f.school) }

// weigh fills b's components and score for a school whose factors are sf,
// exactly as sc.score does; sc is the student's scorer with the weights at
// hand.
func (sf *schoolFactors) weigh(sc *scorer, cat *Catalog, i int, b *breakdown) {
	b.satMatch, b.program = unpack16(sf.sat), unpack16(sf.prog)
	b.selFit = Neutral
	if level := cat.levels[i]; level >= 0 { // selK > 0
		b.selFit = selectivityFit(float64(level), sc.target)
	}
	b.academic = sc.wSAT*b.satMatch + sc.wSel*b.selFit + sc.wProg*b.program
	b.afford, b.aid, b.value = unpack16(sf.afford), unpack16(sf.aid), unpack16(sf.value)
	b.financial = sc.wAff*b.afford + sc.wAid*b.aid + sc.wVal*b.value
	b.loc, b.setting, b.distance = unpack16(sf.loc), unpack16(sf.setting), float64(sf.dist)
	b.size = Neutral
	if size := cat.sizes[i]; size >= 0 { // hasSize
		b.size = sizeFit(float64(size), sc.sizePref)
	}
	b.campus = sc.wLoc*b.loc + sc.wSize*b.size + sc.wSet*b.setting
	b.outcomes = float64(cat.feat[i].outcomes)
	fw := &sc.fw
	b.score = clamp01(fw.Academic*b.academic + fw.Financial*b.financial + fw.Campus*b.campus + fw.Outcomes*b.outcomes)
}

// breakdown fills what feed assembly reads of b for school i (the
// components, the score and the factors the gradient in the weights
// reads), exactly as sc.score does.
func (f *Factors) breakdown(sc *scorer, i int, b *breakdown) { f.school[i].weigh(sc, f.cat, i, b) }

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
	n := cat.Len()
	if cap(dst) < 2*n {
		dst = make([]Scored, 2*n)
	}
	out, tmp := dst[:n], dst[n:2*n]
	if n == 0 {
		return out
	}
	var k rankKit
	k.init(p, m.orDefault(), cat)
	school := f.school[:len(tmp)]
	for i := range school {
		tmp[i] = k.scored(&school[i], cat, i)
	}
	rankInto(out, tmp)
	return out
}

// ShownFactors is what a feed shows of the schools idx for the student p
// with the model m, from the student's factors f: ScoreFactors with the
// model's weights, the model's residual added as Model.AddResidual adds
// it, the same scores bit for bit. dst is reused when it is large enough.
func ShownFactors(dst []Scored, f *Factors, p Profile, m Model, idx []int32) []Scored {
	m = m.orDefault()
	if cap(dst) < len(idx) {
		dst = make([]Scored, len(idx))
	}
	dst = dst[:len(idx)]
	if len(idx) == 0 {
		return dst
	}
	sc := newScorer(p, m.Weights(), f.cat)
	var b breakdown
	for k, i := range idx {
		f.breakdown(&sc, int(i), &b)
		s := b.score
		if m.nhist > 0 {
			s = clamp01(s + m.residualAt(&sc, f.cat, int(i), &b))
		}
		dst[k] = Scored{Score: s, Academic: b.academic, Financial: b.financial, Campus: b.campus,
			Outcomes: b.outcomes, Distance: b.distance, Index: i}
	}
	return dst
}
