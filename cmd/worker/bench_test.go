package main

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/command"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
)

// The learning loop on the real stack, over loopback: the API's write side
// (command.Swipes: one transaction, then the task queued), the worker
// started by run (asynq server, 20 concurrent tasks), PostgreSQL and Redis,
// a 6,500-school catalogue. Both benchmarks stop by themselves.
//
//	go test ./cmd/worker -run XXX -bench . -benchtime 2000x

const (
	benchSchools  = 6500
	benchStudents = 100
)

type loop struct {
	pool     *pgxpool.Pool
	schools  []domain.School
	students []string
	write    writeSide
	feeds    *cache.Feeds
}

func newLoop(b *testing.B) *loop {
	b.Helper()
	dbURL := testutil.NewDBURL(b)
	pool, err := store.Open(context.Background(), dbURL)
	require.NoError(b, err)
	b.Cleanup(pool.Close)
	db := store.New(pool)
	schools, students := seedWorld(b, db, benchSchools, benchStudents)
	rdb := testutil.NewRedis(b, testutil.RedisDBCmdWorker)
	startBench(b, map[string]string{
		"DATABASE_URL": dbURL,
		"REDIS_URL":    testutil.RedisURLFor(b, testutil.RedisDBCmdWorker),
		"OPS_ADDR":     "127.0.0.1:0",
		"LOG_LEVEL":    "error",
	})
	return &loop{pool: pool, schools: schools, students: students,
		write: newWriteSide(b, db, rdb, testutil.Logger(b)), feeds: cache.NewFeeds(rdb, time.Minute)}
}

// startBench runs the worker until the benchmark ends.
func startBench(b *testing.B, env map[string]string) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, func(k string) string { return env[k] }, discard{}, ready) }()
	select {
	case <-ready:
	case err := <-done:
		b.Fatalf("worker stopped: %v", err)
	case <-time.After(30 * time.Second):
		b.Fatal("worker did not get ready")
	}
	b.Cleanup(func() {
		cancel()
		<-done
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// swipe records the k-th swipe of student s (a school it has not swiped).
func (l *loop) swipe(b *testing.B, s, k int) command.SwipeResult {
	res, err := l.write.swipes.Record(context.Background(), command.SwipeInput{StudentID: l.students[s],
		SchoolID: l.schools[(s*131+k*17)%len(l.schools)].ID, Direction: []string{"left", "right"}[k%2]})
	if err != nil {
		b.Fatal(err)
	}
	return res
}

// folded reports whether every swipe is folded and the feed of every
// student who swiped rebuilt from the current state.
func (l *loop) folded(b *testing.B) bool {
	var pending int
	err := l.pool.QueryRow(context.Background(), `
SELECT count(*) FROM swipes s
LEFT JOIN learning_state ls ON ls.student_id = s.student_id
WHERE s.id > coalesce(ls.last_swipe_id, 0)`).Scan(&pending)
	require.NoError(b, err)
	if pending > 0 {
		return false
	}
	rows, err := l.pool.Query(context.Background(),
		`SELECT id::text, version FROM students WHERE swipe_count > 0`)
	require.NoError(b, err)
	defer rows.Close()
	for rows.Next() {
		var (
			id string
			v  int64
		)
		require.NoError(b, rows.Scan(&id, &v))
		h, err := l.feeds.Header(context.Background(), id)
		if err != nil || h.StudentVersion < v {
			return false
		}
	}
	return true
}

// BenchmarkWorkerThroughput records b.N swipes over 100 students from 8
// writers as fast as the write side takes them, and measures until every
// swipe is folded and every feed rebuilt: swipes folded end to end per
// second. A student's swipes that arrive while one of its tasks runs are
// folded together by the next task, as in production.
func BenchmarkWorkerThroughput(b *testing.B) {
	l := newLoop(b)
	b.ResetTimer()
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				n := int(next.Add(1)) - 1
				if n >= b.N {
					return
				}
				l.swipe(b, n%benchStudents, n/benchStudents)
			}
		})
	}
	wg.Wait()
	recorded := time.Since(start)
	deadline := time.Now().Add(5 * time.Minute)
	for !l.folded(b) {
		if time.Now().After(deadline) {
			b.Fatal("the worker did not catch up within 5 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
	total := time.Since(start)
	b.StopTimer()
	var tasks int
	require.NoError(b, l.pool.QueryRow(context.Background(), `SELECT coalesce(sum(version), 0) FROM learning_state`).Scan(&tasks))
	b.ReportMetric(float64(b.N)/total.Seconds(), "swipes/s")
	b.ReportMetric(float64(b.N)/recorded.Seconds(), "recorded/s")
	b.ReportMetric(float64(tasks), "folds")
}

// BenchmarkSwipeToFeedLag swipes at a steady 40 swipes a second for 15
// seconds (600 swipes over 100 students, a student swiping every 2.5 s),
// and measures, for each swipe, the time from sending it to the student's
// feed in Redis having learned it (the swipe drops the stored feed; the
// next one is the worker's, built after folding it). It runs the same load whatever b.N is.
func BenchmarkSwipeToFeedLag(b *testing.B) {
	const (
		rate     = 40
		duration = 15 * time.Second
	)
	l := newLoop(b)
	b.ResetTimer()
	var (
		mu   sync.Mutex
		lags []time.Duration
		wg   sync.WaitGroup
	)
	tick := time.NewTicker(time.Second / rate)
	defer tick.Stop()
	counts := make([]int, benchStudents)
	for n := range int(duration.Seconds() * rate) {
		<-tick.C
		s := n % benchStudents
		k := counts[s]
		counts[s]++
		wg.Go(func() {
			sent := time.Now()
			res := l.swipe(b, s, k)
			for {
				// The swipe dropped the feed that predates it; the next one
				// stored is the worker's, built after folding it.
				h, err := l.feeds.Header(context.Background(), l.students[s])
				if err == nil && h.TotalSwipes >= res.SwipeCount {
					break
				}
				if time.Since(sent) > time.Minute {
					b.Errorf("swipe %d of student %d never reached the feed", k, s)
					return
				}
				time.Sleep(2 * time.Millisecond)
			}
			mu.Lock()
			lags = append(lags, time.Since(sent))
			mu.Unlock()
		})
	}
	wg.Wait()
	b.StopTimer()
	slices.Sort(lags)
	q := func(p float64) float64 { return lags[int(p*float64(len(lags)-1))].Seconds() * 1000 }
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(lags[len(lags)-1].Seconds()*1000, "max-ms")
	b.Logf("%d swipes at %d/s: p50 %.1f ms, p99 %.1f ms, max %.1f ms", len(lags), rate, q(0.5), q(0.99),
		lags[len(lags)-1].Seconds()*1000)
}
