-- +goose Up

-- Offline sync hands out cursors that are positions in change_seq. A pull
-- may only move its cursor to a position below which nothing can still
-- commit. A sequence value is handed out when a row is written, not when its
-- transaction commits, so the pull waits for the writers that were in
-- progress when it read the sequence. To be seen, every writer takes a
-- shared, transaction-scoped advisory lock (key 1128810323, 1) before it
-- takes a value: pg_locks then lists exactly the transactions of this
-- database that may still commit a value, and shared holders never wait for
-- each other. The values come from this trigger (not a column DEFAULT,
-- which runs before any trigger), so no writer can skip the lock.
-- +goose StatementBegin
CREATE FUNCTION stamp_change_seq() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(1128810323, 1);
    NEW.change_seq := nextval('change_seq');
    RETURN NEW;
END
$$;
-- +goose StatementEnd

ALTER TABLE schools ALTER COLUMN change_seq DROP DEFAULT;
ALTER TABLE swipes ALTER COLUMN change_seq DROP DEFAULT;
ALTER TABLE feedback ALTER COLUMN change_seq DROP DEFAULT;
ALTER TABLE learning_state ALTER COLUMN change_seq DROP DEFAULT;

CREATE TRIGGER schools_change_seq BEFORE INSERT OR UPDATE ON schools
    FOR EACH ROW EXECUTE FUNCTION stamp_change_seq();
CREATE TRIGGER swipes_change_seq BEFORE INSERT OR UPDATE ON swipes
    FOR EACH ROW EXECUTE FUNCTION stamp_change_seq();
CREATE TRIGGER feedback_change_seq BEFORE INSERT OR UPDATE ON feedback
    FOR EACH ROW EXECUTE FUNCTION stamp_change_seq();
CREATE TRIGGER learning_state_change_seq BEFORE INSERT OR UPDATE ON learning_state
    FOR EACH ROW EXECUTE FUNCTION stamp_change_seq();

-- Server-side secrets the API replicas share, made on first use (the sync
-- cursor's signing key). Nothing outside the database needs configuring.
CREATE TABLE server_keys (
    name       text PRIMARY KEY,
    secret     bytea NOT NULL CHECK (length(secret) >= 32),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE server_keys;
DROP TRIGGER learning_state_change_seq ON learning_state;
DROP TRIGGER feedback_change_seq ON feedback;
DROP TRIGGER swipes_change_seq ON swipes;
DROP TRIGGER schools_change_seq ON schools;
ALTER TABLE learning_state ALTER COLUMN change_seq SET DEFAULT nextval('change_seq');
ALTER TABLE feedback ALTER COLUMN change_seq SET DEFAULT nextval('change_seq');
ALTER TABLE swipes ALTER COLUMN change_seq SET DEFAULT nextval('change_seq');
ALTER TABLE schools ALTER COLUMN change_seq SET DEFAULT nextval('change_seq');
DROP FUNCTION stamp_change_seq();
