package cache_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/testutil"
)

// REDIS_URL's forms, on a single server and on nodes that do not answer.
// The cluster and Sentinel forms on real servers are in topology_test.go.
func TestOpenTopologies(t *testing.T) {
	ctx := context.Background()
	node := testutil.RedisURLFor(t, testutil.RedisDBCache)
	u, err := url.Parse(node)
	require.NoError(t, err)

	t.Run("a single server is asked and is single", func(t *testing.T) {
		rdb, topo, err := cache.Open(ctx, node)
		require.NoError(t, err)
		defer rdb.Close()
		assert.Equal(t, cache.Topology{Kind: cache.Single, Addrs: []string{u.Host}, Asked: true}, topo)
		c, ok := rdb.(*redis.Client)
		require.True(t, ok)
		assert.Equal(t, testutil.RedisDBCache, c.Options().DB)
		assert.Equal(t, 2*time.Second, c.Options().DialTimeout, "the service's default")
		assert.True(t, c.Options().ContextTimeoutEnabled)
		assert.Equal(t, 2, c.Options().Protocol, "RESP2 unless the URL asks for 3")
		require.NoError(t, cache.Ping(ctx, rdb))
	})

	t.Run("the URL's own timeouts win", func(t *testing.T) {
		rdb, _, err := cache.Open(ctx, node+"?dial_timeout=5s&read_timeout=3s")
		require.NoError(t, err)
		defer rdb.Close()
		assert.Equal(t, 5*time.Second, rdb.(*redis.Client).Options().DialTimeout)
		assert.Equal(t, 3*time.Second, rdb.(*redis.Client).Options().ReadTimeout)
		assert.Equal(t, time.Second, rdb.(*redis.Client).Options().WriteTimeout)
	})

	t.Run("the URL's protocol wins", func(t *testing.T) {
		rdb, _, err := cache.Open(ctx, node+"?protocol=3")
		require.NoError(t, err)
		defer rdb.Close()
		assert.Equal(t, 3, rdb.(*redis.Client).Options().Protocol)
		require.NoError(t, cache.Ping(ctx, rdb))
	})

	t.Run("several nodes that are not a cluster are refused", func(t *testing.T) {
		_, _, err := cache.Open(ctx, "redis://"+u.Host+"?addr="+u.Host)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "does not run in cluster mode")
		assert.Contains(t, err.Error(), "master_name")
	})

	t.Run("nobody answers: one node is single, several a cluster", func(t *testing.T) {
		start := time.Now()
		rdb, topo, err := cache.Open(ctx, "redis://127.0.0.1:1/0")
		assert.Less(t, time.Since(start), time.Second, "a refused connection is not waited for")
		require.NoError(t, err, "a binary starts while Redis is down")
		defer rdb.Close()
		assert.Equal(t, cache.Topology{Kind: cache.Single, Addrs: []string{"127.0.0.1:1"}}, topo)
		assert.Contains(t, topo.String(), "no node answered")
		assert.Error(t, ping(rdb))

		start = time.Now()
		rdb, topo, err = cache.Open(ctx, "redis://127.0.0.1:1?addr=127.0.0.1:2&addr=127.0.0.1:3")
		assert.Less(t, time.Since(start), time.Second, "refused connections are not waited for")
		require.NoError(t, err)
		defer rdb.Close()
		assert.Equal(t, cache.Topology{Kind: cache.Cluster, Addrs: []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}}, topo)
		_, ok := rdb.(*redis.ClusterClient)
		assert.True(t, ok)
		assert.Error(t, ping(rdb))
	})

	t.Run("master_name means Sentinel", func(t *testing.T) {
		rdb, topo, err := cache.Open(ctx, "redis://127.0.0.1:1?addr=127.0.0.1:2&master_name=matching")
		require.NoError(t, err, "the sentinels are not asked at start")
		defer rdb.Close()
		assert.Equal(t, cache.Topology{Kind: cache.Sentinel, Addrs: []string{"127.0.0.1:1", "127.0.0.1:2"}}, topo)
		assert.Error(t, ping(rdb))
	})

	for name, bad := range map[string]string{
		"unknown option":    node + "?colour=blue",
		"empty master name": "redis://127.0.0.1:1?master_name=",
		"bad addr":          "redis://127.0.0.1:1?addr=nohost",
		"cluster database":  "redis://127.0.0.1:1/4?addr=127.0.0.1:2",
		"bad database":      "redis://127.0.0.1:1/x",
		"scheme":            "http://127.0.0.1:1",
	} {
		t.Run("refused: "+name, func(t *testing.T) {
			_, _, err := cache.Open(ctx, bad)
			assert.ErrorContains(t, err, "REDIS_URL")
		})
	}
}

// ping is cache.Ping with a deadline, as every caller gives it.
func ping(rdb redis.UniversalClient) error {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	return cache.Ping(ctx, rdb)
}
