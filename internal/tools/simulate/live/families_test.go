package live_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/tools/simulate"
	"github.com/collegematch/matching/internal/tools/simulate/live"
)

// The families run judges what POST /recommendations answered at each
// checkpoint, as the family student judges the same list.
func TestRunFamiliesJudgesTheRecommendations(t *testing.T) {
	schools := catalog.Generate(300, 2)
	top := make([]map[string]any, 20)
	ids := make([]string, 20)
	for i := range top {
		ids[i] = schools[100+i].ID
		top[i] = map[string]any{"school_id": ids[i]}
	}
	var reads atomic.Int64
	api := fakeAPI(t, schools, map[string]http.HandlerFunc{
		"/recommendations": func(w http.ResponseWriter, r *http.Request) {
			reads.Add(1)
			_ = json.NewEncoder(w).Encode(map[string]any{"recommendations": top})
		},
	})
	cfg := live.FamiliesConfig{API: api, Schools: schools, Students: 1, Swipes: 5, PageSize: 3, Workers: 1,
		Checkpoints: []int{0, 5}, Settle: time.Millisecond,
		Token: func(id string) (string, error) { return "tok-" + id, nil }}
	res, err := live.RunFamilies(context.Background(), cfg)
	require.NoError(t, err)
	assert.EqualValues(t, 2, reads.Load(), "one read per checkpoint")
	assert.Equal(t, 5, res.Swipes)
	all := int(simulate.NumFamilies)
	assert.Equal(t, 1, res.Students[all])
	assert.Equal(t, 1, res.Students[0], "student 0 is of the first family")

	st := simulate.NewFamilyPopulation(simulate.FamiliesConfig{Schools: schools, Students: 1, Swipes: 5, PageSize: 3}).Student(0)
	ceiling, logistic := st.References()
	assert.InDelta(t, st.NDCG(ids), res.NDCG[live.RefService][all][0], 1e-12)
	assert.InDelta(t, ceiling, res.NDCG[live.RefCeiling][all][0], 1e-12)
	assert.InDelta(t, logistic, res.NDCG[live.RefLogistic][all][0], 1e-12)
	// After the five swipes (the fake served the catalogue in order).
	for _, sch := range schools[:5] {
		_, known := st.Swipe(sch.ID)
		require.True(t, known)
	}
	ceiling, logistic = st.References()
	assert.InDelta(t, st.NDCG(ids), res.NDCG[live.RefService][all][1], 1e-12)
	assert.InDelta(t, ceiling, res.NDCG[live.RefCeiling][all][1], 1e-12)
	assert.InDelta(t, logistic, res.NDCG[live.RefLogistic][all][1], 1e-12)
	assert.Contains(t, res.Table(), "| all | 1 |")

	_, err = live.RunFamilies(context.Background(), live.FamiliesConfig{API: api})
	assert.ErrorContains(t, err, "required")
}

// Students of every family and variant, several at once, each with its
// own swipe count at the service.
func TestRunFamiliesDrivesStudentsAtOnce(t *testing.T) {
	schools := catalog.Generate(300, 2)
	var mu sync.Mutex
	counts := map[string]int{}
	student := func(r *http.Request) string {
		var b struct {
			StudentID string `json:"student_id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&b)
		return b.StudentID
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v2/onboarding/minimal", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte("{}"))
	})
	mux.HandleFunc("/continuous-feed", func(w http.ResponseWriter, r *http.Request) {
		id := student(r)
		mu.Lock()
		n := counts[id]
		mu.Unlock()
		var items []map[string]any
		for i := range 3 {
			items = append(items, map[string]any{"school_id": schools[n+i].ID})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"recommendations": items})
	})
	mux.HandleFunc("/swipe", func(w http.ResponseWriter, r *http.Request) {
		id := student(r)
		mu.Lock()
		counts[id]++
		n := counts[id]
		mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"swipe_count": n})
	})
	mux.HandleFunc("/recommendations", func(w http.ResponseWriter, r *http.Request) {
		var items []map[string]any
		for i := range 20 {
			items = append(items, map[string]any{"school_id": schools[100+i].ID})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"recommendations": items})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	for v := range 3 {
		cfg := live.FamiliesConfig{API: srv.URL, Schools: schools, Students: 10, Swipes: 6, PageSize: 3, Workers: 4,
			Variant: v, Checkpoints: []int{0, 3, 6}, Settle: time.Millisecond,
			Token: func(id string) (string, error) { return "tok-" + id, nil }}
		res, err := live.RunFamilies(context.Background(), cfg)
		require.NoError(t, err, "variant %d", v)
		all := int(simulate.NumFamilies)
		assert.Equal(t, 10, res.Students[all], "variant %d", v)
		assert.Equal(t, 60, res.Swipes, "variant %d", v)
		for f := range simulate.NumFamilies {
			assert.Equal(t, 2, res.Students[f], "variant %d, %s", v, f)
		}
	}
}
