package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/testutil"
	"github.com/collegematch/matching/internal/webhook"
)

// An API given WEBHOOK_ENDPOINTS_FILE compares its list with the workers':
// a worker that reads another list is reported at start, in the log and in
// matching_webhook_config_mismatch; the API's fingerprint is withdrawn when
// it stops. A file with a bad entry stops the API, as it stops the worker.
func TestAPIChecksTheWorkersWebhookList(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBCmdAPI) // flushed before and after
	ctx := context.Background()
	worker := cache.NewConfigPeers(rdb, webhook.AgreementName, "worker/w/1", time.Minute)
	_, err := worker.Publish(ctx, webhook.Fingerprint([]webhook.Endpoint{{URL: "https://a.example/hook", Events: webhook.Events}}))
	require.NoError(t, err)

	dir := t.TempDir()
	file := filepath.Join(dir, "webhooks.yaml")
	require.NoError(t, os.WriteFile(file, []byte("- url: https://b.example/hook\n"+
		"  secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwZ1b2c3d4e5f6\n  events: [swipe.recorded]\n"), 0o600))
	env := map[string]string{
		"DATABASE_URL":           testutil.NewDBURL(t),
		"REDIS_URL":              testutil.RedisURLFor(t, testutil.RedisDBCmdAPI),
		"HTTP_ADDR":              "127.0.0.1:0",
		"OPS_ADDR":               "127.0.0.1:0",
		"AUTH_HS256_SECRET":      secret,
		"WEBHOOK_ENDPOINTS_FILE": file,
	}
	var logs testutil.Buffer
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready := make(chan [2]string, 1)
	done := make(chan error, 1)
	go func() { done <- run(runCtx, func(k string) string { return env[k] }, &logs, ready) }()
	var addrs [2]string
	select {
	case addrs = <-ready:
	case err := <-done:
		t.Fatalf("run returned early: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("api did not start")
	}
	metricsBody := func() string {
		res, err := http.Get("http://" + addrs[1] + "/metrics")
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	require.Eventually(t, func() bool {
		return bytes.Contains([]byte(metricsBody()), []byte("\nmatching_webhook_config_mismatch 1\n"))
	}, 10*time.Second, 20*time.Millisecond)
	assert.Contains(t, logs.String(), "the webhook subscriber list differs across the fleet")
	assert.Contains(t, logs.String(), "worker/w/1")
	assert.NotContains(t, logs.String(), "whsec_", "no secret is logged")
	assert.EqualValues(t, 2, rdb.HLen(ctx, cache.ConfigPeersKey(webhook.AgreementName)).Val())

	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(25 * time.Second):
		t.Fatal("api did not shut down")
	}
	assert.Equal(t, []string{"worker/w/1"}, rdb.HKeys(ctx, cache.ConfigPeersKey(webhook.AgreementName)).Val(),
		"the API withdrew its fingerprint")

	require.NoError(t, os.WriteFile(file, []byte("- url: https://b.example/hook\n  secret: nope\n  events: [swipe.recorded]\n"), 0o600))
	err = run(ctx, func(k string) string { return env[k] }, io.Discard, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "WEBHOOK_ENDPOINTS_FILE")
}
