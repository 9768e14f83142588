package simulate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLearnerLearns is the learning-quality check: after 30 swipes the
// learner's served feed beats both baselines by far and reaches at least
// 0.8 of the oracle, like for like: the served feed against the oracle
// served through the same feed rules, the learned ranking against the
// oracle ranking on the same unswiped schools, and the learned weights
// against the hidden ones on the whole catalogue.
func TestLearnerLearns(t *testing.T) {
	cfg := Config{Students: 60, Swipes: 40, Schools: 6500, Seed: 1, Workers: 2}
	if raceEnabled {
		cfg.Students, cfg.Schools = 8, 1500 // the race detector makes this slow; the figures are checked without it
	}
	r := Run(cfg)
	const t30 = 30
	learner, ranking := r.NDCGAt(Learner, t30), r.NDCGAt(LearnerRanking, t30)
	oracleServed, oracle := r.NDCGAt(OracleServed, t30), r.NDCGAt(Oracle, t30)
	pop, rnd := r.NDCGAt(Popularity, t30), r.NDCGAt(Random, t30)
	t.Logf("after 30 swipes: learner %.3f (oracle served %.3f), ranking %.3f (oracle %.3f), popularity %.3f, random %.3f, model %.3f of %.3f",
		learner, oracleServed, ranking, oracle, pop, rnd, r.Model[0][t30], r.Model[1][t30])

	if raceEnabled {
		// A handful of students: only the direction is checked.
		assert.Greater(t, learner, pop+0.1)
		assert.Greater(t, learner, rnd+0.1)
		return
	}
	assert.Greater(t, learner, 3*pop, "clearly above popularity")
	assert.Greater(t, learner, 5*rnd, "clearly above random")
	assert.Greater(t, learner-pop, 0.3)
	assert.Greater(t, r.LikeRate(Learner, 11, 30), r.LikeRate(Popularity, 11, 30)+0.3)
	assert.Greater(t, r.LikeRate(Learner, 11, 30), r.LikeRate(Random, 11, 30)+0.3)
	// The model learns: it knows the student better after 30 swipes.
	assert.Greater(t, r.Model[0][t30], r.Model[0][0]+0.03, "whole-catalogue NDCG@20 from 0 to 30 swipes")
	assert.GreaterOrEqual(t, learner/oracleServed, 0.8, "served feed against the oracle served")
	assert.GreaterOrEqual(t, ranking/oracle, 0.8, "learned ranking against the oracle ranking")
	assert.GreaterOrEqual(t, r.Model[0][t30]/r.Model[1][t30], 0.8, "learned weights against hidden weights")
	// The feed rules do what they say on the learner's swipes.
	assert.InDelta(t, 0.25, r.ProbeShare, 0.01, "every 4th swipe is on a probe")
	assert.Less(t, r.PatternBreakRate, 0.1, "pattern breaks stay rare")
}

func TestColdStartPriorBeatsPopularity(t *testing.T) {
	cfg := Config{Students: 24, Swipes: 1, Schools: 3000, Seed: 3, Workers: 2,
		Archetypes: ServiceArchetypes(), ArchetypeShare: 1}
	r := Run(cfg)
	cs := r.ColdStart
	require.NotNil(t, cs)
	require.Equal(t, 24, cs.Students)
	t.Logf("cold start: %+v", *cs)
	assert.Greater(t, cs.WithPrior, cs.Popularity+0.2, "the category prior's first page beats the popularity order")
	assert.Greater(t, cs.RankingWithPrior, cs.RankingWithoutPrior, "and beats the profile's prior alone")
}

func TestRunIsDeterministic(t *testing.T) {
	cfg := Config{Students: 5, Swipes: 12, Schools: 600, Seed: 9, Workers: 1, CompareExploration: true}
	a := Run(cfg)
	cfg.Workers = 3
	b := Run(cfg)
	b.Config.Workers = 1
	require.Equal(t, a, b, "the result does not depend on the number of workers")
	cfg.Seed = 10
	c := Run(cfg)
	assert.NotEqual(t, a.NDCG, c.NDCG, "another seed, other students")
	assert.True(t, a.Ran[LearnerUniform])
	assert.Len(t, a.NDCG[Learner], 13)
	assert.Len(t, a.Like[Learner], 13)
	assert.Nil(t, a.Like[LearnerRanking], "the learned ranking has no swipes of its own")
}

func TestNDCG(t *testing.T) {
	st := &student{gain: []float64{7, 0, 3, 1, 0, 7}}
	st.ideal = newIdealGains(st.gain, false)
	ideal := st.ideal
	best := st.ndcgOfOrder([]int32{0, 5, 2, 3, 1, 4}, make([]bool, 6), &ideal)
	assert.InDelta(t, 1, best, 1e-12, "the ideal order")
	worst := st.ndcgOfOrder([]int32{1, 4, 3, 2, 0, 5}, make([]bool, 6), &ideal)
	assert.Less(t, worst, 0.7)
	// Swiped schools leave the ideal too.
	ideal.remove(7)
	ex := []bool{true, false, false, false, false, false}
	assert.InDelta(t, 1, st.ndcgOfOrder([]int32{0, 5, 2, 3, 1, 4}, ex, &ideal), 1e-12)
	var none idealGains
	assert.Zero(t, none.ndcg(0))
}

// Graded gains (percentiles in hundredths) normalise the same way: the
// ideal order scores 1, the reverse order less, a swiped school leaves
// the ideal.
func TestNDCGGraded(t *testing.T) {
	st := &student{gain: []float64{1, 0, 0.5, 0.25, 0.01, 0.99}}
	st.ideal = newIdealGains(st.gain, true)
	ideal := st.ideal
	best := st.ndcgOfOrder([]int32{0, 5, 2, 3, 4, 1}, make([]bool, 6), &ideal)
	assert.InDelta(t, 1, best, 1e-12, "the ideal order")
	worst := st.ndcgOfOrder([]int32{1, 4, 3, 2, 5, 0}, make([]bool, 6), &ideal)
	assert.Less(t, worst, 0.8)
	ideal.remove(1)
	ex := []bool{true, false, false, false, false, false}
	assert.InDelta(t, 1, st.ndcgOfOrder([]int32{0, 5, 2, 3, 4, 1}, ex, &ideal), 1e-12)
	assert.Equal(t, 1.0, ideal.gain(ideal.levelOf(1)))
	assert.Equal(t, 0.25, ideal.gain(ideal.levelOf(0.25)))
}

func TestTableAndSVG(t *testing.T) {
	r := Run(Config{Students: 3, Swipes: 31, Schools: 500, Seed: 4, Archetypes: ServiceArchetypes(), ArchetypeShare: 1})
	tab := r.Table()
	for _, want := range []string{
		"| 0 | discovery |", "| 10 | discovery |", "| 30 | refinement |",
		"| refinement (swipes 11-30) |", "| stable (swipes 31-40) |", "After 30 swipes", "Cold start: 3 students",
	} {
		assert.Contains(t, tab, want)
	}
	assert.NotContains(t, tab, "| 40 |", "no checkpoint beyond the swipes run")
	assert.NotContains(t, tab, "NaN")
	svg := string(r.SVG())
	assert.Contains(t, svg, "<svg")
	assert.Contains(t, svg, "learner ranking")
	assert.NotContains(t, svg, "NaN")
}
