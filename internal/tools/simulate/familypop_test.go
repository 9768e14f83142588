package simulate

import (
	"cmp"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/match"
)

// A family student driven from outside judges lists as RunFamilies does:
// its references before any swipe are RunFamilies' ceiling and logistic for
// the same student, its ideal list scores 1, and a swiped school gains
// nothing.
func TestFamilyStudentJudgesAsRunFamilies(t *testing.T) {
	if raceEnabled {
		t.Skip("checked without the race detector")
	}
	for _, v := range []int{0, 1, 2} {
		cfg := FamiliesConfig{Schools: catalog.Generate(800, 3), Students: 1, Swipes: 1, Seed: 4, Variant: v,
			Checkpoints: []int{0}}
		res := RunFamilies(cfg)
		st := NewFamilyPopulation(cfg).Student(0)
		ceiling, logistic := st.References()
		assert.InDelta(t, res.NDCG[FCeiling][NumFamilies][0], ceiling, 1e-12, "variant %d", v)
		assert.InDelta(t, res.NDCG[FLogistic][NumFamilies][0], logistic, 1e-12, "variant %d", v)

		// The ideal list: the schools by the student's utility.
		order := make([]int, st.w.n)
		for k := range order {
			order[k] = k
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(st.st.util[b], st.st.util[a]) })
		ids := func(idx []int) []string {
			out := make([]string, len(idx))
			for k, i := range idx {
				out[k] = st.w.cat.Schools[i].ID
			}
			return out
		}
		assert.InDelta(t, 1, st.NDCG(ids(order[:20])), 1e-12, "variant %d: the ideal list", v)

		// Swiping the best school takes it out: the list without it is
		// ideal again, the list with it is not.
		_, known := st.Swipe(st.w.cat.Schools[order[0]].ID)
		require.True(t, known)
		assert.Equal(t, 1, st.Swipes())
		assert.InDelta(t, 1, st.NDCG(ids(order[1:21])), 1e-12, "variant %d", v)
		assert.Less(t, st.NDCG(ids(order[:20])), 1.0, "variant %d: a swiped school gains nothing", v)
		_, known = st.Swipe("00000000-0000-0000-0000-000000000001")
		assert.False(t, known)
	}
}

// A family student that swipes what the learner's student swiped decides
// the same way and has the same references after them, for every family
// of every variant: what a run through the API is held against is what
// families mode measures.
func TestFamilyStudentReplaysRunFamilies(t *testing.T) {
	if raceEnabled {
		t.Skip("checked without the race detector")
	}
	for v := range 3 {
		cfg := FamiliesConfig{Schools: catalog.Generate(800, 3), Students: 5, Swipes: 12, Seed: 4, Variant: v,
			Checkpoints: []int{0, 12}}
		res := RunFamilies(cfg)
		pop := NewFamilyPopulation(cfg)
		w := pop.w
		for i := range cfg.Students {
			st := w.newStudent(i)
			p := w.walk(st, nil, func(m match.Model, o match.Observation) match.Model {
				m, _ = m.Observe(st.profile, w.cat, o)
				return m
			}, func(int, int, []match.FeedItem, *path) {})
			fs := pop.Student(i)
			for k, idx := range p.swiped {
				like, known := fs.Swipe(w.cat.Schools[idx].ID)
				require.True(t, known)
				assert.Equal(t, p.ys[k], like, "variant %d, student %d, swipe %d", v, i, k)
			}
			ceiling, logistic := fs.References()
			f := fs.Family()
			assert.InDelta(t, res.NDCG[FCeiling][f][1], ceiling, 1e-12, "variant %d, %s", v, f)
			assert.InDelta(t, res.NDCG[FLogistic][f][1], logistic, 1e-12, "variant %d, %s", v, f)
		}
	}
}
