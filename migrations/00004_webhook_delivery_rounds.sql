-- +goose Up
-- A delivery's row is written before its first task is queued (by whoever
-- hands the event over), so PostgreSQL, not Redis, knows every delivery
-- owed; the worker's monitor queues again any pending delivery whose task
-- is overdue (lost with a Redis that keeps nothing on disk).
--
-- round_start is the number of attempts made before the current round:
-- 0 until an operator replays the delivery, then its attempts at the
-- replay. attempts - round_start is the attempt count the retry schedule
-- and parking go by, whatever the queue remembers.
ALTER TABLE webhook_deliveries ADD COLUMN round_start integer NOT NULL DEFAULT 0;
-- A replayed delivery still pending gets a full round from here: how many
-- of its attempts came after the replay was not recorded.
UPDATE webhook_deliveries SET round_start = attempts WHERE status = 'pending' AND replays > 0;

-- +goose Down
ALTER TABLE webhook_deliveries DROP COLUMN round_start;
