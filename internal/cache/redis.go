// Package cache is the Redis side of the service: read models (feeds,
// learning state), cooldown sets and the client every binary shares.
package cache

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Timeouts of every Redis client of the service, unless REDIS_URL sets its
// own (dial_timeout=..., read_timeout=..., ...).
const (
	dialTimeout  = 2 * time.Second
	readTimeout  = time.Second
	writeTimeout = time.Second
	poolTimeout  = 2 * time.Second
	// detectTimeout bounds the question "do you run in cluster mode?" to
	// one node at start-up.
	detectTimeout = 2 * time.Second
)

// Topology kinds: how REDIS_URL's Redis is served.
const (
	Single   = "single"
	Cluster  = "cluster"
	Sentinel = "sentinel"
)

// Topology is what Open found behind REDIS_URL.
type Topology struct {
	Kind  string   // Single, Cluster or Sentinel
	Addrs []string // the nodes (or, for Sentinel, the sentinels) REDIS_URL names
	// Asked is false when no node answered at start-up, so the kind was
	// inferred from the URL: one node is taken as a single server, several
	// as a cluster's seed nodes. Sentinel is never asked.
	Asked bool
}

// Open builds the one Redis client a binary uses for everything (read
// models, rate limits, asynq), for the topology REDIS_URL describes:
//
//	redis://host:port/db                              one node: a single server or a cluster node
//	redis://host:port?addr=host2:port2&addr=host3:port3  several nodes of a Redis Cluster
//	redis://s1:26379?addr=s2:26379&master_name=NAME   Sentinel: the sentinels and the master's name
//
// Without master_name, Open asks the first node (then the next, when one
// does not answer) whether it runs in cluster mode and builds a Redis
// Cluster client when it does. Several nodes that do not run in cluster
// mode are refused: that URL is a mistake. When no node answers, Open does
// not fail (a binary serves what it can and reports the outage): one node
// is taken as a single server, several as a cluster, and Topology.Asked is
// false.
func Open(ctx context.Context, redisURL string) (redis.UniversalClient, Topology, error) {
	u, err := url.Parse(redisURL)
	if err != nil {
		return nil, Topology{}, fmt.Errorf("REDIS_URL: %w", err)
	}
	q := u.Query()
	if q.Has("master_name") {
		return openSentinel(redisURL)
	}
	nodes := append([]string{hostPort(u)}, q["addr"]...)
	if len(nodes) == 1 {
		// One node: a single server unless it says it runs in cluster mode.
		opt, err := redis.ParseURL(redisURL)
		if err != nil {
			return nil, Topology{}, fmt.Errorf("REDIS_URL: %w", err)
		}
		cluster, asked := clusterEnabled(ctx, nodes, opt.Username, opt.Password, opt.TLSConfig)
		if !cluster {
			withDefaults(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.PoolTimeout)
			withProtocol(&opt.Protocol)
			opt.ContextTimeoutEnabled = true
			return redis.NewClient(opt), Topology{Kind: Single, Addrs: nodes, Asked: asked}, nil
		}
		if opt.DB != 0 {
			return nil, Topology{}, fmt.Errorf("REDIS_URL: %s runs in cluster mode, which has database 0 only, not %d", nodes[0], opt.DB)
		}
		return openCluster(ctx, redisURL, true)
	}
	opt, err := redis.ParseClusterURL(redisURL)
	if err != nil {
		return nil, Topology{}, fmt.Errorf("REDIS_URL: %w", err)
	}
	if db := strings.Trim(u.Path, "/"); db != "" && db != "0" {
		return nil, Topology{}, fmt.Errorf("REDIS_URL names several nodes, a Redis Cluster, which has database 0 only, not %q", db)
	}
	cluster, asked := clusterEnabled(ctx, opt.Addrs, opt.Username, opt.Password, opt.TLSConfig)
	if asked && !cluster {
		return nil, Topology{}, fmt.Errorf("REDIS_URL names %d nodes, but %s does not run in cluster mode: "+
			"name one node for a single server, or add master_name=NAME to name the sentinels of a Sentinel set-up", len(opt.Addrs), opt.Addrs[0])
	}
	return openCluster(ctx, redisURL, asked)
}

func openCluster(ctx context.Context, redisURL string, asked bool) (redis.UniversalClient, Topology, error) {
	opt, err := redis.ParseClusterURL(redisURL)
	if err != nil {
		return nil, Topology{}, fmt.Errorf("REDIS_URL: %w", err)
	}
	withDefaults(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.PoolTimeout)
	withProtocol(&opt.Protocol)
	opt.ContextTimeoutEnabled = true
	c := redis.NewClusterClient(opt)
	if asked {
		// Learn the slot map and reach every master now, not on the first
		// request, whose Redis calls have a budget of a few hundred
		// milliseconds. A failure here is no reason not to start.
		wctx, cancel := context.WithTimeout(ctx, detectTimeout)
		_ = Ping(wctx, c)
		cancel()
	}
	return c, Topology{Kind: Cluster, Addrs: opt.Addrs, Asked: asked}, nil
}

func openSentinel(redisURL string) (redis.UniversalClient, Topology, error) {
	opt, err := redis.ParseFailoverURL(redisURL)
	if err != nil {
		return nil, Topology{}, fmt.Errorf("REDIS_URL: %w", err)
	}
	if opt.MasterName == "" {
		return nil, Topology{}, errors.New("REDIS_URL: master_name is empty")
	}
	withDefaults(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.PoolTimeout)
	withProtocol(&opt.Protocol)
	opt.ContextTimeoutEnabled = true
	return redis.NewFailoverClient(opt), Topology{Kind: Sentinel, Addrs: opt.SentinelAddrs}, nil
}

// withProtocol speaks RESP2 unless REDIS_URL says protocol=3. The service
// uses nothing RESP3 adds (push notifications, client-side caching), and a
// RESP3 connection looks for pending push notifications around every
// command: about 5 % of the API's CPU on a cached read.
func withProtocol(p *int) {
	if *p == 0 {
		*p = 2
	}
}

// withDefaults gives each timeout the service's default unless the URL set it.
func withDefaults(dial, read, write, pool *time.Duration) {
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{dial, dialTimeout}, {read, readTimeout}, {write, writeTimeout}, {pool, poolTimeout}} {
		if *d.v == 0 {
			*d.v = d.def
		}
	}
}

// clusterEnabled asks the nodes, in order, whether they run in cluster
// mode (INFO cluster), and returns the first answer. asked is false when
// no node answered.
func clusterEnabled(ctx context.Context, nodes []string, user, pass string, tlsConf *tls.Config) (cluster, asked bool) {
	for _, addr := range nodes {
		c := redis.NewClient(&redis.Options{Addr: addr, Username: user, Password: pass, TLSConfig: tlsConf,
			DialTimeout: detectTimeout, ReadTimeout: detectTimeout, WriteTimeout: detectTimeout,
			MaxRetries: -1, DialerRetries: 1, PoolSize: 1, ContextTimeoutEnabled: true})
		qctx, cancel := context.WithTimeout(ctx, detectTimeout)
		info, err := c.Info(qctx, "cluster").Result()
		cancel()
		_ = c.Close()
		if err != nil {
			continue
		}
		return infoField(info, "cluster_enabled") == "1", true
	}
	return false, false
}

// infoField reads "name:value" from an INFO answer.
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

// hostPort is the URL's node as host:port, with go-redis's defaults.
func hostPort(u *url.URL) string {
	h, p := u.Hostname(), u.Port()
	if h == "" {
		h = "localhost"
	}
	if p == "" {
		p = "6379"
	}
	return net.JoinHostPort(h, p)
}

// Ping reports whether Redis answers: for a cluster, every master (a
// master that is down leaves a third of the students, say, without their
// read models and queues, which is an outage worth reporting).
func Ping(ctx context.Context, rdb redis.UniversalClient) error {
	if c, ok := rdb.(*redis.ClusterClient); ok {
		return c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			if err := m.Ping(ctx).Err(); err != nil {
				return fmt.Errorf("%s: %w", m.Options().Addr, err)
			}
			return nil
		})
	}
	return rdb.Ping(ctx).Err()
}

// String names the topology in start-up logs.
func (t Topology) String() string {
	s := t.Kind + " " + strings.Join(t.Addrs, ",")
	if !t.Asked && t.Kind != Sentinel {
		s += " (no node answered at start-up; taken from REDIS_URL: " + strconv.Itoa(len(t.Addrs)) + " node(s))"
	}
	return s
}
