-- The learned model is stored in its binary form (match.Model.MarshalBinary,
-- about 1.1 kB) in a column of its own: every fold reads and writes it, and
-- the JSON form (2.7 kB) was past the 2 kB at which PostgreSQL compresses
-- a value on every write and decompresses it on every read.
--
-- Expand, then contract: builds from before this migration keep reading
-- and writing model (JSON) while a rollout replaces them. A new build
-- writes model_bin and sets model to NULL; it reads model when it is there
-- (a state an older build saved last, so the newer one) and model_bin
-- otherwise. An older build that reads a NULL model starts from the stored
-- weights, as it does for a model of another version, until it is
-- replaced. model is dropped by a later migration, once no older build
-- runs. Both statements change the catalogue only; each waits at most 5 s
-- for the table's lock (see 00006).

-- +goose Up
SET LOCAL lock_timeout = '5s';
ALTER TABLE learning_state ADD COLUMN model_bin bytea;
ALTER TABLE learning_state ALTER COLUMN model DROP NOT NULL;

-- +goose Down
-- A binary model has no JSON form in SQL: those states are dropped, and
-- the learner folds the student's whole history again at their next
-- swipe.
SET LOCAL lock_timeout = '5s';
DELETE FROM learning_state WHERE model IS NULL;
ALTER TABLE learning_state ALTER COLUMN model SET NOT NULL;
ALTER TABLE learning_state DROP COLUMN model_bin;
