package match

// learnEval scores schools for one (profile, weights) pair together with
// the gradient of the match score in the eight preference weights.
//
// The score is S = sum over families F of FW_F * c_F, where the family
// weights FW_F = r_F / R come from the raw family weights of
// FamilyWeightsFor and each component c_F = sum of a_k * f_k is a mean of
// factors with weights a_k = q_k / Q_F (newScorer). An importance w moves
// S through both:
//
//	dS/dw = (1/R) * sum_F dr_F/dw * (c_F - S)  +  FW_F * (1/Q_F) * sum_k dq_k/dw * (f_k - c_F)
//
// and the two preferred levels move it through the factor they aim:
// academic_selectivity through selectivity_fit (its target moves 0.6 per
// unit, 1 with no academic signal), size_preference through size_fit.
// The constants below are the slopes in FamilyWeightsFor and newScorer;
// TestLearnGradientMatchesFiniteDifferences holds them to the scoring code.
type learnEval struct {
	sc      scorer
	cat     *Catalog
	w       [nWeights]float64
	invR    float64
	invQA   float64
	invQF   float64
	invQC   float64
	dTarget float64 // d(selectivity target)/d(academic_selectivity)
}

func newLearnEval(p Profile, w Weights, cat *Catalog) learnEval {
	w = w.Sanitize()
	e := learnEval{sc: newScorer(p, w, cat), cat: cat, w: weightArray(w)}
	r := 0.35 + 0.5*w.ProgramWeight + 0.10 + 0.6*w.CostWeight + 0.3*w.AidWeight +
		0.10 + 0.5*w.DistanceWeight + 0.4*w.CampusWeight + 0.10 + 0.6*w.OutcomesWeight
	e.invR = 1 / r
	qa := 0.4 + 0.3
	if e.sc.nMaj > 0 {
		qa += 0.1 + 0.6*w.ProgramWeight
	}
	e.invQA = 1 / qa
	e.invQF = 1 / (0.2 + 0.8*w.CostWeight + 0.1 + 0.5*w.AidWeight + 0.3)
	qc := 0.2 + 0.8*w.DistanceWeight + 0.1 + 0.5*w.CampusWeight
	if e.sc.setting >= 0 {
		qc += 0.1 + 0.5*w.CampusWeight
	}
	e.invQC = 1 / qc
	if e.sc.studentK == 0 {
		e.dTarget = 1 // the preference alone is the target
	} else if raw := strengthOf(e.sc.sat) + 0.6*(w.AcademicSelectivity-0.5); raw > 0 && raw < 1 {
		e.dTarget = 0.6
	}
	return e
}

// eval scores school i into b and returns the score and dS/dw in
// WeightKeys order.
func (e *learnEval) eval(i int, b *breakdown) (float64, [nWeights]float64) {
	e.sc.score(&e.cat.feat[i], i, b)
	return e.gradient(i, b)
}

// gradient is dS/dw for a school whose breakdown is b.
func (e *learnEval) gradient(i int, b *breakdown) (float64, [nWeights]float64) {
	sc := &e.sc
	fw := &sc.fw
	s := fw.Academic*b.academic + fw.Financial*b.financial + fw.Campus*b.campus + fw.Outcomes*b.outcomes
	var g [nWeights]float64

	// Family-weight terms.
	dA, dF, dC, dO := b.academic-s, b.financial-s, b.campus-s, b.outcomes-s
	g[pProgram] = e.invR * 0.5 * dA
	g[pCost] = e.invR * 0.6 * dF
	g[pAid] = e.invR * 0.3 * dF
	g[pDistance] = e.invR * 0.5 * dC
	g[pCampus] = e.invR * 0.4 * dC
	g[pOutcomes] = e.invR * 0.6 * dO

	// Factor-weight terms inside the families.
	if sc.nMaj > 0 {
		g[pProgram] += fw.Academic * e.invQA * 0.6 * (b.program - b.academic)
	}
	g[pCost] += fw.Financial * e.invQF * 0.8 * (b.afford - b.financial)
	g[pAid] += fw.Financial * e.invQF * 0.5 * (b.aid - b.financial)
	g[pDistance] += fw.Campus * e.invQC * 0.8 * (b.loc - b.campus)
	camp := b.size - b.campus
	if sc.setting >= 0 {
		camp += b.setting - b.campus
	}
	g[pCampus] += fw.Campus * e.invQC * 0.5 * camp

	// Preferred levels.
	f := &e.cat.feat[i]
	if f.selK > 0 && e.dTarget > 0 {
		d := (float64(f.selLevel) - sc.target) / 0.2
		q := 1 + d*d
		g[pSelectivity] = fw.Academic * sc.wSel * (2 * d / (0.2 * q * q)) * e.dTarget
	}
	if f.hasSize {
		d := (float64(f.sizeScale) - sc.sizePref) / 0.3
		q := 1 + d*d
		g[pSize] = fw.Campus * sc.wSize * (2 * d / (0.3 * q * q))
	}
	return s, g
}
