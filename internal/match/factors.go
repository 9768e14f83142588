package match

import (
	"math"

	"github.com/collegematch/matching/internal/domain"
)

// Neutral is the value a factor takes when the data it needs is missing, or
// when the student has no preference on it: neither for nor against.
const Neutral = 0.5

// satMatch scores an SAT-equivalent x against a school's middle 50% [lo, hi].
// Inside the range it rises from 0.85 at the 25th percentile to 1 at the
// 75th. Above the range it falls slowly, to 0.8 at 300 points above: a
// likely admit for whom the school may be less of a challenge (a safety).
// Below the range it falls fast: 0.46 at 100 points below, 0.1 at 300.
func satMatch(x, lo, hi float64) float64 {
	if lo > hi {
		lo, hi = hi, lo
	}
	switch {
	case x < lo:
		d := (lo - x) / 110
		return 0.85 / (1 + d*d)
	case x <= hi:
		if hi == lo {
			return 1
		}
		return 0.85 + 0.15*(x-lo)/(hi-lo)
	}
	return 1 - 0.2*min(1, (x-hi)/300)
}

// strengthCurve maps an SAT-equivalent to a selectivity level: one minus the
// typical admission rate of schools whose middle student has that score
// (about 0.85 admitted at 1000, half at 1300, 8% at 1500).
var strengthCurve = []point{
	{400, 0}, {800, 0.05}, {1000, 0.15}, {1100, 0.25}, {1200, 0.35}, {1300, 0.5}, {1400, 0.75}, {1500, 0.92}, {1600, 0.98},
}

// strengthOf is the selectivity level that matches an SAT-equivalent.
func strengthOf(sat float64) float64 { return interp(strengthCurve, sat) }

// selectivityTarget is the selectivity level a student is best matched
// with: their own academic strength, moved by up to 0.3 either way by the
// academic_selectivity preference (0.5 leaves it where it is). With no
// academic signal the preference alone is the target.
func selectivityTarget(sat float64, basis AcademicBasis, pref float64) float64 {
	if basis == BasisNone {
		return pref
	}
	return clamp01(strengthOf(sat) + 0.6*(pref-0.5))
}

// selectivityFit is 1 when a school's selectivity level equals the target,
// 0.5 at 0.2 away, 0.2 at 0.4 away.
func selectivityFit(level, target float64) float64 {
	d := (level - target) / 0.2
	return 1 / (1 + d*d)
}

// programHalf is the share of degrees at which program_strength is 0.5.
const programHalf = 0.05

// programStrength scores a school's share of degrees in a major: 0 for none,
// 0.5 at 5%, 0.78 at 18%, 0.89 at 40%.
func programStrength(share float64) float64 {
	share = clamp01(share)
	return share / (share + programHalf)
}

// referenceBudget is the yearly net price taken as a student's budget when
// they give none, by family income band (the last is income unknown).
var referenceBudget = [domain.IncomeBands + 1]float64{12000, 16000, 21000, 28000, 38000, 25000}

// affordability scores a yearly net price against a budget: 1 when free,
// 0.75 at exactly the budget, then falling fast (0.375 at 30% over, 0.15 at
// 60% over). It never rises with the price.
func affordability(price, budget float64) float64 {
	q := max(0, price) / max(budget, 500)
	if q <= 1 {
		return 1 - 0.25*q
	}
	d := (q - 1) / 0.3
	return 0.75 / (1 + d*d)
}

// pellWeight is how much the Pell share counts in aid_availability, by
// income band (last: income unknown); the federal-loan share counts the rest.
var pellWeight = [domain.IncomeBands + 1]float64{0.6, 0.6, 0.45, 0.3, 0.3, 0.45}

// aidAvailability combines the share of students with a Pell grant (a sign
// the school enrolls and funds students with need; 60% or more counts as
// full) and the share without a federal loan (grants rather than loans).
// Either alone is a proxy (knownness 0.5). pell and loan are shares in
// [0,1], -1 when unknown; pellW is pellWeight of the student's band.
func aidAvailability(pell, loan float32, pellW float64) (v, k float64) {
	pp := min(1, float64(pell)/0.6)
	lp := 1 - float64(loan)
	switch {
	case pell >= 0 && loan >= 0:
		return pellW*pp + (1-pellW)*lp, 1
	case pell >= 0:
		return pp, 0.5
	case loan >= 0:
		return lp, 0.5
	}
	return Neutral, 0
}

// valueScore compares median earnings ten years after entry with four
// years of the student's net price: r = earnings / (4*price), score
// r/(r+0.5), so earnings equal to two years' price score 0.5. Prices under
// $1,000 count as $1,000.
func valueScore(earnings, price float64) float64 {
	r := earnings / (4 * max(price, 1000))
	return r / (r + 0.5)
}

// locationFit scores a distance (miles >= 0) against the student's max
// distance, given as its inverse: 1 at home, 0.7 at the max, then falling
// (0.35 at 1.5x, 0.14 at 2x). It never rises with distance.
func locationFit(miles, invMaxMiles float64) float64 {
	q := miles * invMaxMiles
	if q <= 1 {
		return 1 - 0.3*q
	}
	d := 2 * (q - 1)
	return 0.7 / (1 + d*d)
}

// sizeFit is 1 when the school's size scale equals size_preference, 0.5 at
// 0.3 away (about a factor of 2.8 in enrollment).
func sizeFit(scale, pref float64) float64 {
	d := (scale - pref) / 0.3
	return 1 / (1 + d*d)
}

// settingFitTable is setting_fit by preferred setting (row) and the
// school's setting (column): city, suburb, town, rural.
var settingFitTable = [4][4]float64{
	{1, 0.7, 0.35, 0.15},
	{0.7, 1, 0.6, 0.3},
	{0.3, 0.6, 1, 0.7},
	{0.15, 0.35, 0.7, 1},
}

func settingIndex(s domain.Setting) int8 {
	switch s {
	case domain.SettingCity:
		return 0
	case domain.SettingSuburb:
		return 1
	case domain.SettingTown:
		return 2
	case domain.SettingRural:
		return 3
	}
	return -1
}

// Outcome factor weights inside the outcomes family.
const (
	outGradWeight     = 0.4
	outEmployWeight   = 0.3
	outEarningsWeight = 0.3
)

// employmentThreshold is the typical yearly earnings of a young adult with
// only a high-school diploma, the bar the employment proxy compares with.
const employmentThreshold = 30000.0

// earningsSigma is the spread (standard deviation of log earnings) assumed
// among a school's former students.
const earningsSigma = 0.65

// outcomeFactors are the outcomes family's factors and their knownness.
type outcomeFactors struct {
	grad, employ, earn    float64
	gradK, employK, earnK float64
}

// outcomesOf computes the outcomes factors of a school; they do not depend
// on the student.
//
//   - graduation_rate is the completion rate within 150% of normal time;
//     without it, an estimate from first-year retention (1.5*r - 0.6,
//     knownness 0.5).
//   - employment: the data has no employment rate, so the proxy is the
//     estimated share of former students who, six years after entry, earn
//     more than a typical high-school graduate ($30,000): from the 6-year
//     median earnings m, assuming log-normal earnings with sigma 0.65,
//     Phi(ln(m/30000)/0.65). A median at the threshold gives 0.5, 1.5x gives
//     0.73. Without 6-year earnings, 0.8x the 10-year median stands in.
//   - earnings: the 10-year median on a log scale, 0 at $25,000 and 1 at
//     $110,000 (0.47 at $50,000); without it, 1.25x the 6-year median.
func outcomesOf(s *domain.School) outcomeFactors {
	o := outcomeFactors{grad: Neutral, employ: Neutral, earn: Neutral}
	if g, ok := rate(s.GradRate); ok {
		o.grad, o.gradK = g, 1
	} else if r, ok := rate(s.RetentionRate); ok {
		o.grad, o.gradK = clamp01(1.5*r-0.6), 0.5
	}
	if e, k := earnings6(s); k > 0 {
		z := math.Log(e/employmentThreshold) / earningsSigma
		o.employ, o.employK = clamp01(0.5*(1+math.Erf(z/math.Sqrt2))), k
	}
	if e, k := earnings10(s); k > 0 {
		o.earn, o.earnK = clamp01(math.Log(e/25000)/math.Log(110000.0/25000)), k
	}
	return o
}

// family is the outcomes family score and its knownness.
func (o outcomeFactors) family() (float64, float64) {
	v := outGradWeight*o.grad + outEmployWeight*o.employ + outEarningsWeight*o.earn
	k := outGradWeight*o.gradK + outEmployWeight*o.employK + outEarningsWeight*o.earnK
	return clamp01(v), clamp01(k)
}
