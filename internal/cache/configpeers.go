package cache

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ConfigPeers is where the processes of a fleet publish a fingerprint of a
// configuration they must share (the webhook subscriber list), so each can
// tell whether the others read the same one. One hash per configuration,
// cfg:v1:{NAME}: a field per process (its member id), whose value is
// "<fingerprint> <unix ms of its last publication>". A process publishes
// again every webhook.AgreementInterval (30 s); a field not refreshed
// within the TTL (three intervals) belongs to a process that is gone and is
// removed. Ages are read on the publishing processes' clocks, so clocks
// more than a TTL apart would make a live peer look gone: keep them in
// NTP's usual sync. The key expires when no process
// publishes any more.
type ConfigPeers struct {
	rdb    redis.UniversalClient
	key    string
	member string
	ttl    time.Duration
	now    func() time.Time
}

// NewConfigPeers publishes as member (unique per process, such as
// "worker/host/pid") under the configuration name.
func NewConfigPeers(rdb redis.UniversalClient, name, member string, ttl time.Duration) *ConfigPeers {
	return &ConfigPeers{rdb: rdb, key: ConfigPeersKey(name), member: member, ttl: ttl, now: time.Now}
}

// ConfigPeersKey is the hash of the configuration name's fingerprints.
func ConfigPeersKey(name string) string { return "cfg:v1:{" + name + "}" }

// Publish records fingerprint as this process's, now, and returns the
// fingerprint of every process that published within the TTL, this one
// included, by member id. Fields older than the TTL are removed.
func (p *ConfigPeers) Publish(ctx context.Context, fingerprint string) (map[string]string, error) {
	now := p.now()
	var all *redis.MapStringStringCmd
	_, err := p.rdb.TxPipelined(ctx, func(tx redis.Pipeliner) error {
		tx.HSet(ctx, p.key, p.member, fingerprint+" "+strconv.FormatInt(now.UnixMilli(), 10))
		tx.PExpire(ctx, p.key, 10*p.ttl)
		all = tx.HGetAll(ctx, p.key)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("publish the configuration fingerprint: %w", err)
	}
	live := map[string]string{}
	var stale []string
	for member, v := range all.Val() {
		fp, at, ok := strings.Cut(v, " ")
		ms, err := strconv.ParseInt(at, 10, 64)
		if !ok || err != nil || now.Sub(time.UnixMilli(ms)) > p.ttl {
			stale = append(stale, member)
			continue
		}
		live[member] = fp
	}
	if len(stale) > 0 {
		// Best effort: a field left now is removed by the next publication.
		_ = p.rdb.HDel(ctx, p.key, stale...).Err()
	}
	return live, nil
}

// Withdraw removes this process's fingerprint (at shutdown).
func (p *ConfigPeers) Withdraw(ctx context.Context) error {
	return p.rdb.HDel(ctx, p.key, p.member).Err()
}
