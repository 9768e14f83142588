package query

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
)

// Catalog is one loaded version of the school catalogue: the active schools
// in the form scoring reads, with their parsed ids. It is immutable.
type Catalog struct {
	*match.Catalog
	// Version is the store's catalogue version it was loaded at (see
	// CatalogSource.CatalogVersion); -1 before the first load.
	Version int64
	ids     []uuid.UUID // parsed Schools[i].ID
}

// NewCatalog prepares schools (the active ones) loaded at version.
func NewCatalog(schools []domain.School, version int64) *Catalog {
	c := &Catalog{Catalog: match.NewCatalog(schools), Version: version}
	c.ids = make([]uuid.UUID, c.Len())
	for i := range c.Schools {
		c.ids[i], _ = uuid.Parse(c.Schools[i].ID) // ids are uuid columns; a bad one stays zero
	}
	return c
}

// School finds an active school by id (any letter case).
func (c *Catalog) School(id string) (int, bool) {
	u, err := uuid.Parse(id)
	if err != nil {
		return 0, false
	}
	return c.Index(u.String())
}

// CatalogSource is where the catalogue comes from.
type CatalogSource interface {
	// ActiveSchools loads every school that may be served.
	ActiveSchools(ctx context.Context) ([]domain.School, error)
	// CatalogVersion changes whenever any school changes.
	CatalogVersion(ctx context.Context) (int64, error)
}

// CatalogHolder keeps the current catalogue in memory, so no request reads
// the schools from PostgreSQL. Load fills it once; Run polls the store's
// catalogue version and reloads when it changes. Readers never wait: a
// reload is built aside and swapped in, and a failed reload keeps the
// catalogue that is there.
type CatalogHolder struct {
	src      CatalogSource
	log      *slog.Logger
	metrics  *Metrics
	interval time.Duration
	cur      atomic.Pointer[Catalog]
}

// DefaultCatalogPoll is how often Run checks the catalogue version.
const DefaultCatalogPoll = 15 * time.Second

// NewCatalogHolder builds a holder with an empty catalogue; call Load before
// serving. A zero interval means DefaultCatalogPoll; metrics may be nil.
func NewCatalogHolder(src CatalogSource, log *slog.Logger, metrics *Metrics, interval time.Duration) *CatalogHolder {
	if src == nil || log == nil {
		panic("query.NewCatalogHolder: nil source or logger")
	}
	if interval <= 0 {
		interval = DefaultCatalogPoll
	}
	h := &CatalogHolder{src: src, log: log, metrics: metrics, interval: interval}
	h.cur.Store(NewCatalog(nil, -1))
	return h
}

// Current is the catalogue now held. It is never nil.
func (h *CatalogHolder) Current() *Catalog { return h.cur.Load() }

// Scoring is the scoring table of the catalogue now held (what the write
// side predicts and the learner folds with). It is never nil.
func (h *CatalogHolder) Scoring() *match.Catalog { return h.cur.Load().Catalog }

// Load reads the whole catalogue now, whatever its version.
func (h *CatalogHolder) Load(ctx context.Context) error {
	// The version is read first: a change made while the schools load gives a
	// newer version than the one recorded, so the next poll loads again.
	v, err := h.src.CatalogVersion(ctx)
	if err != nil {
		return err
	}
	schools, err := h.src.ActiveSchools(ctx)
	if err != nil {
		return err
	}
	c := NewCatalog(schools, v)
	h.cur.Store(c)
	if h.metrics != nil {
		h.metrics.CatalogSchools.Set(float64(c.Len()))
		h.metrics.CatalogVersion.Set(float64(v))
	}
	h.log.InfoContext(ctx, "school catalogue loaded", "schools", c.Len(), "catalog_version", v)
	return nil
}

// Refresh reloads the catalogue when the store's version differs from the
// one held, and reports whether it did.
func (h *CatalogHolder) Refresh(ctx context.Context) (bool, error) {
	v, err := h.src.CatalogVersion(ctx)
	if err != nil {
		return false, err
	}
	if v == h.Current().Version {
		return false, nil
	}
	return true, h.Load(ctx)
}

// Run refreshes the catalogue every interval until ctx ends. Failures are
// logged and counted; the catalogue held keeps serving.
func (h *CatalogHolder) Run(ctx context.Context) {
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := h.Refresh(ctx); err != nil && ctx.Err() == nil {
			if h.metrics != nil {
				h.metrics.CatalogRefreshErrors.Inc()
			}
			h.log.WarnContext(ctx, "school catalogue refresh failed; serving the catalogue held",
				"catalog_version", h.Current().Version, "err", err)
		}
	}
}
