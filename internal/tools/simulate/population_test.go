package simulate_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/tools/simulate"
)

func TestPopulationDrawsRunsStudentsOverAGivenCatalogue(t *testing.T) {
	schools := catalog.Generate(600, 4)
	cfg := simulate.Config{Students: 50, Seed: 9}
	a, b := simulate.NewPopulation(cfg, schools), simulate.NewPopulation(cfg, schools)

	likes, n := 0, 0
	reasons := map[string]int{}
	for i := range 50 {
		s, again := a.Student(i), b.Student(i)
		p := s.Profile()
		assert.Equal(t, again.Profile(), p, "the same seed draws the same student")
		require.NotNil(t, p.HomeLat, "student %d lives somewhere", i)
		assert.NotEmpty(t, p.State)
		assert.True(t, p.SAT != nil || p.GPA != nil, "student %d has academics", i)
		for k := range 20 {
			id := schools[(i*20+k)%len(schools)].ID
			like, known := s.Decide(id)
			likeAgain, _ := again.Decide(id)
			require.True(t, known)
			assert.Equal(t, likeAgain, like, "decisions are reproducible")
			n++
			if like {
				likes++
			}
			reasons[s.Reason(id, like)]++
		}
		_, known := s.Decide("00000000-0000-0000-0000-000000000000")
		assert.False(t, known, "a school outside the catalogue is unknown")
	}
	// A student would like about a tenth of the catalogue (Config.LikeShare).
	assert.InDelta(t, 0.1, float64(likes)/float64(n), 0.06)
	assert.Equal(t, likes, reasons[match.ReasonPerfectMatch], "a like is a perfect match")
	for r := range reasons {
		assert.True(t, match.ValidReason(r), r)
	}
	assert.GreaterOrEqual(t, len(reasons), 4, "dislikes have several reasons: %v", reasons)
}
