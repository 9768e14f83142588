-- +goose NO TRANSACTION

-- webhook_deliveries_status_idx (status, updated_at) took an entry for
-- every delivery and another at every attempt recorded (updated_at moves,
-- so no update of a delivery is HOT). What read it: the pending backlog
-- (webhook_deliveries_pending_idx serves it), retention of ended
-- deliveries (webhook_deliveries_final_idx) and the operator's list and
-- replay of failed deliveries, which this partial index serves: it holds
-- the parked and disabled deliveries only, in the order they are listed.
-- Built and dropped without blocking writes (see 00007 for a build that
-- failed half-way).

-- +goose Up
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_failed_idx ON webhook_deliveries (outbox_id, id)
    WHERE status IN ('parked', 'disabled');
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_status_idx;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_status_idx ON webhook_deliveries (status, updated_at);
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_failed_idx;
