package query_test

import (
	"testing"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/testutil/benchcpu"
	"github.com/google/uuid"
)

// BenchmarkBuildFeed6500 builds one student's feed from a 6,500-school
// catalogue: rank everything, assemble the DefaultFeedSize items stored,
// round, encode the compact first page and its ETag.
func BenchmarkBuildFeed6500(b *testing.B) {
	in := buildInput(b, 6500, query.DefaultFeedSize)
	query.BuildFeed(in)
	b.ReportAllocs()
	for b.Loop() {
		query.BuildFeed(in)
	}
}

// BenchmarkBuildFeed6500Parallel is the same on every core.
func BenchmarkBuildFeed6500Parallel(b *testing.B) {
	in := buildInput(b, 6500, query.DefaultFeedSize)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			query.BuildFeed(in)
		}
	})
}

// rebuildInput is what the worker rebuilds after a fold for a student 20
// swipes in on an n-school catalogue: a learned model (likes and dislikes
// along the top of the ranking), the swiped schools left out, the stored
// feed's DefaultFeedSize items and its first DescribedItems described; the
// student's weight-free score factors are kept from the build before, as
// the service's FactorCache keeps them.
func rebuildInput(b *testing.B, n int) query.FeedInput { return rebuildInputWith(b, n, true) }

// rebuildInputWith is rebuildInput; without residual, the model is folded
// without its residual (match.Model.ObserveWeights): the rebuild of the
// eight weights alone, to compare the residual's cost with.
func rebuildInputWith(b *testing.B, n int, residual bool) query.FeedInput {
	in := buildInput(b, n, query.DefaultFeedSize)
	cat := in.Catalog
	m := in.Model
	ranked := match.RankModel(nil, in.Profile, m, cat.Catalog)
	for k := range 20 {
		i := int(ranked[3*k].Index)
		d := match.Like
		if k%3 == 0 {
			d = match.Dislike
		}
		if residual {
			m, _ = m.Observe(in.Profile, cat.Catalog, match.SwipeObservation(i, d))
		} else {
			m, _ = m.ObserveWeights(in.Profile, cat.Catalog, match.SwipeObservation(i, d))
		}
		in.Swiped = append(in.Swiped, cat.Schools[i].ID)
	}
	in.Model, in.TotalSwipes, in.Describe = m, 20, query.DescribedItems
	in.Factors = query.NewFactorCache(0, nil)
	return in
}

// benchRebuild is the worker's rebuild of one student after a fold, without
// the Redis round trip: rank the catalogue with the learned model, assemble
// the DefaultFeedSize items stored, describe the first DescribedItems,
// encode the compact page and everything Put stores (cache.FeedFields). It
// reports the thread's CPU time per rebuild next to the wall clock.
func benchRebuild(b *testing.B, n int, factors factorsKept) { benchRebuildWith(b, n, factors, true) }

// benchRebuildWith is benchRebuild, with or without the model's residual.
func benchRebuildWith(b *testing.B, n int, factors factorsKept, residual bool) {
	in := rebuildInputWith(b, n, residual)
	switch factors {
	case noFactors:
		in.Factors = nil
	case factorsMissed:
		in.Factors = query.NewFactorCache(1, nil) // too small to keep any
	}
	f := query.BuildFeed(in)
	_ = cache.FeedFields(&f)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchcpu.Start()
	for b.Loop() {
		f = query.BuildFeed(in)
		_ = cache.FeedFields(&f)
	}
	cpu.Report(b, 0, "")
}

// factorsKept is what a benchmarked rebuild has of the student's factors.
type factorsKept int

const (
	factorsHit    factorsKept = iota // kept from the build before
	noFactors                        // no factor cache (as the API builds)
	factorsMissed                    // a factor cache without the student's
)

// BenchmarkRebuild6500 is the worker's rebuild at 6,500 schools.
func BenchmarkRebuild6500(b *testing.B) { benchRebuild(b, 6500, factorsHit) }

// BenchmarkRebuildRotating6500 is BenchmarkRebuild6500 over the kept
// factors of 1,000 students in turn, as a worker rebuilds at 300 swipes/s
// over 1,000 students: each rebuild reads factors that left the CPU's
// caches since the student's last one.
func BenchmarkRebuildRotating6500(b *testing.B) {
	in := rebuildInput(b, 6500)
	in.Factors = query.NewFactorCache(1<<30, nil)
	students := make([]string, 1000)
	for k := range students {
		students[k] = uuid.NewString()
		in.StudentID = students[k]
		query.BuildFeed(in) // keeps the student's factors
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchcpu.Start()
	k := 0
	for b.Loop() {
		in.StudentID = students[k%len(students)]
		k++
		f := query.BuildFeed(in)
		_ = cache.FeedFields(&f)
	}
	cpu.Report(b, 0, "")
}

// BenchmarkRebuildWeightsOnly6500 is BenchmarkRebuild6500 with a model
// folded without its residual: what the rebuild cost before the residual,
// in the same binary (docs/learning.md).
func BenchmarkRebuildWeightsOnly6500(b *testing.B) { benchRebuildWith(b, 6500, factorsHit, false) }

// BenchmarkRebuild65000 is the same at 65,000 schools.
func BenchmarkRebuild65000(b *testing.B) { benchRebuild(b, 65000, factorsHit) }

// BenchmarkRebuildCold6500 is the rebuild without a factor cache, as the
// API builds.
func BenchmarkRebuildCold6500(b *testing.B) { benchRebuild(b, 6500, noFactors) }

// BenchmarkRebuildCold65000 is the same at 65,000 schools.
func BenchmarkRebuildCold65000(b *testing.B) { benchRebuild(b, 65000, noFactors) }

// BenchmarkRebuildMiss6500 is the worker's rebuild when its factor cache
// does not hold the student's factors: a student's first build, one after
// the profile or the catalogue changed, or one evicted.
func BenchmarkRebuildMiss6500(b *testing.B) { benchRebuild(b, 6500, factorsMissed) }

// BenchmarkRebuildMiss65000 is the same at 65,000 schools.
func BenchmarkRebuildMiss65000(b *testing.B) { benchRebuild(b, 65000, factorsMissed) }
