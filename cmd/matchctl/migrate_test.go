package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/testutil"
)

// matchctl migrate connects to MIGRATE_DATABASE_URL, not DATABASE_URL
// (which may name a transaction pooler): here DATABASE_URL names nothing
// that listens.
func TestMigrateUsesMigrateDatabaseURL(t *testing.T) {
	env := map[string]string{
		"DATABASE_URL":         "postgres://postgres@127.0.0.1:1/nowhere?sslmode=disable&connect_timeout=1",
		"MIGRATE_DATABASE_URL": testutil.NewDBURL(t),
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, args := range [][]string{{"migrate"}, {"migrate", "--status"}} {
		var out, errOut bytes.Buffer
		code := run(ctx, args, func(k string) string { return env[k] }, &out, &errOut)
		require.Equal(t, 0, code, "%v: %s", args, errOut.String())
		assert.NotEmpty(t, out.String(), "%v", args)
	}

	delete(env, "MIGRATE_DATABASE_URL")
	var out, errOut bytes.Buffer
	code := run(ctx, []string{"migrate"}, func(k string) string { return env[k] }, &out, &errOut)
	assert.Equal(t, 1, code, "without it, DATABASE_URL is used")
	assert.Contains(t, errOut.String(), "127.0.0.1")
}
