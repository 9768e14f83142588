package store

import (
	"context"
	"fmt"
	"time"
)

// deleteFinalDeliveries deletes up to $2 deliveries in a final state whose
// last change is more than $1 seconds old, oldest first, with their
// attempts (first within the statement; the foreign key is checked at its
// end). It reads webhook_deliveries_final_idx; rows another transaction
// holds (an operator's replay) are skipped, not waited for.
const deleteFinalDeliveries = `
WITH d AS (
	SELECT id FROM webhook_deliveries
	WHERE status <> 'pending' AND updated_at < now() - make_interval(secs => $1)
	ORDER BY updated_at
	LIMIT $2
	FOR UPDATE SKIP LOCKED
), a AS (
	DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM d) RETURNING 1
), dd AS (
	DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM d) RETURNING 1
)
SELECT (SELECT count(*) FROM dd), (SELECT count(*) FROM a)`

// DeleteFinalWebhookDeliveries deletes up to limit webhook deliveries that
// ended (succeeded, parked, disabled) more than olderThan ago, with their
// attempts, and reports how many of each it deleted. Callers repeat it
// until it deletes fewer than limit deliveries: each call is one short
// statement. Pending deliveries are never deleted, however old. The events
// the deleted deliveries referred to are then free for the outbox's own
// retention (DeletePublishedOutbox).
func (s *Store) DeleteFinalWebhookDeliveries(ctx context.Context, olderThan time.Duration, limit int) (deliveries, attempts int, err error) {
	if limit <= 0 {
		return 0, 0, fmt.Errorf("store: delivery deletion batch size %d is not positive", limit)
	}
	if olderThan <= 0 {
		return 0, 0, fmt.Errorf("store: delivery retention %v is not positive", olderThan)
	}
	// The age is measured against the database clock, which also set
	// updated_at.
	err = s.pool.QueryRow(ctx, deleteFinalDeliveries, olderThan.Seconds(), limit).Scan(&deliveries, &attempts)
	return deliveries, attempts, mapErr(err, "webhook deliveries")
}
