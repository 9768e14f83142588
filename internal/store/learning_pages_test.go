package store_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
)

// statements records each statement a pool ran, with the rows it returned.
type statements struct {
	mu   sync.Mutex
	list []ranStatement
}

type ranStatement struct {
	sql  string
	rows int64
}

type sqlKey struct{}

func (s *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, sqlKey{}, d.SQL)
}

func (s *statements) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	sql, _ := ctx.Value(sqlKey{}).(string)
	s.mu.Lock()
	s.list = append(s.list, ranStatement{sql: sql, rows: d.CommandTag.RowsAffected()})
	s.mu.Unlock()
}

func (s *statements) reset() []ranStatement {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.list
	s.list = nil
	return out
}

// A backlog of 20,000 events not yet folded in (swipes and feedback
// interleaved by change_seq, inserted three statements at a time) is read
// in pages: no statement reads more than a page of the student's events
// (its plan's actual rows on swipes and feedback, and the rows each page
// returns), and the events read are exactly those of one unbounded read,
// in the same order, so the learner folds the same events.
func TestLearnerStateReadsABacklogInBoundedPages(t *testing.T) {
	ctx := context.Background()
	url := testutil.NewDBURL(t)
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	trace := &statements{}
	cfg.ConnConfig.Tracer = trace
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	db := store.New(pool)

	schools := catalog.Generate(4, 1)
	_, err = db.UpsertSchools(ctx, schools)
	require.NoError(t, err)
	student := uuid.NewString()
	gpa := 3.5
	_, _, err = db.SaveStudent(ctx, domain.Student{ID: student, Name: "Backlog", Email: "b@example.com", GraduationYear: "2027",
		GPA: &gpa, State: "OH"})
	require.NoError(t, err)
	for _, q := range []string{
		`INSERT INTO swipes (student_id, school_id, direction, counted)
		 SELECT $1, $2, CASE WHEN g % 2 = 0 THEN 'right' ELSE 'left' END, true FROM generate_series(1, 7500) g`,
		`INSERT INTO feedback (student_id, school_id, reason) SELECT $1, $2, 'too_expensive' FROM generate_series(1, 5000) g`,
		`INSERT INTO swipes (student_id, school_id, direction, interaction_type, counted)
		 SELECT $1, $2, 'right', 'save', false FROM generate_series(1, 7500) g`,
	} {
		_, err := pool.Exec(ctx, q, student, schools[1].ID)
		require.NoError(t, err)
	}
	_, err = pool.Exec(ctx, `ANALYZE swipes; ANALYZE feedback`) // as autovacuum does after a bulk insert
	require.NoError(t, err)
	trace.reset()

	const page = 500
	paged, err := store.LearnerStatePaged(db, ctx, student, page)
	require.NoError(t, err)
	ran := trace.reset()
	whole, err := store.LearnerStatePaged(db, ctx, student, 1_000_000)
	require.NoError(t, err)
	byDefault, err := db.LearnerState(ctx, student)
	require.NoError(t, err)

	require.Len(t, whole.New, 20000)
	require.Len(t, paged.New, 20000)
	for i := range whole.New {
		if whole.New[i] != paged.New[i] {
			t.Fatalf("event %d: %+v (whole) vs %+v (paged)", i, whole.New[i], paged.New[i])
		}
	}
	assert.Equal(t, whole.New, paged.New, "the same events in the same order")
	assert.Equal(t, whole.New, byDefault.New)
	assert.Equal(t, whole.Version, paged.Version)
	for i := 1; i < len(paged.New); i++ {
		require.Less(t, paged.New[i-1].Seq, paged.New[i].Seq, "change_seq order")
	}

	// The statements: the state with the first page, read twice (once
	// alone, then in the snapshot), and then one per further page, each
	// returning at most a page of rows.
	pages := 0
	for _, r := range ran {
		if r.sql == store.LearnerEventsSQL {
			pages++
			assert.LessOrEqual(t, r.rows, int64(page))
		}
	}
	assert.Equal(t, 20000/page, pages, "pages after the first, the last one empty")

	// Each statement's plan reads the student's swipes and feedback under
	// a LIMIT of a page: each branch is limited, and so is their union.
	for name, q := range map[string]struct {
		sql  string
		args []any
	}{
		"state and first page": {store.LearnerStateSQL, []any{student, page}},
		"next page":            {store.LearnerEventsSQL, []any{student, paged.New[page-1].Seq, 0, 0, page}},
	} {
		var plan []byte
		require.NoError(t, pool.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+q.sql, q.args...).Scan(&plan), name)
		var root []struct {
			Plan planNode `json:"Plan"`
		}
		require.NoError(t, json.Unmarshal(plan, &root), name)
		scans := 0
		root[0].Plan.walk(nil, func(n planNode, limits []planNode) {
			if n.Relation != "swipes" && n.Relation != "feedback" {
				return
			}
			scans++
			require.NotEmpty(t, limits, "%s: a scan of %s under no LIMIT:\n%s", name, n.Relation, plan)
			for _, l := range limits {
				assert.LessOrEqual(t, l.ActualRows, float64(page), "%s: a LIMIT above %s returned more than a page", name, n.Relation)
			}
		})
		assert.Equal(t, 2, scans, "%s: one scan of each table:\n%s", name, plan)
	}
}

type planNode struct {
	Type       string     `json:"Node Type"`
	Relation   string     `json:"Relation Name"`
	ActualRows float64    `json:"Actual Rows"`
	Plans      []planNode `json:"Plans"`
}

// walk calls f with each node and the Limit nodes above it.
func (n planNode) walk(limits []planNode, f func(n planNode, limits []planNode)) {
	f(n, limits)
	if n.Type == "Limit" {
		limits = append(slices.Clone(limits), n)
	}
	for _, c := range n.Plans {
		c.walk(limits, f)
	}
}
