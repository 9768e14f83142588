package match

// RankModel ranks the catalogue for a student by what the model expects of
// each school: the match score with the model's weights (Weights), except
// that size_fit and selectivity_fit are averaged over the model's
// uncertainty about size_preference and academic_selectivity instead of
// being taken at their means, plus the model's residual (learn_residual.go). While the model is unsure of a preferred
// level, a school a little off it is not ranked as if the level were
// known; once the model is sure, the ranking is Rank's.
//
// Scored.Score is that expected score; the components and the rest are
// Rank's with Weights(), so Detail and reasons stay as they are. dst is
// reused as in Rank.
func RankModel(dst []Scored, p Profile, m Model, cat *Catalog) []Scored {
	return rankModel(dst, p, m, cat, nil)
}

// RankModelFactors is RankModel that also works out the student's factors
// (NewFactors(p, cat)) in the same pass over the catalogue: what a build
// with no factors kept for the student costs, instead of NewFactors and
// RankFactors one after the other. The ranking is RankModel's.
func RankModelFactors(dst []Scored, p Profile, m Model, cat *Catalog) ([]Scored, *Factors) {
	f := &Factors{cat: cat, school: make([]schoolFactors, cat.Len())}
	return rankModel(dst, p, m, cat, f.school), f
}

// rankModel is RankModel, keeping each school's factors in keep when it is
// not nil (len(keep) == cat.Len()). The factors kept are those score
// works out whatever the weights (NewFactors).
func rankModel(dst []Scored, p Profile, m Model, cat *Catalog, keep []schoolFactors) []Scored {
	m = m.orDefault()
	n := cat.Len()
	if cap(dst) < 2*n {
		dst = make([]Scored, 2*n)
	}
	out, tmp := dst[:n], dst[n:2*n]
	if n == 0 {
		return out
	}
	var k rankKit
	k.init(p, m, cat)
	var b breakdown
	for i := range tmp {
		score := k.scoreModel(cat, i, &b)
		if keep != nil {
			keep[i] = b.factors()
		}
		s := b.scored(i)
		s.Score = score
		tmp[i] = s
	}
	rankInto(out, tmp)
	return out
}

// expectedFits are size_fit and selectivity_fit averaged over the model's
// grids of the two levels, tabulated over the school's value.
func expectedFits(sc *scorer, m Model) (sizeTab, selTab [fitTable + 1]float64) {
	strength := strengthOf(sc.sat)
	for k := range sizeTab {
		x := float64(k) / fitTable
		for b := range levelBins {
			g := levelValue(b)
			sizeTab[k] += m.grid[levelSize][b] * sizeFit(x, g)
			t := g
			if sc.studentK > 0 {
				t = clamp01(strength + 0.6*(g-0.5))
			}
			selTab[k] += m.grid[levelSelectivity][b] * selectivityFit(x, t)
		}
	}
	return sizeTab, selTab
}

// fitTable is the resolution of RankModel's expected-fit tables.
const fitTable = 128

// lookup interpolates a table over [0,1].
func lookup(tab *[fitTable + 1]float64, x float64) float64 {
	x = clamp01(x) * fitTable
	k := int(x)
	if k >= fitTable {
		return tab[fitTable]
	}
	fr := x - float64(k)
	return tab[k] + fr*(tab[k+1]-tab[k])
}
