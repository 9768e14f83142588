package query

import (
	"bytes"
	"container/list"
	"sync"
	"time"

	"github.com/collegematch/matching/internal/match"
)

// DefaultFactorCacheBytes bounds the memory a FactorCache holds when the
// configuration does not: about 510 students at 6,500 schools (20 bytes
// per school and student).
const DefaultFactorCacheBytes = 64 << 20

// FactorCache keeps, for the students whose feeds were built last, the
// factors of their scores that the learned weights do not move
// (match.Factors), up to a memory bound, least recently used first out. A
// swipe changes only the learned weights, so the rebuild that follows it
// ranks from the kept factors (match.RankFactorsLean) instead of working every
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
	// missed is the doorkeeper of RankLean: the students of the latest
	// misses, in a ring (ring, next) and a set.
	missed map[string]struct{}
	ring   []string
	next   int
	// room is how many students the cache holds, from the latest
	// factors' size.
	room int
	now  func() time.Time
}

type factorEntry struct {
	studentID string
	profile   []byte // the profile the factors were made for, as FeedInput encodes it
	factors   *match.Factors
	used      time.Time // when the factors were last kept or read
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
	return &FactorCache{max: maxBytes, m: m, byID: make(map[string]*list.Element), now: time.Now}
}

// Get returns the student's factors for the profile p (encoded as profile)
// on cat, kept from an earlier build or made now and kept.
func (c *FactorCache) Get(studentID string, profile []byte, p match.Profile, cat *match.Catalog) *match.Factors {
	if f := c.lookup(studentID, profile, cat); f != nil {
		return f
	}
	c.m.FactorRequests.WithLabelValues("miss").Inc()
	f := match.NewFactors(p, cat)
	c.keep(studentID, profile, f)
	return f
}

// RankLean ranks cat for the student with the profile p (encoded as
// profile) and the model m, as match.RankModel does, into dst (a new
// ranking when dst is nil), made lean (match.Ranking), and returns the
// student's factors: from the factors kept (match.RankFactorsLean), or,
// when none are kept for this profile and catalogue, working them out in
// the ranking's own pass (match.RankModelFactorsLean) and keeping them.
//
// A miss keeps the factors when the student kept longest unread has gone
// cold (unread for ColdAfter: the miss takes their place, and they are
// dropped at once, so that concurrent misses do not take the same place
// twice), or else only for a student missed before, within as many misses
// as there are students in the cache twice over (a doorkeeper). A student
// whose next rebuild comes after more others than the cache has room for
// (many students rebuilding at once, cycling through it) would evict
// another student's factors and never read its own: working out and
// keeping them costs about a fifth more than a ranking without them, so
// such a miss ranks as a build without a cache does (match.RankModelLean)
// and returns nil factors.
func (c *FactorCache) RankLean(dst *match.Ranking, studentID string, profile []byte, p match.Profile, m match.Model, cat *match.Catalog) (*match.Ranking, *match.Factors) {
	if f := c.lookup(studentID, profile, cat); f != nil {
		return match.RankFactorsLean(dst, f, p, m), f
	}
	if !c.admit(studentID) {
		c.m.FactorRequests.WithLabelValues("pass").Inc()
		return match.RankModelLean(dst, p, m, cat), nil
	}
	c.m.FactorRequests.WithLabelValues("miss").Inc()
	r, f := match.RankModelFactorsLean(dst, p, m, cat)
	c.keep(studentID, profile, f)
	return r, f
}

// minDoorkeeper is the fewest misses the doorkeeper remembers.
const minDoorkeeper = 64

// ColdAfter is how long a student's factors go unread before a miss of
// another student may take their place at once: a student swiping
// rebuilds every few seconds (every 2 to 3 s per student at 300 to 500
// swipes/s over 1,000 students), so one unread for half a minute has most
// likely stopped, and the doorkeeper has nothing left to protect.
const ColdAfter = 30 * time.Second

// admit reports whether a miss for studentID keeps its factors: while the
// cache is less than half full, when the student kept longest unread has
// gone cold (ColdAfter; they are dropped now, their place claimed), for a
// student it holds factors of (for another profile or catalogue), or for a
// student missed within the last 2 x room misses. A miss the doorkeeper
// turns away is remembered.
func (c *FactorCache) admit(studentID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.room == 0 || c.bytes < c.max/2 {
		return true // keeping costs no one their place
	}
	if e := c.lru.Back(); e != nil && c.now().Sub(e.Value.(*factorEntry).used) >= ColdAfter {
		c.evict(e) // the place is claimed: a concurrent miss finds the next
		return true
	}
	if _, ok := c.byID[studentID]; ok {
		return true // replaces the student's own
	}
	if _, ok := c.missed[studentID]; ok {
		return true
	}
	size := max(minDoorkeeper, 2*c.room)
	if c.missed == nil {
		c.missed = make(map[string]struct{}, size)
	}
	if len(c.ring) < size {
		c.ring = append(c.ring, studentID)
	} else {
		c.next %= len(c.ring)
		delete(c.missed, c.ring[c.next])
		c.ring[c.next] = studentID
		c.next++
	}
	c.missed[studentID] = struct{}{}
	return false
}

// lookup returns the factors kept for the student's profile on cat, nil
// when there are none, counting the request.
func (c *FactorCache) lookup(studentID string, profile []byte, cat *match.Catalog) *match.Factors {
	c.mu.Lock()
	if e, ok := c.byID[studentID]; ok {
		fe := e.Value.(*factorEntry)
		if fe.factors.Catalog() == cat && bytes.Equal(fe.profile, profile) {
			c.lru.MoveToFront(e)
			fe.used = c.now()
			c.mu.Unlock()
			c.m.FactorRequests.WithLabelValues("hit").Inc()
			return fe.factors
		}
	}
	c.mu.Unlock()
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
	c.byID[studentID] = c.lru.PushFront(&factorEntry{studentID: studentID, profile: bytes.Clone(profile), factors: f, used: c.now()})
	c.bytes += f.Bytes()
	if b := f.Bytes(); b > 0 { // an empty catalogue's factors take no room
		c.room = max(1, c.max/b)
	}
	for c.bytes > c.max {
		c.evict(c.lru.Back())
	}
	c.m.FactorBytes.Set(float64(c.bytes))
}

// evict drops an entry to make room, counting it; c.mu is held.
func (c *FactorCache) evict(e *list.Element) {
	c.remove(e)
	c.m.FactorEvictions.Inc()
	c.m.FactorBytes.Set(float64(c.bytes))
}

// remove drops an entry; c.mu is held.
func (c *FactorCache) remove(e *list.Element) {
	fe := c.lru.Remove(e).(*factorEntry)
	delete(c.byID, fe.studentID)
	c.bytes -= fe.factors.Bytes()
}
