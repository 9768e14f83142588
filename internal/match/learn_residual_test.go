package match

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
)

// budgetOrder lists the schools with a known price for learnStudent, in
// the order of the default ranking.
func budgetOrder(t *testing.T) (Profile, []int) {
	cat, p := learnCatalog, learnStudent()
	var order []int
	for _, s := range Rank(nil, p, DefaultWeights(), cat) {
		if netPriceOf(p, cat, int(s.Index)) >= 0 {
			order = append(order, int(s.Index))
		}
	}
	require.Greater(t, len(order), 500)
	return p, order
}

// gateStudent swipes as a student with a hard budget would: every school
// the student can afford is liked, every other disliked, whatever else
// the school is. The weights cannot say "nothing above my budget" (the
// affordability curve has no edge at the budget); the residual can.
func gateStudent(t *testing.T, n int) (Profile, Model) {
	cat := learnCatalog
	p, order := budgetOrder(t)
	m := NewModel(SeedWeights(p))
	for k := range n {
		i := order[k*7%len(order)]
		d := Dislike
		if netPriceOf(p, cat, i) <= float64(p.Budget) {
			d = Like
		}
		m, _ = m.Observe(p, cat, SwipeObservation(i, d))
	}
	return p, m
}

func TestTheResidualStartsAtZero(t *testing.T) {
	cat, p := learnCatalog, learnStudent()
	m := NewModel(SeedWeights(p))
	for _, v := range m.Residual() {
		assert.Zero(t, v)
	}
	// Ranking with no residual learned is the weights' alone: the same
	// as a model folded without it.
	var plain Model = m
	for _, i := range []int{3, 70, 900} {
		plain, _ = plain.ObserveWeights(p, cat, SwipeObservation(i, Like))
	}
	withNothing := plain
	withNothing.nhist = 0
	assert.Equal(t, RankModel(nil, p, withNothing, cat), RankModel(nil, p, plain, cat))
}

func TestTheResidualLearnsABudgetGate(t *testing.T) {
	cat := learnCatalog
	p, m := gateStudent(t, 60)
	res := m.Residual()
	t.Logf("in_budget %.3f, below_budget %.3f, match_score %.3f", res["in_budget"], res["below_budget"], res["match_score"])
	assert.Greater(t, res["in_budget"], 0.0, "a school within the budget is liked more than the weights say")

	within := func(ranked []Scored) int {
		c := 0
		for _, s := range ranked[:300] {
			if pr := netPriceOf(p, cat, int(s.Index)); pr >= 0 && pr <= float64(p.Budget) {
				c++
			}
		}
		return c
	}
	without := m
	without.rmean, without.rconst = [nResidual]float64{}, 0
	withR, withoutR := within(RankModel(nil, p, m, cat)), within(RankModel(nil, p, without, cat))
	t.Logf("of the top 300: %d within budget with the residual, %d without", withR, withoutR)
	assert.Greater(t, withR, withoutR)
}

func TestAStudentTheWeightsExplainKeepsASmallResidual(t *testing.T) {
	// Swipes that follow the weights' own score (the top of the ranking
	// liked, the bottom disliked): the residual has nothing to add.
	cat, p := learnCatalog, learnStudent()
	m := NewModel(SeedWeights(p))
	ranked := RankModel(nil, p, m, cat)
	for k := range 40 {
		i, d := int(ranked[k].Index), Like
		if k%2 == 1 {
			i, d = int(ranked[len(ranked)-1-k].Index), Dislike
		}
		m, _ = m.Observe(p, cat, SwipeObservation(i, d))
	}
	most := 0.0
	for k, v := range m.Residual() {
		if k != "match_score" {
			most = max(most, math.Abs(v))
		}
	}
	t.Logf("largest coefficient %.4f, match_score %.4f", most, m.Residual()["match_score"])
	assert.Less(t, most, 0.01, "the tightest prior wins: no feature moves a score by more than 0.01 per standard deviation")
}

func TestSwipesAgainstTheWeightsScoreTurnItDown(t *testing.T) {
	// A student who likes what the weights rank worst and dislikes what
	// they rank best: while the evidence is under freeFitFrom the residual
	// leans on the weights' score (gamma's prior is around 1, or the score
	// is left out); from freeFitFrom on, gamma is learned under a tight
	// prior around a quarter, and these swipes push it below that: the
	// score's weight is taken away, and the features turn the order
	// against it.
	cat, p := learnCatalog, learnStudent()
	m := NewModel(SeedWeights(p))
	ranked := RankModel(nil, p, m, cat)
	gamma := func(m Model) float64 { return 1 + m.rmean[rScore]/residualScale[rScore] }
	for k := range 30 {
		i, d := int(ranked[len(ranked)-1-k].Index), Like
		if k%2 == 1 {
			i, d = int(ranked[k].Index), Dislike
		}
		m, _ = m.Observe(p, cat, SwipeObservation(i, d))
		if k+1 == int(freeFitFrom)-1 {
			t.Logf("gamma after %d swipes: %.3f", k+1, gamma(m))
			assert.GreaterOrEqual(t, gamma(m), -0.01, "before freeFitFrom gamma is not below the score left out")
		}
	}
	t.Logf("gamma after 30 swipes: %.3f", gamma(m))
	assert.Less(t, gamma(m), fitFreeScoreMean, "from freeFitFrom the swipes take the score's weight away")
	top := RankModel(nil, p, m, cat)[:20]
	worst := 0
	for _, s := range top {
		for k := len(ranked) / 2; k < len(ranked); k++ {
			if ranked[k].Index == s.Index {
				worst++
				break
			}
		}
	}
	assert.Greater(t, worst, 10, "most of the new top 20 come from the bottom half of the weights' ranking")
}

func TestTheResidualStaysOutOfTheWeights(t *testing.T) {
	// The eight weights are learned as before: the residual never moves
	// them (learning_state reports what the weights alone learned).
	cat, p := learnCatalog, learnStudent()
	m := NewModel(SeedWeights(p))
	plain := m
	for _, i := range []int{3, 70, 900, 1500, 2200, 41} {
		m, _ = m.Observe(p, cat, SwipeObservation(i, Like))
		plain, _ = plain.ObserveWeights(p, cat, SwipeObservation(i, Like))
	}
	assert.Equal(t, plain.Weights(), m.Weights())
	assert.Equal(t, plain.mean, m.mean)
	assert.Equal(t, plain.cov, m.cov)
	assert.Equal(t, plain.hist, m.hist, "both remember the swipes")
	assert.Zero(t, plain.rmean, "only Observe fits the residual")
	assert.NotZero(t, m.rmean)
}

func TestTheResidualRemembersTheLatestDirection(t *testing.T) {
	cat, p := learnCatalog, learnStudent()
	m := NewModel(SeedWeights(p))
	m, _ = m.Observe(p, cat, SwipeObservation(5, Like))
	m, _ = m.Observe(p, cat, Observation{Index: 6, Interaction: InteractionSave})
	m, _ = m.Observe(p, cat, SwipeObservation(5, Dislike))
	m, _ = m.Observe(p, cat, Observation{Index: 5, Interaction: InteractionTap}) // weaker than the swipe: ignored
	require.Equal(t, 2, m.nhist)
	assert.Equal(t, swipeMemory{id: cat.Schools[6].ID, like: true, weight: 10}, m.hist[0])
	assert.Equal(t, swipeMemory{id: cat.Schools[5].ID, like: false, weight: 20}, m.hist[1])
	for i := range historyLen + 10 {
		m, _ = m.Observe(p, cat, SwipeObservation(100+i, Like))
	}
	assert.Equal(t, historyLen, m.nhist, "the oldest are forgotten")
	assert.Equal(t, cat.Schools[100+historyLen+9].ID, m.hist[historyLen-1].id)
}

func TestFoldFitsTheResidualAsObserveDoes(t *testing.T) {
	cat := learnCatalog
	p, order := budgetOrder(t)
	var history []Observation
	m := NewModel(SeedWeights(p))
	for k := range 30 {
		i := order[k*11%len(order)]
		d := Dislike
		if netPriceOf(p, cat, i) <= float64(p.Budget) {
			d = Like
		}
		history = append(history, SwipeObservation(i, d))
		m, _ = m.Observe(p, cat, history[k])
	}
	f := Fold(SeedWeights(p), p, cat, history)
	assert.Equal(t, m.hist, f.hist)
	for j := range nResidual {
		assert.InDelta(t, m.rmean[j], f.rmean[j], 1e-4, residualKeys[j])
	}
}

func TestRankFactorsIsRankModelWithAResidual(t *testing.T) {
	cat := learnCatalog
	p, m := gateStudent(t, 40)
	require.NotZero(t, m.rmean)
	f := NewFactors(p, cat)
	want := RankModel(nil, p, m, cat)
	got := RankFactors(nil, f, p, m)
	for k := range want {
		want[k].Confidence = 0
	}
	assert.Equal(t, want, got, "bit for bit")
}

func TestTheResidualRoundTrips(t *testing.T) {
	_, m := gateStudent(t, 60)
	b, err := m.MarshalBinary()
	require.NoError(t, err)
	t.Logf("binary form: %d bytes", len(b))
	assert.Less(t, len(b), 2000, "the stored form stays in the row")
	back, err := DecodeModel(b)
	require.NoError(t, err)
	assert.Equal(t, m, back)
	j, err := json.Marshal(m)
	require.NoError(t, err)
	var fromJSON Model
	require.NoError(t, json.Unmarshal(j, &fromJSON))
	assert.Equal(t, m, fromJSON)

	// Cut short or padded: refused.
	_, err = DecodeModel(b[:len(b)-3])
	require.Error(t, err)
	_, err = DecodeModel(append(b, 0))
	require.Error(t, err)

	// Damaged residual values are replaced by safe ones.
	var doc map[string]any
	require.NoError(t, json.Unmarshal(j, &doc))
	doc["residual"] = map[string]any{"features": []string{"in_budget"}, "mean": []float64{5}, "intercept": 1e300,
		"history": []map[string]any{{"school_id": "", "like": true}, {"school_id": "x", "like": true, "weight": -1}}}
	j, err = json.Marshal(doc)
	require.NoError(t, err)
	var damaged Model
	require.NoError(t, json.Unmarshal(j, &damaged))
	assert.Equal(t, residualLimit, damaged.Residual()["in_budget"])
	assert.Equal(t, 1.0, damaged.rconst)
	require.Equal(t, 1, damaged.nhist)
	assert.Equal(t, swipeMemory{id: "x", like: true, weight: 20}, damaged.hist[0])
}

func TestUUIDsRoundTrip(t *testing.T) {
	for _, s := range []string{"0b8f3c2e-9d41-5a7e-8c11-2f3e4d5c6b7a", "00000000-0000-0000-0000-000000000000"} {
		u, ok := parseUUID(s)
		require.True(t, ok)
		assert.Equal(t, s, formatUUID(u))
	}
	for _, s := range []string{"0B8F3C2E-9D41-5A7E-8C11-2F3E4D5C6B7A", "not-a-uuid", "0b8f3c2e9d415a7e8c112f3e4d5c6b7a0000"} {
		_, ok := parseUUID(s)
		assert.False(t, ok, s)
	}
}

func TestResidualTablesAreTheResidual(t *testing.T) {
	// The ranking loop's tables give the model's residual to within their
	// resolution.
	cat := learnCatalog
	p, m := gateStudent(t, 40)
	sc := newScorer(p, m.Weights(), cat)
	tab := newResidualTables(&m.rmean, sc.strength())
	var b breakdown
	for i := 0; i < cat.Len(); i += 37 {
		sc.score(&cat.feat[i], i, &b)
		in := residualInOf(cat, i, &b)
		phi := residualFeatures(&in, sc.strength())
		assert.InDelta(t, residualOf(&m.rmean, &phi), tab.of(&in), 2e-3, "school %d", i)
	}
}

func TestLearnedPreferencesInWords(t *testing.T) {
	cat := learnCatalog
	p, m := gateStudent(t, 60)
	prefs := m.LearnedPreferences(p, cat)
	for _, l := range prefs {
		t.Logf("%-12s %.3f %s", l.Key, l.Strength, l.Text)
	}
	require.NotEmpty(t, prefs)
	assert.Equal(t, "budget", prefs[0].Key, "the budget gate is what was learned most")
	assert.Regexp(t, `^prefers schools under about \$(1[6-9]|2[0-4]),000 a year$`, prefs[0].Text, "near the $20,000 budget")

	// A school within the budget is described by it; one over it is not.
	d := NewModelDescriber(p, m, cat)
	_, order := budgetOrder(t)
	var cheap, dear int = -1, -1
	for _, i := range order {
		switch pr := netPriceOf(p, cat, i); {
		case cheap < 0 && pr < 0.6*float64(p.Budget):
			cheap = i
		case dear < 0 && pr > 1.5*float64(p.Budget):
			dear = i
		}
	}
	require.True(t, cheap >= 0 && dear >= 0)
	reasons := d.Describe(cheap).Reasons
	t.Logf("cheap school: %q", reasons)
	assert.Equal(t, "You tend to like "+prefs[0].Phrase, reasons[0])
	assert.LessOrEqual(t, len(reasons), maxPositive+1)
	for _, r := range d.Describe(dear).Reasons {
		assert.NotContains(t, r, "You tend to like schools under")
	}
	// Without a learned preference, the reasons are the weights' own.
	fresh := NewModel(SeedWeights(p))
	assert.Empty(t, fresh.LearnedPreferences(p, cat))
	plain := NewDescriber(p, fresh.Weights(), cat)
	md := NewModelDescriber(p, fresh, cat)
	assert.Equal(t, plain.Describe(cheap), md.Describe(cheap))
}

func TestTheWholeModelScoresAListAndADetailAlike(t *testing.T) {
	cat := learnCatalog
	p, m := gateStudent(t, 60)
	ranked := RankModel(nil, p, m, cat)
	idx := make([]int32, 0, 40)
	for _, s := range ranked[:40] {
		idx = append(idx, s.Index)
	}
	scores := ScoreAll(nil, p, m.Weights(), cat, idx)
	plain := slicesClone(scores)
	m.AddResidual(p, cat, scores)
	moved := 0
	for k, s := range scores {
		d := DetailModel(p, m, cat, int(s.Index))
		assert.Equal(t, s.Score, d.OverallScore, "list and detail agree")
		assert.Equal(t, Grade(s.Score), d.Grade)
		assert.Equal(t, plain[k].Academic, s.Academic, "the components are the weights' part")
		if s.Score != plain[k].Score {
			moved++
		}
	}
	assert.Positive(t, moved)
	// The whole score follows the order served more closely than the
	// weights' alone: ranked by it, the top 40 keep their order better.
	inversions := func(s []Scored) int {
		n := 0
		for i := 1; i < len(s); i++ {
			if s[i].Score > s[i-1].Score+1e-9 {
				n++
			}
		}
		return n
	}
	assert.LessOrEqual(t, inversions(scores), inversions(plain))
}

func slicesClone(s []Scored) []Scored { return append([]Scored(nil), s...) }

func TestTheModelPredictsWhatTheResidualFitted(t *testing.T) {
	// On the schools it was fitted on, the model's linear predictor is the
	// fitted one: c + gamma * k * (S - t) + beta . phi.
	cat := learnCatalog
	p := NewProfile(domain.Student{ID: "x", IntendedMajors: []domain.Major{"business_marketing"}})
	m := NewModel(SeedWeights(p))
	for k := range 60 {
		d := Like
		if k%5 == 0 {
			d = Dislike
		}
		m, _ = m.Observe(p, cat, SwipeObservation((k*397)%cat.Len(), d))
	}
	sc := newScorer(p, m.Weights(), cat)
	thr := m.mean[pThreshold]
	gamma1 := m.rmean[rScore] / residualScale[rScore]
	require.NotZero(t, gamma1)
	c := (m.rconst - gamma1*(scoreCentre-thr)) * likeSharpness
	var b breakdown
	for k := range m.nhist {
		idx, _ := cat.Index(m.hist[k].id)
		sc.score(&cat.feat[idx], idx, &b)
		in := residualInOf(cat, idx, &b)
		phi := residualFeatures(&in, sc.strength())
		off := likeSharpness * (b.score - thr)
		eta := c + (1+gamma1)*off
		for j := range nResidual {
			if j != rScore {
				eta += m.rmean[j] * likeSharpness * phi[j]
			}
		}
		_, z, ok := m.linearise(p, cat, idx)
		require.True(t, ok)
		assert.InDelta(t, eta, z, 1e-6, "school %d", idx)
	}
}

func TestNoLearnedReasonWithoutTheData(t *testing.T) {
	// A school whose price, distance, size, selectivity or setting is not
	// known is never told a preference about it.
	cat := learnCatalog
	p, m := gateStudent(t, 60)
	prefs := m.LearnedPreferences(p, cat)
	require.NotEmpty(t, prefs)
	sc := newScorer(p, m.Weights(), cat)
	var b breakdown
	for i := 0; i < cat.Len(); i += 7 {
		sc.score(&cat.feat[i], i, &b)
		in := residualInOf(cat, i, &b)
		in.afford, in.dist, in.size, in.level, in.setting = Neutral, -1, -1, -1, -1
		r := m.learnedReason(prefs, &in, sc.strength())
		for _, key := range []string{"budget", "distance", "size", "selectivity", "setting"} {
			for _, l := range prefs {
				if l.Key == key {
					assert.NotEqual(t, "You tend to like "+l.Phrase, r, "school %d", i)
				}
			}
		}
	}
}

func TestTheResidualBeyondTheTable(t *testing.T) {
	// Past the distance table's reach the ranking's tables and the exact
	// residual (the score shown) agree.
	var beta [nResidual]float64
	for j := range beta {
		beta[j] = 0.3
	}
	tab := newResidualTables(&beta, 0.5)
	for _, d := range []float64{3199, 3200, 5000, 9000} {
		in := residualIn{afford: 0.9, sat: 0.8, prog: 0.5, outcomes: 0.6, aid: 0.5, value: 0.5, score: 0.6,
			dist: d, level: 0.4, size: 0.5, setting: 2}
		phi := residualFeatures(&in, 0.5)
		assert.InDelta(t, residualOf(&beta, &phi), tab.of(&in), 2e-3, "%v miles", d)
	}
}

func TestEveryPriorOfTheRefitConverges(t *testing.T) {
	// Each candidate prior is fitted to its mode, from the last fit: a
	// Newton step from where the predictions are saturated overshoots
	// unless it is cut back, and a diverged fit would never be chosen.
	cat, p := learnCatalog, learnStudent()
	m := NewModel(SeedWeights(p))
	for k := range 100 {
		d := Like
		if k%3 == 0 {
			d = Dislike
		}
		m, _ = m.Observe(p, cat, SwipeObservation((k*7919)%cat.Len(), d))
	}
	sc := newScorer(p, m.Weights(), cat)
	var x [historyLen][nFit]float64
	var off, y, w [historyLen]float64
	var b breakdown
	for k := range m.nhist {
		idx, _ := cat.Index(m.hist[k].id)
		sc.score(&cat.feat[idx], idx, &b)
		in := residualInOf(cat, idx, &b)
		phi := residualFeatures(&in, sc.strength())
		off[k] = likeSharpness * (b.score - m.mean[pThreshold])
		copy(x[k][:nResidual], phi[:])
		x[k][rScore], x[k][nResidual] = off[k], 1
		if m.hist[k].like {
			y[k] = 1
		}
		w[k] = 1
	}
	var outer [historyLen][nTri]float64
	// The whole history, and short ones with weak signals among them
	// (where the chord steps shrink slowest).
	for _, n := range []int{m.nhist, 12, 5} {
		if n < m.nhist {
			for k := range n {
				w[k] = []float64{1, 0.25, 2}[k%3]
			}
		}
		d := &fitData{x: &x, outer: &outer, off: &off, y: &y, w: &w, n: n}
		d.outers()
		checkEveryPriorConverges(t, d)
	}
}

// checkEveryPriorConverges fits every candidate prior to d in turn, each
// from the last one's mode, and checks each is at its mode.
func checkEveryPriorConverges(t *testing.T, d *fitData) {
	t.Helper()
	var theta [nFit]float64
	for _, c := range append(fitCandidates[:], freeCandidates[:]...) {
		next, ev, ok := d.fit(theta, c)
		require.True(t, ok, "%+v", c)
		// At the mode the log posterior's gradient is zero: the chord
		// steps (one Hessian for several steps) end where Newton's would.
		pm, pv := c.prior()
		var pr [historyLen]float64
		d.logPosterior(&next, &pm, &pv, &pr)
		for j := range nFit {
			g := -(next[j] - pm[j]) / pv[j]
			for i := range d.n {
				g += d.w[i] * (d.y[i] - pr[i]) * d.x[i][j]
			}
			assert.InDelta(t, 0, g*math.Sqrt(pv[j]), 1e-3, "%+v: gradient %d at the mode", c, j)
		}
		again, ev2, _ := d.fit(next, c)
		for j := range nFit {
			assert.InDelta(t, next[j], again[j], 1e-3, "%+v: at its mode", c)
		}
		// The mode is found to fitTolerance in each parameter, so the
		// evidence moves with where it stops by a few 1e-6 nats; the
		// candidates' evidences differ by nats.
		assert.InDelta(t, ev, ev2, 2e-5, "%+v: evidence at the mode", c)
		// The data's log-likelihood is at least n log(1/2) at the prior's
		// mean; the evidence of a converged fit is of that order.
		assert.Greater(t, ev, -5*float64(d.n), "%+v: evidence %.1f", c, ev)
		theta = next
	}
}
