// Package store is the PostgreSQL side of the service: the source of truth
// for students, schools, swipes and the outbox. SQL lives next to the code
// that runs it; pgx errors become domain errors at this boundary.
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/collegematch/matching/internal/domain"
)

// Store wraps a pgx pool.
type Store struct {
	pool *boundedPool
}

// New wraps an open pool; its calls are bounded by the caller's contexts
// only (commands, tests). The API and the worker use NewLimited.
func New(pool *pgxpool.Pool) *Store {
	return NewLimited(pool, Limits{})
}

// NewLimited wraps an open pool whose every call is bounded by lim.
func NewLimited(pool *pgxpool.Pool, lim Limits) *Store {
	if pool == nil {
		panic("store.New: nil pool")
	}
	return &Store{pool: &boundedPool{Pool: pool, lim: lim}}
}

// Open connects to databaseURL with pgx's defaults and checks the
// connection (commands and tests; the API and the worker use OpenWith).
func Open(ctx context.Context, databaseURL string) (*pgxpool.Pool, error) {
	return OpenWith(ctx, databaseURL, Settings{})
}

// OpenWith connects to databaseURL with the settings s (what the URL sets
// itself wins) and checks the connection. Unless the URL names
// default_query_exec_mode, it chooses the statement mode that works with
// what answers (ChooseStatementMode: cache_describe through a pooler) and
// says which in s.Log. When the server refuses the
// start-up parameters s adds (PgBouncer 1.18 refuses every one it does not
// know), it connects without them and says so in s.Log: the server-side
// limits must then come from the role (ALTER ROLE ... SET), and the
// client-side Limits still hold.
func OpenWith(ctx context.Context, databaseURL string, s Settings) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	added := s.apply(cfg, databaseURL)
	open := func() (*pgxpool.Pool, StatementMode, error) {
		mode, err := ChooseStatementMode(ctx, cfg)
		if err != nil {
			return nil, mode, err
		}
		pool, err := connect(ctx, cfg)
		return pool, mode, err
	}
	pool, mode, err := open()
	if err != nil && len(added) > 0 && refusedParameter(err) {
		for _, k := range added {
			delete(cfg.ConnConfig.RuntimeParams, k)
		}
		if s.Log != nil {
			s.Log.WarnContext(ctx, "the database server refused the start-up parameters (a pooler such as PgBouncer?): "+
				"connected without them; set them on the role (ALTER ROLE ... SET) for server-side limits",
				"parameters", added, "err", err)
		}
		pool, mode, err = open()
	}
	if err != nil {
		return nil, err
	}
	if s.Log != nil {
		s.Log.InfoContext(ctx, "database statement mode", "default_query_exec_mode", mode.String(),
			"pooler", mode.Pooler, "reason", mode.Reason())
	}
	return pool, nil
}

func connect(ctx context.Context, cfg *pgxpool.Config) (*pgxpool.Pool, error) {
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to postgres: %w", err)
	}
	pctx := ctx
	if t := cfg.ConnConfig.ConnectTimeout; t > 0 {
		var cancel context.CancelFunc
		pctx, cancel = context.WithTimeout(ctx, 2*t)
		defer cancel()
	}
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to postgres at %s: %w", redactedHost(cfg.ConnConfig.Config), err)
	}
	return pool, nil
}

// refusedParameter reports a server (a pooler) refusing a start-up
// parameter it does not know.
func refusedParameter(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && strings.Contains(pgErr.Message, "unsupported startup parameter")
}

// Pool exposes the pool to the binaries that own it.
func (s *Store) Pool() *pgxpool.Pool { return s.pool.Pool }

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
	case errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded):
		return err // the caller gave up
	case unavailable(err):
		return domain.Unavailable("the database", err)
	default:
		return fmt.Errorf("store %s: %w", what, err)
	}
}

// unavailable reports an error that says PostgreSQL did not answer in time
// or could not be reached, rather than anything about the request: a
// deadline (the call's, the caller's), no pooled connection in time, a
// connection lost or refused, statement_timeout or lock_timeout, a server
// shutting down or out of connections. The caller may try again later.
func unavailable(err error) bool {
	var (
		pgErr   *pgconn.PgError
		connErr *pgconn.ConnectError
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, errAcquire), pgconn.Timeout(err),
		pgconn.SafeToRetry(err), errors.As(err, &connErr):
		return true
	case errors.Is(err, pgconn.ErrReadOnlyConnection):
		return true // target_session_attrs=read-write met a standby
	case errors.As(err, &pgErr):
		switch pgErr.Code {
		case "57014", // query_canceled: statement_timeout, or a cancel request
			"55P03",          // lock_not_available: lock_timeout
			"40001", "40P01", // serialization failure, deadlock: the transaction may simply be tried again
			"53300": // too_many_connections
			return true
		}
		return readOnly(pgErr) || strings.HasPrefix(pgErr.Code, "08") // connection exceptions
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// readOnly reports an error that says the server this connection reached
// does not take writes now, or is going away: a failover left it a
// standby (read_only_sql_transaction, "cannot execute ... in a read-only
// transaction", "... during recovery"), it is shutting down, or it is
// starting up or in recovery. The connection that saw it is not reused
// (dropStale): a new one reaches whatever is primary now.
func readOnly(pgErr *pgconn.PgError) bool {
	switch pgErr.Code {
	case "25006", // read_only_sql_transaction
		"57P01", "57P02", "57P03", // admin or crash shutdown, cannot connect now (starting up, in recovery)
		"57P05": // idle_session_timeout: the server ended the session
		return true
	case "55000": // object_not_in_prerequisite_state, as recovery functions raise it
		return strings.Contains(pgErr.Message, "recovery is in progress")
	}
	return false
}

// dropStale is the pool's OnPgError: besides closing on a FATAL error (as
// pgconn does by default), it closes a connection that met a server that
// refuses writes (readOnly), so the pool never hands it out again. A
// connection opened while the database was read-only (by a pooler, or
// with target_session_attrs=any) keeps its session read-only after the
// database takes writes again; closing it on its first refused write is
// what lets the pool recover.
func dropStale(next pgconn.PgErrorHandler) pgconn.PgErrorHandler {
	return func(c *pgconn.PgConn, pgErr *pgconn.PgError) bool {
		if readOnly(pgErr) {
			return false
		}
		if next != nil {
			return next(c, pgErr)
		}
		return !strings.EqualFold(pgErr.Severity, "FATAL")
	}
}
