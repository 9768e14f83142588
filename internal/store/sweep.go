package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/collegematch/matching/internal/domain"
)

// sweepLookBack is how far back, in ids, a sweep that has never run starts.
const sweepLookBack = 100_000

// LearnSweepCursor reads the learn sweep's cursor; a sweep that never ran
// starts sweepLookBack ids before the newest swipe and feedback.
func (s *Store) LearnSweepCursor(ctx context.Context) (domain.SweepCursor, error) {
	const q = `
SELECT swipe_id, feedback_id FROM sweep_cursors WHERE name = 'learn'
UNION ALL
SELECT greatest(coalesce((SELECT max(id) FROM swipes), 0) - $1, 0),
	greatest(coalesce((SELECT max(id) FROM feedback), 0) - $1, 0)
LIMIT 1`
	var c domain.SweepCursor
	err := s.pool.QueryRow(ctx, q, sweepLookBack).Scan(&c.SwipeID, &c.FeedbackID)
	return c, mapErr(err, "sweep cursor")
}

// unlearned finds, among the swipes and feedback after the cursor recorded
// more than $3 seconds ago, the students whose learned state has not
// folded them in, erased students left out.
const unlearned = `
WITH s AS (
	SELECT student_id, max(id) AS last FROM swipes
	WHERE id > $1 AND created_at < now() - make_interval(secs => $3) AND student_id IS NOT NULL
	GROUP BY student_id
), f AS (
	SELECT student_id, max(id) AS last FROM feedback
	WHERE id > $2 AND created_at < now() - make_interval(secs => $3) AND student_id IS NOT NULL
	GROUP BY student_id
), debts AS (
	SELECT coalesce(s.student_id, f.student_id) AS student_id, coalesce(s.last, 0) AS swipe, coalesce(f.last, 0) AS feedback
	FROM s FULL JOIN f ON f.student_id = s.student_id
)
SELECT d.student_id::text, st.version,
	CASE WHEN coalesce(l.last_feedback_id, 0) < d.feedback THEN d.feedback ELSE 0 END
FROM debts d
JOIN students st ON st.id = d.student_id AND st.deleted_at IS NULL
LEFT JOIN learning_state l ON l.student_id = d.student_id
WHERE coalesce(l.last_swipe_id, 0) < d.swipe OR coalesce(l.last_feedback_id, 0) < d.feedback
ORDER BY d.student_id
LIMIT $4`

// UnlearnedStudents lists up to limit students with swipes or feedback
// after cur, recorded more than grace ago, that their learned state does
// not cover.
func (s *Store) UnlearnedStudents(ctx context.Context, cur domain.SweepCursor, grace time.Duration, limit int) ([]domain.Unlearned, error) {
	rows, err := s.pool.Query(ctx, unlearned, cur.SwipeID, cur.FeedbackID, grace.Seconds(), limit)
	if err != nil {
		return nil, mapErr(err, "unlearned students")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Unlearned, error) {
		var u domain.Unlearned
		err := r.Scan(&u.StudentID, &u.Version, &u.LastFeedbackID)
		return u, err
	})
	return out, mapErr(err, "unlearned students")
}

// advanceSweep moves the learn sweep's cursor past the swipes and feedback
// recorded more than $1 seconds ago (no transaction that could still
// commit one of them is running: statements time out long before) that
// are learned, belong to an erased student, or were recorded more than $4
// seconds ago: it stops below the first event within that hold-back whose
// student's learned state lacks it. A learn task that was queued is not
// yet learned: while it waits, Redis may lose it (a restart without
// persistence), and the sweep must then still find its events.
const advanceSweep = `
WITH cur AS (
	SELECT $2::bigint AS swipe_id, $3::bigint AS feedback_id
), settled AS (
	SELECT coalesce((SELECT max(id) FROM swipes, cur WHERE id > cur.swipe_id
			AND created_at < now() - make_interval(secs => $1)), (SELECT swipe_id FROM cur)) AS swipe_id,
		coalesce((SELECT max(id) FROM feedback, cur WHERE id > cur.feedback_id
			AND created_at < now() - make_interval(secs => $1)), (SELECT feedback_id FROM cur)) AS feedback_id
), owed AS (
	SELECT (SELECT min(s.id) FROM cur, swipes s
			JOIN students st ON st.id = s.student_id AND st.deleted_at IS NULL
			LEFT JOIN learning_state l ON l.student_id = s.student_id
			WHERE s.id > cur.swipe_id AND s.created_at >= now() - make_interval(secs => $4)
				AND coalesce(l.last_swipe_id, 0) < s.id) AS swipe_id,
		(SELECT min(f.id) FROM cur, feedback f
			JOIN students st ON st.id = f.student_id AND st.deleted_at IS NULL
			LEFT JOIN learning_state l ON l.student_id = f.student_id
			WHERE f.id > cur.feedback_id AND f.created_at >= now() - make_interval(secs => $4)
				AND coalesce(l.last_feedback_id, 0) < f.id) AS feedback_id
), next AS (
	SELECT least(settled.swipe_id, owed.swipe_id - 1) AS swipe_id,
		least(settled.feedback_id, owed.feedback_id - 1) AS feedback_id
	FROM settled, owed
)
INSERT INTO sweep_cursors (name, swipe_id, feedback_id) SELECT 'learn', swipe_id, feedback_id FROM next
ON CONFLICT (name) DO UPDATE SET swipe_id = greatest(sweep_cursors.swipe_id, excluded.swipe_id),
	feedback_id = greatest(sweep_cursors.feedback_id, excluded.feedback_id), updated_at = now()
RETURNING swipe_id, feedback_id`

// AdvanceLearnSweep moves the cursor from cur past what was recorded more
// than settled ago and is learned (or older than holdBack, or an erased
// student's), and returns where it is now.
func (s *Store) AdvanceLearnSweep(ctx context.Context, cur domain.SweepCursor, settled, holdBack time.Duration) (domain.SweepCursor, error) {
	var next domain.SweepCursor
	err := s.pool.QueryRow(ctx, advanceSweep, settled.Seconds(), cur.SwipeID, cur.FeedbackID, holdBack.Seconds()).
		Scan(&next.SwipeID, &next.FeedbackID)
	if errors.Is(err, pgx.ErrNoRows) {
		return cur, nil
	}
	return next, mapErr(err, "sweep cursor")
}
