package query_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/query"
)

// fullPage is what the full path answers for a page, as the API writes it.
func fullPage(t *testing.T, e *env, student string, limit, offset int, anyProfile bool) []byte {
	t.Helper()
	read := e.Service.Recommendations
	if anyProfile {
		read = e.Service.RecommendationsV2
	}
	page, err := read(context.Background(), student, limit, offset)
	require.NoError(t, err)
	b, err := json.Marshal(page)
	require.NoError(t, err)
	return append(b, '\n')
}

// A cached page served from the stored bytes is byte for byte what the full
// path encodes for the same feed, at any offset and limit within the
// described items, before and after a swipe's patch; deeper pages, stale
// feeds and profiles the endpoint refuses go to the full path.
func TestStoredRecommendationsMatchTheFullPath(t *testing.T) {
	e := newEnv(t, 300, 0)
	ctx := context.Background()
	st := e.save(t, completeStudent())

	_, ok := e.Service.StoredRecommendations(ctx, st.ID, 20, 0, false, query.Prefetched{}, nil)
	require.False(t, ok, "nothing stored yet")
	first := fullPage(t, e, st.ID, 20, 0, false) // builds and stores the feed

	pages := [][2]int{{20, 0}, {10, 5}, {20, 20}, {40, 0}, {1, 39}, {7, 13}}
	// described is how many described items the stored feed has left.
	check := func(label string, described int) {
		t.Helper()
		for _, pg := range pages {
			body, ok := e.Service.StoredRecommendations(ctx, st.ID, pg[0], pg[1], false, query.Prefetched{}, nil)
			if pg[0]+pg[1] > described {
				assert.False(t, ok, "%s: limit %d offset %d is past the described items", label, pg[0], pg[1])
				continue
			}
			require.True(t, ok, "%s: limit %d offset %d", label, pg[0], pg[1])
			assert.Equal(t, string(fullPage(t, e, st.ID, pg[0], pg[1], false)), string(body),
				"%s: limit %d offset %d", label, pg[0], pg[1])
			v2, ok := e.Service.StoredRecommendations(ctx, st.ID, pg[0], pg[1], true, query.Prefetched{}, nil)
			require.True(t, ok)
			assert.Equal(t, string(body), string(v2), "v2 shows the same page of a complete profile")
		}
		_, ok := e.Service.StoredRecommendations(ctx, st.ID, 20, described-5, false, query.Prefetched{}, nil)
		assert.False(t, ok, "%s: a page past the described items takes the full path", label)
	}
	check("as built", query.DescribedItems)
	stored, _ := e.Service.StoredRecommendations(ctx, st.ID, 20, 0, false, query.Prefetched{}, nil)
	assert.Equal(t, string(first), string(stored))

	// The same read made by a caller in a round trip of its own (the rate
	// limiter's) and handed back.
	prefetch := func(limit, offset int) query.Prefetched {
		t.Helper()
		read := e.Service.PageRead(st.ID, limit, offset)
		_, err := e.Redis.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			read.Queue(ctx, pipe)
			return nil
		})
		require.NoError(t, err)
		return query.Prefetched{Done: true, Page: read}
	}
	pre, ok := e.Service.StoredRecommendations(ctx, st.ID, 20, 0, false, prefetch(20, 0), nil)
	require.True(t, ok)
	assert.Equal(t, string(first), string(pre))
	nobody := uuid.NewString()
	missing := e.Service.PageRead(nobody, 20, 0)
	_, err := e.Redis.Pipelined(ctx, func(pipe redis.Pipeliner) error { missing.Queue(ctx, pipe); return nil })
	require.NoError(t, err)
	_, ok = e.Service.StoredRecommendations(ctx, nobody, 20, 0, false, query.Prefetched{Done: true, Page: missing}, nil)
	assert.False(t, ok, "a prefetched miss takes the full path")

	// A prefetched read that did not answer (its pipeline failed), or that
	// is another page's, is made again here.
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = down.Close() })
	failed := e.Service.PageRead(st.ID, 20, 0)
	_, err = down.Pipelined(ctx, func(pipe redis.Pipeliner) error { failed.Queue(ctx, pipe); return nil })
	require.Error(t, err)
	again, ok := e.Service.StoredRecommendations(ctx, st.ID, 20, 0, false, query.Prefetched{Done: true, Page: failed}, nil)
	require.True(t, ok)
	assert.Equal(t, string(first), string(again))
	other, ok := e.Service.StoredRecommendations(ctx, st.ID, 20, 0, false, prefetch(10, 5), nil)
	require.True(t, ok)
	assert.Equal(t, string(first), string(other), "another page's read is not this page's answer")

	// The page's probes were remembered when the feed was stored, as served
	// until it expires: a read writes nothing.
	var page query.RecommendationsPage
	require.NoError(t, json.Unmarshal(stored, &page))
	var probes []string
	for _, r := range page.Recommendations {
		if r.IsProbe {
			probes = append(probes, r.SchoolID)
		}
	}
	require.NotEmpty(t, probes)
	remembered, err := e.Redis.ZRange(ctx, cache.ProbesKey(st.ID), 0, -1).Result()
	require.NoError(t, err)
	assert.Subset(t, remembered, probes)
	require.NoError(t, e.Redis.Del(ctx, cache.ProbesKey(st.ID)).Err())
	_, ok = e.Service.StoredRecommendations(ctx, st.ID, 20, 0, false, query.Prefetched{}, nil)
	require.True(t, ok)
	n, err := e.Redis.Exists(ctx, cache.ProbesKey(st.ID)).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "a cached page writes nothing")

	// A swipe on the first item patches the feed: the stored pages move
	// with its items and counts.
	f, err := e.Feeds.Feed(ctx, st.ID)
	require.NoError(t, err)
	head := f.Range(0, 1)[0].SchoolID.String()
	trips := cache.NewSwipeTrips(e.Feeds, handover.NewQueuer())
	requireNoPatchError(t)(trips.AfterWrite(ctx, cache.FeedPatch{StudentID: st.ID, Version: f.StudentVersion + 1,
		SwipeCount: f.TotalSwipes + 1, Swiped: []string{head}}))
	check("after a swipe's patch", query.DescribedItems-1)
	after, _ := e.Service.StoredRecommendations(ctx, st.ID, 20, 0, false, query.Prefetched{}, nil)
	assert.NotContains(t, string(after), head)
	assert.Contains(t, string(after), `"total_swipes":1}`)

	// Swipes take more schools off the top than a read asks past its page
	// for: the read is made again with the right names, prefetched or not.
	f, err = e.Feeds.Feed(ctx, st.ID)
	require.NoError(t, err)
	var five []string
	for _, it := range f.Range(0, 5) {
		five = append(five, it.SchoolID.String())
	}
	requireNoPatchError(t)(trips.AfterWrite(ctx, cache.FeedPatch{StudentID: st.ID, Version: f.StudentVersion + 1,
		SwipeCount: f.TotalSwipes + 5, Swiped: five}))
	check("after six swipes' patches", query.DescribedItems-6)
	moved, ok := e.Service.StoredRecommendations(ctx, st.ID, 20, 3, false, prefetch(20, 3), nil)
	require.True(t, ok)
	assert.Equal(t, string(fullPage(t, e, st.ID, 20, 3, false)), string(moved))

	// A feed built on another catalogue version is not served from bytes.
	require.NoError(t, e.Redis.HSet(ctx, cache.FeedKey(st.ID), "cv", f.CatalogVersion+1).Err())
	_, ok = e.Service.StoredRecommendations(ctx, st.ID, 20, 0, false, query.Prefetched{}, nil)
	assert.False(t, ok)
}

// POST /recommendations refuses an incomplete profile (the full path says
// why); /v2 serves its stored pages.
func TestStoredRecommendationsIncompleteProfile(t *testing.T) {
	e := newEnv(t, 100, 0)
	ctx := context.Background()
	s := completeStudent()
	s.SAT, s.GPA = nil, nil
	st := e.save(t, s)
	v2 := fullPage(t, e, st.ID, 20, 0, true)
	body, ok := e.Service.StoredRecommendations(ctx, st.ID, 20, 0, true, query.Prefetched{}, nil)
	require.True(t, ok)
	assert.Equal(t, string(v2), string(body))
	_, ok = e.Service.StoredRecommendations(ctx, st.ID, 20, 0, false, query.Prefetched{}, nil)
	assert.False(t, ok)
	_, err := e.Service.Recommendations(ctx, st.ID, 20, 0)
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "profile") || strings.Contains(err.Error(), "MISSING"), err.Error())
}

// requireNoPatchError is a check, for t, that a patch answered without an error.
func requireNoPatchError(t *testing.T) func(cache.PatchResult, error) {
	return func(_ cache.PatchResult, err error) {
		t.Helper()
		require.NoError(t, err)
	}
}
