package match

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
	cat                           *Catalog
	sat, prog, afford, aid, value []float64
	loc, setting, dist            []float64
}

// NewFactors works out the weight-free factors of every school of cat for
// the profile p: the cost of one ranking pass.
func NewFactors(p Profile, cat *Catalog) *Factors {
	n := cat.Len()
	buf := make([]float64, 8*n)
	col := func(k int) []float64 { return buf[k*n : (k+1)*n : (k+1)*n] }
	f := &Factors{cat: cat, sat: col(0), prog: col(1), afford: col(2), aid: col(3), value: col(4),
		loc: col(5), setting: col(6), dist: col(7)}
	// The factors kept do not depend on the weights (score reads the
	// weights only for the selectivity target, the size preference and the
	// sums).
	sc := newScorer(p, DefaultWeights(), cat)
	var b breakdown
	for i := range n {
		sc.score(&cat.feat[i], i, &b)
		f.sat[i], f.prog[i], f.afford[i], f.aid[i], f.value[i] = b.satMatch, b.program, b.afford, b.aid, b.value
		f.loc[i], f.setting[i], f.dist[i] = b.loc, b.setting, b.distance
	}
	return f
}

// Catalog is the catalogue the factors were worked out on.
func (f *Factors) Catalog() *Catalog { return f.cat }

// Bytes is the memory the factors hold.
func (f *Factors) Bytes() int { return 8 * 8 * f.cat.Len() }

// breakdown fills what feed assembly reads of b for school i (the
// components, the score and the factors the gradient in the weights
// reads), exactly as sc.score does; sc is the student's scorer with the
// weights at hand.
func (f *Factors) breakdown(sc *scorer, i int, b *breakdown) {
	ft := &f.cat.feat[i]
	b.satMatch, b.program = f.sat[i], f.prog[i]
	b.selFit = Neutral
	if ft.selK > 0 {
		b.selFit = selectivityFit(float64(ft.selLevel), sc.target)
	}
	b.academic = sc.wSAT*b.satMatch + sc.wSel*b.selFit + sc.wProg*b.program
	b.afford, b.aid, b.value = f.afford[i], f.aid[i], f.value[i]
	b.financial = sc.wAff*b.afford + sc.wAid*b.aid + sc.wVal*b.value
	b.loc, b.setting, b.distance = f.loc[i], f.setting[i], f.dist[i]
	b.size = Neutral
	if ft.hasSize {
		b.size = sizeFit(float64(ft.sizeScale), sc.sizePref)
	}
	b.campus = sc.wLoc*b.loc + sc.wSize*b.size + sc.wSet*b.setting
	b.outcomes = float64(ft.outcomes)
	fw := &sc.fw
	b.score = clamp01(fw.Academic*b.academic + fw.Financial*b.financial + fw.Campus*b.campus + fw.Outcomes*b.outcomes)
}

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
	sat, prog, afford, aid, value := f.sat[:n], f.prog[:n], f.afford[:n], f.aid[:n], f.value[:n]
	loc, setting, dist := f.loc[:n], f.setting[:n], f.dist[:n]
	for i := range tmp {
		ft := &cat.feat[i]
		// As score computes them.
		selFit := Neutral
		if ft.selK > 0 {
			selFit = selectivityFit(float64(ft.selLevel), sc.target)
		}
		academic := sc.wSAT*sat[i] + sc.wSel*selFit + sc.wProg*prog[i]
		financial := sc.wAff*afford[i] + sc.wAid*aid[i] + sc.wVal*value[i]
		size := Neutral
		if ft.hasSize {
			size = sizeFit(float64(ft.sizeScale), sc.sizePref)
		}
		campus := sc.wLoc*loc[i] + sc.wSize*size + sc.wSet*setting[i]
		outcomes := float64(ft.outcomes)
		s := Scored{
			Score:    clamp01(fw.Academic*academic + fw.Financial*financial + fw.Campus*campus + fw.Outcomes*outcomes),
			Academic: academic, Financial: financial, Campus: campus, Outcomes: outcomes,
			Distance: dist[i], Index: int32(i),
		}
		// As RankModel adjusts it.
		if ft.hasSize {
			s.Score += kSize * (lookup(&sizeTab, float64(ft.sizeScale)) - size)
		}
		if ft.selK > 0 {
			s.Score += kSel * (lookup(&selTab, float64(ft.selLevel)) - selFit)
		}
		s.Score = clamp01(s.Score)
		tmp[i] = s
	}
	rankInto(out, tmp)
	return out
}
