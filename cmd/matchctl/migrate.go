package main

import (
	"context"
	"io"

	"github.com/collegematch/matching/internal/store"
)

func init() {
	register("migrate", command{
		usage: "migrate [--status]",
		help: "create the database if missing and apply pending schema migrations, on MIGRATE_DATABASE_URL " +
			"(default DATABASE_URL): a direct connection, since migrations hold a session lock that a transaction pooler cannot keep",
		run: func(ctx context.Context, e env, args []string) error {
			fs := e.flagSet("migrate")
			status := fs.Bool("status", false, "list migrations and whether each is applied")
			if err := fs.Parse(args); err != nil {
				return usageErr("%v", err)
			}
			if *status {
				return store.MigrationsStatus(ctx, e.cfg.MigrateDatabaseURL, e.stdout)
			}
			if err := store.Migrate(ctx, e.cfg.MigrateDatabaseURL, e.log); err != nil {
				return err
			}
			_, err := io.WriteString(e.stdout, "migrations applied\n")
			return err
		},
	})
}
