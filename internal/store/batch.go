package store

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/collegematch/matching/internal/domain"
)

// lockStudentForBatch locks the student's row for the batch's transaction
// (see the note at the top of swipes.go) and says whether it is live. It is
// a statement of its own, before recordBatch, so that recordBatch's snapshot
// sees every write of the student committed before the lock.
const lockStudentForBatch = `SELECT deleted_at IS NULL FROM students WHERE id = $1 FOR NO KEY UPDATE`

// recordBatch stores a batch of changes of one student (first occurrences
// of their client ids, in the order given): the changes whose id the
// student has not used, that are valid and name a served school, are
// inserted in order (a swipe's count once recorded taken from the running
// sum), the student's count and version move once, and every counted
// swipe's swipe.recorded event is written. Each input row comes back with
// its outcome: accepted, duplicate (the id stored with the same content),
// conflict (the id stored with other content), problem, or school (not
// served).
const recordBatch = `
WITH inp AS (
	SELECT * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::float8[], $8::text[],
		$9::text[], $10::timestamptz[], $11::bool[], $12::text[], $13::bool[], $14::bool[])
		WITH ORDINALITY AS t (client_id, typ, school, direction, interaction, time_spent, reason, comment,
			occurred_at, updated_weights, problem, is_probe, trigger_feedback, ord)
), live AS (
	SELECT swipe_count, version FROM students WHERE id = $1 AND deleted_at IS NULL
), prior AS (
	SELECT client_id, 'swipe' AS typ, school_id::text AS school, direction || '/' || interaction_type AS detail
	FROM swipes WHERE student_id = $1 AND client_id = ANY($2)
	UNION ALL
	SELECT client_id, 'feedback', school_id::text, reason FROM feedback WHERE student_id = $1 AND client_id = ANY($2)
), seen AS (
	SELECT DISTINCT ON (client_id) * FROM prior ORDER BY client_id, typ DESC
), fresh AS (
	SELECT i.* FROM inp i
	WHERE i.problem = '' AND EXISTS (SELECT 1 FROM live)
		AND NOT EXISTS (SELECT 1 FROM seen s WHERE s.client_id = i.client_id)
		AND EXISTS (SELECT 1 FROM schools sc WHERE sc.id = i.school::uuid AND sc.active)
), sw AS (
	INSERT INTO swipes (student_id, school_id, direction, interaction_type, counted, is_probe, time_spent, client_id,
		occurred_at, swipe_count, trigger_feedback, updated_weights)
	SELECT $1, school::uuid, direction, interaction, interaction = 'swipe', is_probe, time_spent, client_id,
		coalesce(occurred_at, now()),
		(SELECT swipe_count FROM live) + sum(CASE WHEN interaction = 'swipe' THEN 1 ELSE 0 END) OVER (ORDER BY ord),
		trigger_feedback, updated_weights
	FROM fresh WHERE typ = 'swipe' ORDER BY ord
	RETURNING id, client_id, created_at, swipe_count, counted, school_id, direction, occurred_at
), fb AS (
	INSERT INTO feedback (student_id, school_id, reason, comment, client_id, occurred_at)
	SELECT $1, school::uuid, reason, nullif(comment, ''), client_id, coalesce(occurred_at, now())
	FROM fresh WHERE typ = 'feedback' ORDER BY ord
	RETURNING id, client_id
), bump AS (
	UPDATE students SET swipe_count = swipe_count + (SELECT count(*) FROM sw WHERE counted), version = version + 1
	WHERE id = $1 AND EXISTS (SELECT 1 FROM sw)
	RETURNING swipe_count, version
), ev AS (
	INSERT INTO outbox (topic, student_id, payload)
	SELECT '` + TopicSwipeRecorded + `', $1, jsonb_build_object('student_id', $1::text, 'school_id', school_id::text,
		'direction', direction,
		'timestamp', to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'swipe_id', id)
	FROM sw WHERE counted ORDER BY id
	RETURNING id
)
SELECT i.ord,
	CASE WHEN sw.id IS NOT NULL OR fb.id IS NOT NULL THEN 'accepted'
		WHEN s.client_id IS NOT NULL THEN
			CASE WHEN s.typ = i.typ AND s.school = i.school AND s.detail =
				CASE WHEN i.typ = 'swipe' THEN i.direction || '/' || i.interaction ELSE i.reason END
			THEN 'duplicate' ELSE 'conflict' END
		WHEN i.problem <> '' THEN 'problem'
		ELSE 'school' END,
	sw.id, sw.created_at, sw.swipe_count,
	coalesce((SELECT swipe_count FROM bump), (SELECT swipe_count FROM live), 0),
	coalesce((SELECT version FROM bump), (SELECT version FROM live), 0),
	coalesce((SELECT max(id) FROM fb), 0),
	(SELECT count(*) FROM ev)
FROM inp i
LEFT JOIN seen s ON s.client_id = i.client_id
LEFT JOIN sw ON sw.client_id = i.client_id
LEFT JOIN fb ON fb.client_id = i.client_id
ORDER BY i.ord`

// RecordBatch stores a batch of one student's changes (a sync push, the
// swipes carried by a continuous-feed request) in one transaction, sent in
// one round trip: the student's lock, then recordBatch. Changes go in the
// order given (callers sort a push by when its changes happened); each
// client id is stored once per student: an id used before (or earlier in
// the batch) for the same change is a duplicate and changes nothing, an id
// used for another change is rejected. A change whose school is not served
// is rejected alone. An unknown or erased student is INVALID_STUDENT_ID.
func (s *Store) RecordBatch(ctx context.Context, studentID string, changes []domain.Change) (domain.BatchResult, error) {
	out := domain.BatchResult{Outcomes: make([]domain.Outcome, len(changes)), Errors: make([]string, len(changes)),
		Swipes: []domain.RecordedSwipe{}}
	// Only the first change of each client id goes to the database; the
	// others take their outcome from it.
	firstOf := map[string]int{}
	var send []int
	for i, c := range changes {
		if _, seen := firstOf[c.ClientID()]; seen {
			continue
		}
		firstOf[c.ClientID()] = i
		send = append(send, i)
	}
	n := len(send)
	var (
		ids, types, schools, dirs, kinds, reasons, comments, problems = make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		spent            = make([]*float64, n)
		occurred         = make([]*time.Time, n)
		moved, probe, fb = make([]bool, n), make([]bool, n), make([]bool, n)
	)
	for k, i := range send {
		c := changes[i]
		ids[k], types[k], problems[k] = c.ClientID(), c.Type, c.Problem
		var at time.Time
		if c.Type == domain.ChangeFeedback {
			schools[k], reasons[k], comments[k], at = c.Feedback.SchoolID, c.Feedback.Reason, c.Feedback.Comment, c.Feedback.OccurredAt
		} else {
			sw := c.Swipe
			schools[k], dirs[k], kinds[k], spent[k], at = sw.SchoolID, sw.Direction, sw.Interaction, sw.TimeSpent, sw.OccurredAt
			moved[k], probe[k], fb[k] = sw.UpdatedWeights, sw.IsProbe, sw.TriggerFeedback
		}
		if !at.IsZero() {
			occurred[k] = &at
		}
	}
	// A change with a problem is sent as it came, for its outcome, and may
	// carry a NUL (a comment, an unknown field's name), which PostgreSQL
	// text cannot hold: it would fail the whole batch. Valid changes hold
	// none, so dropping them changes nothing that is stored.
	for _, col := range [][]string{ids, types, schools, dirs, kinds, reasons, comments, problems} {
		for k, v := range col {
			col[k] = strings.ReplaceAll(v, "\x00", "")
		}
	}

	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(lockStudentForBatch, studentID)
	b.Queue(recordBatch, studentID, ids, types, schools, dirs, kinds, spent, reasons, comments, occurred, moved,
		problems, probe, fb)
	b.Queue("COMMIT")
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return out, mapErr(err, "batch")
	}
	var live bool
	err := br.QueryRow().Scan(&live)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !live) {
		return out, domain.StudentNotFound(studentID)
	}
	if err != nil {
		return out, mapErr(err, "batch")
	}
	rows, err := br.Query()
	if err != nil {
		return out, mapErr(err, "batch")
	}
	byIndex := make(map[int]domain.RecordedSwipe)
	for rows.Next() {
		var (
			ord        int
			outcome    string
			id         *int64
			createdAt  *time.Time
			count      *int
			events     int
			swipeCount int
			version    int64
			lastFb     int64
		)
		if err := rows.Scan(&ord, &outcome, &id, &createdAt, &count, &swipeCount, &version, &lastFb, &events); err != nil {
			rows.Close()
			return out, mapErr(err, "batch")
		}
		out.SwipeCount, out.Version, out.LastFeedbackID = swipeCount, version, lastFb
		i := send[ord-1]
		switch outcome {
		case "accepted":
			out.Outcomes[i] = domain.Accepted
			if id != nil {
				byIndex[i] = domain.RecordedSwipe{Swipe: changes[i].Swipe, ID: *id, CreatedAt: *createdAt, SwipeCount: *count}
			}
		case "duplicate":
			out.Outcomes[i] = domain.Duplicate
		case "conflict":
			out.Outcomes[i], out.Errors[i] = domain.Rejected, "id was already used for another change; use a new id for a new change"
		case "problem":
			out.Outcomes[i], out.Errors[i] = domain.Rejected, changes[i].Problem
		default:
			out.Outcomes[i], out.Errors[i] = domain.Rejected, "school_id names no school that is served (INVALID_SCHOOL_ID)"
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return out, mapErr(err, "batch")
	}
	if _, err := br.Exec(); err != nil { // COMMIT
		return out, mapErr(err, "batch")
	}
	for i, c := range changes {
		f := firstOf[c.ClientID()]
		if f == i {
			if rec, ok := byIndex[i]; ok {
				rec.Version = out.Version
				out.Swipes = append(out.Swipes, rec)
			}
			continue
		}
		switch {
		case sameChange(c, changes[f]) && out.Outcomes[f] != domain.Rejected:
			out.Outcomes[i] = domain.Duplicate
		case sameChange(c, changes[f]):
			out.Outcomes[i], out.Errors[i] = domain.Rejected, out.Errors[f]
		default:
			out.Outcomes[i], out.Errors[i] = domain.Rejected, "id was already used for another change; use a new id for a new change"
		}
	}
	return out, nil
}

// sameChange reports whether two changes under one id are the same change:
// type, school and direction and interaction, or reason.
func sameChange(a, b domain.Change) bool {
	if a.Type != b.Type {
		return false
	}
	if a.Type == domain.ChangeFeedback {
		return a.Feedback.SchoolID == b.Feedback.SchoolID && a.Feedback.Reason == b.Feedback.Reason
	}
	return a.Swipe.SchoolID == b.Swipe.SchoolID && a.Swipe.Direction == b.Swipe.Direction &&
		a.Swipe.Interaction == b.Swipe.Interaction
}
