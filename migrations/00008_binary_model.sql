-- The learned model is stored in its binary form (match.Model.MarshalBinary,
-- about 1.1 kB): every fold reads and writes it, and the JSON form (2.7 kB)
-- was past the 2 kB at which PostgreSQL compresses a value on every write
-- and decompresses it on every read. The column keeps the models already
-- stored as the bytes of their JSON text; the learner reads both forms and
-- writes the binary one at the student's next fold.

-- +goose Up
ALTER TABLE learning_state ALTER COLUMN model TYPE bytea USING convert_to(model::text, 'UTF8');

-- +goose Down
-- A binary model has no JSON form in SQL: those states are dropped, and
-- the learner folds the student's whole history again at their next
-- swipe.
DELETE FROM learning_state WHERE get_byte(model, 0) <> ascii('{');
ALTER TABLE learning_state ALTER COLUMN model TYPE jsonb USING convert_from(model, 'UTF8')::jsonb;
