package match

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog"
)

// TestLearnGradientMatchesFiniteDifferences holds the learner's analytic
// gradient of the match score to the scoring code: central differences of
// Score in each weight, over realistic schools and varied students.
func TestLearnGradientMatchesFiniteDifferences(t *testing.T) {
	cat := NewCatalog(catalog.Generate(300, 3))
	for round := range 24 {
		g := newGen(uint64(100+round), 0.2, false)
		p := NewProfile(g.student())
		w := g.weights()
		// Keep away from the clamps at 0 and 1, where the score has a kink.
		a := weightArray(w)
		for j := range a {
			a[j] = 0.05 + 0.9*a[j]
		}
		w = weightsFromArray(a)
		e := newLearnEval(p, w, cat)
		for i := 0; i < cat.Len(); i += 7 {
			var b breakdown
			s, grad := e.eval(i, &b)
			require.InDelta(t, Score(p, w, cat, i).Score, s, 1e-9)
			for j := range nWeights {
				const h = 1e-5
				up, down := a, a
				up[j] += h
				down[j] -= h
				fd := (Score(p, weightsFromArray(up), cat, i).Score - Score(p, weightsFromArray(down), cat, i).Score) / (2 * h)
				require.InDelta(t, fd, grad[j], 1e-5, "round %d school %d weight %s", round, i, WeightKeys[j])
			}
		}
	}
}
