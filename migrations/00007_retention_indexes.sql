-- +goose NO TRANSACTION

-- The indexes retention, pruning, export and erasure read through, built
-- without blocking writes (CONCURRENTLY cannot run in a transaction; a
-- build that failed half-way leaves an invalid index, which IF NOT EXISTS
-- would keep: drop it and run the migration again).

-- +goose Up
-- Published rows by age, for the pruning.
CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_published_idx ON outbox (published_at) WHERE published_at IS NOT NULL;
-- Ended deliveries by age, for their retention (the states a delivery ends
-- in: succeeded, parked, disabled).
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_final_idx ON webhook_deliveries (updated_at) WHERE status <> 'pending';
-- A student's events, for export and erasure.
CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_student_idx ON outbox (student_id) WHERE student_id IS NOT NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS outbox_student_idx;
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_final_idx;
DROP INDEX CONCURRENTLY IF EXISTS outbox_published_idx;
