package store

import (
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Settings are what a binary asks of its connection pool. Whatever
// DATABASE_URL sets itself (pool_max_conns, connect_timeout,
// statement_timeout, lock_timeout, ...) wins over them.
type Settings struct {
	// MaxConns sizes the pool when the URL has no pool_max_conns; 0:
	// pgxpool's default (the larger of 4 and the core count).
	MaxConns int32
	// ConnectTimeout bounds opening a connection (dial, TLS, start-up)
	// when the URL has no connect_timeout; 0: none.
	ConnectTimeout time.Duration
	// StatementTimeout, LockTimeout and IdleInTransactionTimeout are
	// PostgreSQL's statement_timeout, lock_timeout and
	// idle_in_transaction_session_timeout, sent as start-up parameters of
	// every connection unless the URL sets them; 0: the server's own.
	StatementTimeout         time.Duration
	LockTimeout              time.Duration
	IdleInTransactionTimeout time.Duration
	// Limits bound each call on the client's side (NewLimited).
	Limits Limits
	// Log, when set, hears about start-up parameters the server refused.
	Log *slog.Logger
}

// The API's limits (decisions.md, "Load, limits and failure"): a request
// that needs PostgreSQL and cannot get an answer answers 503 within 5 s,
// so every bound a call can meet ends before that. A row lock is waited
// for 2 s, a statement runs 3 s, a call (pool wait included) gets 4 s.
const (
	APILockTimeout      = 2 * time.Second
	APIStatementTimeout = 3 * time.Second
	APICallTimeout      = 4 * time.Second
	APIAcquireTimeout   = 2 * time.Second
	APIConnectTimeout   = 3 * time.Second
	// apiIdleInTransaction ends a transaction its client abandoned, and
	// with it the locks it held.
	apiIdleInTransaction = 10 * time.Second
)

// The worker's limits: background work may wait longer than a request,
// and a task's own deadline (asynq's timeout, 30 s to 1 min) bounds it
// too; a PostgreSQL that stops answering frees a task slot within
// WorkerCallTimeout.
const (
	WorkerLockTimeout       = 5 * time.Second
	WorkerStatementTimeout  = 10 * time.Second
	WorkerCallTimeout       = 15 * time.Second
	WorkerAcquireTimeout    = 5 * time.Second
	WorkerConnectTimeout    = 5 * time.Second
	workerIdleInTransaction = 30 * time.Second
)

// APISettings are the API's pool settings for a process running procs
// goroutines at once (GOMAXPROCS). A swipe holds a connection for one
// round trip, so eight per core (at least 16) keeps the pool from being
// what requests wait for; pool_max_conns in DATABASE_URL overrides it.
func APISettings(procs int, log *slog.Logger) Settings {
	return Settings{
		MaxConns:                 int32(max(16, 8*procs)),
		ConnectTimeout:           APIConnectTimeout,
		StatementTimeout:         APIStatementTimeout,
		LockTimeout:              APILockTimeout,
		IdleInTransactionTimeout: apiIdleInTransaction,
		Limits:                   Limits{Call: APICallTimeout, Acquire: APIAcquireTimeout},
		Log:                      log,
	}
}

// WorkerSettings are a worker's pool settings for its task slots (every
// slot holds at most one connection at a time) and background loops
// (relay, sweeps, retention, monitors, the catalogue poll).
func WorkerSettings(slots int, log *slog.Logger) Settings {
	return Settings{
		MaxConns:                 int32(slots + 8),
		ConnectTimeout:           WorkerConnectTimeout,
		StatementTimeout:         WorkerStatementTimeout,
		LockTimeout:              WorkerLockTimeout,
		IdleInTransactionTimeout: workerIdleInTransaction,
		Limits:                   Limits{Call: WorkerCallTimeout, Acquire: WorkerAcquireTimeout},
		Log:                      log,
	}
}

// Failover (decisions.md, "third round"): a pool reaches the primary only.
// Unless DATABASE_URL (or PGTARGETSESSIONATTRS) says otherwise, a new
// connection is checked with target_session_attrs=read-write (pgx runs
// "show transaction_read_only" once, after start-up) and refused when the
// server it reached does not take writes, so after a failover the pool
// opens connections to the new primary only; a connection that meets a
// refused write later is closed (dropStale). Connections are also renewed
// after MaxConnLifetime (plus up to MaxConnLifetimeJitter, so a pool does
// not renew all at once; pool_max_conn_lifetime and
// pool_max_conn_lifetime_jitter in the URL win), which bounds how long
// reads may go on reaching a server that is no longer the primary.
const (
	MaxConnLifetime       = 5 * time.Minute
	MaxConnLifetimeJitter = time.Minute
)

// apply sets s on cfg where the URL (databaseURL) left the setting to the
// binary, and returns the start-up parameters it added.
func (s Settings) apply(cfg *pgxpool.Config, databaseURL string) (added []string) {
	cfg.ConnConfig.OnPgError = dropStale(cfg.ConnConfig.OnPgError)
	if !sets(databaseURL, "target_session_attrs") && os.Getenv("PGTARGETSESSIONATTRS") == "" {
		cfg.ConnConfig.ValidateConnect = pgconn.ValidateConnectTargetSessionAttrsReadWrite
	}
	if !sets(databaseURL, "pool_max_conn_lifetime") {
		cfg.MaxConnLifetime = MaxConnLifetime
	}
	if !sets(databaseURL, "pool_max_conn_lifetime_jitter") {
		cfg.MaxConnLifetimeJitter = MaxConnLifetimeJitter
	}
	if s.MaxConns > 0 && !strings.Contains(databaseURL, "pool_max_conns") {
		cfg.MaxConns = s.MaxConns
	}
	if s.ConnectTimeout > 0 && cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = s.ConnectTimeout
	}
	params := cfg.ConnConfig.RuntimeParams
	for _, p := range []struct {
		name string
		d    time.Duration
	}{
		{"statement_timeout", s.StatementTimeout},
		{"lock_timeout", s.LockTimeout},
		{"idle_in_transaction_session_timeout", s.IdleInTransactionTimeout},
	} {
		if _, set := params[p.name]; set || p.d <= 0 {
			continue
		}
		params[p.name] = strconv.FormatInt(p.d.Milliseconds(), 10) + "ms"
		added = append(added, p.name)
	}
	return added
}

// sets reports whether the connection string (a URL or key=value pairs)
// gives the parameter name.
func sets(databaseURL, name string) bool {
	for i := 0; ; {
		j := strings.Index(databaseURL[i:], name)
		if j < 0 {
			return false
		}
		at := i + j
		end := at + len(name)
		before := at == 0 || strings.ContainsRune("?& \t\n", rune(databaseURL[at-1]))
		rest := strings.TrimLeft(databaseURL[end:], " ")
		if before && strings.HasPrefix(rest, "=") {
			return true
		}
		i = end
	}
}
