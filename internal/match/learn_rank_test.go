package match

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRankModelIsASortedPermutationWithRanksComponents(t *testing.T) {
	cat, p := learnCatalog, learnStudent()
	m := NewModel(SeedWeights(p))
	for _, i := range []int{3, 70, 900, 1500} {
		m, _ = m.Observe(p, cat, SwipeObservation(i, Like))
	}
	got := RankModel(nil, p, m, cat)
	require.Len(t, got, cat.Len())
	seen := make([]bool, cat.Len())
	for k, s := range got {
		require.False(t, seen[s.Index])
		seen[s.Index] = true
		unit(t, s.Score, "score")
		if k > 0 {
			require.GreaterOrEqual(t, got[k-1].Score, s.Score)
		}
		plain := Score(p, m.Weights(), cat, int(s.Index))
		assert.Equal(t, plain.Academic, s.Academic)
		assert.Equal(t, plain.Campus, s.Campus)
		assert.Equal(t, plain.Distance, s.Distance)
		// Only the two level factors are averaged: the difference is bounded
		// by their weight in the score.
		fw := FamilyWeightsFor(m.Weights())
		assert.LessOrEqual(t, math.Abs(s.Score-plain.Score), fw.Academic+fw.Campus)
	}
	// dst is reused.
	again := RankModel(got, p, m, cat)
	assert.Same(t, &got[0], &again[0])
}

func TestRankModelIsRankOnceTheLevelsAreKnown(t *testing.T) {
	cat, p := learnCatalog, learnStudent()
	// A model certain of both levels: every grid's mass on one value.
	var doc map[string]any
	b, err := json.Marshal(NewModel(Weights{0.5, 0.5, 0.5, 0.5, 0.5, 0.5, levelValue(12), levelValue(6)}))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &doc))
	oneHot := func(k int) []float64 {
		g := make([]float64, levelBins)
		g[k] = 1
		return g
	}
	doc["levels"] = map[string]any{KeyAcademicSelectivity: oneHot(12), KeySizePreference: oneHot(6)}
	b, err = json.Marshal(doc)
	require.NoError(t, err)
	var m Model
	require.NoError(t, json.Unmarshal(b, &m))
	require.InDelta(t, levelValue(6), m.Weights().SizePreference, 1e-12)

	got, want := RankModel(nil, p, m, cat), Rank(nil, p, m.Weights(), cat)
	for k := range got {
		assert.InDelta(t, want[k].Score, got[k].Score, 2e-3, "position %d", k)
	}
}

func TestRankFactorsIsRankModel(t *testing.T) {
	cat, p := learnCatalog, learnStudent()
	f := NewFactors(p, cat)
	for _, swipes := range []int{0, 4, 30} {
		m := NewModel(SeedWeights(p))
		for k := range swipes {
			d := Like
			if k%3 == 0 {
				d = Dislike
			}
			m, _ = m.Observe(p, cat, SwipeObservation((k*37)%cat.Len(), d))
		}
		want := RankModel(nil, p, m, cat)
		got := RankFactors(nil, f, p, m)
		require.Len(t, got, len(want))
		for k := range want {
			w := want[k]
			w.Confidence = 0
			require.Equal(t, w, got[k], "swipes %d position %d", swipes, k)
		}
	}
	// A profile without a location, academic signal or majors.
	q := p
	q.HasHome, q.Basis, q.Majors = false, BasisNone, nil
	m := NewModel(SeedWeights(q))
	want, got := RankModel(nil, q, m, cat), RankFactors(nil, NewFactors(q, cat), q, m)
	for k := range want {
		w := want[k]
		w.Confidence = 0
		require.Equal(t, w, got[k], "position %d", k)
	}
}

// RankModelFactors ranks as RankModel does and works out the factors
// NewFactors works out, whatever the weights, for any student and school,
// nasty data included.
func TestRankModelFactorsIsRankModelAndNewFactors(t *testing.T) {
	for round := range 120 {
		pNil := []float64{0, 0.2, 0.5, 0.8, 1}[round%5]
		g := newGen(uint64(round)+2000, pNil, round%2 == 1)
		cat := NewCatalog(g.schools(60))
		p := NewProfile(g.student())
		m := NewModel(g.weights())
		for k := range round % 7 {
			m, _ = m.Observe(p, cat, SwipeObservation((k*13)%cat.Len(), []Direction{Like, Dislike}[k%2]))
		}
		got, f := RankModelFactors(nil, p, m, cat)
		require.Equal(t, RankModel(nil, p, m, cat), got, "round %d", round)
		require.Equal(t, NewFactors(p, cat), f, "round %d", round)
		require.Equal(t, RankFactors(nil, NewFactors(p, cat), p, m), RankFactors(nil, f, p, m))
		want, kept := RankModel(nil, p, m, cat), RankFactors(nil, f, p, m)
		for k := range want {
			w := want[k]
			w.Confidence = 0
			require.Equal(t, w, kept[k], "round %d position %d: ranked from kept factors", round, k)
		}
	}
	cat, p := learnCatalog, learnStudent()
	m := NewModel(SeedWeights(p))
	got, f := RankModelFactors(nil, p, m, cat)
	assert.Equal(t, RankModel(nil, p, m, cat), got)
	assert.Equal(t, NewFactors(p, cat), f)
}

func TestFactorsBreakdownIsScores(t *testing.T) {
	cat, p := learnCatalog, learnStudent()
	f := NewFactors(p, cat)
	m := NewModel(SeedWeights(p))
	m, _ = m.Observe(p, cat, SwipeObservation(11, Like))
	le := newLearnEval(p, m.Weights(), cat)
	for i := range cat.Len() {
		var want, got breakdown
		sWant, gWant := le.eval(i, &want)
		f.breakdown(&le.sc, i, &got)
		sGot, gGot := le.gradient(i, &got)
		require.Equal(t, sWant, sGot, "school %d", i)
		require.Equal(t, gWant, gGot, "school %d", i)
		require.Equal(t, want.score, got.score, "school %d", i)
		require.Equal(t, want.distance, got.distance, "school %d", i)
	}
}

func TestAssembleFeedWithFactorsIsTheSameFeed(t *testing.T) {
	for _, swipes := range []int{0, 7, 40} {
		in := feedInput(t, swipes)
		in.Length = 300
		want := AssembleFeed(in)
		in.Factors = NewFactors(in.Profile, in.Catalog)
		assert.Equal(t, want, AssembleFeed(in), "swipes %d", swipes)
	}
}

func TestScoreFactorsIsScoreAll(t *testing.T) {
	cat, p := learnCatalog, learnStudent()
	m := NewModel(SeedWeights(p))
	m, _ = m.Observe(p, cat, SwipeObservation(5, Dislike))
	idx := make([]int32, cat.Len())
	for i := range idx {
		idx[i] = int32(cat.Len() - 1 - i)
	}
	want := ScoreAll(nil, p, m.Weights(), cat, idx)
	got := ScoreFactors(nil, NewFactors(p, cat), p, m.Weights(), idx)
	for k := range want {
		w := want[k]
		w.Confidence = 0
		require.Equal(t, w, got[k], "school %d", idx[k])
	}
}
