package match

// Admission bands. A band is a rough guide to how likely admission is, not
// a probability.
const (
	BandReach  = "reach"
	BandTarget = "target"
	BandSafety = "safety"
)

// AdmissionBand places a school in reach, target or safety for a student.
// It always returns one of the three.
//
// With the student's SAT-equivalent (a test score, or the GPA estimate when
// there is none) and the school's middle 50% (SAT, or ACT converted):
//
//	admission rate       below 25th   inside    above 75th
//	under 15%            reach        reach     reach
//	15% to under 50%     reach        target    target
//	50% to under 75%     reach        target    safety
//	75% or more          target       safety    safety
//	not reported         reach        target    safety
//
// Without a score range but with an admission rate: under 15% reach; else,
// when the student has an academic signal, the school's selectivity level
// (1 - admission rate) against the student's (see strengthCurve): more than
// 0.15 above it reach, more than 0.2 below it safety, target between; with
// no academic signal, the school's selectivity level alone (from the
// admission rate, else from its score range's midpoint): above 0.7 (admits
// under 30%) reach, above 0.3 target, else safety. With neither an
// admission rate nor a score range (the Scorecard leaves both empty for
// open-admission schools): safety.
func AdmissionBand(p Profile, cat *Catalog, idx int) string {
	f := &cat.feat[idx]
	a := cat.cold[idx].admRate // -1 when unknown
	hasSAT := p.Basis != BasisNone && p.SAT >= 400 && p.SAT <= 1600
	x := float64(p.SAT)
	switch {
	case a >= 0 && a < 0.15:
		return BandReach
	case hasSAT && f.hasRange:
		below, above := x < float64(f.satLo), x > float64(f.satHi)
		switch {
		case a < 0: // not reported
			return pick(below, above, BandReach, BandTarget, BandSafety)
		case a < 0.5:
			return pick(below, above, BandReach, BandTarget, BandTarget)
		case a < 0.75:
			return pick(below, above, BandReach, BandTarget, BandSafety)
		}
		return pick(below, above, BandTarget, BandSafety, BandSafety)
	case a >= 0 && hasSAT:
		switch d := (1 - a) - strengthOf(x); {
		case d > 0.15:
			return BandReach
		case d < -0.2:
			return BandSafety
		}
		return BandTarget
	case f.selK > 0:
		switch {
		case f.selLevel > 0.7:
			return BandReach
		case f.selLevel > 0.3:
			return BandTarget
		}
		return BandSafety
	}
	return BandSafety
}

func pick(below, above bool, ifBelow, inside, ifAbove string) string {
	switch {
	case below:
		return ifBelow
	case above:
		return ifAbove
	}
	return inside
}
