package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
)

func TestMigrateCreatesDatabaseAndIsRepeatable(t *testing.T) {
	ctx := context.Background()
	url := testutil.NewDBURL(t)
	// Point at a database that does not exist yet, beside the test one.
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	missing := strings.Replace(url, "/"+cfg.Database+"?", "/"+cfg.Database+"_fresh?", 1)
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), testutil.AdminURL())
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+cfg.Database+"_fresh WITH (FORCE)")
			_ = c.Close(context.Background())
		}
	})
	log := testutil.Logger(t)
	require.NoError(t, store.Migrate(ctx, missing, log))
	require.NoError(t, store.Migrate(ctx, missing, log), "second run applies nothing and succeeds")

	pool, err := store.Open(ctx, missing)
	require.NoError(t, err)
	defer pool.Close()
	for _, table := range []string{"schools", "students", "swipes", "feedback", "category_preferences",
		"learning_state", "outbox", "webhook_deliveries", "webhook_attempts", "zip_centroids"} {
		var n int
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n), table)
		assert.Zero(t, n, table)
	}
}
