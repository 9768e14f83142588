-- An erasure now deletes the student's row too (no row of any table holds
-- an erased student's id). Rows that earlier erasures kept (personal
-- fields empty, deleted_at set) are deleted the same way; earlier erasures
-- already deleted or anonymised everything that referred to them, and the
-- statements below make sure before the row goes.

-- +goose Up
DELETE FROM category_preferences WHERE student_id IN (SELECT id FROM students WHERE deleted_at IS NOT NULL);
DELETE FROM learning_state WHERE student_id IN (SELECT id FROM students WHERE deleted_at IS NOT NULL);
DELETE FROM feedback WHERE student_id IN (SELECT id FROM students WHERE deleted_at IS NOT NULL);
DELETE FROM swipes WHERE student_id IN (SELECT id FROM students WHERE deleted_at IS NOT NULL);
DELETE FROM students WHERE deleted_at IS NOT NULL;

-- +goose Down
SELECT 1;
