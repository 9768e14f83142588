package webhook

import (
	"context"
	"time"

	"github.com/collegematch/matching/internal/domain"
)

// RetryAt is retryAt, for the external tests.
var RetryAt = retryAt

// RecordAttempts is the group commit of first attempts (attempts.go) over
// store, for the external tests: record returns whether r was recorded.
func RecordAttempts(store AttemptBatchStore) func(ctx context.Context, r domain.AttemptRecord) (bool, error) {
	return newAttemptBatcher(store).record
}

// FirstLease is the relay's lease for first attempts (firstlease.go), for
// the external tests.
func FirstLease(base, ceiling time.Duration) (observe func(now time.Time, late time.Duration), next func(now time.Time) time.Duration) {
	l := newFirstLease(base, ceiling)
	return l.observe, l.next
}
