package tasks

import (
	"context"

	"github.com/collegematch/matching/internal/domain"
)

// RetryAt is retryAt, for the external tests.
var RetryAt = retryAt

// RecordAttempts is the group commit of first attempts (attempts.go) over
// store, for the external tests: record returns whether r was recorded.
func RecordAttempts(store AttemptBatchStore) func(ctx context.Context, r domain.AttemptRecord) (bool, error) {
	return newAttemptBatcher(store).record
}
