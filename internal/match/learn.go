package match

import (
	"math"
	"sync"
)

// The learner: an online Bayesian logistic model of a student's swipes.
//
// The model says a student likes school s with probability
//
//	P(like | s) = sigmoid(k * (S(w, s) - t))
//
// where S(w, s) is the match score of s under preference weights w (the
// service's own scoring, Rank and Score), t is the student's like threshold
// (how good a school must look before they swipe right) and k is a fixed
// sharpness.
//
// The posterior has two parts:
//
//   - the six importances (in logit space, w_i = sigmoid(theta_i)) and the
//     like threshold: a Gaussian with a full 7x7 covariance, updated by
//     assumed-density filtering: the score is linearised around the current
//     mean (its gradient in the weights is exact, see learnEval), the
//     one-dimensional posterior of the linear predictor is found by a
//     Laplace step (a bracketed Newton solve), and the change is projected
//     back onto the parameters (a rank-one update of the covariance);
//   - the two preferred levels (academic_selectivity, size_preference): a
//     grid of levelBins values each, updated exactly (Bayes' rule at every
//     value), because the factor each one aims peaks at the preferred
//     value, which a Gaussian linearised at one point describes badly.
//
// The cost of an update is one school's score and gradient, 49
// multiply-adds for the covariance and 2*levelBins likelihoods: fixed by
// the model's size, whatever the number of swipes before
// (BenchmarkObserve). The covariance is kept full because the parameters
// are strongly coupled (a higher weight on a family most schools do well
// in raises every score, as a lower like threshold does); a diagonal one
// learned measurably less in the simulation (docs/learning.md).
//
// Because the weights are the likelihood's own parameters, they keep the
// meaning decisions.md gives them: a student who likes cheap, near schools
// and rejects expensive, far ones raises cost_weight and distance_weight,
// since on those schools the score rises with exactly those weights.

// Parameter positions: the eight weights in WeightKeys order, then the
// like threshold.
const (
	pCost = iota
	pDistance
	pOutcomes
	pCampus
	pProgram
	pAid
	pSelectivity
	pSize
	pThreshold
	nParams
)

// moments unrolls its products over the nParams parameters.
var _ = [1]int{}[nParams-9]

// nWeights is the number of preference weights.
const nWeights = pThreshold

// KeyLikeThreshold names the like threshold in a serialised model.
const KeyLikeThreshold = "like_threshold"

// Tunables of the learner. They are properties of the service, the same
// for every student; the learning-quality simulation (internal/tools/simulate)
// is how they were chosen.
const (
	// likeSharpness is k: how sharply the like probability rises with the
	// match score. 0.1 of score is a factor of e^3.5 in the odds.
	likeSharpness = 35.0

	// Prior variances of the weights in logit space: the spread of each
	// weight across students. An importance anywhere in [0,1] is a
	// logit variance of pi^2/3; a preferred size over most of the scale
	// about 1.5; a preferred selectivity level that mostly stays within
	// 0.2 of matching the student's strength 0.5.
	priorVarImportance  = 3.3
	priorVarSize        = 1.5
	priorVarSelectivity = 0.5

	// thresholdPrior and thresholdPriorVar are the prior of the like
	// threshold: a student likes schools scoring above about 0.62.
	thresholdPrior    = 0.62
	thresholdPriorVar = 0.0025

	// driftFraction of the prior variance is added back before each update,
	// so that the model keeps learning when a student's taste moves.
	driftFraction = 0.001

	// logitLimit bounds a weight's logit: weights stay within
	// [0.01, 0.99] inside the model (Weights is in [0,1] regardless).
	logitLimit = 4.595

	// minVarFraction of the prior variance is the least a variance falls to.
	minVarFraction = 1e-3
)

// Weights of observations that are not counted swipes. A tap, a detail
// view and a save are weak positive signals; perfect_match feedback counts
// as a strong like.
const (
	signalWeightTap        = 0.15
	signalWeightDetailView = 0.25
	signalWeightSave       = 0.5
	perfectMatchWeight     = 2.0
)

// Feedback updates: a reason is a direct, noisy statement about one
// parameter, "it is higher (lower) than you think by feedbackShift in
// logit space", with observation variance feedbackNoiseVar. Before it is
// applied, feedbackReopen of the prior variance is added back to that
// parameter: the student just told us the model was wrong about it.
const (
	feedbackShift    = 1.2
	feedbackNoiseVar = 0.5
	feedbackReopen   = 0.25
)

// The two preferred levels (academic_selectivity, size_preference) aim a
// factor that peaks at the preferred value, so a swipe says "near this
// value" or "not near it" rather than "higher" or "lower". Their posterior
// is kept exactly, on a grid of levelBins values over [0,1], instead of as
// a Gaussian. The prior on the grid is the logit-normal of priorVarSize or
// priorVarSelectivity around the prior weight.
const (
	levelBins        = 24
	nLevels          = 2
	levelSelectivity = 0 // index in levelParams
	levelSize        = 1
	// levelMinVar is the least variance a level is held with.
	levelMinVar = 1e-4
	// levelTiltWidth is how sharply feedback tilts a level's grid, and
	// levelPullWidth how wide perfect_match's pull is.
	levelTiltWidth = 0.05
	levelPullWidth = 0.15
)

// levelParams are the parameter positions of the levels.
var levelParams = [nLevels]int{pSelectivity, pSize}

// levelPriorVar is the prior variance of each level in logit space.
var levelPriorVar = [nLevels]float64{priorVarSelectivity, priorVarSize}

func isLevel(j int) bool { return j == pSelectivity || j == pSize }

// levelPrior is the prior grid of level l around weight w: a logit-normal
// with the level's prior variance, centred so that its mean is w (within
// the range the grid can hold).
func levelPrior(l int, w float64) [levelBins]float64 {
	w = clampLevel(w)
	key := levelPriorKey{l, math.Float64bits(w)}
	levelPriors.RLock()
	g, ok := levelPriors.m[key]
	levelPriors.RUnlock()
	if !ok {
		g = computeLevelPrior(l, w)
		levelPriors.Lock()
		if len(levelPriors.m) >= maxLevelPriors {
			clear(levelPriors.m)
		}
		levelPriors.m[key] = g
		levelPriors.Unlock()
	}
	return g
}

// clampLevel keeps a level's prior mean within what its grid can hold.
func clampLevel(w float64) float64 {
	return min(levelValue(levelBins-1)-0.02, max(levelValue(0)+0.02, w))
}

// levelPriors memoises levelPrior, which a new model (a student without a
// learned one, and every decoded model's starting point) computes with
// some 3,000 exponentials: the prior levels students have repeat (they
// come from a few profile fields and the onboarding categories), so the
// same few grids are asked for over and over. At most maxLevelPriors are
// kept.
var levelPriors = struct {
	sync.RWMutex
	m map[levelPriorKey][levelBins]float64
}{m: map[levelPriorKey][levelBins]float64{}}

type levelPriorKey struct {
	level int
	w     uint64
}

const maxLevelPriors = 4096

// computeLevelPrior is levelPrior without the memo.
func computeLevelPrior(l int, w float64) [levelBins]float64 {
	w = clampLevel(w)
	sd := math.Sqrt(levelPriorVar[l])
	var g [levelBins]float64
	fill := func(mu float64) float64 {
		total, mean := 0.0, 0.0
		for k := range g {
			v := levelValue(k)
			d := (logit(v) - mu) / sd
			g[k] = math.Exp(-d*d/2) / (v * (1 - v))
			total += g[k]
			mean += g[k] * v
		}
		return mean / total
	}
	lo, hi := -logitLimit-3, logitLimit+3
	for range 50 {
		mid := (lo + hi) / 2
		if fill(mid) < w {
			lo = mid
		} else {
			hi = mid
		}
	}
	fill((lo + hi) / 2)
	return g
}

// levelValue is the value of bin k of a level's grid.
func levelValue(k int) float64 { return (float64(k) + 0.5) / levelBins }

// priorVar is the prior variance of each parameter.
var priorVar = [nParams]float64{
	pCost: priorVarImportance, pDistance: priorVarImportance, pOutcomes: priorVarImportance,
	pCampus: priorVarImportance, pProgram: priorVarImportance, pAid: priorVarImportance,
	pSelectivity: priorVarSelectivity, pSize: priorVarSize,
	pThreshold: thresholdPriorVar,
}

// Model is what the service has learned about one student: the posterior
// over the preference weights and the like threshold (a Gaussian over the
// importances, in logit space, and the threshold; a grid for each
// preferred level), and how many observations it has folded in. It is a
// value: every method leaves the receiver unchanged, and Observe returns a
// new Model. It serialises to JSON (MarshalJSON) with a version.
//
// The zero Model is the model of a student nothing is known about: it
// behaves as NewModel(DefaultWeights()).
type Model struct {
	// mean and cov are the posterior's mean and covariance. The rows of
	// the two preferred levels are kept from their grids (levelGrid): their
	// mean and variance on the [0,1] scale, no covariance with the rest.
	mean  [nParams]float64
	cov   [nParams][nParams]float64
	grid  [nLevels][levelBins]float64
	valid bool

	// rmean are the residual's coefficients (in match score units per
	// standard deviation of each feature), rconst its intercept, and hist
	// the schools it was fitted on, oldest first (learn_residual.go).
	rmean  [nResidual]float64
	rconst float64
	hist   [historyLen]swipeMemory
	nhist  int

	swipes   int // counted swipes folded in
	signals  int // taps, detail views and saves folded in
	feedback int // feedback reasons folded in
}

// NewModel returns the model of a student before any swipe, centred on
// prior: a student's stated preferences (SeedWeights) or, for a student who
// chose a category at onboarding, that category's weights. Values outside
// [0,1] are clamped and a NaN takes the default.
func NewModel(prior Weights) Model {
	prior = prior.Sanitize()
	m := Model{valid: true}
	pw := weightArray(prior)
	for j := range nWeights {
		m.mean[j] = logit(pw[j])
	}
	m.mean[pThreshold] = thresholdPrior
	for j := range nParams {
		m.cov[j][j] = priorVar[j]
	}
	for l, j := range levelParams {
		m.grid[l] = levelPrior(l, pw[j])
		m.syncLevel(l)
	}
	return m
}

// orDefault is m, or the default model when m is the zero Model.
func (m Model) orDefault() Model {
	if !m.valid {
		return NewModel(DefaultWeights())
	}
	return m
}

// Weights are the preference weights the model believes in: each weight
// is the logistic of its posterior mean. These are the weights to rank
// with (Rank) and to report as learning_state.preference_weights.
func (m Model) Weights() Weights {
	m = m.orDefault()
	var a [nWeights]float64
	for j := range a {
		a[j] = m.weight(j)
	}
	return weightsFromArray(a)
}

// weight is weight j's value: the logistic of an importance's mean, a
// level's posterior mean.
func (m *Model) weight(j int) float64 {
	if isLevel(j) {
		return m.mean[j]
	}
	return sigmoid(m.mean[j])
}

// WeightUncertainty is the posterior standard deviation of each weight on
// the [0,1] scale (to first order): about 0.25 for a weight nothing is
// known about, falling as swipes inform it.
func (m Model) WeightUncertainty() Weights {
	m = m.orDefault()
	var a [nWeights]float64
	for j := range a {
		if isLevel(j) {
			a[j] = math.Sqrt(m.cov[j][j])
			continue
		}
		w := sigmoid(m.mean[j])
		a[j] = w * (1 - w) * math.Sqrt(m.cov[j][j])
	}
	return weightsFromArray(a)
}

// LikeThreshold is the match score above which the model expects the
// student to like a school (its posterior mean).
func (m Model) LikeThreshold() float64 { return m.orDefault().mean[pThreshold] }

// Swipes is the number of counted swipes folded into the model. The
// student's swipe count (which decides the phase) is the store's; this is
// what the model has seen.
func (m Model) Swipes() int { return m.swipes }

// Signals is the number of taps, detail views and saves folded in.
func (m Model) Signals() int { return m.signals }

// FeedbackCount is the number of feedback reasons folded in.
func (m Model) FeedbackCount() int { return m.feedback }

// Direction is a swipe's direction.
type Direction int8

const (
	Dislike Direction = -1 // swipe left
	Like    Direction = 1  // swipe right
)

// ParseDirection reads a swipe direction as the API spells it: "right" is
// Like, "left" is Dislike.
func ParseDirection(s string) (Direction, bool) {
	switch s {
	case "right":
		return Like, true
	case "left":
		return Dislike, true
	}
	return 0, false
}

// String is the API spelling: "right" or "left".
func (d Direction) String() string {
	if d == Like {
		return "right"
	}
	return "left"
}

// Interaction kinds (the swipe's interaction_type). Only InteractionSwipe
// is counted; the others are weak positive signals.
const (
	InteractionSwipe      = "swipe"
	InteractionTap        = "tap"
	InteractionDetailView = "detail_view"
	InteractionSave       = "save"
)

// Feedback reasons, in the order the client offers them (feedback_options).
const (
	ReasonTooExpensive  = "too_expensive"
	ReasonWrongLocation = "wrong_location"
	ReasonNotMyMajor    = "not_my_major"
	ReasonTooSelective  = "too_selective"
	ReasonPerfectMatch  = "perfect_match"
)

// FeedbackOptions lists the feedback reasons in the order a swipe response
// offers them.
func FeedbackOptions() []string {
	return []string{ReasonTooExpensive, ReasonWrongLocation, ReasonNotMyMajor, ReasonTooSelective, ReasonPerfectMatch}
}

// ValidReason reports whether r is one of FeedbackOptions.
func ValidReason(r string) bool {
	switch r {
	case ReasonTooExpensive, ReasonWrongLocation, ReasonNotMyMajor, ReasonTooSelective, ReasonPerfectMatch:
		return true
	}
	return false
}

// ValidInteraction reports whether s is an interaction_type the learner
// knows ("" counts as swipe).
func ValidInteraction(s string) bool {
	switch s {
	case "", InteractionSwipe, InteractionTap, InteractionDetailView, InteractionSave:
		return true
	}
	return false
}

// Observation is one thing a student did about one school: a swipe, a weak
// signal, or a feedback reason.
type Observation struct {
	// Index is the school's index in the Catalog.
	Index int
	// Interaction is the swipe's interaction_type: "" or "swipe" for a
	// counted swipe, or tap, detail_view, save. Ignored when Reason is set.
	Interaction string
	// Direction of a counted swipe. Weak signals are positive whatever
	// their direction.
	Direction Direction
	// Reason, when not empty, makes this a feedback observation (one of
	// FeedbackOptions).
	Reason string
}

// SwipeObservation is a counted swipe on school idx.
func SwipeObservation(idx int, d Direction) Observation {
	return Observation{Index: idx, Interaction: InteractionSwipe, Direction: d}
}

// FeedbackObservation is a feedback reason given about school idx.
func FeedbackObservation(idx int, reason string) Observation {
	return Observation{Index: idx, Reason: reason}
}

// Counted reports whether o is a counted swipe.
func (o Observation) Counted() bool {
	return o.Reason == "" && (o.Interaction == "" || o.Interaction == InteractionSwipe)
}

// WeightChangeEpsilon is the least change of a preference weight that
// Observe reports as a change (updated_weights).
const WeightChangeEpsilon = 1e-6

// Observe folds one observation into the model and returns the new model;
// changed reports whether any preference weight moved (by at least
// WeightChangeEpsilon), which is a swipe response's updated_weights. p must
// be the profile the feed is ranked for. An observation that cannot be
// used (a school index out of range, an unknown interaction, reason or
// direction) returns the model unchanged and false; nothing panics and no
// weight leaves [0,1].
//
//   - A counted swipe is a like (right) or dislike (left) with weight 1.
//   - tap, detail_view and save are likes with weight 0.15, 0.25 and 0.5.
//   - too_expensive raises cost_weight, wrong_location raises
//     distance_weight, not_my_major raises program_weight, each by a direct
//     update of that weight ("higher than you think"); too_selective lowers
//     academic_selectivity (its grid is tilted below its mean);
//     perfect_match is a like with weight 2, and pulls size_preference and
//     academic_selectivity towards the school's size and selectivity.
func (m Model) Observe(p Profile, cat *Catalog, o Observation) (Model, bool) {
	next, changed, remembered := m.observe(p, cat, o)
	if remembered || changed {
		// The residual is fitted against the weights' prediction: a
		// feedback reason that moved the weights moves it too.
		next.refit(p, cat)
	}
	return next, changed
}

// ObserveWeights is Observe without the residual's refit: the weights
// (and so changed) are Observe's, the residual stays as it was fitted.
// It is what a caller that needs only the weights' answer uses (a swipe
// response's updated_weights, a pattern break of the next swipe), at a
// fraction of Observe's cost; the worker's fold uses Observe.
func (m Model) ObserveWeights(p Profile, cat *Catalog, o Observation) (Model, bool) {
	next, changed, _ := m.observe(p, cat, o)
	return next, changed
}

// observe is Observe without the refit; remembered reports whether the
// observation entered the residual's history (so a refit is due).
func (m Model) observe(p Profile, cat *Catalog, o Observation) (_ Model, changed, remembered bool) {
	m = m.orDefault()
	if cat == nil || o.Index < 0 || o.Index >= cat.Len() {
		return m, false, false
	}
	before := m.Weights()
	var ok bool
	next := m
	switch {
	case o.Reason != "":
		if next, ok = m.applyReason(p, cat, o.Index, o.Reason); ok {
			next.feedback++
			if o.Reason == ReasonPerfectMatch {
				next.remember(cat, o.Index, true, perfectMatchWeight)
				remembered = true
			}
		}
	default:
		switch o.Interaction {
		case "", InteractionSwipe:
			y := 0.0
			switch o.Direction {
			case Like:
				y = 1
			case Dislike:
			default:
				return m, false, false
			}
			if next, ok = m.update(p, cat, o.Index, y, 1); ok {
				next.swipes++
				next.remember(cat, o.Index, y == 1, 1)
				remembered = true
			}
		case InteractionTap, InteractionDetailView, InteractionSave:
			omega := signalWeightSave
			switch o.Interaction {
			case InteractionTap:
				omega = signalWeightTap
			case InteractionDetailView:
				omega = signalWeightDetailView
			}
			if next, ok = m.update(p, cat, o.Index, 1, omega); ok {
				next.signals++
				next.remember(cat, o.Index, true, omega)
				remembered = true
			}
		}
	}
	if !ok {
		return m, false, false
	}
	after := next.Weights()
	ba, aa := weightArray(before), weightArray(after)
	for j := range ba {
		changed = changed || math.Abs(aa[j]-ba[j]) >= WeightChangeEpsilon
	}
	return next, changed, remembered
}

// applyReason folds a feedback reason in.
func (m Model) applyReason(p Profile, cat *Catalog, idx int, reason string) (Model, bool) {
	switch reason {
	case ReasonTooExpensive:
		return m.shift(pCost, +feedbackShift), true
	case ReasonWrongLocation:
		return m.shift(pDistance, +feedbackShift), true
	case ReasonNotMyMajor:
		return m.shift(pProgram, +feedbackShift), true
	case ReasonTooSelective:
		return m.tiltLevel(levelSelectivity, -1), true
	case ReasonPerfectMatch:
		next, ok := m.update(p, cat, idx, 1, perfectMatchWeight)
		if ok {
			next.pullLevels(p, cat, idx)
		}
		return next, ok
	}
	return m, false
}

// shift applies a direct Gaussian observation "parameter j is delta away
// from its mean" to parameter j.
func (m Model) shift(j int, delta float64) Model {
	m.cov[j][j] = min(priorVar[j], m.cov[j][j]+feedbackReopen*priorVar[j])
	u := m.cov[j] // Sigma e_j (the matrix is symmetric)
	den := u[j] + feedbackNoiseVar
	for a := range nParams {
		m.mean[a] = clampParam(a, m.mean[a]+u[a]*delta/den)
		for b := range nParams {
			m.cov[a][b] -= u[a] * u[b] / den
		}
	}
	m.floorVariances()
	return m
}

// floorVariances keeps every variance at least minVarFraction of its prior.
func (m *Model) floorVariances() {
	for j := range nParams {
		if !isLevel(j) {
			m.cov[j][j] = max(minVarFraction*priorVar[j], m.cov[j][j])
		}
	}
}

// update folds in "the student liked (y=1) or disliked (y=0) school idx",
// weighted by omega. It reports false, leaving m alone, when a value is
// not finite.
func (m Model) update(p Profile, cat *Catalog, idx int, y, omega float64) (Model, bool) {
	e := newLearnEval(p, m.Weights(), cat)
	var b breakdown
	s, g := e.eval(idx, &b)
	x, zbar, ok := m.features(s, g)
	if !ok {
		return m, false
	}
	for j := range nParams {
		if !isLevel(j) {
			m.cov[j][j] = min(priorVar[j], m.cov[j][j]+driftFraction*priorVar[j])
		}
	}
	var u [nParams]float64 // Sigma x over the Gaussian parameters
	vg := 0.0
	for a := range nParams {
		if isLevel(a) {
			continue
		}
		for c := range nParams {
			if !isLevel(c) {
				u[a] += m.cov[a][c] * x[c]
			}
		}
		vg += x[a] * u[a]
	}
	var vl [nLevels]float64 // the levels' share of the log-odds variance
	for l, j := range levelParams {
		vl[l] = x[j] * x[j] * m.cov[j][j]
	}
	v := vg + vl[0] + vl[1]

	next := m
	// The Gaussian parameters: a Laplace step on the linear predictor, the
	// levels' uncertainty counted as noise.
	zhat := laplaceLogistic(zbar, v, y, omega)
	ph := sigmoid(zhat)
	c := omega * ph * (1 - ph)
	step := omega * (y - ph) // = (zhat - zbar) / v at the mode
	shrink := c / (1 + v*c)
	for a := range nParams {
		if isLevel(a) {
			continue
		}
		next.mean[a] = clampParam(a, m.mean[a]+u[a]*step)
		for c := range nParams {
			if !isLevel(c) {
				next.cov[a][c] = m.cov[a][c] - u[a]*u[c]*shrink
			}
		}
	}
	// The levels: an exact update of each grid, the score recomputed at
	// every value of the level, the rest of the uncertainty moderating it.
	for l := range nLevels {
		next.updateLevel(&e, idx, &b, l, zbar, v-vl[l], y, omega)
	}
	next.floorVariances()
	for a := range nParams {
		if !finite(next.mean[a]) || !finite(next.cov[a][a]) {
			return m, false
		}
	}
	return next, true
}

// updateLevel multiplies level l's grid by the likelihood of the outcome
// at each value of the level. b is the school's breakdown at the current
// weights, zbar the linear predictor there, rest the variance of the
// log-odds from everything but this level.
func (m *Model) updateLevel(e *learnEval, idx int, b *breakdown, l int, zbar, rest, y, omega float64) {
	f := &e.cat.feat[idx]
	sc := &e.sc
	var base, scale float64
	switch levelParams[l] {
	case pSize:
		if !f.hasSize {
			return
		}
		base, scale = b.size, sc.fw.Campus*sc.wSize
	case pSelectivity:
		if f.selK == 0 {
			return
		}
		base, scale = b.selFit, sc.fw.Academic*sc.wSel
	}
	mod := 1 / math.Sqrt(1+math.Pi*max(0, rest)/8)
	total := 0.0
	for k := range levelBins {
		v := levelValue(k)
		var fit float64
		if levelParams[l] == pSize {
			fit = sizeFit(float64(f.sizeScale), v)
		} else {
			t := v
			if sc.studentK > 0 {
				t = clamp01(strengthOf(sc.sat) + 0.6*(v-0.5))
			}
			fit = selectivityFit(float64(f.selLevel), t)
		}
		z := (zbar + likeSharpness*scale*(fit-base)) * mod
		lik := sigmoid(z)
		if y < 0.5 {
			lik = 1 - lik
		}
		m.grid[l][k] *= math.Pow(max(lik, 1e-12), omega)
		total += m.grid[l][k]
	}
	if !(total > 0) || !finite(total) {
		m.grid[l] = NewModel(DefaultWeights()).grid[l]
	}
	m.syncLevel(l)
}

// tiltLevel is feedback on level l: "lower than you think" (dir -1) or
// "higher" (dir +1). The grid is tilted away from the current mean: values
// on the wrong side of it lose most of their weight.
func (m Model) tiltLevel(l, dir int) Model {
	j := levelParams[l]
	mean := m.mean[j]
	for k := range levelBins {
		d := float64(dir) * (levelValue(k) - mean)
		m.grid[l][k] *= 0.15 + 0.85*sigmoid(d/levelTiltWidth)
	}
	m.syncLevel(l)
	return m
}

// pullLevels is the rest of perfect_match: the student says this school is
// what they want, so each preferred level is pulled towards the value at
// which this school fits best (its size; the selectivity preference whose
// target is its selectivity level).
func (m *Model) pullLevels(p Profile, cat *Catalog, idx int) {
	f := &cat.feat[idx]
	sc := newScorer(p, m.Weights(), cat)
	for l, j := range levelParams {
		var at float64
		switch {
		case j == pSize && f.hasSize:
			at = float64(f.sizeScale)
		case j == pSelectivity && f.selK > 0:
			at = float64(f.selLevel)
			if sc.studentK > 0 {
				at = clamp01(0.5 + (at-strengthOf(sc.sat))/0.6)
			}
		default:
			continue
		}
		for k := range levelBins {
			// Reopen the question a little (as feedbackReopen does for the
			// importances), then pull.
			d := (levelValue(k) - at) / levelPullWidth
			m.grid[l][k] = (0.85*m.grid[l][k] + 0.15/levelBins) * (0.1 + 0.9*math.Exp(-d*d/2))
		}
		m.syncLevel(l)
	}
}

// syncLevel normalises level l's grid and sets the level's mean and
// variance from it.
func (m *Model) syncLevel(l int) {
	g := &m.grid[l]
	total := 0.0
	for _, p := range g {
		total += p
	}
	if !(total > 0) || !finite(total) {
		for k := range g {
			g[k] = 1
		}
		total = levelBins
	}
	if math.Abs(total-1) > 1e-12 {
		for k := range g {
			g[k] /= total
		}
	}
	mean := 0.0
	for k := range g {
		mean += g[k] * levelValue(k)
	}
	vr := 0.0
	for k := range g {
		d := levelValue(k) - mean
		vr += g[k] * d * d
	}
	j := levelParams[l]
	m.mean[j] = mean
	for c := range nParams {
		m.cov[j][c], m.cov[c][j] = 0, 0
	}
	m.cov[j][j] = max(vr, levelMinVar)
}

// linearise returns the gradient of the linear predictor z = k*(S - t) in
// the parameters at the posterior mean, and z there, S being the whole
// model's score: the weights' plus the residual and its intercept.
func (m Model) linearise(p Profile, cat *Catalog, idx int) (x [nParams]float64, z float64, ok bool) {
	e := newLearnEval(p, m.Weights(), cat)
	var b breakdown
	s, g := e.eval(idx, &b)
	in := residualInOf(cat, idx, &b)
	phi := residualFeatures(&in, e.sc.strength())
	return m.features(s+residualOf(&m.rmean, &phi)+m.rconst, g)
}

// residualAt is the residual of school i, whose breakdown under the
// model's weights is b, for the student of sc: what the model adds to the
// weights' score when it ranks.
func (m *Model) residualAt(sc *scorer, cat *Catalog, i int, b *breakdown) float64 {
	if m.nhist == 0 {
		return 0
	}
	in := residualInOf(cat, i, b)
	phi := residualFeatures(&in, sc.strength())
	return residualOf(&m.rmean, &phi)
}

// features turns a score and its gradient in the weights into the linear
// predictor's gradient in the parameters (logit weights and threshold).
func (m *Model) features(s float64, g [nWeights]float64) (x [nParams]float64, z float64, ok bool) {
	slope := m.featureSlopes()
	return m.featuresWith(&slope, s, g)
}

// featureSlopes are the importances at the posterior mean, w =
// sigmoid(theta), by weight (levels: unused): features multiplies an
// importance's gradient by w*(1-w), since its logit is the parameter. They
// depend on the model only, so a caller that linearises many schools
// computes them once.
func (m *Model) featureSlopes() (slope [nWeights]float64) {
	for j := range nWeights {
		if !isLevel(j) {
			slope[j] = sigmoid(m.mean[j])
		}
	}
	return slope
}

// featuresWith is features with the model's featureSlopes.
func (m *Model) featuresWith(slope *[nWeights]float64, s float64, g [nWeights]float64) (x [nParams]float64, z float64, ok bool) {
	for j := range nWeights {
		if isLevel(j) {
			x[j] = likeSharpness * g[j] // levels are on the [0,1] scale
			continue
		}
		w := slope[j]
		x[j] = likeSharpness * g[j] * w * (1 - w)
	}
	x[pThreshold] = -likeSharpness
	z = likeSharpness * (s - m.mean[pThreshold])
	ok = finite(z)
	for _, v := range x {
		ok = ok && finite(v)
	}
	return x, z, ok
}

// laplaceLogistic finds the mode of N(z; zbar, v) * sigmoid(z)^(omega*y) *
// sigmoid(-z)^(omega*(1-y)): the root of the decreasing function
// f(z) = -(z-zbar)/v + omega*(y - sigmoid(z)), which lies between zbar and
// zbar + v*omega*(y - sigmoid(zbar)). Newton steps that leave the bracket
// are replaced by bisection.
func laplaceLogistic(zbar, v, y, omega float64) float64 {
	if !(v > 0) {
		return zbar
	}
	lo, hi := zbar, zbar+v*omega*(y-sigmoid(zbar))
	if lo > hi {
		lo, hi = hi, lo
	}
	z := zbar
	for range 40 {
		s := sigmoid(z)
		f := -(z-zbar)/v + omega*(y-s)
		if f > 0 {
			lo = z
		} else {
			hi = z
		}
		d := -1/v - omega*s*(1-s)
		next := z - f/d
		if !(next > lo && next < hi) {
			next = (lo + hi) / 2
		}
		if math.Abs(next-z) < 1e-10 {
			return next
		}
		z = next
	}
	return z
}

// Prediction is what the model expects of a student and a school.
type Prediction struct {
	// Like is the probability that the student likes the school, averaged
	// over the model's uncertainty (so it stays near 0.5 while the model
	// knows little).
	Like float64
	// Uncertainty is the posterior standard deviation of the log-odds of a
	// like: how unsure the model is about this school, from its uncertainty
	// about the parameters the school's score depends on.
	Uncertainty float64
	// Information is the expected information a swipe on this school gives
	// about the preference weights, in nats (0.5*log(1 + p(1-p)*v), v the
	// part of the log-odds variance that comes from the weights): highest
	// for schools whose outcome the model cannot call because it is unsure
	// of the weights they depend on. Exploration and probes pick the
	// schools that maximise it.
	Information float64
}

// Predict is the model's prediction for school idx; a zero Prediction with
// Like 0.5 when idx is out of range.
func (m Model) Predict(p Profile, cat *Catalog, idx int) Prediction {
	m = m.orDefault()
	if cat == nil || idx < 0 || idx >= cat.Len() {
		return Prediction{Like: 0.5}
	}
	x, z, ok := m.linearise(p, cat, idx)
	if !ok {
		return Prediction{Like: 0.5}
	}
	return predictFrom(&x, z, &m.cov)
}

// predictFrom is the prediction for a school whose linear predictor has
// gradient x and value z, under covariance cov.
func predictFrom(x *[nParams]float64, z float64, cov *[nParams][nParams]float64) Prediction {
	like, v, vw := moments(x, z, cov)
	return Prediction{Like: like, Uncertainty: math.Sqrt(v), Information: 0.5 * math.Log1p(like*(1-like)*vw)}
}

// moments are the moderated like probability, the variance of the
// log-odds, and the part of it that comes from the weights (the like
// threshold is not what ranking needs to know, so Information counts only
// that part).
func moments(x *[nParams]float64, z float64, cov *[nParams][nParams]float64) (like, v, vw float64) {
	var u [nParams]float64 // cov x, unrolled over the columns (nParams is 9)
	x0, x1, x2, x3, x4, x5, x6, x7, x8 := x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], x[8]
	for a := range nParams {
		c := &cov[a]
		r := c[0]*x0 + c[1]*x1 + c[2]*x2 + c[3]*x3 + c[4]*x4 + c[5]*x5 + c[6]*x6 + c[7]*x7 + c[8]*x8
		u[a] = r
		v += x[a] * r
	}
	v = max(0, v)
	like = sigmoid(z / math.Sqrt(1+math.Pi*v/8))
	t := pThreshold
	vw = max(0, v-2*x[t]*u[t]+x[t]*x[t]*cov[t][t])
	return like, v, vw
}

// PredictLike is the probability that the student likes school idx.
func (m Model) PredictLike(p Profile, cat *Catalog, idx int) float64 {
	return m.Predict(p, cat, idx).Like
}

// PatternBreakProbability is how sure the model must have been of the
// other direction for a swipe to be a pattern break.
const PatternBreakProbability = 0.8

// PatternBreak reports whether a swipe in direction d on school idx breaks
// the pattern: the model (before the swipe is folded in) predicted the
// other direction with probability at least PatternBreakProbability. With
// a swipe on a probe, it is when a swipe response sets trigger_feedback.
func (m Model) PatternBreak(p Profile, cat *Catalog, idx int, d Direction) bool {
	if cat == nil || idx < 0 || idx >= cat.Len() {
		return false
	}
	like := m.PredictLike(p, cat, idx)
	switch d {
	case Like:
		return 1-like >= PatternBreakProbability
	case Dislike:
		return like >= PatternBreakProbability
	}
	return false
}

// Fold builds a model from a prior and a student's history in order,
// keeping only the latest counted swipe on each school (a repeat swipe's
// latest direction is what the learner keeps). The online path is Observe,
// one observation at a time; Fold is for rebuilding, after a repeat swipe
// changed its direction or a stored model's version is not ModelVersion.
// Its cost is linear in the history.
func Fold(prior Weights, p Profile, cat *Catalog, history []Observation) Model {
	last := map[int]int{}
	for i, o := range history {
		if o.Counted() {
			last[o.Index] = i
		}
	}
	m := NewModel(prior)
	refit := false
	for i, o := range history {
		if o.Counted() && last[o.Index] != i {
			continue
		}
		var remembered bool
		m, _, remembered = m.observe(p, cat, o)
		refit = refit || remembered
	}
	if refit {
		m.refit(p, cat)
	}
	return m
}

func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// logit is the inverse of sigmoid, bounded to the model's logit range.
func logit(p float64) float64 {
	p = min(1-1e-9, max(1e-9, p))
	return max(-logitLimit, min(logitLimit, math.Log(p/(1-p))))
}

// clampParam keeps a parameter's mean in its range: a weight's logit in
// [-logitLimit, logitLimit], the like threshold in [0,1].
func clampParam(j int, v float64) float64 {
	if j == pThreshold || isLevel(j) {
		return min(1, max(0, v))
	}
	return max(-logitLimit, min(logitLimit, v))
}

// weightArray lists w in WeightKeys order.
func weightArray(w Weights) [nWeights]float64 {
	return [nWeights]float64{w.CostWeight, w.DistanceWeight, w.OutcomesWeight, w.CampusWeight,
		w.ProgramWeight, w.AidWeight, w.AcademicSelectivity, w.SizePreference}
}

// weightsFromArray is the inverse of weightArray.
func weightsFromArray(a [nWeights]float64) Weights {
	return Weights{
		CostWeight: a[pCost], DistanceWeight: a[pDistance], OutcomesWeight: a[pOutcomes], CampusWeight: a[pCampus],
		ProgramWeight: a[pProgram], AidWeight: a[pAid], AcademicSelectivity: a[pSelectivity], SizePreference: a[pSize],
	}.Sanitize()
}
