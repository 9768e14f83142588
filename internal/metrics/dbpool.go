package metrics

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// dbPool exports a binary's PostgreSQL pool, read at each scrape: how full
// it is and how often requests wait for a connection or give up waiting
// (the pool-acquire bound of the store's Limits), which tells a pool too
// small from a database too slow.
type dbPool struct {
	stat                                         func() *pgxpool.Stat
	conns, max, acquires, waited, wait, canceled *prometheus.Desc
}

// NewDBPool registers the pool metrics of stat (pgxpool.Pool.Stat) on reg.
func NewDBPool(reg prometheus.Registerer, stat func() *pgxpool.Stat) {
	reg.MustRegister(&dbPool{
		stat: stat,
		conns: prometheus.NewDesc("matching_db_pool_connections",
			"PostgreSQL connections in the pool, by state (acquired, idle, constructing).", []string{"state"}, nil),
		max: prometheus.NewDesc("matching_db_pool_max_connections",
			"The pool's size (pool_max_conns, or the binary's default).", nil, nil),
		acquires: prometheus.NewDesc("matching_db_pool_acquires_total",
			"Connections taken from the pool.", nil, nil),
		waited: prometheus.NewDesc("matching_db_pool_waited_acquires_total",
			"Connections taken after waiting, none being idle.", nil, nil),
		wait: prometheus.NewDesc("matching_db_pool_acquire_wait_seconds_total",
			"Time spent waiting for a connection, none being idle.", nil, nil),
		canceled: prometheus.NewDesc("matching_db_pool_canceled_acquires_total",
			"Waits for a connection given up (the wait's bound or the caller's deadline passed).", nil, nil),
	})
}

func (d *dbPool) Describe(ch chan<- *prometheus.Desc) {
	for _, desc := range []*prometheus.Desc{d.conns, d.max, d.acquires, d.waited, d.wait, d.canceled} {
		ch <- desc
	}
}

func (d *dbPool) Collect(ch chan<- prometheus.Metric) {
	s := d.stat()
	ch <- prometheus.MustNewConstMetric(d.conns, prometheus.GaugeValue, float64(s.AcquiredConns()), "acquired")
	ch <- prometheus.MustNewConstMetric(d.conns, prometheus.GaugeValue, float64(s.IdleConns()), "idle")
	ch <- prometheus.MustNewConstMetric(d.conns, prometheus.GaugeValue, float64(s.ConstructingConns()), "constructing")
	ch <- prometheus.MustNewConstMetric(d.max, prometheus.GaugeValue, float64(s.MaxConns()))
	ch <- prometheus.MustNewConstMetric(d.acquires, prometheus.CounterValue, float64(s.AcquireCount()))
	ch <- prometheus.MustNewConstMetric(d.waited, prometheus.CounterValue, float64(s.EmptyAcquireCount()))
	ch <- prometheus.MustNewConstMetric(d.wait, prometheus.CounterValue, s.EmptyAcquireWaitTime().Seconds())
	ch <- prometheus.MustNewConstMetric(d.canceled, prometheus.CounterValue, float64(s.CanceledAcquireCount()))
}
