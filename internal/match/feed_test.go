package match

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
)

// feedCatalog is the default-size generated catalogue, built once.
var feedCatalog = NewCatalog(catalog.Generate(catalog.DefaultSeedCount, 5))

// feedStudent lives in Philadelphia and allows 300 miles.
func feedStudent() Profile {
	return NewProfile(domain.Student{
		ID: "feed", SAT: ptr(1200), HomeLat: ptr(39.95), HomeLon: ptr(-75.16), State: "PA",
		Budget: ptr(22000), FamilyIncome: ptr(70000), MaxDistanceMiles: ptr(300),
		IntendedMajors: []domain.Major{"computer"},
	})
}

// feedInput is a typical input after the given number of swipes: a model
// that has seen that many swipes on top schools, which are excluded.
func feedInput(t testing.TB, swipes int) FeedInput {
	t.Helper()
	cat, p := feedCatalog, feedStudent()
	m := NewModel(SeedWeights(p))
	excluded := make([]bool, cat.Len())
	var swiped []int
	ranked := Rank(nil, p, m.Weights(), cat)
	for k := range swipes {
		i := int(ranked[2*k].Index)
		d := Like
		if k%3 == 2 {
			d = Dislike
		}
		m, _ = m.Observe(p, cat, SwipeObservation(i, d))
		excluded[i] = true
		swiped = append(swiped, i)
	}
	return FeedInput{
		Catalog: cat, Profile: p, Model: m, Ranked: Rank(nil, p, m.Weights(), cat), Swipes: swipes,
		Length: 200, Excluded: excluded, SwipedRegions: RegionsOf(cat, swiped), Seed: FeedSeed("feed-student", swipes),
	}
}

func TestFeedProbePositions(t *testing.T) {
	base := feedInput(t, 13)
	for _, swipes := range []int{0, 1, 2, 3, 7, 13, 30, 31} {
		for _, offset := range []int{0, 1, 5, 20, 37} {
			in := base
			in.Swipes, in.Offset, in.Length = swipes, offset, 60
			feed := AssembleFeed(in)
			require.Len(t, feed, 60)
			for i, it := range feed {
				p := offset + i + 1
				require.Equal(t, p, it.Position)
				assert.Equal(t, (swipes+p)%4 == 0, it.IsProbe, "swipes %d offset %d position %d", swipes, offset, p)
				assert.False(t, it.IsProbe && it.IsExploration)
			}
		}
	}
}

func TestFeedProbesArePastABoundary(t *testing.T) {
	in := feedInput(t, 20)
	feed := AssembleFeed(in)
	a := newAssembler(&in, DefaultPageSize)
	kinds := map[string]int{}
	for _, it := range feed {
		if !it.IsProbe {
			continue
		}
		require.NotEmpty(t, it.ProbeKind, "a probe names the boundary it tests")
		k := map[string]int{ProbePricier: 0, ProbeMoreSelective: 1, ProbeFarther: 2, ProbeOtherSize: 3}[it.ProbeKind]
		assert.True(t, a.pastBoundary(k, int(it.Index), it.Distance), "%s probe %d", it.ProbeKind, it.Index)
		kinds[it.ProbeKind]++
	}
	assert.GreaterOrEqual(t, len(kinds), 3, "probes test several boundaries: %v", kinds)

	// The boundaries follow what was learned: a student who has learned
	// that cost matters gets probes closer to the budget.
	lo, hi := in, in
	lo.Model, hi.Model = NewModel(Weights{CostWeight: 0.1}), NewModel(Weights{CostWeight: 0.95})
	al, ah := newAssembler(&lo, 20), newAssembler(&hi, 20)
	assert.Less(t, ah.priceHi, al.priceHi)
}

func TestFeedExplorationShare(t *testing.T) {
	for _, tt := range []struct {
		swipes int
		share  float64
	}{{0, 0.3}, {5, 0.3}, {10, 0.3}, {11, 0.2}, {20, 0.2}, {30, 0.2}, {31, 0.1}, {45, 0.1}} {
		in := feedInput(t, tt.swipes)
		feed := AssembleFeed(in)
		require.Len(t, feed, 200)
		explore, nonProbe := 0, 0
		for _, it := range feed {
			if !it.IsProbe {
				nonProbe++
				if it.IsExploration {
					explore++
				}
			}
		}
		got := float64(explore) / float64(nonProbe)
		assert.InDelta(t, tt.share, got, 0.05, "swipes %d: %d of %d non-probe slots", tt.swipes, explore, nonProbe)
	}
}

func TestFeedExplorationNeverFirstOnAPage(t *testing.T) {
	for _, page := range []int{20, 10, 7, 3} {
		for _, offset := range []int{0, 3, 20} {
			in := feedInput(t, 4)
			in.PageSize, in.Offset, in.Length = page, offset, 100
			for _, it := range AssembleFeed(in) {
				if (it.Position-1)%page == 0 {
					assert.False(t, it.IsExploration, "page %d position %d", page, it.Position)
				}
			}
		}
	}
	// With pages of one item every position is first: no exploration.
	in := feedInput(t, 4)
	in.PageSize = 1
	for _, it := range AssembleFeed(in) {
		assert.False(t, it.IsExploration)
	}
}

// geoShares counts the bands of each page.
func geoShares(feed []FeedItem, page int) [][nGeoBands]int {
	var out [][nGeoBands]int
	for i, it := range feed {
		if i%page == 0 {
			out = append(out, [nGeoBands]int{})
		}
		out[len(out)-1][it.Geo]++
	}
	return out
}

func TestFeedGeographicMix(t *testing.T) {
	in := feedInput(t, 12)
	feed := AssembleFeed(in)
	require.Len(t, feed, 200)
	for k, c := range geoShares(feed, DefaultPageSize) {
		n := float64(DefaultPageSize)
		assert.InDelta(t, 0.5, float64(c[GeoNear])/n, 0.1, "page %d: %v", k, c)
		assert.InDelta(t, 0.3, float64(c[GeoBeyond])/n, 0.1, "page %d: %v", k, c)
		assert.InDelta(t, 0.2, float64(c[GeoDiscovery])/n, 0.1, "page %d: %v", k, c)
	}
	// The labels mean what they say.
	maxD := in.Profile.MaxDistanceMiles
	swiped := map[domain.Region]bool{}
	for _, r := range in.SwipedRegions {
		swiped[r] = true
	}
	for _, it := range feed {
		switch it.Geo {
		case GeoNear:
			assert.LessOrEqual(t, it.Distance, maxD)
		case GeoBeyond:
			assert.Greater(t, it.Distance, maxD)
			assert.LessOrEqual(t, it.Distance, 2*maxD)
		case GeoDiscovery:
			assert.Greater(t, it.Distance, 2*maxD)
			assert.False(t, swiped[feedCatalog.Schools[it.Index].Region])
		}
	}
}

func TestFeedGeographicFallback(t *testing.T) {
	// Every region swiped: no discovery band; its share falls to the next
	// band, near.
	in := feedInput(t, 12)
	in.SwipedRegions = []domain.Region{domain.RegionNortheast, domain.RegionMidwest, domain.RegionSouth, domain.RegionWest}
	feed := AssembleFeed(in)
	require.Len(t, feed, 200)
	for k, c := range geoShares(feed, DefaultPageSize) {
		assert.Zero(t, c[GeoDiscovery], "page %d", k)
		assert.Zero(t, c[GeoOther], "page %d: other schools only when all bands are empty", k)
		assert.InDelta(t, 0.7, float64(c[GeoNear])/DefaultPageSize, 0.1, "page %d: %v", k, c)
		assert.InDelta(t, 0.3, float64(c[GeoBeyond])/DefaultPageSize, 0.1, "page %d: %v", k, c)
	}

	// No school 1-2x the max distance left: beyond falls to discovery.
	in = feedInput(t, 12)
	ex := append([]bool(nil), in.Excluded...)
	for _, s := range in.Ranked {
		if s.Distance > in.Profile.MaxDistanceMiles && s.Distance <= 2*in.Profile.MaxDistanceMiles {
			ex[s.Index] = true
		}
	}
	in.Excluded = ex
	feed = AssembleFeed(in)
	require.Len(t, feed, 200)
	for k, c := range geoShares(feed, DefaultPageSize) {
		assert.Zero(t, c[GeoBeyond], "page %d", k)
		assert.InDelta(t, 0.5, float64(c[GeoNear])/DefaultPageSize, 0.1, "page %d: %v", k, c)
		assert.InDelta(t, 0.5, float64(c[GeoDiscovery])/DefaultPageSize, 0.1, "page %d: %v", k, c)
	}

	// Only schools in no band left (far away, in regions already swiped):
	// they are served rather than nothing.
	in = feedInput(t, 12)
	in.SwipedRegions = []domain.Region{domain.RegionNortheast, domain.RegionMidwest, domain.RegionSouth, domain.RegionWest}
	ex = append([]bool(nil), in.Excluded...)
	for _, s := range in.Ranked {
		if s.Distance <= 2*in.Profile.MaxDistanceMiles {
			ex[s.Index] = true
		}
	}
	in.Excluded = ex
	feed = AssembleFeed(in)
	require.Len(t, feed, 200)
	for _, it := range feed {
		assert.Equal(t, GeoOther, it.Geo)
	}
}

func TestFeedExcludedNeverAppear(t *testing.T) {
	in := feedInput(t, 25)
	// Also exclude a block of the best remaining schools (cooling down).
	ex := append([]bool(nil), in.Excluded...)
	for _, s := range in.Ranked[:300] {
		if s.Index%3 == 0 {
			ex[s.Index] = true
		}
	}
	in.Excluded, in.Length = ex, 400
	feed := AssembleFeed(in)
	require.Len(t, feed, 400)
	seen := map[int32]bool{}
	for _, it := range feed {
		assert.False(t, ex[it.Index], "excluded school %d served", it.Index)
		assert.False(t, seen[it.Index], "school %d served twice", it.Index)
		seen[it.Index] = true
	}
	// Catalogue.Mask builds the same set from ids.
	var ids []string
	for i, x := range ex {
		if x {
			ids = append(ids, feedCatalog.Schools[i].ID)
		}
	}
	assert.Equal(t, ex, feedCatalog.Mask(append(ids, "not-a-school")))
}

func TestFeedRunsOutOnlyWithTheCatalogue(t *testing.T) {
	cat := NewCatalog(catalog.Generate(50, 2))
	p := feedStudent()
	m := NewModel(SeedWeights(p))
	ex := make([]bool, cat.Len())
	for i := range 10 {
		ex[i] = true
	}
	feed := AssembleFeed(FeedInput{Catalog: cat, Profile: p, Model: m, Ranked: Rank(nil, p, m.Weights(), cat),
		Length: 100, Excluded: ex, Seed: 1})
	assert.Len(t, feed, 40, "every school not excluded, once")
	assert.Empty(t, AssembleFeed(FeedInput{Catalog: cat, Profile: p, Ranked: nil, Length: 10}))
	assert.Empty(t, AssembleFeed(FeedInput{}))
}

func TestFeedIsDeterministicAndTiles(t *testing.T) {
	in := feedInput(t, 17)
	a, b := AssembleFeed(in), AssembleFeed(in)
	require.Equal(t, a, b, "same input, same feed")

	other := in
	other.Seed = FeedSeed("feed-student", 18)
	assert.NotEqual(t, a, AssembleFeed(other), "another seed, another feed")

	for _, page := range []int{20, 10} {
		full := in
		full.PageSize, full.Length = page, 120
		whole := AssembleFeed(full)
		for _, cut := range [][2]int{{0, 20}, {20, 20}, {40, 15}, {55, 65}, {100, 20}} {
			part := full
			part.Offset, part.Length = cut[0], cut[1]
			assert.Equal(t, whole[cut[0]:cut[0]+cut[1]], AssembleFeed(part), "page %d offset %d length %d", page, cut[0], cut[1])
		}
	}
}

func TestFeedRankedItemsInRankedOrder(t *testing.T) {
	in := feedInput(t, 8)
	rankOf := map[int32]int{}
	for k, s := range in.Ranked {
		rankOf[s.Index] = k
	}
	feed := AssembleFeed(in)
	for start := 0; start < len(feed); start += DefaultPageSize {
		last := -1
		for _, it := range feed[start:min(len(feed), start+DefaultPageSize)] {
			if it.IsProbe || it.IsExploration {
				continue
			}
			assert.Greater(t, rankOf[it.Index], last, "page at %d: ranked items best first", start)
			last = rankOf[it.Index]
		}
	}
	// The first item is the best school not swiped, unless it is a probe.
	first := feed[0]
	if !first.IsProbe {
		for _, s := range in.Ranked {
			if !in.Excluded[s.Index] && s.HasDistance() && s.Distance <= in.Profile.MaxDistanceMiles {
				assert.Equal(t, s.Index, first.Index)
				break
			}
		}
	}
}

func TestFeedExplorationTeachesMoreThanUniform(t *testing.T) {
	// Exploration picks chosen by expected information teach the model
	// more than picks drawn uniformly from the same pools: the information
	// of the swipes taken one after the other (each pick's expected
	// information given the ones before it), which is what the feed
	// maximises greedily.
	for _, swipes := range []int{0, 3, 15} {
		in := feedInput(t, swipes)
		uni := in
		uni.Exploration = ExploreUniform
		info := func(feed []FeedItem) float64 {
			a := newAssembler(&in, DefaultPageSize)
			sum, n := 0.0, 0
			for _, it := range feed {
				if !it.IsExploration {
					continue
				}
				c := a.candidate(it.Index)
				like, _, vw := moments(&c.x, c.z, &a.cov)
				sum += 0.5 * math.Log1p(like*(1-like)*vw)
				a.observeVirtually(c)
				n++
			}
			require.Positive(t, n)
			return sum
		}
		guided, uniform := info(AssembleFeed(in)), info(AssembleFeed(uni))
		t.Logf("swipes %d: guided %.3f uniform %.3f", swipes, guided, uniform)
		assert.Greater(t, guided, 1.1*uniform, "swipes %d: guided %.3f uniform %.3f", swipes, guided, uniform)
	}
}

func TestFeedWithoutLocation(t *testing.T) {
	cat := feedCatalog
	p := NewProfile(domain.Student{ID: "nowhere", GPA: ptr(3.4)})
	require.False(t, p.HasHome)
	var m Model // the zero Model is usable
	feed := AssembleFeed(FeedInput{Catalog: cat, Profile: p, Model: m, Ranked: Rank(nil, p, m.Weights(), cat),
		Length: 60, Seed: FeedSeed("nowhere", 0)})
	require.Len(t, feed, 60)
	for _, it := range feed {
		assert.True(t, it.Geo == GeoDiscovery || it.Geo == GeoOther, "no distance, no near or beyond")
		assert.False(t, math.IsNaN(it.Score))
	}
}

func TestFeedSeed(t *testing.T) {
	assert.Equal(t, FeedSeed("a", 1), FeedSeed("a", 1))
	assert.NotEqual(t, FeedSeed("a", 1), FeedSeed("a", 2))
	assert.NotEqual(t, FeedSeed("a", 1), FeedSeed("b", 1))
	assert.Empty(t, RegionsOf(feedCatalog, nil))
	assert.Empty(t, RegionsOf(feedCatalog, []int{-1, feedCatalog.Len()}))
	r0 := feedCatalog.Schools[0].Region
	assert.Equal(t, []domain.Region{r0}, RegionsOf(feedCatalog, []int{0, 0}))
}
