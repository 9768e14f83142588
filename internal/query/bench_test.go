package query_test

import (
	"testing"

	"github.com/collegematch/matching/internal/query"
)

// BenchmarkBuildFeed6500 builds one student's feed from a 6,500-school
// catalogue: rank everything, assemble the top 1,000, round, encode the
// compact first page and its ETag. Rank's buffer is reused, as the service
// does.
func BenchmarkBuildFeed6500(b *testing.B) {
	in := buildInput(b, 6500, query.DefaultFeedSize)
	_, scratch := query.BuildFeed(in, nil)
	b.ReportAllocs()
	for b.Loop() {
		_, scratch = query.BuildFeed(in, scratch)
	}
}

// BenchmarkBuildFeed6500Parallel is the same on every core.
func BenchmarkBuildFeed6500Parallel(b *testing.B) {
	in := buildInput(b, 6500, query.DefaultFeedSize)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		_, scratch := query.BuildFeed(in, nil)
		for pb.Next() {
			_, scratch = query.BuildFeed(in, scratch)
		}
	})
}
