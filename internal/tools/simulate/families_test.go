package simulate

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog"
)

// TestFamiliesMeasureEveryPolicy runs the families mode on a generated
// catalogue: every policy is measured at every checkpoint, the figures
// are NDCG values, the ceiling is the best served, and the result does
// not depend on the number of workers.
func TestFamiliesMeasureEveryPolicy(t *testing.T) {
	cfg := FamiliesConfig{Schools: catalog.Generate(1500, 4), Students: 10, Swipes: 20, Seed: 2, Workers: 1,
		Checkpoints: []int{0, 10, 20, 30}}
	if raceEnabled {
		cfg.Students, cfg.Swipes, cfg.Checkpoints = 5, 10, []int{0, 10}
	}
	r := RunFamilies(cfg)
	last := r.Checkpoints[len(r.Checkpoints)-1]
	require.Equal(t, last, cfg.Swipes, "checkpoints past the swipes are dropped")
	assert.Equal(t, cfg.Students, r.Students[NumFamilies])
	for f := range NumFamilies {
		assert.Equal(t, cfg.Students/int(NumFamilies), r.Students[f], f.String())
	}
	for p := range NumFamilyPolicies {
		for k := range r.Checkpoints {
			v := r.NDCG[p][NumFamilies][k]
			assert.True(t, v >= 0 && v <= 1 && !math.IsNaN(v), "%s at %d: %v", p, r.Checkpoints[k], v)
		}
	}
	assert.Equal(t, r.NDCGAt(FLearner, NumFamilies, 0), r.NDCGAt(FWeightsOnly, NumFamilies, 0), "the same first feed")
	assert.Greater(t, r.NDCGAt(FCeiling, NumFamilies, 0), r.NDCGAt(FLearner, NumFamilies, 0))
	assert.Greater(t, r.NDCGAt(FLearner, NumFamilies, last), r.NDCGAt(FRandom, NumFamilies, last))

	cfg.Workers = 3
	again := RunFamilies(cfg)
	assert.Equal(t, r.NDCG, again.NDCG, "the same whatever the workers")
	t.Log("\n" + r.Table())
}

// With percentile gains every step up a student's own order counts: a
// random list scores about one half, the ceiling near 1, and the learner
// between them, above random after its swipes.
func TestFamiliesGradedByPercentile(t *testing.T) {
	cfg := FamiliesConfig{Schools: catalog.Generate(1500, 4), Students: 10, Swipes: 20, Seed: 2, Workers: 2,
		Checkpoints: []int{0, 20}, Gain: GainPercentile}
	if raceEnabled {
		cfg.Students, cfg.Swipes, cfg.Checkpoints = 5, 10, []int{0, 10}
	}
	r := RunFamilies(cfg)
	last := cfg.Checkpoints[1]
	assert.InDelta(t, 0.5, r.NDCGAt(FRandom, NumFamilies, last), 0.12)
	assert.Greater(t, r.NDCGAt(FCeiling, NumFamilies, 0), 0.85)
	assert.Greater(t, r.NDCGAt(FLearner, NumFamilies, last), r.NDCGAt(FRandom, NumFamilies, last))
	steep := cfg
	steep.Gain = GainSteep
	assert.NotEqual(t, RunFamilies(steep).NDCG, r.NDCG, "the same students, graded otherwise")
	for _, name := range []string{"steep", "percentile", ""} {
		_, err := ParseGain(name)
		assert.NoError(t, err, name)
	}
	_, err := ParseGain("linear")
	assert.Error(t, err)
}

// TestFamiliesTastesAreNotTheScore checks what families mode is for: the
// hidden tastes are not the service's score, so the eight weights that
// rank the catalogue best for a student (fitted offline) still fall well
// short of the student's ideal order.
func TestFamiliesTastesAreNotTheScore(t *testing.T) {
	if raceEnabled {
		t.Skip("checked without the race detector")
	}
	cfg := FamiliesConfig{Schools: catalog.Generate(1500, 4), Students: 10, Swipes: 1, Seed: 5}.withDefaults()
	w := newFamWorld(cfg)
	for i := range cfg.Students {
		st := w.newStudent(i)
		ideal := st.ideal
		best := w.bestWeights(st)
		assert.Less(t, st.ndcgOfRanked(w.rankWith(st, best), nil, &ideal), 0.9, "student %d (%s)", i, st.family)
	}
}

// The ceiling's like rate comes from a trajectory of its own: the student
// swiping the ideal order served under the rules likes more of the stable
// phase's schools than the learner's student does, and both rates are the
// same whatever the workers.
func TestFamiliesCeilingLikeRate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes 40 swipes slow; the figures are checked without it")
	}
	cfg := FamiliesConfig{Schools: catalog.Generate(1500, 4), Students: 10, Swipes: 40, Seed: 3, Workers: 2,
		Checkpoints: []int{0, 40}}
	r := RunFamilies(cfg)
	t.Logf("stable like rate: learner %.3f, ceiling %.3f", r.StableLike[NumFamilies], r.StableLikeCeiling[NumFamilies])
	for f := range NumFamilies + 1 {
		v := r.StableLikeCeiling[f]
		assert.True(t, v > 0 && v <= 1, "family %d: %v", f, v)
	}
	assert.Greater(t, r.StableLikeCeiling[NumFamilies], r.StableLike[NumFamilies]+0.05)

	cfg.Workers = 1
	again := RunFamilies(cfg)
	assert.Equal(t, r.StableLike, again.StableLike)
	assert.Equal(t, r.StableLikeCeiling, again.StableLikeCeiling)
}
