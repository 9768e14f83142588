package match

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
)

// learnCatalog is a realistic generated catalogue, built once.
var learnCatalog = NewCatalog(catalog.Generate(4000, 11))

// learnStudent lives in Philadelphia, states a budget and a major, and
// leaves everything else to the swipes.
func learnStudent() Profile {
	return NewProfile(domain.Student{
		ID: "learner", SAT: ptr(1250), HomeLat: ptr(39.95), HomeLon: ptr(-75.16), State: "PA",
		Budget: ptr(20000), FamilyIncome: ptr(60000), MaxDistanceMiles: ptr(300),
		IntendedMajors: []domain.Major{"business_marketing"},
	})
}

// netPriceOf is the yearly price scoring uses for the student at school i.
func netPriceOf(p Profile, cat *Catalog, i int) float64 {
	sc := newScorer(p, DefaultWeights(), cat)
	var b breakdown
	sc.score(&cat.feat[i], i, &b)
	if b.priceSrc == srcNone {
		return -1
	}
	return b.price
}

// schoolsWhere lists up to n catalogue indices whose scored school satisfies keep.
func schoolsWhere(p Profile, cat *Catalog, n int, keep func(i int, s Scored) bool) []int {
	var out []int
	for _, s := range Rank(nil, p, DefaultWeights(), cat) {
		if len(out) == n {
			break
		}
		if keep(int(s.Index), s) {
			out = append(out, int(s.Index))
		}
	}
	return out
}

func TestConsistentSwipesMoveCostAndDistanceWeights(t *testing.T) {
	cat, p := learnCatalog, learnStudent()
	cheapNear := schoolsWhere(p, cat, 15, func(i int, s Scored) bool {
		pr := netPriceOf(p, cat, i)
		return pr >= 0 && pr < 0.7*float64(p.Budget) && s.HasDistance() && s.Distance < 0.6*p.MaxDistanceMiles
	})
	dearFar := schoolsWhere(p, cat, 15, func(i int, s Scored) bool {
		return netPriceOf(p, cat, i) > 1.3*float64(p.Budget) && s.Distance > 1.5*p.MaxDistanceMiles
	})
	require.Len(t, cheapNear, 15)
	require.Len(t, dearFar, 15)

	prior := NewModel(DefaultWeights())
	// Likes cheap and near, rejects expensive and far.
	m := prior
	for k := range 15 {
		m, _ = m.Observe(p, cat, SwipeObservation(cheapNear[k], Like))
		m, _ = m.Observe(p, cat, SwipeObservation(dearFar[k], Dislike))
	}
	w0, w := prior.Weights(), m.Weights()
	assert.Greater(t, w.CostWeight, w0.CostWeight+0.1, "cost_weight %v -> %v", w0.CostWeight, w.CostWeight)
	assert.Greater(t, w.DistanceWeight, w0.DistanceWeight+0.1, "distance_weight %v -> %v", w0.DistanceWeight, w.DistanceWeight)
	assert.Equal(t, 30, m.Swipes())

	// The opposite student: likes expensive and far, rejects cheap and near.
	m = prior
	for k := range 15 {
		m, _ = m.Observe(p, cat, SwipeObservation(dearFar[k], Like))
		m, _ = m.Observe(p, cat, SwipeObservation(cheapNear[k], Dislike))
	}
	w = m.Weights()
	assert.Less(t, w.CostWeight, w0.CostWeight-0.1, "cost_weight %v -> %v", w0.CostWeight, w.CostWeight)
	assert.Less(t, w.DistanceWeight, w0.DistanceWeight-0.1, "distance_weight %v -> %v", w0.DistanceWeight, w.DistanceWeight)
}

func TestSwipesTeachSizePreference(t *testing.T) {
	cat, p := learnCatalog, learnStudent()
	size := func(i int) float64 { return float64(cat.feat[i].sizeScale) }
	big := schoolsWhere(p, cat, 12, func(i int, _ Scored) bool { return cat.feat[i].hasSize && size(i) > 0.8 })
	small := schoolsWhere(p, cat, 12, func(i int, _ Scored) bool { return cat.feat[i].hasSize && size(i) < 0.25 })
	require.Len(t, big, 12)
	require.Len(t, small, 12)
	m := NewModel(DefaultWeights())
	for k := range 12 {
		m, _ = m.Observe(p, cat, SwipeObservation(small[k], Like))
		m, _ = m.Observe(p, cat, SwipeObservation(big[k], Dislike))
	}
	assert.Less(t, m.Weights().SizePreference, 0.35, "liking small schools lowers size_preference")
	assert.Less(t, m.WeightUncertainty().SizePreference, NewModel(DefaultWeights()).WeightUncertainty().SizePreference)
}

func TestFeedbackReasonsMoveTheirWeight(t *testing.T) {
	cat, p := learnCatalog, learnStudent()
	idx := schoolsWhere(p, cat, 1, func(i int, _ Scored) bool { return cat.feat[i].hasSize && cat.feat[i].sizeScale > 0.85 })[0]
	for _, start := range []Weights{DefaultWeights(), {0.2, 0.2, 0.8, 0.2, 0.2, 0.2, 0.8, 0.3}, {0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9}} {
		base := NewModel(start)
		// A few swipes first, so feedback acts on a learned model too.
		for _, i := range []int{3, 50, 400} {
			base, _ = base.Observe(p, cat, SwipeObservation(i, Like))
		}
		w0 := base.Weights()
		tests := []struct {
			reason string
			moved  func(w Weights) float64 // positive when the weight moved the right way
		}{
			{ReasonTooExpensive, func(w Weights) float64 { return w.CostWeight - w0.CostWeight }},
			{ReasonWrongLocation, func(w Weights) float64 { return w.DistanceWeight - w0.DistanceWeight }},
			{ReasonNotMyMajor, func(w Weights) float64 { return w.ProgramWeight - w0.ProgramWeight }},
			{ReasonTooSelective, func(w Weights) float64 { return w0.AcademicSelectivity - w.AcademicSelectivity }},
			{ReasonPerfectMatch, func(w Weights) float64 { return w.SizePreference - w0.SizePreference }},
		}
		for _, tt := range tests {
			t.Run(tt.reason, func(t *testing.T) {
				m, changed := base.Observe(p, cat, FeedbackObservation(idx, tt.reason))
				assert.True(t, changed)
				assert.Greater(t, tt.moved(m.Weights()), 0.01, "%s from %+v: %+v", tt.reason, w0, m.Weights())
				assert.Equal(t, base.Swipes(), m.Swipes(), "feedback is not a swipe")
				assert.Equal(t, base.FeedbackCount()+1, m.FeedbackCount())
			})
		}
		// perfect_match makes the school itself more likely to be liked:
		// through the weights; and the residual, refitted with its prior
		// chosen again, keeps it there to within a hair.
		mw, _ := base.ObserveWeights(p, cat, FeedbackObservation(idx, ReasonPerfectMatch))
		assert.Greater(t, mw.PredictLike(p, cat, idx), base.PredictLike(p, cat, idx))
		m, _ := base.Observe(p, cat, FeedbackObservation(idx, ReasonPerfectMatch))
		assert.Greater(t, m.PredictLike(p, cat, idx), base.PredictLike(p, cat, idx)-1e-3)
	}
}

func TestWeakSignals(t *testing.T) {
	cat, p := learnCatalog, learnStudent()
	idx := schoolsWhere(p, cat, 1, func(i int, s Scored) bool { return s.Score < 0.6 })[0]
	m0 := NewModel(DefaultWeights())
	gain := map[string]float64{}
	for _, kind := range []string{InteractionTap, InteractionDetailView, InteractionSave, InteractionSwipe} {
		o := Observation{Index: idx, Interaction: kind, Direction: Like}
		m, changed := m0.Observe(p, cat, o)
		require.True(t, changed, kind)
		gain[kind] = m.PredictLike(p, cat, idx) - m0.PredictLike(p, cat, idx)
		if kind == InteractionSwipe {
			assert.Equal(t, 1, m.Swipes())
			assert.Equal(t, 0, m.Signals())
		} else {
			assert.Equal(t, 0, m.Swipes(), "%s is not counted", kind)
			assert.Equal(t, 1, m.Signals())
		}
	}
	assert.Greater(t, gain[InteractionTap], 0.0)
	assert.Greater(t, gain[InteractionDetailView], gain[InteractionTap])
	assert.Greater(t, gain[InteractionSave], gain[InteractionDetailView])
	assert.Greater(t, gain[InteractionSwipe], gain[InteractionSave])

	// A weak signal is positive whatever the direction sent with it.
	m, _ := m0.Observe(p, cat, Observation{Index: idx, Interaction: InteractionSave, Direction: Dislike})
	assert.Greater(t, m.PredictLike(p, cat, idx), m0.PredictLike(p, cat, idx))
}

func TestObserveRejectsWhatItCannotUse(t *testing.T) {
	cat, p := learnCatalog, learnStudent()
	m0 := NewModel(DefaultWeights())
	for name, o := range map[string]Observation{
		"index below range":     SwipeObservation(-1, Like),
		"index above range":     SwipeObservation(cat.Len(), Like),
		"no direction":          {Index: 1, Interaction: InteractionSwipe},
		"unknown interaction":   {Index: 1, Interaction: "share", Direction: Like},
		"unknown reason":        FeedbackObservation(1, "too_far"),
		"direction out of band": {Index: 1, Direction: 7},
	} {
		m, changed := m0.Observe(p, cat, o)
		assert.False(t, changed, name)
		assert.Equal(t, m0, m, name)
	}
	m, changed := m0.Observe(p, nil, SwipeObservation(0, Like))
	assert.False(t, changed)
	assert.Equal(t, m0, m)
}

func TestObserveLeavesItsReceiverAlone(t *testing.T) {
	cat, p := learnCatalog, learnStudent()
	m := NewModel(DefaultWeights())
	m, _ = m.Observe(p, cat, SwipeObservation(5, Like))
	before, err := json.Marshal(m)
	require.NoError(t, err)
	next, changed := m.Observe(p, cat, SwipeObservation(9, Dislike))
	require.True(t, changed)
	after, err := json.Marshal(m)
	require.NoError(t, err)
	assert.JSONEq(t, string(before), string(after), "the receiver must not change")
	assert.NotEqual(t, m, next)
}

func TestPatternBreak(t *testing.T) {
	cat, p := learnCatalog, learnStudent()
	cheapNear := schoolsWhere(p, cat, 40, func(i int, s Scored) bool {
		pr := netPriceOf(p, cat, i)
		return pr >= 0 && pr < 0.7*float64(p.Budget) && s.HasDistance() && s.Distance < 0.5*p.MaxDistanceMiles
	})
	dearFar := schoolsWhere(p, cat, 40, func(i int, s Scored) bool {
		return netPriceOf(p, cat, i) > 1.3*float64(p.Budget) && s.Distance > 1.5*p.MaxDistanceMiles
	})
	require.Len(t, cheapNear, 40)
	require.Len(t, dearFar, 40)
	m := NewModel(DefaultWeights())
	for k := range 30 {
		m, _ = m.Observe(p, cat, SwipeObservation(cheapNear[k], Like))
		m, _ = m.Observe(p, cat, SwipeObservation(dearFar[k], Dislike))
	}
	// Schools the model has not seen, of the kinds it has learned about.
	liked, disliked := cheapNear[35], dearFar[35]
	require.GreaterOrEqual(t, m.PredictLike(p, cat, liked), PatternBreakProbability)
	require.LessOrEqual(t, m.PredictLike(p, cat, disliked), 1-PatternBreakProbability)
	assert.True(t, m.PatternBreak(p, cat, liked, Dislike), "rejecting what the model was sure of")
	assert.False(t, m.PatternBreak(p, cat, liked, Like))
	assert.True(t, m.PatternBreak(p, cat, disliked, Like), "liking what the model was sure would be rejected")
	assert.False(t, m.PatternBreak(p, cat, disliked, Dislike))

	// A school the model is unsure about breaks no pattern either way.
	for _, s := range Rank(nil, p, m.Weights(), cat) {
		if pr := m.PredictLike(p, cat, int(s.Index)); pr > 0.3 && pr < 0.7 {
			assert.False(t, m.PatternBreak(p, cat, int(s.Index), Like))
			assert.False(t, m.PatternBreak(p, cat, int(s.Index), Dislike))
			break
		}
	}
	assert.False(t, m.PatternBreak(p, cat, -1, Like))
}

func TestPredictionIsUnsureBeforeLearning(t *testing.T) {
	cat, p := learnCatalog, learnStudent()
	m0 := NewModel(DefaultWeights())
	m := m0
	for _, s := range Rank(nil, p, m0.Weights(), cat)[:30] {
		m, _ = m.Observe(p, cat, SwipeObservation(int(s.Index), Like))
	}
	for i := 0; i < cat.Len(); i += 97 {
		before, after := m0.Predict(p, cat, i), m.Predict(p, cat, i)
		unit(t, before.Like, "like")
		assert.GreaterOrEqual(t, before.Uncertainty, after.Uncertainty, "school %d: swipes only remove uncertainty", i)
		assert.GreaterOrEqual(t, before.Information, 0.0)
	}
}

func TestPhases(t *testing.T) {
	tests := []struct {
		swipes   int
		phase    Phase
		progress float64
		message  string
		explore  float64
	}{
		{-3, PhaseDiscovery, 0, "Learning your preferences...", 0.3},
		{0, PhaseDiscovery, 0, "Learning your preferences...", 0.3},
		{10, PhaseDiscovery, 10.0 / 31, "Learning your preferences...", 0.3},
		{11, PhaseRefinement, 11.0 / 31, "Refining matches...", 0.2},
		{30, PhaseRefinement, 30.0 / 31, "Refining matches...", 0.2},
		{31, PhaseStable, 1, "Personalized for you", 0.1},
		{500, PhaseStable, 1, "Personalized for you", 0.1},
	}
	for _, tt := range tests {
		ph := PhaseFor(tt.swipes)
		assert.Equal(t, tt.phase, ph, "swipes %d", tt.swipes)
		assert.InDelta(t, tt.progress, Progress(tt.swipes), 1e-12, "swipes %d", tt.swipes)
		assert.Equal(t, tt.message, ph.UIMessage(), "swipes %d", tt.swipes)
		assert.InDelta(t, tt.explore, ph.ExplorationRate(), 1e-12, "swipes %d", tt.swipes)
	}
	assert.Equal(t, "discovery", string(PhaseDiscovery))
	assert.Equal(t, "refinement", string(PhaseRefinement))
	assert.Equal(t, "stable", string(PhaseStable))
	assert.Equal(t, []string{"too_expensive", "wrong_location", "not_my_major", "too_selective", "perfect_match"}, FeedbackOptions())
}

func TestParseDirection(t *testing.T) {
	d, ok := ParseDirection("right")
	assert.True(t, ok)
	assert.Equal(t, Like, d)
	assert.Equal(t, "right", d.String())
	d, ok = ParseDirection("left")
	assert.True(t, ok)
	assert.Equal(t, Dislike, d)
	assert.Equal(t, "left", d.String())
	_, ok = ParseDirection("up")
	assert.False(t, ok)
	assert.True(t, ValidInteraction(""))
	assert.True(t, ValidInteraction(InteractionSave))
	assert.False(t, ValidInteraction("like"))
	assert.True(t, ValidReason(ReasonPerfectMatch))
	assert.False(t, ValidReason("perfect"))
}

func TestNewModelStartsAtThePrior(t *testing.T) {
	for _, prior := range []Weights{DefaultWeights(), {0.9, 0.1, 0.7, 0.3, 0.6, 0.4, 0.8, 0.2}, {0, 1, 0, 1, 0, 1, 0.02, 0.98}} {
		w := NewModel(prior).Weights()
		a, b := weightArray(prior), weightArray(w)
		for j := range a {
			assert.InDelta(t, a[j], b[j], 0.03, "%s", WeightKeys[j])
		}
	}
	// The zero Model is the default model.
	var zero Model
	assert.Equal(t, NewModel(DefaultWeights()).Weights(), zero.Weights())
	// NaN and out-of-range priors are sanitized.
	w := NewModel(Weights{math.NaN(), -4, 9, math.Inf(1), 0.5, 0.5, 0.5, 0.5}).Weights()
	for j, v := range weightArray(w) {
		unit(t, v, WeightKeys[j])
	}
}

func TestModelJSONRoundTrip(t *testing.T) {
	cat, p := learnCatalog, learnStudent()
	m := NewModel(SeedWeights(p))
	for k, i := range []int{1, 20, 300, 4, 77, 900} {
		d := Like
		if k%2 == 1 {
			d = Dislike
		}
		m, _ = m.Observe(p, cat, SwipeObservation(i, d))
	}
	m, _ = m.Observe(p, cat, Observation{Index: 5, Interaction: InteractionSave})
	m, _ = m.Observe(p, cat, FeedbackObservation(5, ReasonTooExpensive))
	b, err := json.Marshal(m)
	require.NoError(t, err)
	var back Model
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, m, back)
	assert.Equal(t, m.Weights(), back.Weights())
	assert.Equal(t, m.Swipes(), back.Swipes())
	assert.Equal(t, 1, back.Signals())
	assert.Equal(t, 1, back.FeedbackCount())
	assert.InDelta(t, m.PredictLike(p, cat, 42), back.PredictLike(p, cat, 42), 1e-12)
	b2, err := json.Marshal(back)
	require.NoError(t, err)
	assert.JSONEq(t, string(b), string(b2))

	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	assert.EqualValues(t, ModelVersion, doc["version"])

	// Another version does not decode.
	var other Model
	err = json.Unmarshal([]byte(`{"version":99,"params":[]}`), &other)
	require.ErrorIs(t, err, ErrModelVersion)

	// Damaged values are replaced by safe ones.
	var damaged Model
	require.NoError(t, json.Unmarshal([]byte(`{"version":2,"params":["cost_weight","size_preference"],
		"mean":[1e308,-5],"cov":[[-1,0],[0,1e300]]}`), &damaged))
	for j, v := range weightArray(damaged.Weights()) {
		unit(t, v, WeightKeys[j])
	}
	require.Error(t, json.Unmarshal([]byte(`{"version":2,"cov":[["x"]]}`), &damaged), "not a model")
	require.NoError(t, json.Unmarshal([]byte(`{"version":2,"params":["cost_weight"],"mean":[1],"cov":[[-1]],
		"levels":{"size_preference":[1,2,3]}}`), &damaged))
	for j, v := range weightArray(damaged.Weights()) {
		unit(t, v, WeightKeys[j])
	}
	assert.InDelta(t, sigmoid(1), damaged.Weights().CostWeight, 1e-9)
	unit(t, damaged.PredictLike(p, cat, 3), "like")
}

func TestFoldKeepsTheLatestDirection(t *testing.T) {
	cat, p := learnCatalog, learnStudent()
	prior := SeedWeights(p)
	history := []Observation{
		SwipeObservation(10, Like), SwipeObservation(11, Dislike), SwipeObservation(10, Dislike),
		{Index: 12, Interaction: InteractionTap}, FeedbackObservation(11, ReasonWrongLocation),
	}
	got := Fold(prior, p, cat, history)
	want := NewModel(prior)
	for _, o := range []Observation{history[1], history[2], history[3], history[4]} {
		want, _ = want.Observe(p, cat, o)
	}
	// The residual is fitted once at the end of a fold, after every swipe
	// online: the same optimum, to the refit's tolerance.
	for j := range nResidual {
		assert.InDelta(t, want.rmean[j], got.rmean[j], 1e-4, residualKeys[j])
	}
	assert.InDelta(t, want.rconst, got.rconst, 1e-4)
	want.rmean, want.rconst = got.rmean, got.rconst
	assert.Equal(t, want, got)
	assert.Equal(t, 2, got.Swipes())
}

// FuzzObserve folds arbitrary sequences of observations, on arbitrary
// profiles and starting weights, and checks that every weight stays in
// [0,1], nothing is NaN and a prediction is a probability.
func FuzzObserve(f *testing.F) {
	f.Add(uint64(1), uint64(0), 0.5, 0.5)
	f.Add(uint64(7), uint64(0xffffffff), 0.0, 1.0)
	f.Add(uint64(99), uint64(12345), math.NaN(), math.Inf(1))
	cat := NewCatalog(newGen(5, 0.3, true).schools(60))
	f.Fuzz(func(t *testing.T, seed, ops uint64, a, b float64) {
		g := newGen(seed, 0.3, true)
		p := NewProfile(g.student())
		prior := g.weights()
		prior.CostWeight, prior.SizePreference = a, b
		m := NewModel(prior)
		kinds := []string{"", InteractionSwipe, InteractionTap, InteractionDetailView, InteractionSave, "bogus"}
		reasons := append(FeedbackOptions(), "", "", "", "", "nope")
		for range 40 {
			ops = ops*6364136223846793005 + 1442695040888963407
			o := Observation{
				Index:       int(ops>>33)%(cat.Len()+2) - 1,
				Interaction: kinds[(ops>>20)%uint64(len(kinds))],
				Direction:   []Direction{Like, Dislike, 0}[(ops>>10)%3],
				Reason:      reasons[(ops>>40)%uint64(len(reasons))],
			}
			m, _ = m.Observe(p, cat, o)
			for j, v := range weightArray(m.Weights()) {
				if math.IsNaN(v) || v < 0 || v > 1 {
					t.Fatalf("weight %s = %v after %+v", WeightKeys[j], v, o)
				}
			}
			pr := m.Predict(p, cat, int(ops%uint64(cat.Len())))
			if math.IsNaN(pr.Like) || pr.Like < 0 || pr.Like > 1 || math.IsNaN(pr.Uncertainty) || math.IsNaN(pr.Information) {
				t.Fatalf("prediction %+v", pr)
			}
		}
		bts, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var back Model
		if err := json.Unmarshal(bts, &back); err != nil {
			t.Fatal(err)
		}
	})
}
