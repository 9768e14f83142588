package webhook_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/cache"
	tu "github.com/collegematch/matching/internal/testutil"
	"github.com/collegematch/matching/internal/webhook"
)

func TestFingerprint(t *testing.T) {
	a := webhook.Endpoint{URL: "https://a.example/hook", Keys: [][]byte{[]byte("one")}, Events: []string{"swipe.recorded"}}
	b := webhook.Endpoint{URL: "https://b.example/hook", Keys: [][]byte{[]byte("two")}, Events: []string{"swipe.recorded"}}
	base := webhook.Fingerprint([]webhook.Endpoint{a, b})
	assert.Len(t, base, 16)
	assert.Equal(t, base, webhook.Fingerprint([]webhook.Endpoint{b, a}), "order does not matter")
	rotated := a
	rotated.Keys = [][]byte{[]byte("rotated")}
	assert.Equal(t, base, webhook.Fingerprint([]webhook.Endpoint{rotated, b}), "secrets are left out")

	moved := a
	moved.URL = "https://a.example/hook2"
	private := a
	private.AllowPrivate = true
	none := a
	none.Events = nil
	for name, eps := range map[string][]webhook.Endpoint{
		"url": {moved, b}, "allow_private": {private, b}, "events": {none, b}, "one endpoint less": {a}, "none": nil,
	} {
		assert.NotEqual(t, base, webhook.Fingerprint(eps), name)
	}
}

// Processes with the same list agree; one with another list is told at
// once, and the others at their next check; once it is gone they agree
// again. Each change is logged once.
func TestAgreementAcrossProcesses(t *testing.T) {
	rdb := tu.NewRedis(t, tu.RedisDBWebhook)
	ctx := context.Background()
	list := []webhook.Endpoint{{URL: "https://a.example/hook", Events: []string{"swipe.recorded"}}}
	other := []webhook.Endpoint{{URL: "https://b.example/hook", Events: []string{"swipe.recorded"}}}
	type process struct {
		a     *webhook.Agreement
		gauge prometheus.Gauge
		log   *bytes.Buffer
		peers *cache.ConfigPeers
	}
	start := func(member string, eps []webhook.Endpoint) process {
		var buf bytes.Buffer
		peers := cache.NewConfigPeers(rdb, "webhook-subscribers", member, time.Minute)
		g := webhook.NewAgreementGauge(prometheus.NewRegistry())
		return process{webhook.NewAgreement(slog.New(slog.NewTextHandler(&buf, nil)), peers, eps, g), g, &buf, peers}
	}
	w1, w2 := start("worker/a/1", list), start("worker/b/1", list)
	for _, p := range []process{w1, w2} {
		differ, err := p.a.Check(ctx)
		require.NoError(t, err)
		assert.Empty(t, differ)
		assert.Zero(t, testutil.ToFloat64(p.gauge))
		assert.Contains(t, p.log.String(), "agrees across the fleet")
	}

	api := start("api/c/1", other)
	differ, err := api.a.Check(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"worker/a/1": webhook.Fingerprint(list), "worker/b/1": webhook.Fingerprint(list)}, differ)
	assert.Equal(t, 1.0, testutil.ToFloat64(api.gauge))
	assert.Contains(t, api.log.String(), "differs across the fleet")

	w1.log.Reset()
	differ, err = w1.a.Check(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"api/c/1": webhook.Fingerprint(other)}, differ)
	assert.Equal(t, 1.0, testutil.ToFloat64(w1.gauge))
	assert.Contains(t, w1.log.String(), "differs across the fleet")
	w1.log.Reset()
	_, err = w1.a.Check(ctx)
	require.NoError(t, err)
	assert.Empty(t, w1.log.String(), "logged once per change")

	require.NoError(t, api.peers.Withdraw(ctx))
	differ, err = w1.a.Check(ctx)
	require.NoError(t, err)
	assert.Empty(t, differ)
	assert.Zero(t, testutil.ToFloat64(w1.gauge))
	assert.Contains(t, w1.log.String(), "agrees across the fleet")
}

// A process that stopped publishing (killed, no withdrawal) stops counting
// once its fingerprint is older than the TTL.
func TestAgreementForgetsSilentProcesses(t *testing.T) {
	rdb := tu.NewRedis(t, tu.RedisDBWebhook)
	ctx := context.Background()
	gone := cache.NewConfigPeers(rdb, "webhook-subscribers", "worker/gone/1", 200*time.Millisecond)
	_, err := gone.Publish(ctx, "0000000000000000")
	require.NoError(t, err)
	peers := cache.NewConfigPeers(rdb, "webhook-subscribers", "worker/here/1", 200*time.Millisecond)
	all, err := peers.Publish(ctx, "1111111111111111")
	require.NoError(t, err)
	assert.Len(t, all, 2)
	time.Sleep(300 * time.Millisecond)
	all, err = peers.Publish(ctx, "1111111111111111")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"worker/here/1": "1111111111111111"}, all)
	assert.False(t, rdb.HExists(ctx, cache.ConfigPeersKey("webhook-subscribers"), "worker/gone/1").Val(), "removed")
}
