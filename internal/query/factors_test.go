package query_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/active"
	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/query"
)

func TestFactorCacheKeepsAStudentsFactorsForTheirProfileAndCatalogue(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := query.NewMetrics(reg)
	cat := active.NewCatalog(catalog.Generate(300, 5), 1)
	p := match.NewProfile(completeStudent())
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	size := match.NewFactors(p, cat.Catalog).Bytes()
	c := query.NewFactorCache(2*size, m)
	requests := func(result string) float64 {
		return counter(t, reg, "matching_factor_cache_requests_total", map[string]string{"result": result})
	}

	f := c.Get("a", raw, p, cat.Catalog)
	assert.Same(t, f, c.Get("a", raw, p, cat.Catalog), "kept")
	assert.Equal(t, 1.0, requests("miss"))
	assert.Equal(t, 1.0, requests("hit"))

	q := p
	q.Budget++
	rawQ, err := json.Marshal(q)
	require.NoError(t, err)
	assert.NotSame(t, f, c.Get("a", rawQ, q, cat.Catalog), "a changed profile makes them again")
	other := active.NewCatalog(catalog.Generate(300, 5), 2)
	g := c.Get("a", rawQ, q, other.Catalog)
	assert.Same(t, other.Catalog, g.Catalog(), "a new catalogue makes them again")
	assert.Equal(t, 3.0, requests("miss"))
	assert.Equal(t, float64(size), counter(t, reg, "matching_factor_cache_bytes", nil), "a replaced entry is not counted twice")

	// Within the bound: the least recently used student goes first.
	c.Get("b", raw, p, other.Catalog)
	c.Get("a", rawQ, q, other.Catalog) // a is now the most recent
	c.Get("c", raw, p, other.Catalog)
	assert.Equal(t, 1.0, counter(t, reg, "matching_factor_cache_evictions_total", nil))
	assert.Equal(t, float64(2*size), counter(t, reg, "matching_factor_cache_bytes", nil))
	hits := requests("hit")
	c.Get("a", rawQ, q, other.Catalog)
	assert.Equal(t, hits+1, requests("hit"), "a was kept")
	c.Get("b", raw, p, other.Catalog)
	assert.Equal(t, hits+1, requests("hit"), "b was evicted")
}

// A feed built with kept factors is the feed built without.
func TestBuildFeedWithFactorsIsTheSameFeed(t *testing.T) {
	in := buildInput(t, 800, 300)
	in.Describe = query.DescribedItems
	want := query.BuildFeed(in)
	in.Factors = query.NewFactorCache(0, nil)
	for range 2 { // made, then kept
		got := query.BuildFeed(in)
		assert.Equal(t, want, got)
	}
}

// Builds for different students running at once, sharing one factor cache
// and the assembler's pooled buffers, each give the feed a build made
// alone gives: nothing of one build's buffers ends up in another's feed.
func TestConcurrentBuildsShareNoBuffers(t *testing.T) {
	cat := active.NewCatalog(catalog.Generate(900, 17), 3)
	inputs := make([]query.FeedInput, 8)
	for i := range inputs {
		st := completeStudent()
		st.HomeLat, st.HomeLon = ptr(30+float64(i)*2), ptr(-120+float64(i)*6)
		st.SAT = ptr(1000 + i*60)
		if i%2 == 1 {
			st.IntendedMajors = []domain.Major{"biology"}
			st.PreferredSize = "small"
		}
		p := match.NewProfile(st)
		model := match.NewModel(match.SeedWeights(p))
		for k := range i * 3 { // learned from a few swipes each, in their own way
			dir := match.Dislike
			if k%2 == 0 {
				dir = match.Like
			}
			model, _ = model.Observe(p, cat.Catalog, match.SwipeObservation(k*7%len(cat.Schools), dir))
		}
		inputs[i] = query.FeedInput{StudentID: st.ID, StudentVersion: int64(i + 1), Profile: p, Model: model,
			TotalSwipes: i * 3, Catalog: cat, Size: 300, Describe: query.DescribedItems, Now: time.Unix(1_790_000_000, 0)}
	}
	want := make([]cache.Feed, len(inputs))
	for i, in := range inputs {
		want[i] = query.BuildFeed(in)
	}
	for i := 1; i < len(want); i++ {
		require.NotEqual(t, want[0].Items, want[i].Items, "students %d and 0 differ, so a mixed-up buffer shows", i)
	}

	shared := query.NewFactorCache(0, nil)
	got := make([][]cache.Feed, len(inputs))
	var wg sync.WaitGroup
	for i := range inputs {
		wg.Go(func() {
			in := inputs[i]
			in.Factors = shared
			for range 3 { // a miss, then hits, while the others build
				f := query.BuildFeed(in)
				got[i] = append(got[i], f)
			}
		})
	}
	wg.Wait()
	for i := range inputs {
		for k, f := range got[i] {
			assert.Equal(t, want[i], f, "student %d, build %d", i, k)
		}
	}
}

// A full cache keeps a missed student's factors only when the student was
// missed not long before: students cycling through more than it can hold
// are ranked as without a cache (the same ranking, no factors) and evict
// no one, while a student who comes back soon is kept.
func TestFactorCacheDoorkeeper(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := query.NewMetrics(reg)
	cat := active.NewCatalog(catalog.Generate(300, 5), 1)
	st := completeStudent()
	p := match.NewProfile(st)
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	model := match.NewModel(match.SeedWeights(p))
	size := match.NewFactors(p, cat.Catalog).Bytes()
	c := query.NewFactorCache(2*size+size/2, m) // room for two
	now := time.Unix(1_790_000_000, 0)
	query.SetFactorCacheClock(c, func() time.Time { return now })
	requests := func(result string) float64 {
		return testutil.ToFloat64(m.FactorRequests.WithLabelValues(result))
	}
	order := func(r []match.Scored) (out [][2]float64) {
		for _, s := range r {
			out = append(out, [2]float64{float64(s.Index), s.Score})
		}
		return out
	}
	want := order(match.RankModel(nil, p, model, cat.Catalog))
	rank := func(id string) *match.Factors {
		t.Helper()
		lean, f := c.RankLean(nil, id, raw, p, model, cat.Catalog)
		var got []match.Scored
		for _, i := range lean.Order(nil) {
			got = append(got, lean.Scored(int(i)))
		}
		assert.Equal(t, want, order(got), "the same ranking, kept or not")
		return f
	}

	require.NotNil(t, rank("a"), "room for everyone: kept")
	require.NotNil(t, rank("b"))
	assert.Equal(t, 2.0, requests("miss"))
	assert.Nil(t, rank("c"), "full, and c was not missed before: not kept")
	assert.Equal(t, 1.0, requests("pass"))
	assert.NotNil(t, rank("a"), "a is still kept")
	assert.Equal(t, 1.0, requests("hit"))
	assert.NotNil(t, rank("c"), "c comes back soon: kept")
	assert.Equal(t, 3.0, requests("miss"))

	// More students than the doorkeeper remembers, cycling: none is kept.
	passes := requests("pass")
	for round := range 2 {
		for i := range 200 {
			rank(fmt.Sprintf("s%d", i))
		}
		assert.Equal(t, passes+float64(200*(round+1)), requests("pass"), "round %d", round)
	}
	assert.NotNil(t, rank("c"), "and c keeps its place")

	// The student kept longest unread has gone cold: a new student's
	// first miss takes their place at once, and only theirs.
	now = now.Add(query.ColdAfter - time.Second)
	assert.NotNil(t, rank("a"), "a read just before")
	now = now.Add(time.Second)
	misses := requests("miss")
	assert.NotNil(t, rank("d"), "c unread for ColdAfter: d kept at its first miss")
	assert.Equal(t, misses+1, requests("miss"))
	assert.NotNil(t, rank("a"), "a, read a second ago, keeps its place")
	assert.Nil(t, rank("e"), "the one kept longest unread (d) is not cold: the doorkeeper again")
	assert.NotNil(t, rank("d"), "d is still kept")

	// Misses at once (their rankings run outside the lock) claim a cold
	// place each: one cold student lets one of them in, not all, and the
	// students read a moment ago keep their places.
	c = query.NewFactorCache(4*size+size/2, m) // room for four
	query.SetFactorCacheClock(c, func() time.Time { return now })
	for _, id := range []string{"cold", "w1", "w2", "w3"} {
		if rank(id) == nil {
			require.NotNil(t, rank(id), "%s kept at its second miss", id)
		}
	}
	now = now.Add(query.ColdAfter)
	for _, id := range []string{"w1", "w2", "w3"} {
		rank(id) // read again: cold alone is unread for ColdAfter
	}
	assert.True(t, c.Admit("n1"), "n1 takes cold's place")
	assert.False(t, c.Admit("n2"), "cold's place is taken, and the rest are warm: the doorkeeper")
	assert.False(t, c.Admit("n3"))
	for _, id := range []string{"w1", "w2", "w3"} {
		assert.NotNil(t, rank(id), "%s keeps its place", id)
	}
}

// An empty catalogue's factors take no room, and keeping them breaks
// nothing.
func TestFactorCacheEmptyCatalogue(t *testing.T) {
	cat := active.NewCatalog(nil, 1)
	p := match.NewProfile(completeStudent())
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	c := query.NewFactorCache(0, nil)
	for range 2 {
		lean, _ := c.RankLean(nil, "a", raw, p, match.NewModel(match.SeedWeights(p)), cat.Catalog)
		assert.Zero(t, lean.Len())
	}
}
