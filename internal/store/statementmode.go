package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// StatementMode is how a pool's connections send their statements (pgx's
// default_query_exec_mode) and why that one.
type StatementMode struct {
	Mode pgx.QueryExecMode
	// Pooler says a pooler (PgBouncer, or another) answers for
	// PostgreSQL.
	Pooler bool
	// Named says DATABASE_URL chose the mode itself.
	Named bool
}

// Reason says in words why the mode was chosen, for the log.
func (m StatementMode) Reason() string {
	switch {
	case m.Named:
		return "named by DATABASE_URL (default_query_exec_mode)"
	case m.Pooler:
		return "a pooler answers for PostgreSQL: statements are described on each connection, never prepared by name, " +
			"so transaction pooling may hand each transaction another server connection"
	default:
		return "PostgreSQL answers directly: statements are prepared once per connection and cached"
	}
}

// ChooseStatementMode sets cfg's statement mode unless its connection
// string names one (default_query_exec_mode). Through a pooler it is
// cache_describe, which works with PgBouncer's transaction pooling on every
// version (a named prepared statement lives on one server connection, and
// the next transaction may run on another: "prepared statement ... already
// exists" or "... does not exist"); straight to PostgreSQL it is pgx's
// default, cache_statement. A pooler is recognised by one connection,
// opened and closed here: the process id its server announced (the cancel
// key, which a pooler makes up for its client) is not that of the backend
// that runs its query.
func ChooseStatementMode(ctx context.Context, cfg *pgxpool.Config) (StatementMode, error) {
	if strings.Contains(cfg.ConnString(), "default_query_exec_mode") {
		return StatementMode{Mode: cfg.ConnConfig.DefaultQueryExecMode, Named: true}, nil
	}
	pooler, err := behindPooler(ctx, cfg.ConnConfig.Config.Copy())
	if err != nil {
		return StatementMode{}, err
	}
	m := StatementMode{Mode: pgx.QueryExecModeCacheStatement, Pooler: pooler}
	if pooler {
		m.Mode = pgx.QueryExecModeCacheDescribe
	}
	cfg.ConnConfig.DefaultQueryExecMode = m.Mode
	return m, nil
}

// behindPooler opens one connection with c and says whether the backend
// running its query is another process than the one the server announced.
func behindPooler(ctx context.Context, c *pgconn.Config) (bool, error) {
	if t := c.ConnectTimeout; t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 2*t)
		defer cancel()
	}
	conn, err := pgconn.ConnectConfig(ctx, c)
	if err != nil {
		return false, fmt.Errorf("connect to postgres: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	res, err := conn.Exec(ctx, "SELECT pg_backend_pid()").ReadAll()
	if err != nil {
		return false, fmt.Errorf("connect to postgres at %s: %w", redactedHost(*c), err)
	}
	if len(res) != 1 || len(res[0].Rows) != 1 || len(res[0].Rows[0]) != 1 {
		return false, fmt.Errorf("connect to postgres at %s: pg_backend_pid() answered no row", redactedHost(*c))
	}
	pid, err := strconv.ParseUint(string(res[0].Rows[0][0]), 10, 32)
	if err != nil {
		return false, fmt.Errorf("connect to postgres at %s: pg_backend_pid(): %w", redactedHost(*c), err)
	}
	return uint32(pid) != conn.PID(), nil
}

// String is the mode as DATABASE_URL would name it.
func (m StatementMode) String() string { return strings.ReplaceAll(m.Mode.String(), " ", "_") }
