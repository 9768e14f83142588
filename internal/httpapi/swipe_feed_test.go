package httpapi_test

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
)

// page posts /recommendations and returns the items.
func (a *testAPI) page(t testing.TB, tok, id string, limit, offset int) ([]map[string]any, map[string]any) {
	t.Helper()
	res := a.do(t, "POST", "/recommendations", tok, map[string]any{"student_id": id, "limit": limit, "offset": offset})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	var items []map[string]any
	for _, raw := range res.Body["recommendations"].([]any) {
		items = append(items, raw.(map[string]any))
	}
	return items, res.Body
}

func TestSwipedSchoolsNeverReturnAndProbesFollowTheCount(t *testing.T) {
	api := newTestAPI(t)
	schools := api.seedSchools(t, 1200)
	id, tok := api.newStudent(t, completeProfile())

	swiped := map[string]bool{}
	for i := range 7 {
		items, _ := api.page(t, tok, id, 5, 0)
		school := items[0]["school_id"].(string)
		api.swipe(t, tok, map[string]any{"student_id": id, "school_id": school, "direction": "left"})
		swiped[school] = true
		if i == 3 { // a repeat swipe and a weak signal on another school
			api.swipe(t, tok, map[string]any{"student_id": id, "school_id": school, "direction": "right"})
			api.swipe(t, tok, map[string]any{"student_id": id, "school_id": schools[0].ID, "direction": "right", "interaction_type": "save"})
		}
	}
	// 8 counted swipes on 7 schools; the save is not a swipe and does not
	// hide its school.
	seen := map[string]bool{}
	var total int
	for offset := 0; ; offset += 100 {
		items, body := api.page(t, tok, id, 100, offset)
		total = int(body["metadata"].(map[string]any)["total_count"].(float64))
		assert.EqualValues(t, 8, body["total_swipes"])
		for i, it := range items {
			school := it["school_id"].(string)
			require.False(t, swiped[school], "a swiped school came back at %d", offset+i+1)
			require.False(t, seen[school], "a school twice")
			seen[school] = true
			// The last page, where the catalogue runs out, closes up its
			// gaps. A feed a swipe patched is extended as it was built,
			// whose last page started up to a page later: the rule is
			// checked before both.
			if pos := offset + i + 1; pos <= (total/20-1)*20 {
				assert.Equal(t, (8+pos)%4 == 0, it["is_probe"], "position %d", pos)
			}
		}
		if len(items) < 100 {
			break
		}
	}
	assert.Equal(t, 1200-7, total, "eligible: every school not swiped")
	assert.Len(t, seen, total, "every eligible school is listed once, past the stored 1,000 too")
	assert.True(t, seen[schools[0].ID], "a weak signal does not hide its school")
}

// feedStats reads the stored feed's first n items: exploration share of
// the non-probe items, and the share of each geographic band.
func feedStats(t *testing.T, api *testAPI, id string, n int) (explore float64, bands [4]float64) {
	t.Helper()
	f, err := cache.NewFeeds(api.Redis, time.Minute).Feed(context.Background(), id)
	require.NoError(t, err)
	items := f.Range(0, n)
	require.Len(t, items, n)
	st, err := api.Store.Student(context.Background(), id)
	require.NoError(t, err)
	p, _ := match.CategoryStart(match.NewProfile(st), nil)
	cat := api.Catalog.Current()
	var swipedRegions []domain.Region
	rows, err := api.Pool.Query(context.Background(), `SELECT DISTINCT school_id::text FROM swipes WHERE student_id = $1 AND counted`, id)
	require.NoError(t, err)
	var idx []int
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		if i, ok := cat.Index(s); ok {
			idx = append(idx, i)
		}
	}
	swipedRegions = match.RegionsOf(cat.Catalog, idx)
	probes, explores := 0, 0
	for _, it := range items {
		if it.Probe {
			probes++
		}
		if it.Exploration {
			explores++
		}
		i, ok := cat.Index(it.SchoolID.String())
		require.True(t, ok)
		d := match.Score(p, match.DefaultWeights(), cat.Catalog, i).Distance
		region := cat.Schools[i].Region
		switch {
		case d <= p.MaxDistanceMiles:
			bands[0]++
		case d <= 2*p.MaxDistanceMiles:
			bands[1]++
		case !containsRegion(swipedRegions, region):
			bands[2]++
		default:
			bands[3]++
		}
	}
	for b := range bands {
		bands[b] /= float64(n)
	}
	return float64(explores) / float64(n-probes), bands
}

func containsRegion(rs []domain.Region, r domain.Region) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

func TestFeedExplorationByPhaseAndGeographicMix(t *testing.T) {
	api := newTestAPI(t)
	api.seedSchools(t, 1500)
	id, tok := api.newStudent(t, completeProfile())
	cat := api.Catalog.Current()

	// Swipes on schools of the student's own region only (the Northeast),
	// so three regions stay new to the student.
	var northeast []string
	for _, s := range cat.Schools {
		if s.Region == domain.RegionNortheast {
			northeast = append(northeast, s.ID)
		}
	}
	require.GreaterOrEqual(t, len(northeast), 35)
	swipes := 0
	for _, c := range []struct {
		phase string
		upTo  int
		rate  float64
	}{{"discovery", 0, 0.30}, {"refinement", 15, 0.20}, {"stable", 35, 0.10}} {
		for ; swipes < c.upTo; swipes++ {
			api.swipe(t, tok, map[string]any{"student_id": id, "school_id": northeast[swipes], "direction": "left"})
		}
		_, body := api.page(t, tok, id, 20, 0)
		require.Equal(t, c.phase, body["metadata"].(map[string]any)["learning_phase"])
		explore, bands := feedStats(t, api, id, 200)
		assert.InDelta(t, c.rate, explore, 0.05, "%s: exploration share of the non-probe items", c.phase)
		assert.InDelta(t, 0.5, bands[0], 0.10, "%s: near", c.phase)
		assert.InDelta(t, 0.3, bands[1], 0.10, "%s: beyond", c.phase)
		assert.InDelta(t, 0.2, bands[2], 0.10, "%s: discovery", c.phase)
		t.Logf("%s: exploration %.3f, bands %.3f", c.phase, explore, bands)
	}
}

func TestServedProbesAreKnownWhenSwiped(t *testing.T) {
	api := newTestAPI(t)
	api.seedSchools(t, 600)

	t.Run("POST /recommendations", func(t *testing.T) {
		id, tok := api.newStudent(t, completeProfile())
		items, _ := api.page(t, tok, id, 4, 0)
		require.Equal(t, true, items[3]["is_probe"], "position 4 with no swipes")
		body := api.swipe(t, tok, map[string]any{"student_id": id, "school_id": items[3]["school_id"], "direction": "right"})
		assert.Equal(t, true, body["trigger_feedback"])
	})
	t.Run("GET /m/recommendations", func(t *testing.T) {
		id, tok := api.newStudent(t, completeProfile())
		res := api.do(t, "GET", "/m/recommendations/"+id, tok, nil)
		require.Equal(t, http.StatusOK, res.Status)
		var probe string
		for _, raw := range res.Body["r"].([]any) {
			if it := raw.(map[string]any); it["p"] == true {
				probe = it["i"].(string)
				break
			}
		}
		require.NotEmpty(t, probe)
		body := api.swipe(t, tok, map[string]any{"student_id": id, "school_id": probe, "direction": "left"})
		assert.Equal(t, true, body["trigger_feedback"])
	})
}

func TestLearnedFeedScoresMatchTheDetail(t *testing.T) {
	api := newTestAPI(t)
	api.seedSchools(t, 600)
	id, tok := api.newStudent(t, completeProfile())
	m, _ := api.trainedModel(t, id)
	// A swipe drops the stored feed, so the next read builds with the model.
	items, _ := api.page(t, tok, id, 5, 0)
	api.swipe(t, tok, map[string]any{"student_id": id, "school_id": items[0]["school_id"], "direction": "right"})

	items, body := api.page(t, tok, id, 30, 0)
	w := weightsOf(t, body["learning_state"].(map[string]any)["preference_weights"])
	for k, v := range m.Weights().Map() {
		assert.InDelta(t, v, w.Map()[k], 1e-4, "the learned weights: %s", k)
	}
	for i, it := range items {
		d := api.do(t, "GET", "/match/"+id+"/"+it["school_id"].(string), tok, nil)
		require.Equal(t, http.StatusOK, d.Status)
		assert.Equal(t, it["match_score"], d.Body["overall_score"], "item %d: list and detail agree", i+1)
		assert.Equal(t, it["match_grade"], d.Body["grade"])
	}
	c := api.do(t, "GET", "/m/recommendations/"+id, tok, nil)
	for i, raw := range c.Body["r"].([]any) {
		assert.Equal(t, math.Round(items[i]["match_score"].(float64)*100), raw.(map[string]any)["s"], strconv.Itoa(i))
	}
}
