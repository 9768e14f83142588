-- +goose Up

-- Erasure is final (store.DeleteStudent). What is kept of an erased
-- student's swipes are anonymous statistics in a table of their own: no
-- student, no client id, no row id or time the service ever sent anywhere
-- (a webhook carries the swipe's id and its time to the millisecond), only
-- the school, what was done, and the day it happened (UTC). Rows are
-- written in random order, so their ids say nothing of the order either.
CREATE TABLE anonymous_swipes (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    school_id        uuid NOT NULL REFERENCES schools (id),
    direction        text NOT NULL CHECK (direction IN ('left', 'right')),
    interaction_type text NOT NULL CHECK (interaction_type IN ('swipe', 'tap', 'detail_view', 'save')),
    counted          boolean NOT NULL,
    is_probe         boolean NOT NULL,
    trigger_feedback boolean NOT NULL,
    updated_weights  boolean NOT NULL,
    time_spent       double precision,
    occurred_on      date NOT NULL
);

-- Export and erasure find a student's events by their column (indexed in
-- 00007), not by searching every payload's text. Rows an older build wrote
-- without the column get it from their payload. Row locks only: swipes
-- keep inserting their events meanwhile.
UPDATE outbox SET student_id = (payload->>'student_id')::uuid
WHERE student_id IS NULL
    AND payload->>'student_id' ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';

-- Students erased before this migration: what their erasure kept is made
-- final as DeleteStudent now does. (A student who onboarded again since
-- has deleted_at cleared and cannot be told apart here.)
DELETE FROM webhook_attempts WHERE delivery_id IN (
    SELECT d.id FROM webhook_deliveries d
    JOIN outbox o ON o.id = d.outbox_id JOIN students s ON s.id = o.student_id
    WHERE s.deleted_at IS NOT NULL);
DELETE FROM webhook_deliveries WHERE outbox_id IN (
    SELECT o.id FROM outbox o JOIN students s ON s.id = o.student_id WHERE s.deleted_at IS NOT NULL);
DELETE FROM outbox WHERE student_id IN (SELECT id FROM students WHERE deleted_at IS NOT NULL);
DELETE FROM feedback WHERE student_id IN (SELECT id FROM students WHERE deleted_at IS NOT NULL);
DELETE FROM category_preferences WHERE student_id IN (SELECT id FROM students WHERE deleted_at IS NOT NULL);
DELETE FROM learning_state WHERE student_id IN (SELECT id FROM students WHERE deleted_at IS NOT NULL);
WITH gone AS (
    DELETE FROM swipes WHERE student_id IN (SELECT id FROM students WHERE deleted_at IS NOT NULL)
    RETURNING school_id, direction, interaction_type, counted, is_probe, trigger_feedback, updated_weights,
        time_spent, occurred_at
)
INSERT INTO anonymous_swipes (school_id, direction, interaction_type, counted, is_probe, trigger_feedback,
    updated_weights, time_spent, occurred_on)
SELECT school_id, direction, interaction_type, counted, is_probe, trigger_feedback, updated_weights, time_spent,
    (occurred_at AT TIME ZONE 'UTC')::date
FROM gone ORDER BY random();
UPDATE students SET swipe_count = 0 WHERE deleted_at IS NOT NULL AND swipe_count <> 0;

-- Retention (the worker's retention loop and the relay's pruning): a
-- delivery record in a final state is kept for WEBHOOK_RETENTION, longer
-- than its event (7 days once no delivery that may still be sent refers to
-- it), so the delivery no longer holds its event's row in place. Whoever
-- reads a delivery's event checks that it is there.
--
-- Dropping the foreign key locks webhook_deliveries and outbox (every
-- swipe writes an event) until the migration commits, so it comes last,
-- and it waits at most 5 s for the lock (a migration that fails here is
-- run again; one that queued behind a long transaction would stop every
-- swipe behind it).
SET LOCAL lock_timeout = '5s';
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_outbox_id_fkey;

-- +goose Down
DELETE FROM webhook_attempts WHERE delivery_id IN (
    SELECT d.id FROM webhook_deliveries d WHERE NOT EXISTS (SELECT 1 FROM outbox o WHERE o.id = d.outbox_id));
DELETE FROM webhook_deliveries d WHERE NOT EXISTS (SELECT 1 FROM outbox o WHERE o.id = d.outbox_id);
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_outbox_id_fkey
    FOREIGN KEY (outbox_id) REFERENCES outbox (id);
DROP TABLE anonymous_swipes;
