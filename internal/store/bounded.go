package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Limits bound, on the client's side, every call the store makes to
// PostgreSQL, so that a database that stops answering (a black hole, an
// exhausted pool, a lock held) ends each call in bounded time with
// domain.Unavailable (mapErr) instead of holding its caller.
type Limits struct {
	// Call bounds one call: the wait for a connection, the statement and the
	// reading of its rows (in a transaction, each statement, the commit and
	// the rollback). A call past it is abandoned and its connection closed;
	// PostgreSQL's statement_timeout, below it, ends the statement on the
	// server. 0: no bound but the caller's context.
	Call time.Duration
	// Acquire bounds the wait for a pooled connection (within Call); 0: Call.
	Acquire time.Duration
}

// errAcquire marks a call that got no pooled connection in time: every
// connection was busy, or new ones could not be opened.
var errAcquire = errors.New("no database connection free in time")

// boundedPool is the pool as the store uses it: pgxpool's calls with the
// Limits applied. Methods it does not bound are pgxpool's own.
type boundedPool struct {
	*pgxpool.Pool
	lim Limits
}

func (p *boundedPool) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if p.lim.Call <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, p.lim.Call)
}

// acquire takes a connection, waiting at most Limits.Acquire.
func (p *boundedPool) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	actx := ctx
	if p.lim.Acquire > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, p.lim.Acquire)
		defer cancel()
	}
	c, err := p.Pool.Acquire(actx)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("%w (waited %v): %w", errAcquire, p.lim.Acquire, err)
	}
	return c, err
}

func (p *boundedPool) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	ctx, cancel := p.bound(ctx)
	defer cancel()
	c, err := p.acquire(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	defer c.Release()
	return c.Exec(ctx, sql, args...)
}

func (p *boundedPool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	ctx, cancel := p.bound(ctx)
	c, err := p.acquire(ctx)
	if err != nil {
		cancel()
		return errRow{err}
	}
	return &pooledRow{r: c.QueryRow(ctx, sql, args...), release: func() { c.Release(); cancel() }}
}

func (p *boundedPool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	ctx, cancel := p.bound(ctx)
	c, err := p.acquire(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	rows, err := c.Query(ctx, sql, args...)
	if err != nil {
		c.Release()
		cancel()
		return nil, err
	}
	return &pooledRows{Rows: rows, release: func() { c.Release(); cancel() }}, nil
}

func (p *boundedPool) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	ctx, cancel := p.bound(ctx)
	c, err := p.acquire(ctx)
	if err != nil {
		cancel()
		return pgx.FailedBatchResults(b, err)
	}
	br := c.SendBatch(ctx, b)
	if tx := br.Tx(); tx != nil {
		// The batch began a transaction: the connection is its until it
		// ends.
		return &pooledBatch{BatchResults: br, tx: &boundedTx{Tx: tx, p: p, release: c.Release}, release: cancel}
	}
	return &pooledBatch{BatchResults: br, release: func() { c.Release(); cancel() }}
}

func (p *boundedPool) Begin(ctx context.Context) (pgx.Tx, error) {
	return p.BeginTx(ctx, pgx.TxOptions{})
}

// BeginTx starts a transaction whose statements, commit and rollback are
// each bounded by Limits.Call, whatever context they are given.
func (p *boundedPool) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	bctx, cancel := p.bound(ctx)
	defer cancel()
	c, err := p.acquire(bctx)
	if err != nil {
		return nil, err
	}
	tx, err := c.BeginTx(bctx, opts)
	if err != nil {
		c.Release()
		return nil, err
	}
	return &boundedTx{Tx: tx, p: p, release: c.Release}, nil
}

func (p *boundedPool) Ping(ctx context.Context) error {
	ctx, cancel := p.bound(ctx)
	defer cancel()
	c, err := p.acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	return c.Ping(ctx)
}

// boundedTx is a transaction on a connection of boundedPool, which it
// returns to the pool once committed or rolled back.
type boundedTx struct {
	pgx.Tx
	p       *boundedPool
	release func()
	done    bool
}

func (t *boundedTx) end() {
	if !t.done {
		t.done = true
		t.release()
	}
}

func (t *boundedTx) Commit(ctx context.Context) error {
	ctx, cancel := t.p.bound(ctx)
	defer cancel()
	err := t.Tx.Commit(ctx)
	t.end()
	return err
}

func (t *boundedTx) Rollback(ctx context.Context) error {
	ctx, cancel := t.p.bound(ctx)
	defer cancel()
	err := t.Tx.Rollback(ctx)
	t.end()
	return err
}

func (t *boundedTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	ctx, cancel := t.p.bound(ctx)
	defer cancel()
	return t.Tx.Exec(ctx, sql, args...)
}

func (t *boundedTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	ctx, cancel := t.p.bound(ctx)
	return &pooledRow{r: t.Tx.QueryRow(ctx, sql, args...), release: cancel}
}

func (t *boundedTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	ctx, cancel := t.p.bound(ctx)
	rows, err := t.Tx.Query(ctx, sql, args...)
	if err != nil {
		cancel()
		return nil, err
	}
	return &pooledRows{Rows: rows, release: cancel}, nil
}

func (t *boundedTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	ctx, cancel := t.p.bound(ctx)
	return &pooledBatch{BatchResults: t.Tx.SendBatch(ctx, b), release: cancel}
}

func (t *boundedTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	ctx, cancel := t.p.bound(ctx)
	defer cancel()
	return t.Tx.CopyFrom(ctx, table, columns, src)
}

// pooledRow releases what its statement held once scanned.
type pooledRow struct {
	r       pgx.Row
	release func()
}

func (r *pooledRow) Scan(dest ...any) error {
	defer r.release()
	return r.r.Scan(dest...)
}

// pooledRows releases what its statement held once closed or read to the
// end.
type pooledRows struct {
	pgx.Rows
	release func()
	done    bool
}

func (r *pooledRows) end() {
	if !r.done {
		r.done = true
		r.release()
	}
}

func (r *pooledRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.end()
	return false
}

func (r *pooledRows) Close() {
	r.Rows.Close()
	r.end()
}

// pooledBatch releases what its batch held once closed.
type pooledBatch struct {
	pgx.BatchResults
	tx      *boundedTx
	release func()
	done    bool
}

func (b *pooledBatch) Close() error {
	err := b.BatchResults.Close()
	if !b.done {
		b.done = true
		b.release()
	}
	return err
}

func (b *pooledBatch) Tx() pgx.Tx {
	if b.tx == nil {
		return nil
	}
	return b.tx
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
