package loadtest

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/collegematch/matching/internal/cache"
)

// Footprint is what the load left behind, per unit: the capacity model's
// storage figures (docs/capacity.md).
type Footprint struct {
	// PostgreSQL: the swipes, their outbox rows and webhook records
	// (tables, indexes and TOAST), divided by the swipes stored.
	SwipeRows     int64
	BytesPerSwipe float64
	// Redis: every read-model key of a student (feed, probes, cooldowns),
	// MEMORY USAGE (of every field: SAMPLES 0) averaged over the students
	// sampled.
	Sampled          int
	BytesPerStudent  float64
	FeedBytesPerFeed float64
}

// footprintTables hold what a swipe writes.
var footprintTables = []string{"swipes", "outbox", "webhook_deliveries", "webhook_attempts"}

// measureFootprint reads the storage a swipe and a student cost, sampling
// up to sample students' Redis keys.
func (r *runner) measureFootprint(ctx context.Context, sample int) (Footprint, error) {
	var f Footprint
	var bytes int64
	if err := r.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM swipes),
		coalesce((SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c
			WHERE c.relkind = 'r' AND c.relname = ANY($1)), 0)::bigint`, footprintTables).Scan(&f.SwipeRows, &bytes); err != nil {
		return f, err
	}
	if f.SwipeRows > 0 {
		f.BytesPerSwipe = float64(bytes) / float64(f.SwipeRows)
	}
	var total, feeds int64
	var withFeed int
	for _, s := range r.students[:min(sample, len(r.students))] {
		pipe := r.rdb.Pipeline()
		keys := cache.StudentKeys(s)
		cmds := make([]*redis.IntCmd, len(keys))
		for i, k := range keys {
			// Every field counted: the default estimate from 5 fields is far
			// off for a feed, whose fields range from a few bytes to 30 KB.
			cmds[i] = pipe.MemoryUsage(ctx, k, 0)
		}
		_, _ = pipe.Exec(ctx) // a key that does not exist answers nil
		for i, c := range cmds {
			n, err := c.Result()
			if err != nil {
				continue
			}
			total += n
			if i == 0 {
				feeds += n
				withFeed++
			}
		}
		f.Sampled++
	}
	if f.Sampled > 0 {
		f.BytesPerStudent = float64(total) / float64(f.Sampled)
	}
	if withFeed > 0 {
		f.FeedBytesPerFeed = float64(feeds) / float64(withFeed)
	}
	return f, nil
}

func (r *runner) printFootprint(ctx context.Context) {
	f, err := r.measureFootprint(ctx, 500)
	if err != nil {
		r.printf("(footprint not measured: %v)\n\n", err)
		return
	}
	r.printf("Storage: PostgreSQL %.0f B per stored swipe (swipes, outbox, webhook deliveries and attempts with their indexes, over %d swipes); "+
		"Redis %.0f B per student (every read-model key, %d students sampled), of which the stored feed %.0f B.\n\n",
		f.BytesPerSwipe, f.SwipeRows, f.BytesPerStudent, f.Sampled, f.FeedBytesPerFeed)
}
