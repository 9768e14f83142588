// Package cache is the Redis side of the service: read models (feeds,
// learning state), cooldown sets and the client every binary shares.
package cache

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Open connects to REDIS_URL. It does not fail when Redis is down at start:
// the API serves what it can and reports the outage on /readyz.
func Open(redisURL string) (*redis.Client, error) {
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	opt.DialTimeout = 2 * time.Second
	opt.ReadTimeout = time.Second
	opt.WriteTimeout = time.Second
	opt.PoolTimeout = 2 * time.Second
	// A request's deadline bounds its Redis calls too, so a Redis that accepts
	// connections but never answers cannot hold a request past its own budget.
	opt.ContextTimeoutEnabled = true
	return redis.NewClient(opt), nil
}

// Ping reports whether Redis answers.
func Ping(ctx context.Context, rdb redis.UniversalClient) error {
	return rdb.Ping(ctx).Err()
}
