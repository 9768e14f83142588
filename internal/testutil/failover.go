package testutil

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// SetReadOnly makes the database of dbURL refuse writes in every session
// opened from now on (on), as a failover that leaves the old primary a
// standby does, or take them again (off). With terminate, the sessions
// open on it are ended too, as a failover ends them; a session kept open
// keeps the setting it started with.
func SetReadOnly(t testing.TB, dbURL string, on, terminate bool) {
	t.Helper()
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	name := strings.TrimPrefix(u.Path, "/")
	require.NotEmpty(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, AdminURL())
	require.NoError(t, err)
	defer admin.Close(context.Background())
	stmt := "ALTER DATABASE " + pgx.Identifier{name}.Sanitize() + " RESET default_transaction_read_only"
	if on {
		stmt = "ALTER DATABASE " + pgx.Identifier{name}.Sanitize() + " SET default_transaction_read_only = on"
	}
	_, err = admin.Exec(ctx, stmt)
	require.NoError(t, err)
	if terminate {
		_, err = admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = $1 AND pid <> pg_backend_pid()`, name)
		require.NoError(t, err)
	}
}
