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
	if f := c.lookup(studentID, profile, cat); f != nil {
		return f
	}
	f := match.NewFactors(p, cat)
	c.keep(studentID, profile, f)
	return f
}

// Rank ranks cat for the student with the profile p (encoded as profile)
// and the model m, as match.RankModel does (dst reused as it reuses it),
// and returns the student's factors: from the factors kept
// (match.RankFactors), or, when none are kept for this profile and
// catalogue, working them out in the ranking's own pass
// (match.RankModelFactors) and keeping them, so that a miss costs a
// ranking without kept factors and no more.
func (c *FactorCache) Rank(dst []match.Scored, studentID string, profile []byte, p match.Profile, m match.Model, cat *match.Catalog) ([]match.Scored, *match.Factors) {
	if f := c.lookup(studentID, profile, cat); f != nil {
		return match.RankFactors(dst, f, p, m), f
	}
	ranked, f := match.RankModelFactors(dst, p, m, cat)
	c.keep(studentID, profile, f)
	return ranked, f
}

// lookup returns the factors kept for the student's profile on cat, nil
// when there are none, counting the request.
func (c *FactorCache) lookup(studentID string, profile []byte, cat *match.Catalog) *match.Factors {
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
	return nil
}

// keep keeps f as the student's factors for profile, replacing what was
// kept for them, when f fits within the bound.
func (c *FactorCache) keep(studentID string, profile []byte, f *match.Factors) {
	if f.Bytes() > c.max {
		return
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
}

// remove drops an entry; c.mu is held.
func (c *FactorCache) remove(e *list.Element) {
	fe := c.lru.Remove(e).(*factorEntry)
	delete(c.byID, fe.studentID)
	c.bytes -= fe.factors.Bytes()
}
