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

// The lean layout orders each band lazily, a bucket at a time, and probe
// scans order only the schools they find: on catalogues whose bands run
// out, whose schools tie (copies of the same school under other IDs: equal
// scores, put in order by index) and whose data is missing or odd, the
// feed is still the one assembled from the whole ranking.
func TestLazyBandsAreTheWholeRankingOnSmallTiedAndOddCatalogues(t *testing.T) {
	for seed := range uint64(12) {
		g := newGen(seed, 0.2, seed%3 == 0)
		n := []int{1, 7, 40, 150}[seed%4]
		schools := g.schools(n)
		if seed%2 == 1 { // half of them copies of the first few
			for i := n / 2; i < n; i++ {
				c := schools[i%max(1, n/8)]
				c.ID = schools[i].ID
				schools[i] = c
			}
		}
		cat := NewCatalog(schools)
		p := NewProfile(g.student())
		m := NewModel(SeedWeights(p))
		excluded := make([]bool, cat.Len())
		var swiped []int
		for k := 0; k < cat.Len()/5; k++ {
			i := int(g.r.IntN(cat.Len()))
			d := Like
			if k%2 == 1 {
				d = Dislike
			}
			m, _ = m.Observe(p, cat, SwipeObservation(i, d))
			excluded[i] = true
			swiped = append(swiped, i)
		}
		f := NewFactors(p, cat)
		for _, strategy := range []ExplorationStrategy{ExploreUncertainty, ExploreUniform} {
			whole := FeedInput{Catalog: cat, Profile: p, Model: m, Swipes: len(swiped), Length: 200,
				Excluded: excluded, SwipedRegions: RegionsOf(cat, swiped), Seed: seed, Exploration: strategy}
			whole.Ranked, whole.Factors = RankFactors(nil, f, p, m), f
			lean := whole
			lean.Ranked, lean.Factors, lean.Ranking = nil, nil, RankFactorsLean(nil, f, p, m)
			require.Equal(t, AssembleFeed(whole), AssembleFeed(lean), "seed %d, %d schools, strategy %d", seed, n, strategy)
		}
	}
}
