-- A learned state no longer takes a change_seq: a pull sends the student's
-- current learning state whatever the cursor, and nothing reads
-- learning_state.change_seq. The trigger that stamped it ran on every
-- fold's save: a PL/pgSQL call, the watermark's shared advisory lock and a
-- nextval, for a value no one read. Builds from before this change do not
-- write the column either (the trigger did). Each statement waits at most
-- 5 s for the table's lock (see 00006).

-- +goose Up
SET LOCAL lock_timeout = '5s';
DROP TRIGGER learning_state_change_seq ON learning_state;
ALTER TABLE learning_state DROP COLUMN change_seq;

-- +goose Down
SET LOCAL lock_timeout = '5s';
ALTER TABLE learning_state ADD COLUMN change_seq bigint;
UPDATE learning_state SET change_seq = nextval('change_seq');
ALTER TABLE learning_state ALTER COLUMN change_seq SET NOT NULL;
CREATE TRIGGER learning_state_change_seq BEFORE INSERT OR UPDATE ON learning_state
    FOR EACH ROW EXECUTE FUNCTION stamp_change_seq();
