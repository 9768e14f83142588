-- +goose Up

-- A swipe is recorded by one statement, which also stores what its answer
-- is made of: the student's counted swipes once it was recorded and the
-- flags the answer carries (is_probe is there already). The answer to a
-- retry with the same client id is derived from the row; nothing is
-- written to it afterwards. The response column stays for the rows
-- recorded before.
ALTER TABLE swipes ADD COLUMN swipe_count integer;
ALTER TABLE swipes ADD COLUMN trigger_feedback boolean NOT NULL DEFAULT false;
ALTER TABLE swipes ADD COLUMN updated_weights boolean NOT NULL DEFAULT false;

-- time_spent comes back as it was sent, to the millisecond (a real turned
-- 4.2 into 4.199999809265137).
ALTER TABLE swipes ALTER COLUMN time_spent TYPE double precision
    USING round(time_spent::numeric, 3)::double precision;

-- Nothing reads swipes by (student_id, created_at); the index only cost
-- every insert. Sync pull reads by (student_id, change_seq).
DROP INDEX swipes_student_created_idx;

-- The learner's state carries the schools the student has a counted swipe
-- on (16-byte UUIDs, sorted), so a fold tells a repeat swipe from a new
-- one, and a feed is rebuilt without reading the history.
ALTER TABLE learning_state ADD COLUMN swiped bytea NOT NULL DEFAULT '\x';
-- last_seq is the change_seq of the last event folded in: a fold reads the
-- events after it through the (student_id, change_seq) indexes.
ALTER TABLE learning_state ADD COLUMN last_seq bigint NOT NULL DEFAULT 0;
UPDATE learning_state l SET last_seq = greatest(
    coalesce((SELECT max(change_seq) FROM swipes WHERE student_id = l.student_id AND id <= l.last_swipe_id), 0),
    coalesce((SELECT max(change_seq) FROM feedback WHERE student_id = l.student_id AND id <= l.last_feedback_id), 0));
UPDATE learning_state l SET swiped = coalesce((
    SELECT string_agg(uuid_send(s.school_id), ''::bytea ORDER BY s.school_id)
    FROM (SELECT DISTINCT school_id FROM swipes
          WHERE student_id = l.student_id AND counted AND id <= l.last_swipe_id) s), '\x');

-- Only events that are published have outbox rows (swipe.recorded): the
-- learner is asked for directly and repaired from the swipes and feedback
-- themselves (the worker's learn sweep). Rows of the topics that no longer
-- exist are published as they are.
UPDATE outbox SET published_at = now() WHERE published_at IS NULL AND topic <> 'swipe.recorded';

-- Where the worker's sweeps have got to: the learn sweep looks at the
-- swipes and feedback recorded after its positions for students whose
-- learned state does not cover them (a learn task lost with Redis).
CREATE TABLE sweep_cursors (
    name        text PRIMARY KEY,
    swipe_id    bigint NOT NULL,
    feedback_id bigint NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE sweep_cursors;
ALTER TABLE learning_state DROP COLUMN last_seq;
ALTER TABLE learning_state DROP COLUMN swiped;
CREATE INDEX swipes_student_created_idx ON swipes (student_id, created_at);
ALTER TABLE swipes ALTER COLUMN time_spent TYPE real;
ALTER TABLE swipes DROP COLUMN updated_weights;
ALTER TABLE swipes DROP COLUMN trigger_feedback;
ALTER TABLE swipes DROP COLUMN swipe_count;
