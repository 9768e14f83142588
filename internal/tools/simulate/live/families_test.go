package live_test

import (
	"context"
	"encoding/json"
	"net/http"
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
	assert.Contains(t, res.Table(), "| all | 1 |")

	_, err = live.RunFamilies(context.Background(), live.FamiliesConfig{API: api})
	assert.ErrorContains(t, err, "required")
}
