package match

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
)

// TestRankingIsRankFactors: a lean ranking has the order of the whole
// ranking it stands for, and each school's Scored is that ranking's, bit
// for bit: RankFactors' from the factors, RankModel's from the features
// (and the factors worked out on the way are NewFactors').
func TestRankingIsRankFactors(t *testing.T) {
	var lean *Ranking
	for _, swipes := range []int{0, 9, 40} {
		in := feedInput(t, swipes)
		f := NewFactors(in.Profile, in.Catalog)
		ranked, byModel := RankFactors(nil, f, in.Profile, in.Model), RankModel(nil, in.Profile, in.Model, in.Catalog)
		kept, _ := RankModelFactors(nil, in.Profile, in.Model, in.Catalog)
		lean = RankFactorsLean(lean, f, in.Profile, in.Model)
		requireRanking(t, ranked, lean, "from factors, swipes %d", swipes)
		requireRanking(t, byModel, RankModelLean(nil, in.Profile, in.Model, in.Catalog), "from features, swipes %d", swipes)
		r, g := RankModelFactorsLean(nil, in.Profile, in.Model, in.Catalog)
		requireRanking(t, ranked, r, "factors worked out, swipes %d", swipes)
		require.Equal(t, f.school, g.school, "swipes %d", swipes)
		require.Equal(t, byModel, kept, "swipes %d", swipes)
	}
}

// requireRanking fails unless r is want made lean.
func requireRanking(t *testing.T, want []Scored, r *Ranking, msg string, args ...any) {
	t.Helper()
	order := r.Order(nil)
	require.Len(t, order, len(want))
	name := fmt.Sprintf(msg, args...)
	for pos, s := range want {
		require.Equal(t, s.Index, order[pos], "%s: position %d", name, pos)
		require.Equal(t, s, r.Scored(int(s.Index)), "%s: position %d", name, pos)
	}
}

// TestAssembleFromRankingIsAssembleFromRanked: a feed assembled from a
// lean ranking (each band sorted on its own, schools named by index) is
// the feed assembled from the whole ranking (RankFactors', RankModel's),
// item for item, for
// students with and without a location, at every offset and length, with
// either exploration strategy.
func TestAssembleFromRankingIsAssembleFromRanked(t *testing.T) {
	noHome := NewProfile(domain.Student{ID: "x", GPA: ptr(3.4), Budget: ptr(30000), IntendedMajors: []domain.Major{"history"}})
	var r *Ranking
	for _, swipes := range []int{0, 3, 14, 31, 60} {
		for _, p := range []Profile{feedStudent(), noHome} {
			in := feedInput(t, swipes)
			in.Profile = p
			f := NewFactors(p, in.Catalog)
			r = RankFactorsLean(r, f, p, in.Model)
			for _, c := range []struct{ offset, length, page int }{{0, 200, 0}, {20, 40, 0}, {7, 33, 0}, {0, 90, 30}} {
				for _, strategy := range []ExplorationStrategy{ExploreUncertainty, ExploreUniform} {
					whole := in
					whole.Ranked, whole.Factors = RankFactors(nil, f, p, in.Model), f
					whole.Offset, whole.Length, whole.PageSize, whole.Exploration = c.offset, c.length, c.page, strategy
					lean := whole
					lean.Ranked, lean.Factors, lean.Ranking = nil, nil, r
					name := fmt.Sprintf("swipes %d home %v %+v strategy %d", swipes, p.HasHome, c, strategy)
					require.Equal(t, AssembleFeed(whole), AssembleFeed(lean), name)
					// Without factors: from the features, as RankModel.
					whole.Ranked, whole.Factors = RankModel(nil, p, in.Model, in.Catalog), nil
					lean.Ranking = RankModelLean(nil, p, in.Model, in.Catalog)
					require.Equal(t, AssembleFeed(whole), AssembleFeed(lean), "from features: "+name)
				}
			}
		}
	}
}
