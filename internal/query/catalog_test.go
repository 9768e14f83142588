package query_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/testutil"
)

// flakySource is the store, failing while fail is set.
type flakySource struct {
	src  query.CatalogSource
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

func TestCatalogHolderLoadAndRefresh(t *testing.T) {
	e := newEnv(t, 40, 0)
	ctx := context.Background()
	c := e.Catalog.Current()
	require.Equal(t, 40, c.Len())
	v, err := e.Store.CatalogVersion(ctx)
	require.NoError(t, err)
	assert.Equal(t, v, c.Version)
	assert.EqualValues(t, 40, counter(t, e.Registry, "matching_catalog_schools", nil))
	assert.EqualValues(t, v, counter(t, e.Registry, "matching_catalog_version", nil))

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
	e := newEnv(t, 30, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := &flakySource{src: e.Store}
	h := query.NewCatalogHolder(src, testutil.Logger(t), e.Metrics, 10*time.Millisecond)
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
		return counter(t, e.Registry, "matching_catalog_refresh_errors_total", nil) >= 2
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
