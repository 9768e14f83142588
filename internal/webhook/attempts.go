package webhook

import (
	"context"
	"sync"
	"time"

	"github.com/collegematch/matching/internal/domain"
)

// AttemptBatchStore records many attempts in one statement
// (store.Store.RecordWebhookAttempts), reporting which were recorded.
type AttemptBatchStore interface {
	RecordWebhookAttempts(ctx context.Context, recs []domain.AttemptRecord) (map[int64]bool, error)
}

// Group commit of first attempts. Every swipe.recorded event is posted
// once per subscriber, so the record of each first attempt is one
// statement per swipe per subscriber; the worker's delivery slots run many
// at once, so their records are written together instead: the first
// record to arrive opens a group and waits attemptWindow (or until the
// group holds attemptGroupMax records), then writes the group in one
// statement, and every task of the group returns once it is written. A
// task acknowledges its delivery only after its attempt is recorded, as
// before; a group that fails fails each of its tasks, which the queue runs
// again (same webhook-id).
const (
	attemptWindow   = 5 * time.Millisecond
	attemptGroupMax = 128
)

type attemptBatcher struct {
	store  AttemptBatchStore
	window time.Duration
	max    int

	mu   sync.Mutex
	open *attemptGroup
}

type attemptGroup struct {
	recs     []domain.AttemptRecord
	ids      map[int64]bool
	full     chan struct{} // closed when the group reached max
	done     chan struct{} // closed once written
	recorded map[int64]bool
	err      error
}

func newAttemptBatcher(store AttemptBatchStore) *attemptBatcher {
	return &attemptBatcher{store: store, window: attemptWindow, max: attemptGroupMax}
}

// record writes r with the group open now, and reports whether the
// delivery's row was there to record it on.
func (b *attemptBatcher) record(ctx context.Context, r domain.AttemptRecord) (bool, error) {
	b.mu.Lock()
	g := b.open
	if g != nil && g.ids[r.DeliveryID] {
		// The same delivery twice in a group would be recorded once: it
		// waits for the next group.
		b.mu.Unlock()
		select {
		case <-g.done:
		case <-ctx.Done():
			return false, ctx.Err()
		}
		return b.record(ctx, r)
	}
	leader := g == nil
	if leader {
		g = &attemptGroup{ids: map[int64]bool{}, full: make(chan struct{}), done: make(chan struct{})}
		b.open = g
	}
	g.recs = append(g.recs, r)
	g.ids[r.DeliveryID] = true
	if len(g.recs) >= b.max {
		close(g.full)
		b.open = nil
	}
	b.mu.Unlock()

	if leader {
		t := time.NewTimer(b.window)
		select {
		case <-t.C:
		case <-g.full:
		}
		t.Stop()
		b.mu.Lock()
		if b.open == g {
			b.open = nil
		}
		b.mu.Unlock()
		// Written for the whole group, whatever becomes of the leader's task.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
		g.recorded, g.err = b.store.RecordWebhookAttempts(wctx, g.recs)
		cancel()
		close(g.done)
	}
	select {
	case <-g.done:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	if g.err != nil {
		return false, g.err
	}
	return g.recorded[r.DeliveryID], nil
}
