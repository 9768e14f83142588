package store

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/collegematch/matching/internal/domain"
)

// Offline sync: POST /m/sync/push stores a batch of changes exactly once per
// (student, change id); POST /m/sync/pull reads what changed between two
// positions of change_seq.

// Change types of a sync push.
const (
	ChangeSwipe    = "swipe"
	ChangeFeedback = "feedback"
)

// SyncChange is one change of a push, validated by the caller. A change
// with Problem set is only looked up: it is a duplicate when its id is
// stored with the same content, and rejected with Problem otherwise.
type SyncChange struct {
	ClientID string // the change id (a lower-case UUID)
	Type     string // ChangeSwipe or ChangeFeedback
	SchoolID string
	// Swipes.
	Direction       string
	InteractionType string
	Counted         bool
	TimeSpent       *float64
	// Feedback.
	Reason  string
	Comment string

	OccurredAt time.Time
	Problem    string // why the change cannot be stored; "" when valid
}

// SyncOutcome is what became of one change.
type SyncOutcome int

// Outcomes of a change.
const (
	SyncAccepted SyncOutcome = iota
	SyncDuplicate
	SyncRejected
)

// SyncResult is what SyncPush did, change by change (in the order given).
type SyncResult struct {
	Outcomes []SyncOutcome
	Errors   []string // the reason of each rejected change, "" for the others
	// SwipeCount and Version are the student's after the push.
	SwipeCount int
	Version    int64
	// Events are the outbox rows written: one per accepted counted swipe
	// (swipe.recorded) and, when anything was accepted, the push's learn
	// event last.
	Events []OutboxRow
}

// SyncEvents makes the outbox events of a push: the swipe.recorded event of
// an accepted counted swipe (from its row id), and the one event that asks
// for the student's new swipes and feedback to be learned.
type SyncEvents struct {
	Swipe func(c SyncChange, swipeID int64) (topic string, payload any)
	Learn func(swipes, feedback int) (topic string, payload any)
	// Respond makes the stored response of an accepted swipe from the
	// student's counted swipes once it is recorded (what POST /swipe
	// answers to a retry of the same id).
	Respond func(c SyncChange, swipeCount int) ([]byte, error)
}

type storedChange struct {
	typ, schoolID, detail string // detail: a swipe's direction and interaction, or a feedback reason
}

func (c SyncChange) key() storedChange {
	if c.Type == ChangeFeedback {
		return storedChange{c.Type, c.SchoolID, c.Reason}
	}
	return storedChange{c.Type, c.SchoolID, c.Direction + "/" + c.InteractionType}
}

// SyncPush stores a push in one transaction under the student's row lock
// (see the note at the top of swipes.go), so concurrent pushes and swipes of
// the student take turns and a change id is stored once: an id the student
// already used for the same change (type, school, direction and interaction
// or reason) is a duplicate and changes nothing, an id used for another
// change is rejected. Valid new changes are inserted in the order given
// (callers sort them by occurred_at); a school that is unknown or no longer
// served rejects its change only. Counted swipes raise the swipe count; any
// stored swipe bumps the student's version.
//
// An unknown or erased student is INVALID_STUDENT_ID.
func (s *Store) SyncPush(ctx context.Context, studentID string, changes []SyncChange, ev SyncEvents) (SyncResult, error) {
	var out SyncResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		out = SyncResult{Outcomes: make([]SyncOutcome, len(changes)), Errors: make([]string, len(changes))}
		if err := lockStudent(ctx, tx, studentID); err != nil {
			return err
		}
		stored, err := storedChanges(ctx, tx, studentID, changes)
		if err != nil {
			return err
		}
		active, err := activeSchools(ctx, tx, changes)
		if err != nil {
			return err
		}
		var count int
		if err := tx.QueryRow(ctx, `SELECT swipe_count FROM students WHERE id = $1`, studentID).Scan(&count); err != nil {
			return err
		}
		var swipes, feedback, counted int
		for i, c := range changes {
			if first, ok := stored[c.ClientID]; ok {
				if first == c.key() {
					out.Outcomes[i] = SyncDuplicate
				} else {
					out.Outcomes[i], out.Errors[i] = SyncRejected, "id was already used for another change; use a new id for a new change"
				}
				continue
			}
			if c.Problem != "" {
				out.Outcomes[i], out.Errors[i] = SyncRejected, c.Problem
				continue
			}
			if !active[c.SchoolID] {
				out.Outcomes[i], out.Errors[i] = SyncRejected, "school_id names no school that is served (INVALID_SCHOOL_ID)"
				continue
			}
			stored[c.ClientID] = c.key()
			if c.Type == ChangeFeedback {
				const insert = `
INSERT INTO feedback (student_id, school_id, reason, comment, client_id, occurred_at)
VALUES ($1, $2, $3, nullif($4, ''), $5, $6)`
				if _, err := tx.Exec(ctx, insert, studentID, c.SchoolID, c.Reason, c.Comment, c.ClientID, c.OccurredAt); err != nil {
					return err
				}
				feedback++
				continue
			}
			if c.Counted {
				count++
				counted++
			}
			resp, err := ev.Respond(c, count)
			if err != nil {
				return err
			}
			const insert = `
INSERT INTO swipes (student_id, school_id, direction, interaction_type, counted, time_spent, client_id, occurred_at, response)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb)
RETURNING id`
			var id int64
			if err := tx.QueryRow(ctx, insert, studentID, c.SchoolID, c.Direction, c.InteractionType, c.Counted,
				c.TimeSpent, c.ClientID, c.OccurredAt, string(resp)).Scan(&id); err != nil {
				return err
			}
			swipes++
			if c.Counted {
				topic, payload := ev.Swipe(c, id)
				oid, err := InsertOutbox(ctx, tx, topic, studentID, payload)
				if err != nil {
					return err
				}
				out.Events = append(out.Events, OutboxRow{ID: oid, Topic: topic, StudentID: studentID, Payload: mustJSON(payload)})
			}
		}
		const read = `SELECT swipe_count, version FROM students WHERE id = $1`
		if swipes > 0 {
			const bump = `UPDATE students SET swipe_count = swipe_count + $2, version = version + 1 WHERE id = $1 RETURNING swipe_count, version`
			if err := tx.QueryRow(ctx, bump, studentID, counted).Scan(&out.SwipeCount, &out.Version); err != nil {
				return err
			}
		} else if err := tx.QueryRow(ctx, read, studentID).Scan(&out.SwipeCount, &out.Version); err != nil {
			return err
		}
		if swipes+feedback > 0 {
			topic, payload := ev.Learn(swipes, feedback)
			oid, err := InsertOutbox(ctx, tx, topic, studentID, payload)
			if err != nil {
				return err
			}
			out.Events = append(out.Events, OutboxRow{ID: oid, Topic: topic, StudentID: studentID, Payload: mustJSON(payload)})
		}
		return nil
	})
	if err != nil {
		return SyncResult{}, domainErr(err, "sync push")
	}
	return out, nil
}

// storedChanges finds the changes the student stored under the ids of changes.
func storedChanges(ctx context.Context, tx pgx.Tx, studentID string, changes []SyncChange) (map[string]storedChange, error) {
	ids := make([]string, 0, len(changes))
	for _, c := range changes {
		ids = append(ids, c.ClientID)
	}
	const q = `
SELECT client_id, 'swipe', school_id::text, direction || '/' || interaction_type FROM swipes
WHERE student_id = $1 AND client_id = ANY($2)
UNION ALL
SELECT client_id, 'feedback', school_id::text, reason FROM feedback
WHERE student_id = $1 AND client_id = ANY($2)`
	rows, err := tx.Query(ctx, q, studentID, ids)
	if err != nil {
		return nil, err
	}
	out := map[string]storedChange{}
	var (
		id string
		c  storedChange
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &c.typ, &c.schoolID, &c.detail}, func() error {
		if _, seen := out[id]; !seen {
			out[id] = c
		}
		return nil
	})
	return out, err
}

// activeSchools tells which schools named by changes are served.
func activeSchools(ctx context.Context, tx pgx.Tx, changes []SyncChange) (map[string]bool, error) {
	var ids []string
	for _, c := range changes {
		if c.Problem == "" {
			ids = append(ids, c.SchoolID)
		}
	}
	out := map[string]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, `SELECT id::text FROM schools WHERE id = ANY($1::uuid[]) AND active`, ids)
	if err != nil {
		return nil, err
	}
	var id string
	_, err = pgx.ForEachRow(rows, []any{&id}, func() error { out[id] = true; return nil })
	return out, err
}

// changeWriters lists the transactions of this database that hold the
// advisory lock every writer of change_seq takes before it takes a value
// (migration 00002), by virtual transaction id, which no later transaction
// reuses.
const changeWriters = `
SELECT coalesce(array_agg(virtualtransaction), '{}') FROM pg_locks
WHERE locktype = 'advisory' AND granted AND classid = 1128810323 AND objid = 1 AND objsubid = 2
	AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`

// ChangeWatermark returns a position of change_seq below which nothing can
// still commit: every transaction that took a value at or below it has
// ended. It reads the sequence's last value, then lists the writers in
// progress (each took the writers' lock before its first value, so any
// writer holding a value up to it is listed or has ended) and waits,
// polling, until they have all ended. Writers that begin later take larger
// values and are not waited for, so the wait is normally a few
// milliseconds. It waits at most maxWait; then safe is false and the
// position must not be handed out.
func (s *Store) ChangeWatermark(ctx context.Context, maxWait time.Duration) (pos int64, safe bool, err error) {
	const last = `SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM change_seq`
	if err := s.pool.QueryRow(ctx, last).Scan(&pos); err != nil {
		return 0, false, mapErr(err, "change sequence")
	}
	var writers []string
	if err := s.pool.QueryRow(ctx, changeWriters).Scan(&writers); err != nil {
		return 0, false, mapErr(err, "change sequence")
	}
	deadline := time.Now().Add(maxWait)
	wait := time.Millisecond
	for len(writers) > 0 {
		if time.Now().After(deadline) {
			return pos, false, nil
		}
		select {
		case <-ctx.Done():
			return 0, false, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 20*time.Millisecond)
		var now []string
		if err := s.pool.QueryRow(ctx, changeWriters).Scan(&now); err != nil {
			return 0, false, mapErr(err, "change sequence")
		}
		writers = slices.DeleteFunc(writers, func(w string) bool { return !slices.Contains(now, w) })
	}
	return pos, true, nil
}

// SyncSwipe is a swipe as a pull returns it.
type SyncSwipe struct {
	Seq             int64
	ClientID        *string
	SchoolID        string
	Direction       string
	InteractionType string
	TimeSpent       *float64
	OccurredAt      time.Time
	RecordedAt      time.Time
}

// SyncFeedback is a feedback reason as a pull returns it.
type SyncFeedback struct {
	Seq        int64
	ClientID   *string
	SchoolID   string
	Reason     string
	Comment    *string
	OccurredAt time.Time
	RecordedAt time.Time
}

// SyncChanges reads the student's swipes and feedback with change_seq in
// (after, upTo], in change_seq order, at most limit of them together. When
// there are more, more is true and upTo is lowered to the last one read.
func (s *Store) SyncChanges(ctx context.Context, studentID string, after, upTo int64, limit int) (sw []SyncSwipe, fb []SyncFeedback, newUpTo int64, more bool, err error) {
	const qs = `
SELECT change_seq, client_id, school_id::text, direction, interaction_type, time_spent, occurred_at, created_at
FROM swipes WHERE student_id = $1 AND change_seq > $2 AND change_seq <= $3
ORDER BY change_seq LIMIT $4`
	rows, err := s.pool.Query(ctx, qs, studentID, after, upTo, limit+1)
	if err != nil {
		return nil, nil, 0, false, mapErr(err, "swipes")
	}
	sw, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (SyncSwipe, error) {
		var x SyncSwipe
		var ts *float32
		err := r.Scan(&x.Seq, &x.ClientID, &x.SchoolID, &x.Direction, &x.InteractionType, &ts, &x.OccurredAt, &x.RecordedAt)
		if ts != nil {
			v := float64(*ts)
			x.TimeSpent = &v
		}
		return x, err
	})
	if err != nil {
		return nil, nil, 0, false, mapErr(err, "swipes")
	}
	const qf = `
SELECT change_seq, client_id, school_id::text, reason, comment, occurred_at, created_at
FROM feedback WHERE student_id = $1 AND change_seq > $2 AND change_seq <= $3
ORDER BY change_seq LIMIT $4`
	rows, err = s.pool.Query(ctx, qf, studentID, after, upTo, limit+1)
	if err != nil {
		return nil, nil, 0, false, mapErr(err, "feedback")
	}
	fb, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (SyncFeedback, error) {
		var x SyncFeedback
		err := r.Scan(&x.Seq, &x.ClientID, &x.SchoolID, &x.Reason, &x.Comment, &x.OccurredAt, &x.RecordedAt)
		return x, err
	})
	if err != nil {
		return nil, nil, 0, false, mapErr(err, "feedback")
	}
	if len(sw)+len(fb) <= limit {
		return sw, fb, upTo, false, nil
	}
	// Keep the first limit by change_seq.
	var i, j int
	for i+j < limit {
		if j >= len(fb) || (i < len(sw) && sw[i].Seq < fb[j].Seq) {
			newUpTo = sw[i].Seq
			i++
		} else {
			newUpTo = fb[j].Seq
			j++
		}
	}
	return sw[:i], fb[:j], newUpTo, true, nil
}

// SyncSchools loads the schools (active or not) with change_seq in
// (after, upTo] that the student has swiped or given feedback on, or whose
// ids are in also.
func (s *Store) SyncSchools(ctx context.Context, studentID string, after, upTo int64, also []string) ([]domain.School, error) {
	if also == nil {
		also = []string{}
	}
	q := `SELECT ` + schoolColumns + ` FROM schools
WHERE change_seq > $2 AND change_seq <= $3 AND (id = ANY($4::uuid[])
	OR id IN (SELECT school_id FROM swipes WHERE student_id = $1)
	OR id IN (SELECT school_id FROM feedback WHERE student_id = $1))
ORDER BY change_seq`
	rows, err := s.pool.Query(ctx, q, studentID, after, upTo, also)
	if err != nil {
		return nil, mapErr(err, "schools")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.School, error) { return scanSchool(r) })
	return out, mapErr(err, "schools")
}

// ServerKey returns the secret stored under name, making a random 32-byte
// one on first use. Every API replica reads the same secret.
func (s *Store) ServerKey(ctx context.Context, name string) ([]byte, error) {
	if strings.TrimSpace(name) == "" {
		return nil, errors.New("store: server key without a name")
	}
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, fmt.Errorf("store: random key: %w", err)
	}
	const q = `
WITH ins AS (INSERT INTO server_keys (name, secret) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING RETURNING secret)
SELECT secret FROM ins UNION ALL SELECT secret FROM server_keys WHERE name = $1`
	// A replica that loses a race for the first insert sees no row in its
	// statement's snapshot; the next statement sees the winner's.
	for range 3 {
		var key []byte
		err := s.pool.QueryRow(ctx, q, name, fresh).Scan(&key)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, mapErr(err, "server key")
		}
		return key, nil
	}
	return nil, fmt.Errorf("store: server key %q could not be read", name)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return nil // InsertOutbox encoded the same value already
	}
	return b
}
