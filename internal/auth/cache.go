package auth

import (
	"sync"
)

// cacheEntry is a verified token: its claims and the key that verified it.
type cacheEntry struct {
	claims Claims
	signer signer
}

// tokenCache holds verified tokens by the SHA-256 of the token, at most
// size of them. It is split into shards, each with its own lock, map and
// ring of keys in insertion order: a full shard evicts its oldest entry,
// so an insert costs the same whatever the cache holds and nothing ever
// walks the cache under a lock. Expired entries are dropped when they are
// next looked up, or age out of the ring.
type tokenCache struct {
	shards []cacheShard
}

type cacheShard struct {
	mu      sync.RWMutex
	entries map[[32]byte]cacheEntry
	ring    [][32]byte // keys in insertion order, up to size of them; once full, next is the oldest
	next    int
	size    int
}

// maxShards bounds lock contention: a verification takes one shard's lock.
const maxShards = 16

func newTokenCache(size int) *tokenCache {
	n := min(maxShards, max(size, 1))
	per := max(size/n, 1)
	c := &tokenCache{shards: make([]cacheShard, n)}
	for i := range c.shards {
		c.shards[i] = cacheShard{entries: map[[32]byte]cacheEntry{}, size: per}
	}
	return c
}

func (c *tokenCache) shard(key [32]byte) *cacheShard {
	return &c.shards[int(key[0])%len(c.shards)]
}

func (c *tokenCache) get(key [32]byte) (cacheEntry, bool) {
	s := c.shard(key)
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.entries[key]
	return e, ok
}

// put stores e under key, evicting the shard's oldest entry when it is full.
func (c *tokenCache) put(key [32]byte, e cacheEntry) {
	s := c.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.entries[key]; ok {
		s.entries[key] = e
		return
	}
	s.entries[key] = e
	if len(s.ring) < s.size {
		s.ring = append(s.ring, key)
		return
	}
	// The slot's previous key is the oldest insert; it may be gone already
	// (removed, or inserted again since, in which case it goes early).
	delete(s.entries, s.ring[s.next])
	s.ring[s.next] = key
	s.next = (s.next + 1) % len(s.ring)
}

func (c *tokenCache) remove(key [32]byte) {
	s := c.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.entries, key)
}

// len counts the cached tokens (tests).
func (c *tokenCache) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		n += len(s.entries)
		s.mu.RUnlock()
	}
	return n
}
