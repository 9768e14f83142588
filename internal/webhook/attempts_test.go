package webhook_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
	"github.com/collegematch/matching/internal/webhook"
)

// countedAttempts counts the statements that record attempts.
type countedAttempts struct {
	*store.Store
	calls atomic.Int64
}

func (c *countedAttempts) RecordWebhookAttempts(ctx context.Context, recs []domain.AttemptRecord) (map[int64]bool, error) {
	c.calls.Add(1)
	return c.Store.RecordWebhookAttempts(ctx, recs)
}

// First attempts finishing together are recorded together: 200 of them in
// a few statements, each recorded once and each task told so; a delivery
// whose row is not there is told it was not.
func TestFirstAttemptsAreRecordedInGroups(t *testing.T) {
	ctx := context.Background()
	db := store.New(testutil.NewDB(t))
	student := uuid.NewString()
	var deliveries []int64
	require.NoError(t, pgx.BeginFunc(ctx, db.Pool(), func(tx pgx.Tx) error {
		for i := range 200 {
			id, err := store.InsertOutbox(ctx, tx, "swipe.recorded", student, map[string]any{"n": i})
			if err != nil {
				return err
			}
			var d int64
			if err := tx.QueryRow(ctx, `INSERT INTO webhook_deliveries (outbox_id, endpoint_url, webhook_id, event, next_attempt_at)
VALUES ($1, 'https://a.example/h', 'm', 'swipe.recorded', now()) RETURNING id`, id).Scan(&d); err != nil {
				return err
			}
			deliveries = append(deliveries, d)
		}
		return nil
	}))
	counted := &countedAttempts{Store: db}
	record := webhook.RecordAttempts(counted)

	var wg sync.WaitGroup
	var recorded atomic.Int64
	for _, d := range append(deliveries, deliveries[len(deliveries)-1]+1000) {
		wg.Go(func() {
			ok, err := record(ctx, domain.AttemptRecord{DeliveryID: d, Attempt: domain.WebhookAttempt{StatusCode: 200}, Status: "succeeded"})
			assert.NoError(t, err)
			if ok {
				recorded.Add(1)
			}
		})
	}
	wg.Wait()
	assert.EqualValues(t, 200, recorded.Load(), "every row there recorded, the missing one not")
	assert.Less(t, counted.calls.Load(), int64(50), "in groups")
	t.Logf("201 attempts recorded in %d statements", counted.calls.Load())
	var succeeded, attempts int
	require.NoError(t, db.Pool().QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'succeeded' AND attempts = 1),
		(SELECT count(*) FROM webhook_attempts) FROM webhook_deliveries`).Scan(&succeeded, &attempts))
	assert.Equal(t, 200, succeeded)
	assert.Equal(t, 200, attempts, "one attempt row each")

	// The same delivery twice at once: recorded twice, in two groups.
	var wg2 sync.WaitGroup
	for range 2 {
		wg2.Go(func() {
			ok, err := record(ctx, domain.AttemptRecord{DeliveryID: deliveries[0], Attempt: domain.WebhookAttempt{StatusCode: 200}, Status: "succeeded"})
			assert.NoError(t, err)
			assert.True(t, ok)
		})
	}
	wg2.Wait()
	var n int
	require.NoError(t, db.Pool().QueryRow(ctx, `SELECT attempts FROM webhook_deliveries WHERE id = $1`, deliveries[0]).Scan(&n))
	assert.Equal(t, 3, n)
}
