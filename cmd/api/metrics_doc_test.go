package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/collegematch/matching/internal/metrics"
	"github.com/collegematch/matching/internal/testutil"
)

// docs/metrics.md lists every metric the API registers, as run registers
// them, with its type and labels, and none that it does not.
func TestMetricsDocumented(t *testing.T) {
	env := map[string]string{
		"DATABASE_URL":      testutil.NewDBURL(t),
		"REDIS_URL":         testutil.RedisURLFor(t, testutil.RedisDBCmdAPI),
		"HTTP_ADDR":         "127.0.0.1:0",
		"OPS_ADDR":          "127.0.0.1:0",
		"AUTH_HS256_SECRET": secret,
	}
	testutil.NewRedis(t, testutil.RedisDBCmdAPI)
	regs := make(chan *metrics.Registry, 1)
	registered = func(r *metrics.Registry) { regs <- r }
	t.Cleanup(func() { registered = nil })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, func(k string) string { return env[k] }, io.Discard, nil) }()
	defer func() { cancel(); <-done }()
	select {
	case reg := <-regs:
		testutil.CheckMetricsDoc(t, "api", reg)
	case err := <-done:
		t.Fatalf("run returned early: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("api did not start")
	}
}
