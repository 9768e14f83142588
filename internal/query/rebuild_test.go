package query

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/active"
	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
)

// buildFeedWhole is BuildFeed done the straightforward way: the whole
// catalogue ranked with every school's Scored (match.RankModel) and
// sorted, the feed assembled from that list, the items scored again from
// their features and the residual added.
func buildFeedWhole(in FeedInput) cache.Feed {
	cat := in.Catalog
	buf := new(buildBuffer)
	ex := buf.exclusion(in)
	slots := Assemble(AssembleInput{
		Ranked: match.RankModel(nil, in.Profile, in.Model, cat.Catalog), Catalog: cat.Catalog, Profile: in.Profile,
		Model: in.Model, TotalSwipes: in.TotalSwipes, Excluded: ex.excluded, SwipedRegions: ex.swipedRegions,
		Seed: FeedSeed(in.StudentID, in.TotalSwipes), Size: feedSize(in),
	}, nil)
	scores := match.ScoreAll(nil, in.Profile, in.Model.Weights(), cat.Catalog, slotIndices(nil, slots))
	in.Model.AddResidual(in.Profile, cat.Catalog, scores)
	for i, s := range scores {
		slots[i].Score = s.Score
	}
	return feedOf(in, appendProfile(nil, &in.Profile), slots, ex.eligible)
}

// TestRebuildIsTheWholeBuild follows students through folds as the worker
// does (one FactorCache, a rebuild after every fold: the first ranks from
// the features and keeps the factors, the next ones rank from them) and
// checks that every rebuild, and every build without a factor cache (as
// the API builds), stores exactly what buildFeedWhole stores: every field
// Feeds.Put writes, byte for byte (the order, match_score, grades,
// reasons, learned preferences, the described items, the compact page and
// its ETag), over students of every kind of profile and models with and
// without the learned residual.
func TestRebuildIsTheWholeBuild(t *testing.T) {
	cat := active.NewCatalog(catalog.Generate(1500, 23), 4)
	m := NewMetrics(prometheus.NewRegistry())
	factors := NewFactorCache(0, m)
	for s, student := range rebuildStudents() {
		p := match.NewProfile(student)
		for _, residual := range []bool{true, false} {
			model := match.NewModel(match.SeedWeights(p))
			var swiped []string
			for fold := range 42 {
				in := FeedInput{
					StudentID: student.ID, StudentVersion: int64(fold + 1), Profile: p, Model: model,
					TotalSwipes: fold, Swiped: swiped, Catalog: cat, Describe: DescribedItems,
					Now: time.Unix(1_790_000_000, 0),
				}
				if fold%5 == 3 {
					in.Exclude = []string{cat.Schools[(fold*37)%cat.Len()].ID}
				}
				name := fmt.Sprintf("student %d, residual %v, fold %d", s, residual, fold)
				whole := buildFeedWhole(in)
				noCache := BuildFeed(in)
				in.Factors = factors
				rebuilt := BuildFeed(in)
				for _, f := range []cache.Feed{noCache, rebuilt} {
					require.Equal(t, cache.FeedFields(&whole), cache.FeedFields(&f), name)
					require.Equal(t, whole.Items, f.Items, name)
				}

				// The next fold: a swipe on a school of the feed, as a
				// student swipes (likes at the top, dislikes further down).
				pick := rebuilt.Items[(fold*7)%min(len(rebuilt.Items), 30)]
				i, ok := cat.Index(pick.SchoolID.String())
				require.True(t, ok)
				d := match.Like
				if fold%3 == 1 {
					d = match.Dislike
				}
				if residual {
					model, _ = model.Observe(p, cat.Catalog, match.SwipeObservation(i, d))
				} else {
					model, _ = model.ObserveWeights(p, cat.Catalog, match.SwipeObservation(i, d))
				}
				swiped = append(swiped, pick.SchoolID.String())
			}
			if residual {
				require.Positive(t, model.HistoryLen(), "the folds fitted a residual")
			}
		}
	}
	require.Greater(t, testutil.ToFloat64(m.FactorRequests.WithLabelValues("hit")), 400.0,
		"the rebuilds ranked from kept factors")
	require.Equal(t, 5.0, testutil.ToFloat64(m.FactorRequests.WithLabelValues("miss")), "one miss a student")
}

// rebuildStudents are profiles of every kind a rebuild ranks for.
func rebuildStudents() []domain.Student {
	ptr := func(v int) *int { return &v }
	loc := func(v float64) *float64 { return &v }
	complete := domain.Student{
		ID: uuid.NewString(), SAT: ptr(1380), GPA: loc(3.8), HomeLat: loc(39.95), HomeLon: loc(-75.16), State: "PA",
		Budget: ptr(25000), FamilyIncome: ptr(70000), MaxDistanceMiles: ptr(400),
		IntendedMajors: []domain.Major{"computer", "mathematics"}, PreferredSize: "medium",
	}
	noHome := complete
	noHome.ID, noHome.HomeLat, noHome.HomeLon, noHome.State = uuid.NewString(), nil, nil, ""
	gpaOnly := domain.Student{ID: uuid.NewString(), GPA: loc(3.1), HomeLat: loc(34.05), HomeLon: loc(-118.24),
		State: "CA", MaxDistanceMiles: ptr(60), IntendedMajors: []domain.Major{"biology"}, PreferredSetting: "city"}
	bare := domain.Student{ID: uuid.NewString()}
	far := complete
	far.ID, far.MaxDistanceMiles, far.Budget, far.FamilyIncome = uuid.NewString(), ptr(3000), nil, ptr(18000)
	far.PreferredSize, far.PreferredSetting = "large", "rural"
	return []domain.Student{complete, noHome, gpaOnly, bare, far}
}
