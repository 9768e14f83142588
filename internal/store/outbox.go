package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// OutboxRow is one event in the transactional outbox.
type OutboxRow struct {
	ID        int64
	Topic     string
	StudentID string // "" when the event concerns no student
	Payload   []byte // JSON
	CreatedAt time.Time
}

// InsertOutbox writes an event into the outbox inside tx, the transaction
// that stores the fact the event announces, so the event exists exactly
// when the fact does. payload is encoded as JSON (pass a json.RawMessage
// for JSON that is already encoded); studentID may be "".
func InsertOutbox(ctx context.Context, tx pgx.Tx, topic, studentID string, payload any) (int64, error) {
	if topic == "" {
		return 0, errors.New("store: outbox event without a topic")
	}
	b, err := json.Marshal(payload)
	if err != nil {
		return 0, fmt.Errorf("store: encode %s outbox payload: %w", topic, err)
	}
	const q = `INSERT INTO outbox (topic, student_id, payload) VALUES ($1, nullif($2, '')::uuid, $3::jsonb) RETURNING id`
	var id int64
	err = tx.QueryRow(ctx, q, topic, studentID, string(b)).Scan(&id)
	return id, mapErr(err, "outbox event")
}

// RelayOutbox claims up to limit unpublished rows, oldest id first, and
// passes them to hand, which hands them to the queue and returns the ids it
// handed over. Those rows are marked published in the same transaction that
// claimed them.
//
// The claim is SELECT ... FOR UPDATE SKIP LOCKED, so concurrent relays (one
// per worker replica) take disjoint rows and never hand over the same row
// at the same time; a row whose transaction ends without marking it (a
// crash, an error) is simply claimed again later.
//
// claimed is the number of rows passed to hand. When hand fails, the ids it
// returned are still marked and RelayOutbox returns hand's error unchanged;
// any other error means no row was marked.
func (s *Store) RelayOutbox(ctx context.Context, limit int, hand func(ctx context.Context, rows []OutboxRow) ([]int64, error)) (claimed int, err error) {
	if limit <= 0 {
		return 0, fmt.Errorf("store: outbox batch size %d is not positive", limit)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, mapErr(err, "outbox")
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // no-op once committed

	const claim = `
SELECT id, topic, coalesce(student_id::text, ''), payload, created_at
FROM outbox
WHERE published_at IS NULL
ORDER BY id
LIMIT $1
FOR UPDATE SKIP LOCKED`
	rows, err := tx.Query(ctx, claim, limit)
	if err != nil {
		return 0, mapErr(err, "outbox")
	}
	batch, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (OutboxRow, error) {
		var r OutboxRow
		err := row.Scan(&r.ID, &r.Topic, &r.StudentID, &r.Payload, &r.CreatedAt)
		return r, err
	})
	if err != nil {
		return 0, mapErr(err, "outbox")
	}
	if len(batch) == 0 {
		return 0, nil
	}

	handed, handErr := hand(ctx, batch)
	// Only rows of this batch can be marked: the others are not locked here.
	inBatch := make(map[int64]bool, len(batch))
	for _, r := range batch {
		inBatch[r.ID] = true
	}
	handed = slices.DeleteFunc(slices.Clone(handed), func(id int64) bool { return !inBatch[id] })
	if len(handed) > 0 {
		// The tasks are in the queue now; record that even when ctx has just
		// ended (shutdown), or the next relay hands them over a second time.
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		const mark = `UPDATE outbox SET published_at = now() WHERE id = ANY($1) AND published_at IS NULL`
		if _, err := tx.Exec(mctx, mark, handed); err != nil {
			return len(batch), errors.Join(handErr, mapErr(err, "outbox"))
		}
		if err := tx.Commit(mctx); err != nil {
			return len(batch), errors.Join(handErr, mapErr(err, "outbox"))
		}
	}
	return len(batch), handErr
}

// MarkOutboxPublished marks rows as handed over, for a writer that enqueued
// their tasks itself right after its commit. Rows a relay holds at that
// moment are skipped rather than waited for: the relay hands them over
// under the same task ids, which the queue takes only once.
func (s *Store) MarkOutboxPublished(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	const q = `
UPDATE outbox SET published_at = now()
WHERE id IN (
	SELECT id FROM outbox
	WHERE id = ANY($1) AND published_at IS NULL
	FOR UPDATE SKIP LOCKED
)`
	_, err := s.pool.Exec(ctx, q, ids)
	return mapErr(err, "outbox")
}

// OutboxBacklog reports how many rows are not yet handed over and when the
// oldest of them was written (the zero time when there are none).
func (s *Store) OutboxBacklog(ctx context.Context) (count int, oldest time.Time, err error) {
	const q = `SELECT count(*), min(created_at) FROM outbox WHERE published_at IS NULL`
	var first *time.Time
	if err := s.pool.QueryRow(ctx, q).Scan(&count, &first); err != nil {
		return 0, time.Time{}, mapErr(err, "outbox")
	}
	if first != nil {
		oldest = *first
	}
	return count, oldest, nil
}
