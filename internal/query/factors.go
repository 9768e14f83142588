package query

import (
	"bytes"
	"container/list"
	"sync"

	"github.com/collegematch/matching/internal/match"
)

// DefaultFactorCacheBytes bounds the memory a FactorCache holds when the
// configuration does not: about 130 students at 6,500 schools (80 bytes
// per school and student).
const DefaultFactorCacheBytes = 64 << 20

// FactorCache keeps, for the students whose feeds were built last, the
// factors of their scores that the learned weights do not move
// (match.Factors), up to a memory bound, least recently used first out. A
// swipe changes only the learned weights, so the rebuild that follows it
// ranks from the kept factors (match.RankFactors) instead of working every
// factor out again. An entry serves only the profile and the catalogue it
// was made from: a changed profile or a new catalogue makes it again. Safe
// for concurrent use.
type FactorCache struct {
	max int
	m   *Metrics

	mu    sync.Mutex
	bytes int
	lru   list.List // of *factorEntry, most recently used first
	byID  map[string]*list.Element
}

type factorEntry struct {
	studentID string
	profile   []byte // the profile the factors were made for, as FeedInput encodes it
	factors   *match.Factors
}

// NewFactorCache makes a cache holding at most maxBytes of factors
// (DefaultFactorCacheBytes when 0), counting on m's factor cache metrics
// (none when m is nil).
func NewFactorCache(maxBytes int, m *Metrics) *FactorCache {
	if maxBytes == 0 {
		maxBytes = DefaultFactorCacheBytes
	}
	if m == nil {
		m = newMetrics()
	}
	return &FactorCache{max: maxBytes, m: m, byID: make(map[string]*list.Element)}
}

// Get returns the student's factors for the profile p (encoded as profile)
// on cat, kept from an earlier build or made now and kept.
func (c *FactorCache) Get(studentID string, profile []byte, p match.Profile, cat *match.Catalog) *match.Factors {
	c.mu.Lock()
	if e, ok := c.byID[studentID]; ok {
		fe := e.Value.(*factorEntry)
		if fe.factors.Catalog() == cat && bytes.Equal(fe.profile, profile) {
			c.lru.MoveToFront(e)
			c.mu.Unlock()
			c.m.FactorRequests.WithLabelValues("hit").Inc()
			return fe.factors
		}
	}
	c.mu.Unlock()
	c.m.FactorRequests.WithLabelValues("miss").Inc()
	f := match.NewFactors(p, cat)
	if f.Bytes() > c.max {
		return f
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byID[studentID]; ok {
		c.remove(e)
	}
	c.byID[studentID] = c.lru.PushFront(&factorEntry{studentID: studentID, profile: bytes.Clone(profile), factors: f})
	c.bytes += f.Bytes()
	for c.bytes > c.max {
		c.remove(c.lru.Back())
		c.m.FactorEvictions.Inc()
	}
	c.m.FactorBytes.Set(float64(c.bytes))
	return f
}

// remove drops an entry; c.mu is held.
func (c *FactorCache) remove(e *list.Element) {
	fe := c.lru.Remove(e).(*factorEntry)
	delete(c.byID, fe.studentID)
	c.bytes -= fe.factors.Bytes()
}
