package simulate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestColdStartEachCategory checks the cold start category by category:
// students whose hidden preferences match the onboarding category they
// liked get a first page (0 swipes) that beats the popularity order.
func TestColdStartEachCategory(t *testing.T) {
	for _, a := range ServiceArchetypes() {
		t.Run(a.Name, func(t *testing.T) {
			r := Run(Config{Students: 16, Swipes: 1, Schools: 3000, Seed: 5, Workers: 2,
				Archetypes: []Archetype{a}, ArchetypeShare: 1})
			cs := r.ColdStart
			require.NotNil(t, cs)
			require.Equal(t, 16, cs.Students)
			t.Logf("NDCG@20 at 0 swipes: served %.3f (profile only %.3f), ranking %.3f (profile only %.3f), popularity %.3f",
				cs.WithPrior, cs.WithoutPrior, cs.RankingWithPrior, cs.RankingWithoutPrior, cs.Popularity)
			assert.Greater(t, cs.WithPrior, cs.Popularity+0.2, "the first page beats the popularity order")
		})
	}
}
