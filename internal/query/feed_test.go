package query_test

import (
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/active"
	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/query"
)

func TestPhaseAndProgress(t *testing.T) {
	for _, c := range []struct {
		swipes   int
		phase    string
		progress float64
	}{
		{0, "discovery", 0}, {10, "discovery", 10.0 / 31}, {11, "refinement", 11.0 / 31},
		{30, "refinement", 30.0 / 31}, {31, "stable", 1}, {500, "stable", 1}, {-1, "discovery", 0},
	} {
		assert.Equal(t, c.phase, query.PhaseFor(c.swipes), "%d swipes", c.swipes)
		assert.InDelta(t, c.progress, query.Progress(c.swipes), 1e-12, "%d swipes", c.swipes)
	}
}

func TestProbePositions(t *testing.T) {
	var got []int
	for p := 1; p <= 12; p++ {
		if query.IsProbePosition(2, p) {
			got = append(got, p)
		}
	}
	assert.Equal(t, []int{2, 6, 10}, got, "with 2 swipes, positions 2, 6, 10 are probes (2+p a multiple of 4)")
}

func TestFeedSeedIsTheStudentState(t *testing.T) {
	id := uuid.NewString()
	assert.Equal(t, query.FeedSeed(id, 3), query.FeedSeed(id, 3))
	assert.NotEqual(t, query.FeedSeed(id, 3), query.FeedSeed(id, 4))
	assert.NotEqual(t, query.FeedSeed(id, 3), query.FeedSeed(uuid.NewString(), 3))
}

func buildInput(t testing.TB, n, size int) query.FeedInput {
	t.Helper()
	cat := active.NewCatalog(catalog.Generate(n, 11), 9)
	p := match.NewProfile(completeStudent())
	return query.FeedInput{StudentID: uuid.NewString(), StudentVersion: 4, Profile: p, Model: match.NewModel(match.SeedWeights(p)),
		TotalSwipes: 12, Catalog: cat, Size: size, Now: time.Unix(1_790_000_000, 0)}
}

func TestBuildFeed(t *testing.T) {
	in := buildInput(t, 600, 250)
	in.Swiped = []string{in.Catalog.Schools[5].ID, in.Catalog.Schools[9].ID, "not-a-school"}
	f := query.BuildFeed(in)

	assert.Equal(t, in.StudentID, f.StudentID)
	assert.EqualValues(t, 4, f.StudentVersion)
	assert.EqualValues(t, 9, f.CatalogVersion)
	assert.Equal(t, match.AlgorithmVersion, f.AlgorithmVersion)
	assert.Equal(t, 12, f.TotalSwipes)
	assert.Equal(t, 598, f.TotalCount, "every active school the student has not swiped")
	w := in.Model.Weights()
	assert.Equal(t, w.Map(), f.Weights)
	var p match.Profile
	require.NoError(t, json.Unmarshal(f.Profile, &p))
	assert.Equal(t, in.Profile, p, "the profile travels with the feed")

	require.Len(t, f.Items, 250)
	seen := map[uuid.UUID]bool{}
	ranked := match.RankModel(nil, in.Profile, in.Model, in.Catalog.Catalog)
	rankOf := map[string]int{}
	for i, s := range ranked {
		rankOf[in.Catalog.Schools[s.Index].ID] = i
	}
	prevRank := -1
	for i, it := range f.Items {
		require.False(t, seen[it.SchoolID], "every school once")
		seen[it.SchoolID] = true
		id := it.SchoolID.String()
		require.NotEqual(t, in.Catalog.Schools[5].ID, id, "swiped schools never appear")
		require.NotEqual(t, in.Catalog.Schools[9].ID, id)
		assert.Equal(t, query.IsProbePosition(12, i+1), it.Probe, "position %d", i+1)
		if i%query.FeedPageSize == 0 {
			assert.False(t, it.Exploration, "no exploration pick at position 1 of a page")
		}
		// The score shown is the plain match score with the learned weights:
		// what GET /match says of the same school.
		idx, ok := in.Catalog.Index(id)
		require.True(t, ok)
		want := match.Score(in.Profile, w, in.Catalog.Catalog, idx)
		assert.Equal(t, math.Round(want.Score*1e4)/1e4, it.Score)
		assert.Equal(t, math.Round(want.Academic*1e4)/1e4, it.Academic)
		if want.HasDistance() {
			assert.Equal(t, math.Round(want.Distance*10)/10, it.Distance)
		}
		// The ranked items of a page come in the model's order.
		if !it.Probe && !it.Exploration {
			if i%query.FeedPageSize == 0 {
				prevRank = -1
			}
			assert.Greater(t, rankOf[id], prevRank, "ranked items in the model's order")
			prevRank = rankOf[id]
		}
	}

	// The compact page: the first 20, s = round(match_score*100) of the
	// shown (rounded) score, and its grade; p marks the probes.
	var page struct {
		R []map[string]any `json:"r"`
	}
	require.NoError(t, json.Unmarshal(f.Compact.Body, &page))
	require.Len(t, page.R, query.CompactPageSize)
	var probes []string
	for i, item := range page.R {
		it := f.Items[i]
		idx, ok := in.Catalog.Index(it.SchoolID.String())
		require.True(t, ok)
		s := in.Catalog.Schools[idx]
		assert.Equal(t, s.ID, item["i"])
		assert.Equal(t, s.Name, item["n"])
		assert.EqualValues(t, math.Round(it.Score*100), item["s"])
		assert.Equal(t, match.Grade(it.Score), item["g"])
		assert.Equal(t, s.City, item["c"])
		assert.Equal(t, s.State, item["st"])
		if it.Probe {
			assert.Equal(t, true, item["p"])
			probes = append(probes, s.ID)
		} else {
			assert.NotContains(t, item, "p", "p is absent on items that are not probes")
		}
	}
	assert.Len(t, probes, 5, "with 12 swipes, positions 4, 8, 12, 16 and 20")
	assert.Equal(t, probes, query.StoredProbes(&f))
	assert.Regexp(t, `^"[0-9a-f]{40}"$`, f.Compact.ETag, "the body's SHA-1, as a swipe's patch makes it")
}

func TestBuildFeedIsDeterministicAndTheETagFollowsTheBody(t *testing.T) {
	in := buildInput(t, 300, 100)
	a := query.BuildFeed(in)
	b := query.BuildFeed(in)
	assert.Equal(t, a, b, "same state, same feed")
	c := query.BuildFeed(in)
	assert.Equal(t, a, c, "reusing the ranking's buffer changes nothing")

	w := in.Model.Weights()
	w.CostWeight, w.DistanceWeight = 0.99, 0.01
	in.Model = match.NewModel(w)
	d := query.BuildFeed(in)
	require.NotEqual(t, a.Compact.Body, d.Compact.Body)
	assert.NotEqual(t, a.Compact.ETag, d.Compact.ETag, "another body, another ETag")
}

func TestBuildFeedSmallAndEmptyCatalogues(t *testing.T) {
	in := buildInput(t, 7, 100)
	f := query.BuildFeed(in)
	assert.Len(t, f.Items, 7)
	assert.Equal(t, 7, f.TotalCount)

	in.Catalog = active.NewCatalog(nil, 1)
	f = query.BuildFeed(in)
	assert.Empty(t, f.Items)
	assert.JSONEq(t, `{"r":[]}`, string(f.Compact.Body))
}

// Pages of any size tile one list: assembling n items gives the first n of
// any longer assembly.
func TestAssembleIsPrefixStable(t *testing.T) {
	in := buildInput(t, 400, 0)
	ranked := match.RankModel(nil, in.Profile, in.Model, in.Catalog.Catalog)
	assemble := func(n int) []query.Slot {
		return query.Assemble(query.AssembleInput{Ranked: ranked, Catalog: in.Catalog.Catalog, Profile: in.Profile,
			Model: in.Model, TotalSwipes: 12, Seed: 1, Size: n}, nil)
	}
	full := assemble(400)
	require.Len(t, full, 400)
	for _, n := range []int{0, 1, 20, 137, 400, 1000} {
		part := assemble(n)
		if n == 0 {
			assert.Empty(t, part)
			continue
		}
		assert.Equal(t, full[:min(n, 400)], part, "size %d", n)
	}
	idx := make([]int32, len(full))
	for i, s := range full {
		idx[i] = s.Index
	}
	slices.Sort(idx)
	assert.Len(t, slices.Compact(idx), 400, "every school once")
}
