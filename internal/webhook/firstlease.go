package webhook

import (
	"sync"
	"time"
)

// firstLease sizes the lease the relay gives a new delivery's first
// attempt when it hands the attempt to the queue (RelayConfig.FirstLease)
// to how late those first attempts start: how long after its lease began
// (by the relaying worker's clock, read against the running worker's;
// clocks apart by a few seconds move it by as much) each one started.
//
// A first attempt that starts within its lease goes without a claim: the
// relay wrote the delivery leased to it, with the event, so it sends and
// its record joins a group commit. One that starts later claims the
// delivery first, and records alone: two statements of its own instead
// of a share of one. With a fixed lease, a webhook queue that falls
// behind by more than the lease's margin sends every first attempt down
// the dearer path just when the database is busiest, and the queue falls
// further behind. So the relay leases for FirstLease plus twice the
// lateness first attempts have shown lately (a maximum that halves every
// halfLife), at most MaxFirstLease. The lease is also how long a task
// that Redis lost waits before the monitor queues it again: a longer one
// only while the queue is that far behind anyway.
type firstLease struct {
	base, max, halfLife time.Duration

	mu   sync.Mutex
	late time.Duration // the decayed maximum, as of at
	at   time.Time
}

func newFirstLease(base, ceiling time.Duration) *firstLease {
	return &firstLease{base: base, max: max(base, ceiling), halfLife: 30 * time.Second}
}

// observe notes that a first attempt started late after its lease began
// (nothing to note without a relay).
func (l *firstLease) observe(now time.Time, late time.Duration) {
	if l == nil {
		return
	}
	late = min(max(late, 0), l.max)
	l.mu.Lock()
	defer l.mu.Unlock()
	// A lateness below the decayed maximum leaves it decaying from when
	// it was seen: on-time attempts must not hold an old peak up.
	if late >= l.decayed(now) {
		l.late, l.at = late, now
	}
}

// next is the lease for the deliveries written now.
func (l *firstLease) next(now time.Time) time.Duration {
	l.mu.Lock()
	late := l.decayed(now)
	l.mu.Unlock()
	return min(l.base+2*late, l.max)
}

// decayed is the maximum lateness as of now: halved for every halfLife
// since it was observed.
func (l *firstLease) decayed(now time.Time) time.Duration {
	if l.late <= 0 {
		return 0
	}
	halvings := int(now.Sub(l.at) / l.halfLife)
	if halvings >= 32 {
		return 0
	}
	return l.late >> max(halvings, 0)
}
