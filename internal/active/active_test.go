package active_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/active"
	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
)

// flakySource is the store, failing while fail is set.
type flakySource struct {
	src  active.Source
	fail atomic.Bool
}

func (f *flakySource) ActiveSchools(ctx context.Context) ([]domain.School, error) {
	if f.fail.Load() {
		return nil, errors.New("database down")
	}
	return f.src.ActiveSchools(ctx)
}

func (f *flakySource) CatalogVersion(ctx context.Context) (int64, error) {
	if f.fail.Load() {
		return 0, errors.New("database down")
	}
	return f.src.CatalogVersion(ctx)
}

// env is a holder over a fresh database with n generated schools.
type env struct {
	Store    *store.Store
	Catalog  *active.Holder
	Registry *prometheus.Registry
	Metrics  *active.Metrics
}

func newEnv(t *testing.T, n int) *env {
	t.Helper()
	db := store.New(testutil.NewDB(t))
	_, err := db.UpsertSchools(context.Background(), catalog.Generate(n, 7))
	require.NoError(t, err)
	e := &env{Store: db, Registry: prometheus.NewRegistry()}
	e.Metrics = active.NewMetrics(e.Registry)
	e.Catalog = active.NewHolder(db, testutil.Logger(t), e.Metrics, time.Hour)
	require.NoError(t, e.Catalog.Load(context.Background()))
	return e
}

// gauge is the value of an unlabelled gauge or counter of reg.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			if c := f.GetMetric()[0].GetCounter(); c != nil {
				return c.GetValue()
			}
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return 0
}

func TestCatalogHolderLoadAndRefresh(t *testing.T) {
	e := newEnv(t, 40)
	ctx := context.Background()
	c := e.Catalog.Current()
	require.Equal(t, 40, c.Len())
	v, err := e.Store.CatalogVersion(ctx)
	require.NoError(t, err)
	assert.Equal(t, v, c.Version)
	assert.EqualValues(t, 40, gauge(t, e.Registry, "matching_catalog_schools"))
	assert.EqualValues(t, v, gauge(t, e.Registry, "matching_catalog_version"))

	changed, err := e.Catalog.Refresh(ctx)
	require.NoError(t, err)
	assert.False(t, changed, "an unchanged catalogue is not reloaded")
	assert.Same(t, c, e.Catalog.Current())

	// A changed school moves the version; the next refresh swaps it in.
	s := catalog.Generate(40, 7)[3]
	s.Name = "Renamed College"
	_, err = e.Store.UpsertSchools(ctx, []domain.School{s})
	require.NoError(t, err)
	changed, err = e.Catalog.Refresh(ctx)
	require.NoError(t, err)
	assert.True(t, changed)
	next := e.Catalog.Current()
	assert.Greater(t, next.Version, c.Version)
	idx, ok := next.School(s.ID)
	require.True(t, ok)
	assert.Equal(t, "Renamed College", next.Schools[idx].Name)
	old, _ := c.School(s.ID)
	assert.NotEqual(t, "Renamed College", c.Schools[old].Name, "a catalogue already handed out never changes")
}

func TestCatalogHolderKeepsServingWhenRefreshFails(t *testing.T) {
	e := newEnv(t, 30)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := &flakySource{src: e.Store}
	h := active.NewHolder(src, testutil.Logger(t), e.Metrics, 10*time.Millisecond)
	assert.Equal(t, 0, h.Current().Len(), "empty before the first load")
	assert.EqualValues(t, -1, h.Current().Version)
	require.NoError(t, h.Load(ctx))
	held := h.Current()

	src.fail.Store(true)
	_, err := h.Refresh(ctx)
	require.Error(t, err)
	assert.Same(t, held, h.Current())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	require.Eventually(t, func() bool {
		return gauge(t, e.Registry, "matching_catalog_refresh_errors_total") >= 2
	}, 5*time.Second, 5*time.Millisecond, "failed refreshes are counted")
	assert.Same(t, held, h.Current(), "and the catalogue held keeps serving")

	// The store comes back with more schools: Run picks them up.
	_, err = e.Store.UpsertSchools(ctx, catalog.Generate(35, 7)[30:])
	require.NoError(t, err)
	src.fail.Store(false)
	require.Eventually(t, func() bool { return h.Current().Len() == 35 }, 5*time.Second, 5*time.Millisecond)
	cancel()
	<-done
}
