// Package store is the PostgreSQL side of the service: the source of truth
// for students, schools, swipes and the outbox. SQL lives next to the code
// that runs it; pgx errors become domain errors at this boundary.
package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/collegematch/matching/internal/domain"
)

// Store wraps a pgx pool.
type Store struct {
	pool *pgxpool.Pool
}

// New wraps an open pool.
func New(pool *pgxpool.Pool) *Store {
	if pool == nil {
		panic("store.New: nil pool")
	}
	return &Store{pool: pool}
}

// Open connects to databaseURL and checks the connection.
func Open(ctx context.Context, databaseURL string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to postgres at %s: %w", redactedHost(cfg.ConnConfig.Config), err)
	}
	return pool, nil
}

// Pool exposes the pool to the binaries that own it.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Ping reports whether PostgreSQL answers.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

func redactedHost(c pgconn.Config) string {
	return fmt.Sprintf("%s:%d/%s", c.Host, c.Port, c.Database)
}

// mapErr turns pgx errors into domain errors; what names the entity.
func mapErr(err error, what string) error {
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, pgx.ErrNoRows):
		return &domain.Error{Kind: domain.KindNotFound, Code: domain.CodeNotFound, Message: what + " not found", Err: err}
	case errors.As(err, &pgErr) && pgErr.Code == "23505":
		return &domain.Error{Kind: domain.KindConflict, Code: domain.CodeInvalidRequest, Message: what + " already exists", Err: err}
	case errors.As(err, &pgErr) && (pgErr.Code == "23514" || pgErr.Code == "22P02" || pgErr.Code == "22003" ||
		pgErr.Code == "22021" || pgErr.Code == "22P05"): // check, bad text, out of range, NUL/untranslatable character
		return &domain.Error{Kind: domain.KindInvalid, Code: domain.CodeInvalidRequest, Message: what + ": a value is out of range", Err: err}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case pgconn.SafeToRetry(err), isConnErr(err):
		return domain.Unavailable("the database", err)
	default:
		return fmt.Errorf("store %s: %w", what, err)
	}
}

func isConnErr(err error) bool {
	var connErr *pgconn.ConnectError
	return errors.As(err, &connErr)
}
