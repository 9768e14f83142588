package query_test

import (
	"encoding/json"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/active"
	"github.com/collegematch/matching/internal/catalog"
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
	want, _ := query.BuildFeed(in, nil)
	in.Factors = query.NewFactorCache(0, nil)
	for range 2 { // made, then kept
		got, _ := query.BuildFeed(in, nil)
		assert.Equal(t, want, got)
	}
}
