// Package testutil gives integration tests a real, isolated PostgreSQL
// database and Redis database, and development tokens.
//
// Each call to NewDB clones a fresh database from a migrated template, so
// tests and test packages never share rows. Each test package passes its
// own Redis DB number (see the RedisDB constants) so packages running in
// parallel never share keys.
package testutil

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/migrations"
)

// Redis DB numbers, one per test package (0 is left to development).
const (
	RedisDBStore     = 1
	RedisDBHTTPAPI   = 2
	RedisDBRateLimit = 3
	RedisDBTasks     = 4
	RedisDBCmdAPI    = 5
	RedisDBCmdWorker = 6
	RedisDBCatalog   = 7
	RedisDBAuth      = 8
	RedisDBCache     = 9
	RedisDBCommand   = 10
	RedisDBQuery     = 11
	RedisDBWebhook   = 12
	RedisDBMatchctl  = 13
	RedisDBOpenAPI   = 14
	RedisDBHandover  = 15
)

// AdminURL is the PostgreSQL server tests create their databases on.
func AdminURL() string {
	return cmp.Or(os.Getenv("TEST_DATABASE_URL"), "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")
}

// RedisURL is the Redis server tests use; the DB number is chosen per package.
func RedisURL() string {
	return cmp.Or(os.Getenv("TEST_REDIS_URL"), "redis://127.0.0.1:6379/0")
}

// Logger returns a logger that writes to the test log only when -v is set.
func Logger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// templateName is derived from the migrations' content so a changed schema
// gets a fresh template.
func templateName(t testing.TB) string {
	h := sha256.New()
	err := fs.WalkDir(migrations.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS, p)
		h.Write([]byte(p))
		h.Write(b)
		return err
	})
	require.NoError(t, err)
	return "matching_tmpl_" + hex.EncodeToString(h.Sum(nil))[:12]
}

func withDatabase(t testing.TB, base, name string) string {
	u, err := url.Parse(base)
	require.NoError(t, err)
	u.Path = "/" + name
	return u.String()
}

// NewDBURL creates a fresh, migrated database and returns its URL; it is
// dropped when the test ends.
func NewDBURL(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, AdminURL())
	require.NoError(t, err, "connect to PostgreSQL at TEST_DATABASE_URL=%s", AdminURL())
	defer admin.Close(context.Background())

	tmpl := ensureTemplate(t, ctx, admin)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "test_" + hex.EncodeToString(b[:])
	for attempt := 0; ; attempt++ {
		_, err = admin.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+tmpl)
		var pgErr *pgconn.PgError
		// Two packages cloning at the same instant: the template is "being accessed".
		if err != nil && errors.As(err, &pgErr) && pgErr.Code == "55006" && attempt < 50 {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		break
	}
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, AdminURL())
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	return withDatabase(t, AdminURL(), name)
}

// NewDB is NewDBURL plus an open pool, closed when the test ends.
func NewDB(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := store.Open(context.Background(), NewDBURL(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

func ensureTemplate(t testing.TB, ctx context.Context, admin *pgx.Conn) string {
	tmpl := templateName(t)
	// One builder at a time across all test processes.
	_, err := admin.Exec(ctx, "SELECT pg_advisory_lock(775533)")
	require.NoError(t, err)
	defer admin.Exec(context.Background(), "SELECT pg_advisory_unlock(775533)")

	var exists bool
	require.NoError(t, admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", tmpl).Scan(&exists))
	if exists {
		return tmpl
	}
	building := tmpl + "_build"
	_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+building+" WITH (FORCE)")
	_, err = admin.Exec(ctx, "CREATE DATABASE "+building)
	require.NoError(t, err)
	require.NoError(t, store.Migrate(ctx, withDatabase(t, AdminURL(), building), slog.New(slog.NewTextHandler(io.Discard, nil))))
	_, err = admin.Exec(ctx, "ALTER DATABASE "+building+" RENAME TO "+tmpl)
	require.NoError(t, err, "rename template")
	// Templates of other schemas are left alone: another checkout (a branch
	// with a migration this one lacks) may be cloning from one right now.
	// `make clean-test-db` drops them all.
	return tmpl
}

// NewRedis returns a client on Redis DB db, flushed now and when the test ends.
func NewRedis(t testing.TB, db int) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(RedisURL())
	require.NoError(t, err)
	opt.DB = db
	rdb := redis.NewClient(opt)
	ctx := context.Background()
	require.NoError(t, rdb.Ping(ctx).Err(), "connect to Redis at TEST_REDIS_URL=%s", RedisURL())
	require.NoError(t, rdb.FlushDB(ctx).Err())
	t.Cleanup(func() {
		_ = rdb.FlushDB(context.Background()).Err()
		_ = rdb.Close()
	})
	return rdb
}

// RedisURLFor is the URL of Redis DB db, for code that takes a REDIS_URL.
func RedisURLFor(t testing.TB, db int) string {
	u, err := url.Parse(RedisURL())
	require.NoError(t, err)
	u.Path = fmt.Sprintf("/%d", db)
	return u.String()
}
