package match

import (
	"testing"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/testutil/benchcpu"
)

// benchLearned is a student 20 swipes in: a realistic catalogue, a profile
// and a model that has seen likes and dislikes.
func benchLearned(n int) (*Catalog, Profile, Model, []bool, []domain.Region) {
	cat := NewCatalog(catalog.Generate(n, 42))
	p := NewProfile(benchStudent())
	m := NewModel(SeedWeights(p))
	excluded := make([]bool, cat.Len())
	var swiped []int
	ranked := Rank(nil, p, m.Weights(), cat)
	for k := range 20 {
		i := int(ranked[3*k].Index)
		d := Like
		if k%3 == 0 {
			d = Dislike
		}
		m, _ = m.Observe(p, cat, SwipeObservation(i, d))
		excluded[i] = true
		swiped = append(swiped, i)
	}
	return cat, p, m, excluded, RegionsOf(cat, swiped)
}

// BenchmarkFeedRebuild6500 is what the worker does after a swipe: rank the
// 6,500-school catalogue by the learned model (RankModel) and assemble a
// feed of 200 items.
func BenchmarkFeedRebuild6500(b *testing.B) {
	cat, p, m, excluded, regions := benchLearned(6500)
	dst := RankModel(nil, p, m, cat)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchcpu.Start()
	for b.Loop() {
		dst = RankModel(dst, p, m, cat)
		_ = AssembleFeed(FeedInput{Catalog: cat, Profile: p, Model: m, Ranked: dst, Swipes: 20, Length: 200,
			Excluded: excluded, SwipedRegions: regions, Seed: FeedSeed("bench", 20)})
	}
	cpu.Report(b, 0, "")
}

// BenchmarkAssembleFeed6500 is the assembly alone, 200 items.
func BenchmarkAssembleFeed6500(b *testing.B) {
	cat, p, m, excluded, regions := benchLearned(6500)
	ranked := RankModel(nil, p, m, cat)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchcpu.Start()
	for b.Loop() {
		_ = AssembleFeed(FeedInput{Catalog: cat, Profile: p, Model: m, Ranked: ranked, Swipes: 20, Length: 200,
			Excluded: excluded, SwipedRegions: regions, Seed: FeedSeed("bench", 20)})
	}
	cpu.Report(b, 0, "")
}

// BenchmarkFeedRebuild6500x400 is the same with a feed of 400 items.
func BenchmarkFeedRebuild6500x400(b *testing.B) {
	cat, p, m, excluded, regions := benchLearned(6500)
	dst := RankModel(nil, p, m, cat)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchcpu.Start()
	for b.Loop() {
		dst = RankModel(dst, p, m, cat)
		_ = AssembleFeed(FeedInput{Catalog: cat, Profile: p, Model: m, Ranked: dst, Swipes: 20, Length: 400,
			Excluded: excluded, SwipedRegions: regions, Seed: FeedSeed("bench", 20)})
	}
	cpu.Report(b, 0, "")
}
