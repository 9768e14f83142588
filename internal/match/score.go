package match

import (
	"math"
)

// Scored is one school's match for one student, as Rank returns it.
type Scored struct {
	Score      float64 // match_score in [0,1]
	Academic   float64 // the four components, each in [0,1]
	Financial  float64
	Campus     float64
	Outcomes   float64
	Distance   float64 // miles from the student's home, -1 when either location is unknown
	Confidence float64 // in [0,1]: how much of the score rests on real data rather than neutral priors
	Index      int32   // index of the school in Catalog.Schools
}

// HasDistance reports whether Distance is known.
func (s Scored) HasDistance() bool { return s.Distance >= 0 }

// maxMajors bounds the intended majors scoring reads (domain.Majors has 38).
const maxMajors = 48

// scorer is a (profile, weights) pair prepared for scoring many schools:
// everything that depends only on the student is computed once here.
type scorer struct {
	fw FamilyWeights
	// Factor weights inside each family, each family's summing to 1. A
	// factor the student has no preference on (no majors, no setting) has
	// weight 0.
	wSAT, wSel, wProg float64
	wAff, wAid, wVal  float64
	wLoc, wSize, wSet float64

	sat      float64
	shrink   float64 // how much of sat_match's distance from neutral a GPA estimate keeps
	studentK float64 // knownness of the student's academic signal
	target   float64 // selectivity level the student fits best

	majors [maxMajors]uint8     // the student's majors: their columns in Catalog.programs
	prog   [maxMajors][]float64 // those columns
	nMaj   int

	price    []float32 // the student's income band column of Catalog.price
	priceSrc []uint8

	hasHome    bool
	hx, hy, hz float64
	maxDist    float64
	invMaxDist float64

	budget  float64
	budgetK float64
	band    int // income band, bandUnknown when not given
	pellW   float64
	state   int8

	sizePref float64
	setting  int8
}

func newScorer(p Profile, w Weights, cat *Catalog) scorer {
	w = w.Sanitize()
	sc := scorer{fw: FamilyWeightsFor(w), band: bandUnknown, state: stateIndex(p.State), setting: settingIndex(p.PreferredSetting)}

	sc.sat = float64(p.SAT)
	basis := p.Basis
	if basis != BasisNone && !(sc.sat >= 400 && sc.sat <= 1600) {
		basis = BasisNone
	}
	switch basis {
	case BasisSAT, BasisACT:
		sc.shrink, sc.studentK = 1, 1
	case BasisGPA:
		sc.shrink, sc.studentK = 0.5, 0.5
	}
	sc.target = selectivityTarget(sc.sat, basis, w.AcademicSelectivity)

	for _, m := range p.Majors {
		j := majorIndex(m)
		if j < 0 || sc.nMaj == len(sc.majors) {
			continue
		}
		dup := false
		for _, k := range sc.majors[:sc.nMaj] {
			dup = dup || int(k) == j
		}
		if !dup {
			sc.majors[sc.nMaj], sc.prog[sc.nMaj] = uint8(j), cat.programs[j]
			sc.nMaj++
		}
	}

	if p.HasHome && validLatLon(p.HomeLat, p.HomeLon) {
		sc.hasHome = true
		sc.hx, sc.hy, sc.hz = unitVector(p.HomeLat, p.HomeLon)
	}
	sc.maxDist = p.MaxDistanceMiles
	if !(sc.maxDist > 0) || math.IsInf(sc.maxDist, 0) {
		sc.maxDist = 500
	}
	sc.invMaxDist = 1 / sc.maxDist

	if p.IncomeBand >= 0 && p.IncomeBand < bandUnknown {
		sc.band = p.IncomeBand
	}
	sc.price, sc.priceSrc = cat.price[sc.band], cat.priceSrc[sc.band]
	sc.pellW = pellWeight[sc.band]
	if p.HasBudget && p.Budget >= 0 {
		sc.budget, sc.budgetK = float64(p.Budget), 1
	} else {
		sc.budget, sc.budgetK = referenceBudget[sc.band], 0.75
	}
	sc.sizePref = w.SizePreference

	// Factor weights inside the families.
	sc.wSAT, sc.wSel = 0.4, 0.3
	if sc.nMaj > 0 {
		sc.wProg = 0.1 + 0.6*w.ProgramWeight
	}
	sc.wSAT, sc.wSel, sc.wProg = norm3(sc.wSAT, sc.wSel, sc.wProg)
	sc.wAff, sc.wAid, sc.wVal = norm3(0.2+0.8*w.CostWeight, 0.1+0.5*w.AidWeight, 0.3)
	sc.wLoc, sc.wSize = 0.2+0.8*w.DistanceWeight, 0.1+0.5*w.CampusWeight
	if sc.setting >= 0 {
		sc.wSet = 0.1 + 0.5*w.CampusWeight
	}
	sc.wLoc, sc.wSize, sc.wSet = norm3(sc.wLoc, sc.wSize, sc.wSet)
	return sc
}

func norm3(a, b, c float64) (float64, float64, float64) {
	s := a + b + c
	return a / s, b / s, c / s
}

// breakdown is everything scoring works out for one school.
type breakdown struct {
	satMatch, selFit, program float64
	afford, aid, value        float64
	size, loc, setting        float64
	academic, financial       float64
	campus, outcomes          float64
	score, confidence         float64
	distance                  float64 // -1 when unknown
	price                     float64 // the student's yearly net price; valid when priceSrc != srcNone
	priceSrc                  uint8
	bestMajor                 int // column of the student's strongest major at this school, -1 when none
	bestShare                 float64
}

// Price knownness by source.
var priceK = [...]float64{srcNone: 0, srcBand: 1, srcAverage: 0.8, srcTuitionIn: 0.5, srcTuitionOut: 0.5}

// score fills b for school i, whose features are f. It is the one place
// scores are computed: Rank, Score and Detail all call it. The factors the
// weights do not move are kept as Factors keep them (q16, and the distance
// at float32 precision), so a score from kept factors is the same, bit for
// bit.
func (sc *scorer) score(f *features, i int, b *breakdown) {
	// Academic.
	b.satMatch = Neutral
	kSAT := 0.0
	if sc.shrink > 0 && f.hasRange {
		b.satMatch = q16(Neutral + sc.shrink*(satMatch(sc.sat, float64(f.satLo), float64(f.satHi))-Neutral))
		kSAT = sc.studentK
	}
	b.selFit = Neutral
	kSel := 0.0
	if f.selK > 0 {
		b.selFit = selectivityFit(float64(f.selLevel), sc.target)
		kSel = half(f.selK) * sc.studentK
	}
	b.program, b.bestMajor, b.bestShare = Neutral, -1, 0
	kProg := 0.0
	if sc.nMaj > 0 && f.hasPrograms {
		best, bestJ := -1.0, -1
		for k, col := range sc.prog[:sc.nMaj] {
			if s := col[i]; s > best {
				best, bestJ = s, int(sc.majors[k])
			}
		}
		b.program, b.bestMajor, b.bestShare, kProg = q16(programStrength(best)), bestJ, best, 1
	}
	b.academic = sc.wSAT*b.satMatch + sc.wSel*b.selFit + sc.wProg*b.program

	// Financial.
	b.priceSrc, b.price = sc.priceSrc[i], float64(sc.price[i])
	if b.priceSrc == srcTuition {
		b.price, b.priceSrc = sc.tuition(f)
	}
	b.afford, b.value = Neutral, Neutral
	kAff, kVal := 0.0, 0.0
	if b.priceSrc != srcNone {
		kAff = priceK[b.priceSrc] * sc.budgetK
		b.afford = q16(affordability(b.price, sc.budget))
		if f.valueEarnK > 0 {
			b.value = q16(valueScore(float64(f.valueEarn), b.price))
			kVal = min(priceK[b.priceSrc], half(f.valueEarnK))
		}
	}
	var kAid float64
	b.aid, kAid = aidAvailability(f.pell, f.loan, sc.pellW)
	b.aid = q16(b.aid)
	b.financial = sc.wAff*b.afford + sc.wAid*b.aid + sc.wVal*b.value

	// Campus.
	b.loc, b.distance = Neutral, -1
	kLoc := 0.0
	if sc.hasHome && f.locK > 0 {
		b.distance = chordMiles(sc.hx, sc.hy, sc.hz, float64(f.x), float64(f.y), float64(f.z))
		b.loc, kLoc = q16(locationFit(b.distance, sc.invMaxDist)), half(f.locK)
		b.distance = f32(b.distance)
	}
	b.size = Neutral
	kSize := 0.0
	if f.hasSize {
		b.size, kSize = sizeFit(float64(f.sizeScale), sc.sizePref), 1
	}
	b.setting = Neutral
	kSet := 0.0
	if sc.setting >= 0 && f.setting >= 0 {
		b.setting, kSet = q16(settingFitTable[sc.setting][f.setting]), 1
	}
	b.campus = sc.wLoc*b.loc + sc.wSize*b.size + sc.wSet*b.setting

	b.outcomes = float64(f.outcomes)

	fw := &sc.fw
	b.score = clamp01(fw.Academic*b.academic + fw.Financial*b.financial + fw.Campus*b.campus + fw.Outcomes*b.outcomes)
	b.confidence = clamp01(
		fw.Academic*(sc.wSAT*kSAT+sc.wSel*kSel+sc.wProg*kProg) +
			fw.Financial*(sc.wAff*kAff+sc.wAid*kAid+sc.wVal*kVal) +
			fw.Campus*(sc.wLoc*kLoc+sc.wSize*kSize+sc.wSet*kSet) +
			fw.Outcomes*float64(f.outK))
}

// f32 is x at float32 precision.
func f32(x float64) float64 { return float64(float32(x)) }

// factorScale is the resolution of the factors in [0, 1] that Factors
// keep: steps of 1/32768, exact for 0, Neutral and 1.
const factorScale = 1 << 15

// pack16 is x, clamped to [0, 1], in steps of 1/factorScale.
func pack16(x float64) uint16 { return uint16(clamp01(x)*factorScale + 0.5) }

// unpack16 is the factor pack16 kept.
func unpack16(u uint16) float64 { return float64(u) / factorScale }

// q16 is x as Factors keep it: clamped to [0, 1], in steps of 1/32768.
func q16(x float64) float64 { return unpack16(pack16(x)) }

// tuition resolves the tuition fallback of the price chain: in-state tuition
// for a student from the school's state, else out-of-state tuition, else
// whichever the school reports.
func (sc *scorer) tuition(f *features) (float64, uint8) {
	inState := sc.state >= 0 && sc.state == f.state
	switch {
	case f.tuitionIn >= 0 && (inState || f.tuitionOut < 0):
		return float64(f.tuitionIn), srcTuitionIn
	case f.tuitionOut >= 0:
		return float64(f.tuitionOut), srcTuitionOut
	}
	return 0, srcNone
}

func (b *breakdown) scored(i int) Scored {
	return Scored{
		Score: b.score, Academic: b.academic, Financial: b.financial, Campus: b.campus, Outcomes: b.outcomes,
		Distance: b.distance, Confidence: b.confidence, Index: int32(i),
	}
}

// Score scores one school of the catalogue for a student; it is exactly
// the Scored that Rank would give that school. idx must be in range.
func Score(p Profile, w Weights, cat *Catalog, idx int) Scored {
	sc := newScorer(p, w, cat)
	var b breakdown
	sc.score(&cat.feat[idx], idx, &b)
	return b.scored(idx)
}

// ScoreAll is Score for each school of idx, with one preparation of the
// student's scorer: dst[k] is Score(p, w, cat, idx[k]). dst is reused when
// it is large enough. Every index must be in range.
func ScoreAll(dst []Scored, p Profile, w Weights, cat *Catalog, idx []int32) []Scored {
	if cap(dst) < len(idx) {
		dst = make([]Scored, len(idx))
	}
	dst = dst[:len(idx)]
	if len(idx) == 0 {
		return dst
	}
	sc := newScorer(p, w, cat)
	var b breakdown
	for k, i := range idx {
		sc.score(&cat.feat[i], int(i), &b)
		dst[k] = b.scored(int(i))
	}
	return dst
}
