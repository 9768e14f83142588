package match

import (
	"testing"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/testutil/benchcpu"
)

// benchStudent is a typical complete profile: SAT, home, budget, income,
// two majors and stated preferences.
func benchStudent() domain.Student {
	sat, budget, income, maxd := 1280, 22000, 65000, 400
	lat, lon := 39.95, -75.16
	return domain.Student{
		ID: "bench", SAT: &sat, HomeLat: &lat, HomeLon: &lon, State: "PA", Budget: &budget,
		FamilyIncome: &income, MaxDistanceMiles: &maxd,
		IntendedMajors: []domain.Major{"computer", "mathematics"}, PreferredSize: "medium", PreferredSetting: "suburb",
	}
}

func benchRank(b *testing.B, n int) {
	cat := NewCatalog(newGen(42, 0.15, false).schools(n))
	p := NewProfile(benchStudent())
	w := SeedWeights(p)
	dst := Rank(nil, p, w, cat)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchcpu.Start()
	for b.Loop() {
		dst = Rank(dst, p, w, cat)
	}
	cpu.Report(b, n, "school")
}

func BenchmarkRank6500(b *testing.B)  { benchRank(b, 6500) }
func BenchmarkRank65000(b *testing.B) { benchRank(b, 65000) }

func BenchmarkDetail(b *testing.B) {
	cat := NewCatalog(newGen(42, 0.15, false).schools(6500))
	p := NewProfile(benchStudent())
	w := SeedWeights(p)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_ = Detail(p, w, cat, i%cat.Len())
		i++
	}
}
