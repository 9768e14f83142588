package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/collegematch/matching/internal/domain"
)

// learnerState reads a student as the learner and the feed see them, in one
// statement and so in one snapshot: the profile and version, the category
// preferences, the learned state and the first page ($2) of the events
// recorded after the last one folded in. The events are read through the
// (student_id, change_seq) indexes: a student's events take their ids and change_seq under the
// student's lock, in the same order, so "after the last folded" is
// change_seq above last_seq; the id bound keeps out a row whose change_seq
// moved because it was updated.
const learnerStateQuery = `
SELECT ` + studentColumns + `, version,
	l.l_model, l.l_weights, coalesce(l.l_version, 0), coalesce(l.l_swipe, 0), coalesce(l.l_feedback, 0),
	coalesce(l.l_seq, 0), coalesce(l.l_swiped, '\x'),
	(SELECT coalesce(json_agg(json_build_object('category_id', cp.category_id, 'direction', cp.direction,
		'created_at', cp.created_at, 'updated_at', cp.updated_at) ORDER BY cp.category_id), '[]')
	 FROM category_preferences cp WHERE cp.student_id = students.id),
	(SELECT coalesce(json_agg(json_build_object('s', e.sid, 'f', e.fid, 'q', e.seq, 'c', e.school_id,
		'd', e.direction, 'i', e.interaction_type, 'r', e.reason, 't', e.created_at) ORDER BY e.seq), '[]')
	 FROM (
		SELECT * FROM (
			(SELECT id AS sid, 0::bigint AS fid, change_seq AS seq, school_id, direction, interaction_type,
				''::text AS reason, created_at
			FROM swipes WHERE student_id = students.id AND change_seq > coalesce(l.l_seq, 0)
				AND id > coalesce(l.l_swipe, 0)
			ORDER BY change_seq LIMIT $2)
			UNION ALL
			(SELECT 0, id, change_seq, school_id, '', '', reason, created_at
			FROM feedback WHERE student_id = students.id AND change_seq > coalesce(l.l_seq, 0)
				AND id > coalesce(l.l_feedback, 0)
			ORDER BY change_seq LIMIT $2)
		) u ORDER BY seq LIMIT $2
	 ) e)
FROM students LEFT JOIN LATERAL (
	SELECT ` + storedModel + ` AS l_model, weights AS l_weights, version AS l_version, last_swipe_id AS l_swipe,
		last_feedback_id AS l_feedback, last_seq AS l_seq, swiped AS l_swiped
	FROM learning_state WHERE learning_state.student_id = students.id
) l ON true
WHERE `

// learnerState reads one student ($1).
const learnerState = learnerStateQuery + `students.id = $1`

// learnerStates reads several students ($1, an array of ids) in one
// statement, each with at most $2 events: a drain's batch (LearnerStates).
const learnerStates = learnerStateQuery + `students.id = ANY($1::uuid[])`

// storedModel is a learned state's model as stored (match.DecodeModel
// reads both forms): model, JSON, when a build from before the binary form
// saved the state last (so it is the newer one), model_bin otherwise. A
// save writes model_bin and sets model to NULL (migration 00008).
const storedModel = `coalesce(convert_to(model::text, 'UTF8'), model_bin)`

// learnerEvents reads the next page of a student's events not folded in:
// change_seq above $2 (the last one read), ids above the learned state's
// ($3 swipes, $4 feedback), at most $5, in change_seq order. change_seq
// comes from one sequence for both tables, so it orders and pages them
// together exactly.
const learnerEvents = `
SELECT * FROM (
	(SELECT id AS sid, 0::bigint AS fid, change_seq AS seq, school_id::text, direction, interaction_type,
		''::text AS reason, created_at
	FROM swipes WHERE student_id = $1 AND change_seq > $2 AND id > $3
	ORDER BY change_seq LIMIT $5)
	UNION ALL
	(SELECT 0, id, change_seq, school_id::text, '', '', reason, created_at
	FROM feedback WHERE student_id = $1 AND change_seq > $2 AND id > $4
	ORDER BY change_seq LIMIT $5)
) e ORDER BY seq LIMIT $5`

// learnerEventsPage is how many events not yet folded in one statement
// reads at most (LearnerState): a backlog of any size is read in pages of
// this many rows, so no statement's work grows with it.
const learnerEventsPage = 2000

// LearnerState loads a student as the learner and the feed see them (see
// learnerState). An unknown id is INVALID_STUDENT_ID; an erased student is
// returned, with DeletedAt set, for the caller to refuse.
//
// The events not yet folded in are read in pages of learnerEventsPage. A
// student with fewer is read in one statement. A longer backlog is read
// again in a read-only repeatable-read transaction, the state and first
// page and then page after page, so every page comes from the one
// snapshot and the events are exactly those one statement would read.
func (s *Store) LearnerState(ctx context.Context, id string) (domain.LearnerState, error) {
	return s.learnerState(ctx, id, learnerEventsPage)
}

// learnerState is LearnerState with pages of page events.
func (s *Store) learnerState(ctx context.Context, id string, page int) (domain.LearnerState, error) {
	page = max(page, 1)
	st, err := readLearnerState(ctx, s.pool, id, page)
	if err != nil || len(st.New) < page {
		return st, err
	}
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error {
			var err error
			if st, err = readLearnerState(ctx, tx, id, page); err != nil {
				return err
			}
			for n := len(st.New); n == page; {
				rows, err := tx.Query(ctx, learnerEvents, id, st.New[len(st.New)-1].Seq, st.LastSwipeID, st.LastFeedbackID, page)
				if err != nil {
					return mapErr(err, "student events")
				}
				more, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.LearnEvent, error) {
					var e domain.LearnEvent
					err := r.Scan(&e.SwipeID, &e.FeedbackID, &e.Seq, &e.SchoolID, &e.Direction, &e.Interaction, &e.Reason, &e.CreatedAt)
					return e, err
				})
				if err != nil {
					return mapErr(err, "student events")
				}
				st.New, n = append(st.New, more...), len(more)
			}
			return nil
		})
	if err != nil {
		var de *domain.Error
		if errors.As(err, &de) {
			return domain.LearnerState{}, err
		}
		return domain.LearnerState{}, mapErr(err, "student")
	}
	return st, nil
}

// readLearnerState runs learnerState with the first page of events.
func readLearnerState(ctx context.Context, q querier, id string, page int) (domain.LearnerState, error) {
	st, err := scanLearnerState(q.QueryRow(ctx, learnerState, id, page))
	if errors.Is(err, pgx.ErrNoRows) {
		return st, domain.StudentNotFound(id)
	}
	return st, err
}

// LearnerStates reads the students ids as LearnerState does, in one
// statement, each with at most page of the events not folded in (a
// student with page of them may have more: folding them moves the cursors,
// and the next read goes on from there). Unknown ids are left out; erased
// students come back with DeletedAt set.
func (s *Store) LearnerStates(ctx context.Context, ids []string, page int) ([]domain.LearnerState, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, learnerStates, ids, max(page, 1))
	if err != nil {
		return nil, mapErr(err, "students")
	}
	defer rows.Close()
	out := make([]domain.LearnerState, 0, len(ids))
	for rows.Next() {
		st, err := scanLearnerState(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err, "students")
	}
	return out, nil
}

// scanLearnerState reads one row of learnerStateQuery.
func scanLearnerState(row pgx.Row) (domain.LearnerState, error) {
	var (
		st      domain.LearnerState
		weights []byte
		swiped  []byte
		cats    []byte
		events  []byte
	)
	student, err := scanStudent(rowWithExtras{row, []any{&st.Version,
		&st.Model, &weights, &st.LearningVersion, &st.LastSwipeID, &st.LastFeedbackID, &st.LastSeq, &swiped,
		&cats, &events}})
	if errors.Is(err, pgx.ErrNoRows) {
		return st, err
	}
	if err != nil {
		return st, mapErr(err, "student")
	}
	st.Student = student
	id := student.ID
	if weights != nil {
		if st.Weights, err = numericWeights(weights); err != nil {
			return st, fmt.Errorf("student %s learning_state.weights: %w", id, err)
		}
	}
	if st.Swiped, err = decodeSwiped(swiped); err != nil {
		return st, fmt.Errorf("student %s learning_state.swiped: %w", id, err)
	}
	if err := json.Unmarshal(cats, &st.Categories); err != nil {
		return st, fmt.Errorf("student %s category preferences: %w", id, err)
	}
	if st.New, err = decodeEvents(events); err != nil {
		return st, fmt.Errorf("student %s events: %w", id, err)
	}
	return st, nil
}

// eventJSON is a LearnEvent as learnerState aggregates it.
type eventJSON struct {
	S int64     `json:"s"`
	F int64     `json:"f"`
	Q int64     `json:"q"`
	C string    `json:"c"`
	D string    `json:"d"`
	I string    `json:"i"`
	R string    `json:"r"`
	T time.Time `json:"t"`
}

func decodeEvents(b []byte) ([]domain.LearnEvent, error) {
	var raw []eventJSON
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	out := make([]domain.LearnEvent, len(raw))
	for i, e := range raw {
		out[i] = domain.LearnEvent{SwipeID: e.S, FeedbackID: e.F, Seq: e.Q, SchoolID: e.C, Direction: e.D,
			Interaction: e.I, Reason: e.R, CreatedAt: e.T}
	}
	return out, nil
}

// decodeSwiped reads learning_state.swiped: 16-byte UUIDs, sorted.
func decodeSwiped(b []byte) ([]string, error) {
	if len(b)%16 != 0 {
		return nil, fmt.Errorf("%d bytes is not a whole number of UUIDs", len(b))
	}
	out := make([]string, 0, len(b)/16)
	for i := 0; i < len(b); i += 16 {
		out = append(out, uuid.UUID(b[i:i+16]).String())
	}
	return out, nil
}

// encodeSwiped writes swiped (UUIDs) as learning_state.swiped, sorted and
// without duplicates.
func encodeSwiped(ids []string) ([]byte, error) {
	us := make([]uuid.UUID, 0, len(ids))
	for _, id := range ids {
		u, err := uuid.Parse(id)
		if err != nil {
			return nil, fmt.Errorf("swiped school %q: %w", id, err)
		}
		us = append(us, u)
	}
	slices.SortFunc(us, func(a, b uuid.UUID) int { return strings.Compare(string(a[:]), string(b[:])) })
	us = slices.Compact(us)
	out := make([]byte, 0, 16*len(us))
	for _, u := range us {
		out = append(out, u[:]...)
	}
	return out, nil
}

// saveLearning stores a fold's result when learning_state is still at the
// version the fold started from ($8; 0 when there was none), and only for
// a student who is not erased. No row comes back when another fold got
// there first, or the student is gone.
//
// A state that exists is updated in place (upd; one at version 0, the
// column's default, is one written by hand): an erasure deletes the
// state under the student's lock, and an update either comes first (the
// erasure then deletes what it wrote) or finds the row gone. So the
// student's row is neither read nor locked. The first state (ins) is
// inserted only for a student who is not erased, whose row is locked FOR
// KEY SHARE: swipes (NO KEY UPDATE) never wait for it, an erasure (FOR
// UPDATE) does, so an erased student never gets a learned state back.
//
// A fold that read one life of a student must not store into the next
// (an erased student onboarding again under the same id; versions start
// again at 1). The first state is inserted only when the student's
// created_at is the one the fold read ($9; onboarding again resets it). An
// update never moves the cursors ($4, $5) back: every fold reads on from
// the stored ones, and a state of the new life has folded swipes or
// feedback with later ids than any of the old.
const saveLearning = `
WITH live AS (
	SELECT id FROM students WHERE $8::bigint = 0 AND id = $1 AND deleted_at IS NULL AND created_at = $9
	FOR KEY SHARE
), upd AS (
	UPDATE learning_state SET model = NULL, model_bin = $2, weights = $3, last_swipe_id = $4, last_feedback_id = $5,
		last_seq = $6, swiped = $7, version = version + 1, updated_at = now()
	WHERE student_id = $1 AND version = $8 AND last_swipe_id <= $4 AND last_feedback_id <= $5
	RETURNING version
), ins AS (
	INSERT INTO learning_state (student_id, model_bin, weights, last_swipe_id, last_feedback_id, last_seq, swiped, version)
	SELECT live.id, $2, $3, $4, $5, $6, $7, 1 FROM live
	ON CONFLICT (student_id) DO NOTHING
	RETURNING version
)
SELECT version FROM upd UNION ALL SELECT version FROM ins`

// SaveLearning stores a fold's result, optimistically: only when the
// student's learned state is still at version from (0: none yet) and the
// student is not erased. saved is false, and nothing changed, otherwise;
// the caller reads the state again and folds what is new.
func (s *Store) SaveLearning(ctx context.Context, studentID string, from int64, up domain.LearningUpdate) (version int64, saved bool, err error) {
	weights, err := json.Marshal(up.Weights)
	if err != nil {
		return 0, false, err
	}
	swiped, err := encodeSwiped(up.Swiped)
	if err != nil {
		return 0, false, err
	}
	if from == 0 && up.StudentCreatedAt.IsZero() {
		return 0, false, errors.New("store: a first learned state needs the created_at of the student the fold read")
	}
	err = s.pool.QueryRow(ctx, saveLearning, studentID, up.Model, string(weights), up.LastSwipeID,
		up.LastFeedbackID, up.LastSeq, swiped, from, up.StudentCreatedAt).Scan(&version)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, mapErr(err, "learning state")
	}
	return version, true, nil
}

// saveLearnings is saveLearning for several students at once (no id
// twice): one row per input, each stored on the same conditions as
// saveLearning's, and the students stored come back with their new
// versions.
const saveLearnings = `
WITH input AS (
	SELECT * FROM unnest($1::uuid[], $2::bytea[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bytea[],
		$8::bigint[], $9::timestamptz[])
		AS t(student_id, model_bin, weights, last_swipe_id, last_feedback_id, last_seq, swiped, from_version, created_at)
), live AS (
	SELECT s.id FROM students s JOIN input i ON i.student_id = s.id
	WHERE i.from_version = 0 AND s.deleted_at IS NULL AND s.created_at = i.created_at
	FOR KEY SHARE OF s
), upd AS (
	UPDATE learning_state l SET model = NULL, model_bin = i.model_bin, weights = i.weights::jsonb,
		last_swipe_id = i.last_swipe_id, last_feedback_id = i.last_feedback_id, last_seq = i.last_seq,
		swiped = i.swiped, version = l.version + 1, updated_at = now()
	FROM input i
	WHERE l.student_id = i.student_id AND l.version = i.from_version AND l.last_swipe_id <= i.last_swipe_id
		AND l.last_feedback_id <= i.last_feedback_id
	RETURNING l.student_id, l.version
), ins AS (
	INSERT INTO learning_state (student_id, model_bin, weights, last_swipe_id, last_feedback_id, last_seq, swiped, version)
	SELECT i.student_id, i.model_bin, i.weights::jsonb, i.last_swipe_id, i.last_feedback_id, i.last_seq, i.swiped, 1
	FROM input i JOIN live ON live.id = i.student_id
	ON CONFLICT (student_id) DO NOTHING
	RETURNING student_id, version
)
SELECT student_id::text, version FROM upd UNION ALL SELECT student_id::text, version FROM ins`

// SaveLearnings stores several folds' results in one statement, each as
// SaveLearning does (optimistically, from its own version); saved maps the
// students stored to their new versions, and a student left out was not
// stored (another fold got there first, or the student is gone).
func (s *Store) SaveLearnings(ctx context.Context, saves []domain.LearningSave) (saved map[string]int64, err error) {
	saved = make(map[string]int64, len(saves))
	if len(saves) == 0 {
		return saved, nil
	}
	n := len(saves)
	var (
		ids     = make([]string, n)
		models  = make([][]byte, n)
		weights = make([]string, n)
		lastS   = make([]int64, n)
		lastF   = make([]int64, n)
		lastSeq = make([]int64, n)
		swiped  = make([][]byte, n)
		from    = make([]int64, n)
		created = make([]time.Time, n)
		seen    = make(map[string]bool, n)
	)
	for i, sv := range saves {
		up := sv.Update
		if seen[sv.StudentID] {
			return nil, fmt.Errorf("store: student %s saved twice in one batch", sv.StudentID)
		}
		seen[sv.StudentID] = true
		w, err := json.Marshal(up.Weights)
		if err != nil {
			return nil, err
		}
		if swiped[i], err = encodeSwiped(up.Swiped); err != nil {
			return nil, err
		}
		if sv.From == 0 && up.StudentCreatedAt.IsZero() {
			return nil, errors.New("store: a first learned state needs the created_at of the student the fold read")
		}
		ids[i], models[i], weights[i] = sv.StudentID, up.Model, string(w)
		lastS[i], lastF[i], lastSeq[i], from[i], created[i] = up.LastSwipeID, up.LastFeedbackID, up.LastSeq, sv.From, up.StudentCreatedAt
	}
	rows, err := s.pool.Query(ctx, saveLearnings, ids, models, weights, lastS, lastF, lastSeq, swiped, from, created)
	if err != nil {
		return nil, mapErr(err, "learning states")
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var v int64
		if err := rows.Scan(&id, &v); err != nil {
			return nil, mapErr(err, "learning states")
		}
		saved[id] = v
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err, "learning states")
	}
	return saved, nil
}

// learnHistory reads what a full re-fold starts from: of each school, the
// latest counted swipe, the latest of each weak signal and the latest
// feedback of each reason, up to the given ids. So its size is bounded by
// the catalogue, not by the history: nine events per school at most.
const learnHistory = `
SELECT sid, fid, seq, school_id::text, direction, interaction_type, reason, created_at FROM (
	SELECT DISTINCT ON (school_id, interaction_type) id AS sid, 0::bigint AS fid, change_seq AS seq, school_id,
		direction, interaction_type, ''::text AS reason, created_at
	FROM swipes WHERE student_id = $1 AND id <= $2
	ORDER BY school_id, interaction_type, id DESC
) s
UNION ALL
SELECT * FROM (
	SELECT DISTINCT ON (school_id, reason) 0::bigint, id, change_seq, school_id::text, '', '', reason, created_at
	FROM feedback WHERE student_id = $1 AND id <= $3
	ORDER BY school_id, reason, id DESC
) f
ORDER BY 3`

// LearnHistory reads the events a full re-fold of a student folds, up to
// swipe lastSwipe and feedback lastFeedback, in recording order: of each
// school the latest counted swipe, the latest of each weak signal and the
// latest feedback of each reason (see match.Fold).
func (s *Store) LearnHistory(ctx context.Context, studentID string, lastSwipe, lastFeedback int64) ([]domain.LearnEvent, error) {
	rows, err := s.pool.Query(ctx, learnHistory, studentID, lastSwipe, lastFeedback)
	if err != nil {
		return nil, mapErr(err, "learning history")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.LearnEvent, error) {
		var e domain.LearnEvent
		err := r.Scan(&e.SwipeID, &e.FeedbackID, &e.Seq, &e.SchoolID, &e.Direction, &e.Interaction, &e.Reason, &e.CreatedAt)
		return e, err
	})
	return out, mapErr(err, "learning history")
}
