package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/collegematch/matching/migrations"
)

// EnsureDatabase creates the database named in databaseURL when it is
// missing, connecting to the server's "postgres" database to do so.
func EnsureDatabase(ctx context.Context, databaseURL string) (created bool, err error) {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return false, fmt.Errorf("DATABASE_URL: %w", err)
	}
	name := cfg.Database
	if name == "" {
		return false, errors.New("DATABASE_URL names no database")
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err == nil {
		return false, conn.Close(ctx)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "3D000" { // invalid_catalog_name
		return false, fmt.Errorf("connect to postgres: %w", err)
	}
	admin := cfg.Copy()
	admin.Database = "postgres"
	aconn, err := pgx.ConnectConfig(ctx, admin)
	if err != nil {
		return false, fmt.Errorf("connect to postgres to create database %q: %w", name, err)
	}
	defer aconn.Close(ctx)
	if _, err := aconn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // created concurrently
			return false, nil
		}
		return false, fmt.Errorf("create database %q: %w", name, err)
	}
	return true, nil
}

// Migrate creates the database when missing and applies every pending
// migration. It is safe to run concurrently: goose takes a session lock.
func Migrate(ctx context.Context, databaseURL string, log *slog.Logger) error {
	if created, err := EnsureDatabase(ctx, databaseURL); err != nil {
		return err
	} else if created {
		log.InfoContext(ctx, "created database")
	}
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	return migrateDB(ctx, db, log)
}

func migrateDB(ctx context.Context, db *sql.DB, log *slog.Logger) error {
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS,
		goose.WithSessionLocker(mustLocker()), goose.WithLogger(goose.NopLogger()))
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	results, err := provider.Up(ctx)
	if err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	for _, r := range results {
		log.InfoContext(ctx, "applied migration", "version", r.Source.Version, "file", r.Source.Path, "took", r.Duration)
	}
	return nil
}

// MigrationsStatus writes one line per migration with whether it is applied.
func MigrationsStatus(ctx context.Context, databaseURL string, w io.Writer) error {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS)
	if err != nil {
		return err
	}
	st, err := provider.Status(ctx)
	if err != nil {
		return err
	}
	for _, s := range st {
		fmt.Fprintf(w, "%05d %-30s %s\n", s.Source.Version, s.Source.Path, s.State)
	}
	return nil
}
