// Package active holds the active school catalogue in memory: one
// immutable Catalog (the scoring table of internal/match with each school's
// parsed id) per catalogue version, swapped in whole when the store's
// version moves. The read side serves from it, the write side predicts and
// the worker folds and rebuilds with it; none reads the schools from
// PostgreSQL per request. (internal/catalog builds the catalogue: the
// importer, the generator and the bundled extract.)
package active

import (
	"context"

	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/google/uuid"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
)

// Catalog is one loaded version of the school catalogue: the active schools
// in the form scoring reads, with their parsed ids. It is immutable.
type Catalog struct {
	*match.Catalog
	// Version is the store's catalogue version it was loaded at (see
	// Source.CatalogVersion); -1 before the first load.
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

// ID is the parsed id of the school at index i.
func (c *Catalog) ID(i int) uuid.UUID { return c.ids[i] }

// School finds an active school by id (any letter case).
func (c *Catalog) School(id string) (int, bool) {
	u, err := uuid.Parse(id)
	if err != nil {
		return 0, false
	}
	return c.Index(u.String())
}

// Source is where the catalogue comes from.
type Source interface {
	// ActiveSchools loads every school that may be served.
	ActiveSchools(ctx context.Context) ([]domain.School, error)
	// CatalogVersion changes whenever any school changes.
	CatalogVersion(ctx context.Context) (int64, error)
}

// Holder keeps the current catalogue in memory, so no request reads
// the schools from PostgreSQL. Load fills it once; Run polls the store's
// catalogue version and reloads when it changes. Readers never wait: a
// reload is built aside and swapped in, and a failed reload keeps the
// catalogue that is there.
type Holder struct {
	src      Source
	log      *slog.Logger
	metrics  *Metrics
	interval time.Duration
	cur      atomic.Pointer[Catalog]
}

// DefaultPoll is how often Run checks the catalogue version.
const DefaultPoll = 15 * time.Second

// NewHolder builds a holder with an empty catalogue; call Load before
// serving. A zero interval means DefaultPoll; metrics may be nil.
func NewHolder(src Source, log *slog.Logger, metrics *Metrics, interval time.Duration) *Holder {
	if src == nil || log == nil {
		panic("active.NewHolder: nil source or logger")
	}
	if interval <= 0 {
		interval = DefaultPoll
	}
	h := &Holder{src: src, log: log, metrics: metrics, interval: interval}
	h.cur.Store(NewCatalog(nil, -1))
	return h
}

// Current is the catalogue now held. It is never nil.
func (h *Holder) Current() *Catalog { return h.cur.Load() }

// Scoring is the scoring table of the catalogue now held (what the write
// side predicts and the learner folds with). It is never nil.
func (h *Holder) Scoring() *match.Catalog { return h.cur.Load().Catalog }

// Load reads the whole catalogue now, whatever its version.
func (h *Holder) Load(ctx context.Context) error {
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
		h.metrics.schools.Set(float64(c.Len()))
		h.metrics.version.Set(float64(v))
	}
	h.log.InfoContext(ctx, "school catalogue loaded", "schools", c.Len(), "catalog_version", v)
	return nil
}

// Refresh reloads the catalogue when the store's version differs from the
// one held, and reports whether it did.
func (h *Holder) Refresh(ctx context.Context) (bool, error) {
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
func (h *Holder) Run(ctx context.Context) {
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
				h.metrics.refreshErrors.Inc()
			}
			h.log.WarnContext(ctx, "school catalogue refresh failed; serving the catalogue held",
				"catalog_version", h.Current().Version, "err", err)
		}
	}
}

// Metrics are the holder's gauges and counter.
type Metrics struct {
	schools       prometheus.Gauge
	version       prometheus.Gauge
	refreshErrors prometheus.Counter
}

// NewMetrics creates the holder's metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		schools: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "matching_catalog_schools", Help: "Active schools in the in-memory catalogue.",
		}),
		version: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "matching_catalog_version", Help: "Catalogue version held in memory.",
		}),
		refreshErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matching_catalog_refresh_errors_total", Help: "Failed background catalogue refreshes.",
		}),
	}
	reg.MustRegister(m.schools, m.version, m.refreshErrors)
	return m
}
