package match

import (
	"math"
	"slices"
)

// The residual: what the eight weights cannot say.
//
// Each of the eight weights scales a fixed mix of factors with fixed
// curve shapes: how fast location fit falls with distance, how wide a
// size preference is, that affordability has no hard edge at the budget.
// A student whose taste has another shape ("nothing above my budget",
// "within a couple of hours' drive", "small and rural") cannot be
// described by any setting of the weights, however many swipes come, and
// the online update of the weights can even move them the wrong way
// trying.
//
// So the model's score of a school is the match score S with the learned
// weights plus a per-student residual:
//
//	r(s) = (gamma - 1) * (S(s) - 0.5) + beta . phi(s) / k
//
// a linear function of nResidual student-relative features phi of the
// school (residualKeys; standardised) and of the score itself, whose
// coefficient gamma lets the swipes say how far the weights' score is to
// be trusted for this student. The residual is a logistic regression of
// the student's recent swipes (the last historyLen schools swiped, with
// the latest direction on each, and the weak signals), with the weights'
// own prediction k * (S(s) - t) as an offset:
//
//	P(like | s) = sigmoid(c + gamma * k * (S(s) - t) + beta . phi(s))
//
// fitted anew (maximum a posteriori, a few Newton steps from the last fit)
// each time a swipe is folded in. Until freeFitFrom swipes' worth of
// evidence, under a prior that is the weights' prediction alone: gamma ~
// N(1, fitVarScore), beta ~ N(0, fitVarFeature), c ~ N(0,
// fitVarIntercept). A new student's residual is zero, so the cold start is
// the weights' alone; a student whose swipes the weights explain keeps
// gamma near 1 and beta near 0. From freeFitFrom on, gamma ~
// N(fitFreeScoreMean, fitVarFreeScore), tight around a quarter: the
// weights' score is one feature among the others, and the student's
// swipes say how much it counts. A student the weights describe gets
// much of its weight back from the swipes, the features standing in for
// the rest; one whose taste has another shape gets close to what a
// logistic regression over the features would learn (see learn_refit.go,
// freeFitFrom and fitFreeScoreMean).
//
// The features are built from the same factors score works out (the
// affordability of the student's net price against their budget, the
// distance, the school's size, selectivity against the student's
// strength, outcomes, value, program match, campus setting, aid), so the
// residual costs the ranking loop a few multiply-adds and two table
// look-ups per school (residualTables), and a refit about historyLen
// schools scored and a 20-parameter Newton solve.

// nResidual is the number of residual features.
const nResidual = 19

// Residual feature positions.
const (
	rInBudget = iota
	rBelowBudget
	rNear75
	rNear300
	rNear1200
	rSize
	rSizeSq
	rReach
	rReachSq
	rSAT
	rOutcomes
	rValue
	rProgram
	rCity
	rSuburb
	rTown
	rRural
	rAid
	rScore
)

var _ = [1]int{}[nResidual-rScore-1]

// residualKeys name the residual features in a serialised model.
var residualKeys = [nResidual]string{
	"in_budget", "below_budget", "within_75mi", "within_300mi", "within_1200mi",
	"size", "size_squared", "selectivity_reach", "selectivity_reach_squared",
	"sat_match", "outcomes", "value", "program", "city", "suburb", "town", "rural", "aid",
	"match_score",
}

// Tunables of the residual (see docs/learning.md for how they were chosen).
const (
	// fitVarFeature is the prior variance of each feature's coefficient,
	// in log-odds per standard deviation of the feature.
	fitVarFeature = 1.0
	// fitVarScore is the prior variance of gamma, the weight the
	// weights' own prediction gets (prior mean 1).
	fitVarScore = 0.25
	// fitVarIntercept is the prior variance of the intercept c.
	fitVarIntercept = 4.0
)

// historyLen is how many schools the residual is fitted on: the most
// recently swiped.
const historyLen = 48

// fitSteps bounds the Newton steps of one refit.
const fitSteps = 12

// residualLimit bounds a coefficient (score units per standard deviation).
const residualLimit = 1.0

// residualIn is what the features of one school are made from: the
// factors score works out, as Factors keep them (so that RankModel,
// RankFactors and the learner see the same values).
type residualIn struct {
	afford, aid, value, sat, prog, outcomes float64
	score                                   float64 // the weights' match score
	dist                                    float64 // miles, -1 unknown
	level, size                             float64 // selectivity level and size scale, -1 unknown
	setting                                 int8    // 0 city .. 3 rural, -1 unknown
}

// residualInOf is the residual input of school i from its breakdown.
func residualInOf(cat *Catalog, i int, b *breakdown) residualIn {
	f := &cat.feat[i]
	return residualIn{
		afford: b.afford, aid: b.aid, value: b.value, sat: b.satMatch, prog: b.program,
		outcomes: float64(f.outcomes), score: b.score, dist: b.distance,
		level: float64(cat.levels[i]), size: float64(cat.sizes[i]), setting: f.setting,
	}
}

// affordKnown reports whether an affordability factor rests on a price:
// without one it is exactly Neutral (and a price that gives exactly
// Neutral, 30 % over the budget, is rare enough to read as unknown).
func affordKnown(a float64) bool { return a != Neutral }

// budgetFeatures are in_budget (a smooth gate: about +0.5 within the
// budget, -0.5 past 10 % over it) and below_budget (how far under the
// budget, 1 when free, negative over it), from the affordability factor.
func budgetFeatures(a float64) (in, below float64) {
	if !affordKnown(a) {
		return 0, 0
	}
	return budgetCurves(a)
}

// budgetCurves are budgetFeatures of a known affordability.
func budgetCurves(a float64) (in, below float64) {
	return sigmoid((a-0.7)/0.02) - 0.5, max(-1.5, min(1, 4*(a-0.75)))
}

// nearFeatures are within_75mi, within_300mi and within_1200mi: a
// closeness at three scales, each about 0 on average.
func nearFeatures(d float64) (a, b, c float64) {
	if d < 0 {
		return 0, 0, 0
	}
	d = min(d, maxTableMiles) // beyond, as far as the ranking's table reaches
	return math.Exp(-d/75) - 0.1, math.Exp(-d/300) - 0.3, math.Exp(-d/1200) - 0.5
}

// residualCentre and residualScale standardise the raw features: their
// typical mean and spread over a catalogue of real schools for one student
// (internal/tools/simulate's families of students over the bundled catalogue),
// so that one prior variance means as much for every feature.
var (
	residualCentre = [nResidual]float64{0.311, 0.193, -0.076, -0.162, -0.016, -0.140, 0.126, -0.008, 0.097,
		-0.139, 0.001, 0.056, -0.072, 0.172, -0.011, -0.052, -0.110, -0.046, 0.05}
	residualScale = [nResidual]float64{0.271, 0.495, 0.086, 0.179, 0.203, 0.252, 0.328, 0.197, 0.372,
		0.220, 0.138, 0.098, 0.233, 0.463, 0.390, 0.360, 0.301, 0.240, 0.08}
)

// residualFeatures are the standardised features of one school; strength
// is the student's academic strength on the selectivity scale (0.5
// without an academic signal).
func residualFeatures(in *residualIn, strength float64) (phi [nResidual]float64) {
	phi = rawResidualFeatures(in, strength)
	for j := range phi {
		phi[j] = (phi[j] - residualCentre[j]) / residualScale[j]
	}
	return phi
}

// rawResidualFeatures are the features before standardisation.
func rawResidualFeatures(in *residualIn, strength float64) (phi [nResidual]float64) {
	phi[rInBudget], phi[rBelowBudget] = budgetFeatures(in.afford)
	phi[rNear75], phi[rNear300], phi[rNear1200] = nearFeatures(in.dist)
	if in.size >= 0 {
		d := in.size - 0.5
		phi[rSize], phi[rSizeSq] = d, 4*d*d-0.3
	}
	if in.level >= 0 {
		d := in.level - strength
		phi[rReach], phi[rReachSq] = d, 4*d*d-0.2
	}
	phi[rSAT] = in.sat - 0.75
	phi[rOutcomes] = in.outcomes - 0.5
	phi[rValue] = in.value - 0.5
	phi[rProgram] = in.prog - 0.5
	if in.setting >= 0 && in.setting < 4 {
		for k := range 4 {
			phi[rCity+k] = -0.25
		}
		phi[rCity+int(in.setting)] = 0.75
	}
	phi[rAid] = in.aid - 0.5
	phi[rScore] = in.score - 0.5
	return phi
}

// strengthFor is the student's academic strength on the selectivity
// scale, as the residual's reach features measure it.
func (sc *scorer) strength() float64 {
	if sc.studentK > 0 {
		return strengthOf(sc.sat)
	}
	return 0.5
}

// residualOf is beta . phi.
func residualOf(beta *[nResidual]float64, phi *[nResidual]float64) float64 {
	r := 0.0
	for j := range nResidual {
		r += beta[j] * phi[j]
	}
	return r
}

// residualTables are the residual of the model's mean coefficients, laid
// out for the ranking loop: the budget and distance parts tabulated over
// the affordability factor and the distance, the setting part by setting,
// the rest as coefficients.
type residualTables struct {
	on                 bool
	afford             [residualTable + 1]float64
	dist               [distTable + 1]float64
	setting            [4]float64
	size, sizeSq       float64
	reach, reachSq     float64
	sat, out, val, prg float64
	aid, score         float64
	strength           float64
	constant           float64
}

// residualTable is the resolution of residualTables' affordability table.
const residualTable = 256

// distTable is the resolution of the distance table, in steps of
// maxTableMiles/distTable (3.1 miles): linear in the miles, so the loop
// looks a school up without a square root.
const distTable = 1024

// maxTableMiles is the distance the distance table reaches; farther
// schools take its last value.
const maxTableMiles = 3200.0

// newResidualTables tabulates beta (on the standardised features) for a
// student of the given strength.
func newResidualTables(std *[nResidual]float64, strength float64) residualTables {
	t := residualTables{strength: strength}
	for _, b := range std {
		t.on = t.on || b != 0
	}
	if !t.on {
		return t
	}
	// The coefficients of the raw features, and the constant the centres
	// make.
	var raw [nResidual]float64
	shift := 0.0
	for j := range raw {
		raw[j] = std[j] / residualScale[j]
		shift -= raw[j] * residualCentre[j]
	}
	beta := &raw
	for k := range t.afford {
		in, below := budgetCurves(float64(k) / residualTable)
		t.afford[k] = beta[rInBudget]*in + beta[rBelowBudget]*below
	}
	// exp(-d/L) at every step, by repeated multiplication.
	step := maxTableMiles / distTable
	e75, e300, e1200 := 1.0, 1.0, 1.0
	m75, m300, m1200 := math.Exp(-step/75), math.Exp(-step/300), math.Exp(-step/1200)
	for k := range t.dist {
		t.dist[k] = beta[rNear75]*(e75-0.1) + beta[rNear300]*(e300-0.3) + beta[rNear1200]*(e1200-0.5)
		e75, e300, e1200 = e75*m75, e300*m300, e1200*m1200
	}
	for s := range t.setting {
		for k := range 4 {
			v := -0.25
			if k == s {
				v = 0.75
			}
			t.setting[s] += beta[rCity+k] * v
		}
	}
	t.size, t.sizeSq = beta[rSize], beta[rSizeSq]
	t.reach, t.reachSq = beta[rReach], beta[rReachSq]
	t.sat, t.out, t.val, t.prg, t.aid = beta[rSAT], beta[rOutcomes], beta[rValue], beta[rProgram], beta[rAid]
	t.score = beta[rScore]
	t.constant = shift - 0.75*t.sat - 0.5*(t.out+t.val+t.prg+t.aid+t.score)
	return t
}

// of is the residual of a school whose residual input is in: the model's
// residual to within the tables' resolution.
func (t *residualTables) of(in *residualIn) float64 {
	if !t.on {
		return 0
	}
	r := t.constant + t.sat*in.sat + t.out*in.outcomes + t.val*in.value + t.prg*in.prog + t.aid*in.aid + t.score*in.score
	if a := in.afford; affordKnown(a) {
		x := a * residualTable // a is a factor in [0,1]
		k := int(x)
		if k >= residualTable {
			r += t.afford[residualTable]
		} else {
			r += t.afford[k] + (x-float64(k))*(t.afford[k+1]-t.afford[k])
		}
	}
	if d := in.dist; d >= 0 {
		x := d * (distTable / maxTableMiles)
		k := int(x)
		if k >= distTable {
			r += t.dist[distTable]
		} else {
			r += t.dist[k] + (x-float64(k))*(t.dist[k+1]-t.dist[k])
		}
	}
	if in.size >= 0 {
		d := in.size - 0.5
		r += t.size*d + t.sizeSq*(4*d*d-0.3)
	}
	if in.level >= 0 {
		d := in.level - t.strength
		r += t.reach*d + t.reachSq*(4*d*d-0.2)
	}
	if in.setting >= 0 && in.setting < 4 {
		r += t.setting[in.setting]
	}
	return r
}

// Residual is what the model has learned beyond the eight weights: each
// residual feature's coefficient (its posterior mean, in match score
// units per unit of the feature), by name.
func (m Model) Residual() map[string]float64 {
	m = m.orDefault()
	out := make(map[string]float64, nResidual)
	for j, k := range residualKeys {
		out[k] = m.rmean[j]
	}
	return out
}

// ResidualFeatureNames name the residual's features, in the order
// ResidualFeatures lists them.
func ResidualFeatureNames() []string { return slices.Clone(residualKeys[:]) }

// ResidualFeatures are the residual's raw features of every school of cat for
// the student p (dst[i] for school i, reused when large enough): the
// student-relative description of a school the learner's residual is
// linear in. The learning-quality simulation fits its reference learners
// on them.
func ResidualFeatures(dst [][nResidual]float64, p Profile, cat *Catalog) [][nResidual]float64 {
	n := cat.Len()
	if cap(dst) < n {
		dst = make([][nResidual]float64, n)
	}
	dst = dst[:n]
	sc := newScorer(p, DefaultWeights(), cat)
	strength := sc.strength()
	var b breakdown
	for i := range n {
		sc.score(&cat.feat[i], i, &b)
		in := residualInOf(cat, i, &b)
		dst[i] = rawResidualFeatures(&in, strength)
	}
	return dst
}

// ResidualFeatureCount is the number of residual features.
const ResidualFeatureCount = nResidual

// AddResidual adds the model's residual to each score: what a school's
// match_score is under the whole model (the weights' score plus the
// residual, in [0,1]), for scores made with the model's weights (Score,
// ScoreAll, ScoreFactors). The components are left as they are: they are
// the weights' part, the four the spec defines.
func (m Model) AddResidual(p Profile, cat *Catalog, scores []Scored) {
	m = m.orDefault()
	if m.nhist == 0 || len(scores) == 0 {
		return
	}
	sc := newScorer(p, m.Weights(), cat)
	strength := sc.strength()
	var b breakdown
	for k := range scores {
		i := int(scores[k].Index)
		sc.score(&cat.feat[i], i, &b)
		in := residualInOf(cat, i, &b)
		phi := residualFeatures(&in, strength)
		scores[k].Score = clamp01(scores[k].Score + residualOf(&m.rmean, &phi))
	}
}

// HistoryLen is how many schools the residual was last fitted on.
func (m Model) HistoryLen() int { return m.nhist }
