package match

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
)

func TestRankIsSortedPermutation(t *testing.T) {
	for seed := range uint64(20) {
		g := newGen(seed, 0.3, seed%2 == 1)
		cat := NewCatalog(g.schools(300 + int(seed)*37))
		p, w := NewProfile(g.student()), g.weights()
		got := Rank(nil, p, w, cat)
		require.Len(t, got, cat.Len())
		seen := make([]bool, cat.Len())
		for i, s := range got {
			require.False(t, seen[s.Index], "school %d twice", s.Index)
			seen[s.Index] = true
			if i > 0 {
				prev := got[i-1]
				require.True(t, prev.Score > s.Score || (prev.Score == s.Score && cat.Schools[prev.Index].ID < cat.Schools[s.Index].ID),
					"position %d out of order: %v then %v", i, prev, s)
			}
			assert.Equal(t, Score(p, w, cat, int(s.Index)), s, "Rank and Score agree")
		}
		again := Rank(make([]Scored, 0, 5), p, w, cat)
		assert.Equal(t, got, again, "deterministic")
	}
}

func TestRankTiesBreakByID(t *testing.T) {
	// Identical schools given in scrambled ID order.
	var schools []domain.School
	for _, i := range []int{7, 3, 9, 1, 5, 2, 8, 4, 6, 0} {
		s := keystoneState()
		s.ID = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		schools = append(schools, s)
	}
	worse := pacificCollege()
	worse.ID = "00000000-0000-4000-8000-000000000000"
	schools = append(schools, worse)
	cat := NewCatalog(schools)
	p := NewProfile(studentSAT())
	got := Rank(nil, p, SeedWeights(p), cat)
	var ids []string
	for _, s := range got {
		ids = append(ids, cat.Schools[s.Index].ID)
	}
	want := []string{}
	for i := range 10 {
		want = append(want, fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
	}
	assert.Equal(t, append(want, worse.ID), ids)
}

func TestRankReusesDst(t *testing.T) {
	g := newGen(11, 0.2, false)
	cat := NewCatalog(g.schools(1000))
	p := NewProfile(g.student())
	w := SeedWeights(p)
	dst := Rank(nil, p, w, cat)
	assert.Equal(t, 2*cat.Len(), cap(dst))
	allocs := testing.AllocsPerRun(20, func() { dst = Rank(dst, p, w, cat) })
	assert.Equal(t, 0.0, allocs)

	empty := Rank(nil, p, w, NewCatalog(nil))
	assert.Empty(t, empty)
	one := Rank(nil, p, w, NewCatalog([]domain.School{bareSchool()}))
	assert.Len(t, one, 1)
}

// The radix sort with the tie fix-up gives exactly the comparison sort's
// order, including runs of equal and nearly equal scores.
func TestSortScoredMatchesComparisonSort(t *testing.T) {
	g := newGen(5, 0, false)
	for round := range 200 {
		n := 1 + g.r.IntN(3000)
		s := make([]Scored, n)
		for i := range s {
			var v float64
			switch g.r.IntN(4) {
			case 0:
				v = g.r.Float64()
			case 1:
				v = float64(g.r.IntN(20)) / 19 // exact duplicates, including 0 and 1
			case 2:
				v = 0.5 + float64(g.r.IntN(200))*1e-9 // many distinct scores under one key
			default:
				v = 0.731 // one long run
			}
			s[i] = Scored{Score: v, Index: int32(i)}
		}
		want := slices.Clone(s)
		slices.SortFunc(want, better)
		tmp := make([]Scored, n)
		sortScored(s, tmp)
		require.Equal(t, want, s, "round %d", round)
	}
}

func TestMaxMajorsCoversEveryMajor(t *testing.T) {
	assert.LessOrEqual(t, len(domain.Majors), maxMajors)
}

func TestSortKeyMonotone(t *testing.T) {
	prev := sortKey(0)
	for i := 1; i <= 1<<16; i++ {
		k := sortKey(float64(i) / (1 << 16))
		require.LessOrEqual(t, k, prev)
		prev = k
	}
	assert.Equal(t, uint32(0), sortKey(1))
	assert.Equal(t, uint32(keyMax), sortKey(0))
}
