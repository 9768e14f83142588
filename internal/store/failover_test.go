package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
)

// failoverFixture is a database with a student and a school, and a store
// opened on it as the binaries open theirs (OpenWith).
type failoverFixture struct {
	url     string
	db      *store.Store
	student string
	school  string
}

func newFailoverFixture(t *testing.T, params string) failoverFixture {
	t.Helper()
	ctx := context.Background()
	u := testutil.NewDBURL(t)
	pool, err := store.OpenWith(ctx, u+params, store.Settings{ConnectTimeout: 2 * time.Second,
		Limits: store.Limits{Call: 3 * time.Second, Acquire: 2 * time.Second}})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	db := store.NewLimited(pool, store.Limits{Call: 3 * time.Second, Acquire: 2 * time.Second})
	gen := catalog.Generate(1, 1)
	_, err = db.UpsertSchools(ctx, gen)
	require.NoError(t, err)
	return failoverFixture{url: u, db: db, student: newStudent(t, db), school: gen[0].ID}
}

func (f failoverFixture) swipe(ctx context.Context) error {
	_, err := f.db.RecordSwipe(ctx, domain.Swipe{StudentID: f.student, SchoolID: f.school, Direction: "right",
		Interaction: domain.InteractionSwipe, ClientID: uuid.NewString()})
	return err
}

func (f failoverFixture) save(ctx context.Context) error {
	_, _, err := f.db.SaveStudent(ctx, domain.Student{ID: f.student, Name: "Avery Quinn",
		Email: "avery.quinn@example.com", GraduationYear: "2028"})
	return err
}

// requireRefused checks a write refused by a read-only server is
// domain.Unavailable (a 503 with Retry-After), never an internal error.
func requireRefused(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	assert.Equal(t, domain.KindUnavailable, domain.KindOf(err), "%v", err)
}

func backendPID(t *testing.T, db *store.Store) int {
	t.Helper()
	var pid int
	require.NoError(t, db.Pool().QueryRow(context.Background(), `SELECT pg_backend_pid()`).Scan(&pid))
	return pid
}

// A pooled connection whose session turned read-only (as one opened on a
// server that was a standby then, and kept) answers its first write
// 25006: the write is unavailable (503), never an internal error, and the
// connection is closed, so the next write, on a new connection, goes
// through. Without the drop every write on the pool's one connection
// would fail for as long as it lives.
func TestReadOnlySessionIsDropped(t *testing.T) {
	ctx := context.Background()
	f := newFailoverFixture(t, "&pool_max_conns=1")
	for _, write := range []struct {
		name string
		do   func(context.Context) error
	}{{"swipe (one statement)", f.swipe}, {"profile (a transaction)", f.save}} {
		t.Run(write.name, func(t *testing.T) {
			pid := backendPID(t, f.db)
			_, err := f.db.Pool().Exec(ctx, `SET default_transaction_read_only = on`)
			require.NoError(t, err)
			require.Equal(t, pid, backendPID(t, f.db), "the pool's one connection, now read-only")

			err = write.do(ctx)
			requireRefused(t, err)
			var pgErr *pgconn.PgError
			require.True(t, errors.As(err, &pgErr), "%v", err)
			assert.Equal(t, "25006", pgErr.Code)

			require.NoError(t, write.do(ctx), "the next write gets a new connection")
			assert.NotEqual(t, pid, backendPID(t, f.db), "the read-only connection was closed")
		})
	}
}

// The database refuses writes for new sessions and its sessions are
// ended (a failover that leaves the old primary a standby): writes are
// unavailable, never internal errors, and no connection is opened on the
// read-only server (target_session_attrs=read-write by default). Once it
// takes writes again, the next write goes through.
func TestReadOnlyDatabase(t *testing.T) {
	ctx := context.Background()
	f := newFailoverFixture(t, "")
	require.NoError(t, f.swipe(ctx))

	testutil.SetReadOnly(t, f.url, true, true)
	for range 5 {
		requireRefused(t, f.swipe(ctx))
		requireRefused(t, f.save(ctx))
	}
	assert.Zero(t, f.db.Pool().Stat().TotalConns(), "no connection kept on a server that refuses writes")

	testutil.SetReadOnly(t, f.url, false, false)
	require.NoError(t, f.swipe(ctx))
	require.NoError(t, f.save(ctx))
}

// The same through a pool told to take any server
// (target_session_attrs=any, as through a pooler that does not say what
// it reaches): its connections are opened read-only and kept, each is
// closed on its first refused write, and writes go through again within
// a few tries once the database takes them (not after the connections'
// lifetime).
func TestReadOnlyDatabaseAnySession(t *testing.T) {
	ctx := context.Background()
	f := newFailoverFixture(t, "&target_session_attrs=any&pool_max_conns=4")
	testutil.SetReadOnly(t, f.url, true, true)
	for range 8 {
		requireRefused(t, f.swipe(ctx))
	}
	// Open the pool's connections while the server is read-only.
	var conns []func()
	for range 4 {
		c, err := f.db.Pool().Acquire(ctx)
		require.NoError(t, err)
		conns = append(conns, c.Release)
	}
	for _, release := range conns {
		release()
	}
	require.EqualValues(t, 4, f.db.Pool().Stat().TotalConns())

	testutil.SetReadOnly(t, f.url, false, false)
	failed := 0
	for f.swipe(ctx) != nil {
		failed++
		require.LessOrEqual(t, failed, 4, "each read-only connection fails one write at most")
	}
}
