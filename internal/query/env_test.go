package query_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/active"
	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
)

// env is the read side over a fresh database and this package's Redis DB.
type env struct {
	Store    *store.Store
	Redis    redis.UniversalClient
	Feeds    *cache.Feeds
	Catalog  *active.Holder
	Students *countingStudents
	Registry *prometheus.Registry
	Metrics  *query.Metrics
	Service  *query.Service
}

// newEnv seeds n generated schools and builds the service; feedSize 0 is
// the default.
func newEnv(t *testing.T, n, feedSize int) *env {
	t.Helper()
	db := store.New(testutil.NewDB(t))
	rdb := testutil.NewRedis(t, testutil.RedisDBQuery)
	if n > 0 {
		_, err := db.UpsertSchools(context.Background(), catalog.Generate(n, 7))
		require.NoError(t, err)
	}
	e := &env{Store: db, Redis: rdb, Feeds: cache.NewFeeds(rdb, 5*time.Minute), Registry: prometheus.NewRegistry()}
	e.Metrics = query.NewMetrics(e.Registry)
	e.Catalog = active.NewHolder(db, testutil.Logger(t), active.NewMetrics(e.Registry), time.Hour)
	require.NoError(t, e.Catalog.Load(context.Background()))
	e.Students = &countingStudents{src: db}
	e.Service = e.service(t, e.Students, e.Feeds, feedSize)
	return e
}

// service builds another service on e's catalogue and metrics.
func (e *env) service(t *testing.T, students query.Students, feeds query.FeedStore, feedSize int) *query.Service {
	t.Helper()
	return query.New(query.Config{Students: students, Feeds: feeds, Catalogs: e.Catalog,
		Probes: cache.NewProbes(e.Redis, feeds.TTL()), Log: testutil.Logger(t), Metrics: e.Metrics, FeedSize: feedSize})
}

// countingStudents adapts the store and counts loads, so a test can tell a
// cached read (no load) from a build.
type countingStudents struct {
	src   query.Students
	loads atomic.Int64
}

func (c *countingStudents) LearnerState(ctx context.Context, id string) (domain.LearnerState, error) {
	c.loads.Add(1)
	return c.src.LearnerState(ctx, id)
}

func (c *countingStudents) StudentVersion(ctx context.Context, id string) (int64, error) {
	return c.src.StudentVersion(ctx, id)
}

func ptr[T any](v T) *T { return &v }

// completeStudent is a student with an academic signal and a home.
func completeStudent() domain.Student {
	return domain.Student{
		ID: uuid.NewString(), Name: "Ada", Email: "ada@example.com", GraduationYear: "2027",
		SAT: ptr(1380), GPA: ptr(3.8), HomeLat: ptr(39.95), HomeLon: ptr(-75.16), State: "PA",
		Budget: ptr(25000), FamilyIncome: ptr(70000), MaxDistanceMiles: ptr(400),
		IntendedMajors: []domain.Major{"computer", "mathematics"}, PreferredSize: "medium",
	}
}

// save stores a student and returns it as stored.
func (e *env) save(t *testing.T, s domain.Student) domain.Student {
	t.Helper()
	saved, _, err := e.Store.SaveStudent(context.Background(), s)
	require.NoError(t, err)
	return saved
}

// reads is the feed-read counter for endpoint and result.
func (e *env) reads(t *testing.T, endpoint, result string) float64 {
	t.Helper()
	return counter(t, e.Registry, "matching_feed_cache_reads_total", map[string]string{"endpoint": endpoint, "result": result})
}

func counter(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue metrics
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}
