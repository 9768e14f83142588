package match

import "math"

// swipeMemory is one school of the residual's history: the school, what
// the student did about it and how much that counts.
type swipeMemory struct {
	id     string // the school's ID
	like   bool
	weight uint8 // the observation's weight, in twentieths (a counted swipe is 20)
}

// weightCode is an observation weight in twentieths.
func weightCode(omega float64) uint8 { return uint8(max(1, min(127, math.Round(omega*20)))) }

// counted reports whether the memory is a counted swipe or stronger (a
// weak signal weighs less than a swipe).
func (s swipeMemory) counted() bool { return s.weight >= 20 }

// remember records an observation of school idx in the residual's history:
// a counted swipe (or perfect_match) replaces whatever was remembered of
// the school, so the latest direction is what is kept; a weak signal is
// kept only when nothing stronger is remembered of the school. The oldest
// school is forgotten when the history is full.
func (m *Model) remember(cat *Catalog, idx int, like bool, omega float64) {
	id := cat.Schools[idx].ID
	if id == "" || len(id) > maxMemoryID {
		return
	}
	mem := swipeMemory{id: id, like: like, weight: weightCode(omega)}
	for k := 0; k < m.nhist; k++ {
		if m.hist[k].id != id {
			continue
		}
		if !mem.counted() && (m.hist[k].counted() || m.hist[k].weight >= mem.weight) {
			return
		}
		copy(m.hist[k:m.nhist], m.hist[k+1:m.nhist])
		m.nhist--
		break
	}
	if m.nhist == historyLen {
		copy(m.hist[:], m.hist[1:])
		m.nhist--
	}
	m.hist[m.nhist] = mem
	m.nhist++
}

// nFit is the number of parameters a refit solves for: a coefficient per
// feature (at rScore: gamma - 1), and the intercept.
const nFit = nResidual + 1

// fitPriorVar is the prior variance of each fitted parameter.
func fitPriorVar(j int) float64 {
	switch j {
	case rScore:
		return fitVarScore
	case nResidual:
		return fitVarIntercept
	}
	return fitVarFeature
}

// refit fits the residual to the history (see learn_residual.go): the
// maximum a posteriori coefficients of the logistic regression with the
// weights' prediction as offset, by Newton steps from the last fit.
// Schools the catalogue no longer holds are left out.
func (m *Model) refit(p Profile, cat *Catalog) {
	if m.nhist == 0 {
		return
	}
	sc := newScorer(p, m.Weights(), cat)
	strength, t := sc.strength(), m.mean[pThreshold]
	var (
		x   [historyLen][nFit]float64 // the design: features, gamma's column (the offset), 1
		off [historyLen]float64       // the offset: the weights' linear predictor
		y   [historyLen]float64
		w   [historyLen]float64
		n   int
		b   breakdown
	)
	for k := range m.nhist {
		h := &m.hist[k]
		idx, ok := cat.Index(h.id)
		if !ok {
			continue
		}
		sc.score(&cat.feat[idx], idx, &b)
		in := residualInOf(cat, idx, &b)
		phi := residualFeatures(&in, strength)
		off[n] = likeSharpness * (b.score - t)
		copy(x[n][:nResidual], phi[:])
		x[n][rScore] = off[n]
		x[n][nResidual] = 1
		if h.like {
			y[n] = 1
		}
		w[n] = float64(h.weight) / 20
		n++
	}
	if n == 0 {
		return
	}
	// The parameters, from the last fit.
	var start [nFit]float64
	for j := range nResidual {
		start[j] = m.rmean[j] * likeSharpness
	}
	start[rScore] = m.rmean[rScore] / residualScale[rScore]
	start[nResidual] = (m.rconst - start[rScore]*(scoreCentre-t)) * likeSharpness
	// The prior is chosen by the swipes: each candidate is fitted, and the
	// one whose (Laplace) marginal likelihood is highest wins. Until
	// freeFitFrom swipes' worth of evidence, the candidates lean on the
	// weights' score (a student whose swipes the weights explain gets the
	// tightest prior and a residual near zero; one whose taste they cannot
	// express gets a wider one); from then on the weights' score is one
	// feature among the others, its coefficient learned from zero.
	var outer [historyLen][nTri]float64
	d := &fitData{x: &x, outer: &outer, off: &off, y: &y, w: &w, n: n}
	d.outers()
	candidates := fitCandidates[:]
	if d.evidence() >= freeFitFrom {
		candidates = freeCandidates[:]
	}
	best, bestEv := start, math.Inf(-1)
	theta := start
	for _, c := range candidates {
		var ev float64
		var ok bool
		theta, ev, ok = d.fit(theta, c)
		ev += c.logPrior
		if ok && ev > bestEv {
			best, bestEv = theta, ev
		}
	}
	if math.IsInf(bestEv, -1) {
		return // keep the last fit
	}
	theta = best
	for j := range nFit {
		if !finite(theta[j]) {
			return
		}
	}
	for j := range nResidual {
		m.rmean[j] = clampResidual(theta[j] / likeSharpness)
	}
	m.rmean[rScore] = clampResidual(theta[rScore] * residualScale[rScore])
	// The fit weighs the score as gamma * k * (S - t); the stored
	// coefficient weighs the standardised score, centred at scoreCentre:
	// the difference, a constant, goes to the intercept, so that the
	// model predicts what was fitted.
	m.rconst = max(-1, min(1, theta[nResidual]/likeSharpness+theta[rScore]*(scoreCentre-t)))
}

// scoreCentre is the score at which the standardised match_score feature
// is zero.
var scoreCentre = 0.5 + residualCentre[rScore]

// fitCandidate is a prior a refit may choose: the scale of the features'
// prior variance, and what is believed of the weights' own prediction.
type fitCandidate struct {
	scale float64
	score scorePrior
	// logPrior is the candidate's prior log-odds: the wider a prior, the
	// more its marginal likelihood must gain to be chosen.
	logPrior float64
}

// scorePrior is a candidate's prior on gamma, the weight of the weights'
// own prediction.
type scorePrior uint8

const (
	// scoreLed: gamma ~ N(1, fitVarScore), the weights' prediction trusted.
	scoreLed scorePrior = iota
	// scoreLeftOut: gamma fixed at 0, the residual alone ranks.
	scoreLeftOut
	// scoreFree: gamma ~ N(fitFreeScoreMean, fitVarFreeScore), the
	// weights' score one feature among the others, its weight earned by
	// the swipes.
	scoreFree
)

// prior is the candidate's prior: each parameter's mean and variance.
func (c fitCandidate) prior() (pm, pv [nFit]float64) {
	for j := range nFit {
		pv[j] = fitPriorVar(j)
		if j != rScore && j != nResidual {
			pv[j] *= c.scale
		}
	}
	switch c.score {
	case scoreLeftOut:
		pm[rScore], pv[rScore] = -1, 1e-6
	case scoreFree:
		pm[rScore], pv[rScore] = fitFreeScoreMean-1, fitVarFreeScore
	}
	return pm, pv
}

// fitCandidates are the priors a refit chooses from before freeFitFrom.
var fitCandidates = [...]fitCandidate{{0.01, scoreLed, 0}, {0.05, scoreLed, 0}, {0.25, scoreLed, 0}, {1, scoreLed, 0}, {1, scoreLeftOut, 0}}

// freeCandidates are the priors a refit chooses from after freeFitFrom.
var freeCandidates = [...]fitCandidate{{0.05, scoreFree, 0}, {0.25, scoreFree, 0}, {1, scoreFree, 0}}

// freeFitFrom is the evidence (counted swipes; a weak signal counts its
// weight) from which the weights' score stops being the residual's prior
// and becomes one of its features. The weights' score is a good guess
// before a student has swiped much; after that, for a taste of another
// shape, ranking by it and a correction learned on the schools it chose
// to show ranks the rest of the catalogue worse than a regression that
// does not lean on it, while a student the weights describe gets much of
// gamma's weight back from the swipes themselves and the features stand
// in for the rest (see docs/learning.md).
const freeFitFrom = 15.0

// fitFreeScoreMean and fitVarFreeScore are gamma's prior in the free fit,
// N(0.25, 0.15) (sd 0.39): the weights' score counts a quarter unless the
// swipes insist. The swipes a student makes are on the schools the score
// chose to show, where the score predicts them well whatever the taste
// (the marginal likelihood prefers a large gamma for every kind of
// student, docs/learning.md): with a wide prior around 0 (N(0, 1),
// algorithm 1.3.0) gamma stays large, and the catalogue is ranked by the
// score where the swipes never looked. The prior is as tight and as low
// as the score mode allows (TestLearnerLearns: a student the weights
// describe must not lose the score's ranking): around 0, or tighter than
// 0.15, closes more of the gap to a logistic regression for tastes of
// other shapes but unlearns the score mode's prior.
const (
	fitFreeScoreMean = 0.25
	fitVarFreeScore  = 0.15
)

// fitData is a refit's data: the design, offsets, outcomes and weights of
// n schools.
type fitData struct {
	x     *[historyLen][nFit]float64
	outer *[historyLen][nTri]float64 // each row's outer product x x', lower triangle by rows
	off   *[historyLen]float64
	y     *[historyLen]float64
	w     *[historyLen]float64
	n     int
}

// nTri is the size of a packed lower triangle of nFit x nFit.
const nTri = nFit * (nFit + 1) / 2

// outers fills d.outer from d.x.
func (d *fitData) outers() {
	for i := range d.n {
		xi, oi := &d.x[i], &d.outer[i]
		k := 0
		for a := range nFit {
			for bb := 0; bb <= a; bb++ {
				oi[k] = xi[a] * xi[bb]
				k++
			}
		}
	}
}

// evidence is the data's total weight: counted swipes, and weak signals
// by their weight.
func (d *fitData) evidence() float64 {
	e := 0.0
	for i := range d.n {
		e += d.w[i]
	}
	return e
}

// fit finds the maximum a posteriori parameters from start under the
// prior with the features' variance scaled by scale, and returns them
// with the log marginal likelihood (Laplace's approximation, up to a
// constant that does not depend on the scale).
func (d *fitData) fit(start [nFit]float64, c fitCandidate) (theta [nFit]float64, logEv float64, ok bool) {
	theta = start
	pm, pv := c.prior()
	if c.score == scoreLeftOut {
		theta[rScore] = -1
	}
	var (
		l       [nFit][nFit]float64 // the Cholesky factor of the Hessian last worked out
		inv     [nFit]float64       // 1 / l[j][j]
		pr, prN [historyLen]float64 // the like probabilities at theta, and at a step's end
	)
	now := d.logPosterior(&theta, &pm, &pv, &pr)
	last := math.Inf(1) // the last step's length
	if !d.factor(&pr, &pv, &l, &inv) {
		return theta, 0, false
	}
	// Newton steps with the Hessian of where they started (a chord
	// method: from the last fit the mode is near, and the Hessian hardly
	// changes on the way), worked out again after a long step.
	for range fitSteps {
		var g [nFit]float64
		for j := range nFit {
			g[j] = -(theta[j] - pm[j]) / pv[j]
		}
		for i := range d.n {
			r, xi := d.w[i]*(d.y[i]-pr[i]), &d.x[i]
			for a := range nFit {
				g[a] += r * xi[a]
			}
		}
		delta := cholSolve(&l, &inv, &g)
		// A step halved until the posterior rises: from a start where the
		// predictions are saturated the Hessian is mostly the prior's, and
		// a full step overshoots far.
		alpha := 1.0
		var next [nFit]float64
		for {
			for j := range nFit {
				next[j] = theta[j] + alpha*delta[j]
			}
			lp := d.logPosterior(&next, &pm, &pv, &prN)
			if lp >= now || alpha < 1e-3 {
				now, pr = lp, prN
				break
			}
			alpha /= 2
		}
		most := 0.0
		for j := range nFit {
			most = max(most, math.Abs(next[j]-theta[j]))
		}
		theta = next
		if most < fitTolerance {
			break
		}
		// A long step, or one that shrank too little (the Hessian it took
		// is far from the one here), takes Newton's Hessian again.
		if (most > chordStep || most > chordRate*last) && !d.factor(&pr, &pv, &l, &inv) {
			return theta, 0, false
		}
		last = most
	}
	// The Hessian at the mode, for the evidence.
	if !d.factor(&pr, &pv, &l, &inv) {
		return theta, 0, false
	}
	// log p(y | theta) + log p(theta) - 1/2 log |H| (+ constants).
	logEv = now
	for j := range nFit {
		logEv -= 0.5*math.Log(pv[j]) + math.Log(l[j][j])
	}
	return theta, logEv, finite(logEv)
}

// logPosterior is the log posterior of theta (up to a constant) under the
// prior of means pm and variances pv. When pr is not nil it receives each
// school's like probability at theta, from the same exponential.
func (d *fitData) logPosterior(theta, pm, pv *[nFit]float64, pr *[historyLen]float64) float64 {
	lp := 0.0
	for i := range d.n {
		xi := &d.x[i]
		eta := d.off[i]
		for j := range nFit {
			eta += theta[j] * xi[j]
		}
		// log sigmoid(eta) and sigmoid(eta) from one exponential, without
		// overflow: e = exp(-|eta|).
		e := math.Exp(-math.Abs(eta))
		l1 := math.Log1p(e)
		logLike, logDislike := -l1, -eta-l1 // eta >= 0
		p := 1 / (1 + e)
		if eta < 0 {
			logLike, logDislike = eta-l1, -l1
			p = e / (1 + e)
		}
		if pr != nil {
			pr[i] = p
		}
		if d.y[i] > 0.5 {
			lp += d.w[i] * logLike
		} else {
			lp += d.w[i] * logDislike
		}
	}
	for j := range nFit {
		lp -= 0.5 * (theta[j] - pm[j]) * (theta[j] - pm[j]) / pv[j]
	}
	return lp
}

// clampResidual keeps a coefficient within residualLimit.
func clampResidual(v float64) float64 { return max(-residualLimit, min(residualLimit, v)) }

// fitTolerance is the step (in any parameter) at which a fit has
// reached its mode: a chord step costs a pass over the history, not a
// Hessian, so the mode is found closely.
const fitTolerance = 1e-5

// chordStep is the longest step (in any parameter) after which a fit
// keeps the Hessian it has, and chordRate the most a step may keep of the
// one before: a slower shrink means the Hessian taken is far from the one
// where the fit is, and the steps would run out before the mode.
const (
	chordStep = 0.05
	chordRate = 0.25
)

// factor works out the Hessian of the negative log posterior where the
// like probabilities are pr, under the prior variances pv, and leaves its
// Cholesky factor in l (inv: the reciprocals of its diagonal). It reports
// false when the Hessian is not positive definite.
func (d *fitData) factor(pr *[historyLen]float64, pv *[nFit]float64, l *[nFit][nFit]float64, inv *[nFit]float64) bool {
	// The data's part, packed: each school's outer product was worked out
	// once for every candidate and step (fitData.outer).
	var hp [nTri]float64
	for i := range d.n {
		c, oi := d.w[i]*pr[i]*(1-pr[i]), &d.outer[i]
		for k := range hp {
			hp[k] += c * oi[k]
		}
	}
	var h [nFit][nFit]float64
	for a, k := 0, 0; a < nFit; a++ {
		for bb := 0; bb <= a; bb, k = bb+1, k+1 {
			h[a][bb] = hp[k]
		}
		h[a][a] += 1 / pv[a]
	}
	return cholesky(&h, l, inv)
}

// cholesky factors a symmetric positive definite h, of which it reads the
// lower triangle, into l, with the reciprocals of l's diagonal in inv. It
// reports false when h is not positive definite.
func cholesky(h, l *[nFit][nFit]float64, inv *[nFit]float64) bool {
	for i := range nFit {
		hi, li := &h[i], &l[i]
		for j := 0; j < i; j++ {
			s, lj := hi[j], &l[j]
			for k := range j {
				s -= li[k] * lj[k]
			}
			li[j] = s * inv[j]
		}
		s := hi[i]
		for k := range i {
			s -= li[k] * li[k]
		}
		if !(s > 0) {
			return false
		}
		li[i] = math.Sqrt(s)
		inv[i] = 1 / li[i]
	}
	return true
}

// cholSolve solves l l' x = g.
func cholSolve(l *[nFit][nFit]float64, inv *[nFit]float64, g *[nFit]float64) (x [nFit]float64) {
	var z [nFit]float64
	for i := range nFit {
		s, li := g[i], &l[i]
		for k := range i {
			s -= li[k] * z[k]
		}
		z[i] = s * inv[i]
	}
	for i := nFit - 1; i >= 0; i-- {
		s := z[i]
		for k := i + 1; k < nFit; k++ {
			s -= l[k][i] * x[k]
		}
		x[i] = s * inv[i]
	}
	return x
}
