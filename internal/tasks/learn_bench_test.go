package tasks_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/active"
	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/testutil"
)

// The learner at 50,000 swipes of history, on PostgreSQL: one student
// whose history holds 50,000 swipes and weak signals and 2,000 feedback
// reasons over 3,000 schools of a 6,500-school catalogue, folded up to
// date. Each operation records one swipe (not timed) and folds it as
// student:learn does (the learner state read, the fold, the optimistic
// save; the re-fold's history read in between), without the feed rebuild,
// which does not depend on the history. Besides ns/op each reports the
// PostgreSQL statements per fold, their execution time, the rows they
// returned and the buffers they touched (pg_stat_statements; the
// extension must be preloaded).
//
//	go test ./internal/tasks -run XXX -bench Learn50k -benchtime 200x
const (
	historySchools  = 3000
	historySwipes   = 50000
	historyFeedback = 2000
	catalogueSize   = 6500
)

type historyEnv struct {
	pool    *pgxpool.Pool
	db      *store.Store
	catalog *active.Holder
	student string
	schools []string // the catalogue; the first historySchools carry the history
}

func newHistoryEnv(b *testing.B) *historyEnv {
	b.Helper()
	ctx := context.Background()
	e := &historyEnv{pool: testutil.NewDB(b)}
	e.db = store.New(e.pool)
	gen := catalog.Generate(catalogueSize, 3)
	_, err := e.db.UpsertSchools(ctx, gen)
	require.NoError(b, err)
	for _, s := range gen {
		e.schools = append(e.schools, s.ID)
	}
	e.catalog = active.NewHolder(e.db, testutil.Logger(b), active.NewMetrics(prometheus.NewRegistry()), time.Hour)
	require.NoError(b, e.catalog.Load(ctx))

	sat, gpa, lat, lon, budget, dist := 1380, 3.8, 39.95, -75.16, 25000, 3000
	st, _, err := e.db.SaveStudent(ctx, domain.Student{ID: uuid.NewString(), Name: "Ada", Email: "ada@example.com",
		GraduationYear: "2027", SAT: &sat, GPA: &gpa, HomeLat: &lat, HomeLon: &lon, State: "PA", Budget: &budget,
		MaxDistanceMiles: &dist, IntendedMajors: []domain.Major{"computer"}})
	require.NoError(b, err)
	e.student = st.ID

	// The history, oldest first: every school swiped several times, half
	// the events weak signals (tap, detail view, save), a feedback reason
	// now and then.
	_, err = e.pool.Exec(ctx, `
INSERT INTO swipes (student_id, school_id, direction, interaction_type, counted, occurred_at, created_at)
SELECT $1, ($2::uuid[])[1 + (g * 7919) % $3], CASE WHEN (g * 31) % 3 = 0 THEN 'left' ELSE 'right' END,
	(ARRAY['swipe', 'tap', 'swipe', 'detail_view', 'swipe', 'save'])[1 + (g / 7) % 6], (g / 7) % 2 = 0,
	now() - make_interval(secs => $4 - g), now() - make_interval(secs => $4 - g)
FROM generate_series(1, $4) g ORDER BY g`, e.student, e.schools[:historySchools], historySchools, historySwipes)
	require.NoError(b, err)
	_, err = e.pool.Exec(ctx, `
INSERT INTO feedback (student_id, school_id, reason)
SELECT $1, ($2::uuid[])[1 + (g * 104729) % $3],
	(ARRAY['too_expensive', 'wrong_location', 'not_my_major', 'too_selective', 'perfect_match'])[1 + g % 5]
FROM generate_series(1, $4) g ORDER BY g`, e.student, e.schools[:historySchools], historySchools, historyFeedback)
	require.NoError(b, err)
	_, err = e.pool.Exec(ctx, `UPDATE students SET swipe_count = (SELECT count(*) FROM swipes WHERE student_id = $1 AND counted),
		version = version + 1 WHERE id = $1`, e.student)
	require.NoError(b, err)
	_, err = e.pool.Exec(ctx, `ANALYZE swipes; ANALYZE feedback`)
	require.NoError(b, err)
	_, err = e.pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`)
	require.NoError(b, err)

	rebuilt, _ := e.fold(b) // the whole history, once
	require.True(b, rebuilt)
	return e
}

// fold is what student:learn does with the database and the learner, up
// to the feed rebuild: it reports whether the model was rebuilt over the
// history, and how many events the history read returned.
func (e *historyEnv) fold(b *testing.B) (rebuilt bool, history int) {
	ctx := context.Background()
	st, err := e.db.LearnerState(ctx, e.student)
	require.NoError(b, err)
	lastSwipe, lastFeedback := st.LastSwipeID, st.LastFeedbackID
	for _, ev := range st.New {
		lastSwipe, lastFeedback = max(lastSwipe, ev.SwipeID), max(lastFeedback, ev.FeedbackID)
	}
	up, rebuilt, err := tasks.Learn(st, e.catalog.Scoring(), func() ([]domain.LearnEvent, error) {
		h, err := e.db.LearnHistory(ctx, e.student, lastSwipe, lastFeedback)
		history = len(h)
		return h, err
	})
	require.NoError(b, err)
	_, saved, err := e.db.SaveLearning(ctx, e.student, st.LearningVersion, up)
	require.NoError(b, err)
	require.True(b, saved)
	return rebuilt, history
}

func (e *historyEnv) swipe(b *testing.B, school string) {
	_, err := e.db.RecordSwipe(context.Background(), domain.Swipe{StudentID: e.student, SchoolID: school,
		Direction: "right", Interaction: domain.InteractionSwipe})
	require.NoError(b, err)
}

// pgCost is what pg_stat_statements holds for this database, the swipes
// the benchmark records left out.
type pgCost struct {
	calls, rows, blocks int64
	ms                  float64
}

func (e *historyEnv) cost(b *testing.B) pgCost {
	var c pgCost
	require.NoError(b, e.pool.QueryRow(context.Background(), `
SELECT coalesce(sum(calls), 0)::bigint, coalesce(sum(rows), 0)::bigint,
	coalesce(sum(shared_blks_hit + shared_blks_read), 0)::bigint, coalesce(sum(total_exec_time), 0)
FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE '%INSERT INTO swipes%'`).
		Scan(&c.calls, &c.rows, &c.blocks, &c.ms))
	return c
}

func (e *historyEnv) report(b *testing.B, before pgCost, history int) {
	after := e.cost(b)
	n := float64(b.N)
	b.ReportMetric(float64(after.calls-before.calls)/n, "stmts/op")
	b.ReportMetric((after.ms-before.ms)/n, "pg-ms/op")
	b.ReportMetric(float64(after.rows-before.rows)/n, "pg-rows/op")
	b.ReportMetric(float64(after.blocks-before.blocks)/n, "pg-blocks/op")
	b.ReportMetric(float64(history)/n, "history-events/op")
}

// A new swipe on a school the student never swiped: the fold reads only
// the new event (through the (student_id, change_seq) index) and observes
// it into the stored model.
func BenchmarkLearnIncremental50k(b *testing.B) {
	e := newHistoryEnv(b)
	fresh := e.schools[historySchools:]
	if b.N > len(fresh) {
		b.Fatalf("%d folds need %d schools never swiped; the catalogue has %d", b.N, b.N, len(fresh))
	}
	before, history := e.cost(b), 0
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		e.swipe(b, fresh[i])
		b.StartTimer()
		rebuilt, h := e.fold(b)
		if rebuilt {
			b.Fatal("a swipe on a new school rebuilt the model")
		}
		history += h
	}
	b.StopTimer()
	e.report(b, before, history)
}

// A swipe again on a school swiped before: the fold rebuilds the model
// from the prior over the history, which it reads as at most the latest
// event of each kind per school (so bounded by the catalogue, not by the
// 50,000 events), outside any lock, and stores it if no other fold stored
// first.
func BenchmarkLearnRefold50k(b *testing.B) {
	e := newHistoryEnv(b)
	before, history := e.cost(b), 0
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		e.swipe(b, e.schools[i%historySchools])
		b.StartTimer()
		rebuilt, h := e.fold(b)
		if !rebuilt {
			b.Fatal("a repeat swipe did not rebuild the model")
		}
		history += h
	}
	b.StopTimer()
	e.report(b, before, history)
}
