package store

import (
	"context"
	"crypto/rand"
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

// changeWriters lists the transactions of this database that hold the
// advisory lock every writer of change_seq takes before it takes a value
// (migration 00002), by virtual transaction id, which no later transaction
// reuses.
const changeWriters = `SELECT coalesce(array_agg(virtualtransaction), '{}') FROM pg_locks WHERE ` + writerLocks

// writerLocks picks the writers' locks out of pg_locks.
const writerLocks = `locktype = 'advisory' AND granted AND classid = 1128810323 AND objid = 1 AND objsubid = 2
	AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`

// watermarkStart reads the sequence's last value and then lists the
// writers in progress, in one statement. The order is what makes the
// position safe (see ChangeWatermark), and the lateral join fixes it: the
// writers' list refers to the position read, so it is made after it.
const watermarkStart = `
SELECT s.pos, w.writers
FROM (SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS pos FROM change_seq) s,
LATERAL (
	SELECT coalesce(array_agg(virtualtransaction), '{}') AS writers FROM pg_locks
	WHERE s.pos IS NOT NULL AND ` + writerLocks + `
) w`

// ChangeWatermark returns a position of change_seq below which nothing can
// still commit: every transaction that took a value at or below it has
// ended. It reads the sequence's last value, then lists the writers in
// progress (each took the writers' lock before its first value, so any
// writer holding a value up to it is listed or has ended), both in one
// statement (watermarkStart), and waits, polling, until they have all
// ended. Writers that begin later take larger values and are not waited
// for, so the wait is normally a few milliseconds and most calls make one
// round trip. It waits at most maxWait; then safe is false and the
// position must not be handed out.
func (s *Store) ChangeWatermark(ctx context.Context, maxWait time.Duration) (pos int64, safe bool, err error) {
	var writers []string
	if err := s.pool.QueryRow(ctx, watermarkStart).Scan(&pos, &writers); err != nil {
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

// syncChanges reads a student's swipes and feedback with change_seq in
// ($2, $3], in change_seq order, at most $4 of them together.
const syncChanges = `
SELECT * FROM (
	(SELECT change_seq, true AS swipe, client_id, school_id::text, direction, interaction_type, time_spent,
		''::text AS reason, NULL::text AS comment, occurred_at, created_at
	FROM swipes WHERE student_id = $1 AND change_seq > $2 AND change_seq <= $3
	ORDER BY change_seq LIMIT $4)
	UNION ALL
	(SELECT change_seq, false, client_id, school_id::text, '', '', NULL, reason, comment, occurred_at, created_at
	FROM feedback WHERE student_id = $1 AND change_seq > $2 AND change_seq <= $3
	ORDER BY change_seq LIMIT $4)
) c ORDER BY change_seq LIMIT $4`

// SyncChanges reads the student's swipes and feedback with change_seq in
// (after, upTo], in change_seq order, at most limit of them together, in
// one statement. When there are more, more is true and upTo is lowered to
// the last one read.
func (s *Store) SyncChanges(ctx context.Context, studentID string, after, upTo int64, limit int) (sw []domain.SyncSwipe, fb []domain.SyncFeedback, newUpTo int64, more bool, err error) {
	rows, err := s.pool.Query(ctx, syncChanges, studentID, after, upTo, limit+1)
	if err != nil {
		return nil, nil, 0, false, mapErr(err, "sync changes")
	}
	c, err := scanSyncChanges(rows, upTo, limit)
	return c.Swipes, c.Feedback, c.UpTo, c.More, err
}

// scanSyncChanges reads syncChanges' rows (limit+1 asked for) and closes
// them.
func scanSyncChanges(rows pgx.Rows, upTo int64, limit int) (domain.SyncRead, error) {
	defer rows.Close()
	var (
		c    domain.SyncRead
		last int64 // the change_seq of the last change kept
	)
	for n := 1; rows.Next(); n++ {
		if n > limit {
			c.More = true
			break
		}
		var (
			swipe bool
			x     domain.SyncSwipe
			f     domain.SyncFeedback
		)
		if err := rows.Scan(&x.Seq, &swipe, &x.ClientID, &x.SchoolID, &x.Direction, &x.InteractionType, &x.TimeSpent,
			&f.Reason, &f.Comment, &x.OccurredAt, &x.RecordedAt); err != nil {
			return domain.SyncRead{}, mapErr(err, "sync changes")
		}
		last = x.Seq
		if swipe {
			c.Swipes = append(c.Swipes, x)
		} else {
			f.Seq, f.ClientID, f.SchoolID, f.OccurredAt, f.RecordedAt = x.Seq, x.ClientID, x.SchoolID, x.OccurredAt, x.RecordedAt
			c.Feedback = append(c.Feedback, f)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return domain.SyncRead{}, mapErr(err, "sync changes")
	}
	c.UpTo = upTo
	if c.More {
		c.UpTo = last
	}
	return c, nil
}

// syncSchools reads the schools (active or not) with change_seq in ($2,
// $3] that student $1 has swiped or given feedback on, or whose ids are in
// $4, without their program shares (a pull sends compact records, which do
// not show them; decoding them was a third of a pull's CPU). The student's
// schools are one set, looked up by id: an OR of the three tests is
// checked row by row over every school in the range, the whole catalogue
// on a first pull (4 ms at 6,500 schools, 16 ms under load, against 0.6
// ms).
var syncSchools = `SELECT ` + schoolColumnsNoShares + ` FROM schools
WHERE change_seq > $2 AND change_seq <= $3 AND id IN (
	SELECT unnest($4::uuid[])
	UNION SELECT school_id FROM swipes WHERE student_id = $1
	UNION SELECT school_id FROM feedback WHERE student_id = $1)
ORDER BY change_seq`

// SyncSchools loads the schools of syncSchools: those with change_seq in
// (after, upTo] the student has swiped or given feedback on, or whose ids
// are in also.
func (s *Store) SyncSchools(ctx context.Context, studentID string, after, upTo int64, also []string) ([]domain.School, error) {
	rows, err := s.pool.Query(ctx, syncSchools, studentID, after, upTo, orEmpty(also))
	if err != nil {
		return nil, mapErr(err, "schools")
	}
	return collectSchools(rows)
}

func collectSchools(rows pgx.Rows) ([]domain.School, error) {
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.School, error) { return scanSchool(r) })
	return out, mapErr(err, "schools")
}

func orEmpty(ids []string) []string {
	if ids == nil {
		return []string{}
	}
	return ids
}

// SyncRead reads a pull's changes in (after, upTo] (at most limit), the
// student and the schools of syncSchools in one round trip: three
// statements in one batch. Two cases take one more: a student with a
// backlog of a page of events or more not folded in (read again as
// LearnerState reads it), and a pull whose changes fill the limit (the
// schools read again up to the last change sent, so a later pull is where
// the rest come). An unknown student is INVALID_STUDENT_ID; an erased one
// is returned with State.Student.DeletedAt set, for the caller to refuse.
func (s *Store) SyncRead(ctx context.Context, studentID string, after, upTo int64, limit int, also []string) (domain.SyncRead, error) {
	also = orEmpty(also)
	b := &pgx.Batch{}
	b.Queue(syncChanges, studentID, after, upTo, limit+1)
	b.Queue(learnerState, studentID, learnerEventsPage)
	b.Queue(syncSchools, studentID, after, upTo, also)
	c, err := func() (domain.SyncRead, error) {
		br := s.pool.SendBatch(ctx, b)
		defer br.Close()
		rows, err := br.Query()
		if err != nil {
			return domain.SyncRead{}, mapErr(err, "sync changes")
		}
		c, err := scanSyncChanges(rows, upTo, limit)
		if err != nil {
			return domain.SyncRead{}, err
		}
		c.State, err = scanLearnerState(br.QueryRow())
		if errors.Is(err, pgx.ErrNoRows) {
			return domain.SyncRead{}, domain.StudentNotFound(studentID)
		}
		if err != nil {
			return domain.SyncRead{}, err
		}
		if rows, err = br.Query(); err != nil {
			return domain.SyncRead{}, mapErr(err, "schools")
		}
		c.Schools, err = collectSchools(rows)
		return c, err
	}()
	if err != nil {
		return domain.SyncRead{}, err
	}
	if len(c.State.New) >= learnerEventsPage {
		if c.State, err = s.LearnerState(ctx, studentID); err != nil {
			return domain.SyncRead{}, err
		}
	}
	if c.More {
		if c.Schools, err = s.SyncSchools(ctx, studentID, after, c.UpTo, also); err != nil {
			return domain.SyncRead{}, err
		}
	}
	return c, nil
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
