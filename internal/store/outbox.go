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

// RelayOutbox claims up to limit unpublished rows of the given topics,
// oldest id first, and passes them to hand, which hands them to the queue
// and returns the ids it handed over. Those rows are marked published in
// the same transaction that claimed them.
//
// Only rows of topics are claimed, and with no topics nothing is: a relay
// passes the topics its router serves, so a row no route of this worker
// serves (a topic a newer build writes while an older worker still runs in
// a rolling deploy) is never claimed here, let alone marked without its
// tasks; it waits, unpublished, for a relay that routes it.
//
// The claim is SELECT ... FOR NO KEY UPDATE SKIP LOCKED, so concurrent
// relays (one per worker replica) take disjoint rows and never hand over the
// same row at the same time; a row whose transaction ends without marking
// it (a crash, an error) is simply claimed again later. The lock is the
// no-key kind so that hand may write rows that reference the claimed ones
// (webhook deliveries) on another connection: a foreign key check takes a
// key-share lock, which FOR UPDATE would block until this transaction ends,
// and this transaction waits for hand.
//
// hand may write the webhook deliveries of the rows with record, in the
// claiming transaction: they commit together with the rows' marks, or not
// at all (the rows then stay unpublished and are handed over again).
//
// claimed is the number of rows passed to hand. When hand fails, the ids it
// returned are still marked (with what it recorded) and RelayOutbox returns
// hand's error unchanged; any other error means no row was marked.
func (s *Store) RelayOutbox(ctx context.Context, topics []string, limit int,
	hand func(ctx context.Context, rows []OutboxRow, record DeliveryRecorder) ([]int64, error)) (claimed int, err error) {
	if limit <= 0 {
		return 0, fmt.Errorf("store: outbox batch size %d is not positive", limit)
	}
	if len(topics) == 0 {
		return 0, nil
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, mapErr(err, "outbox")
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // no-op once committed

	const claim = `
SELECT id, topic, coalesce(student_id::text, ''), payload, created_at
FROM outbox
WHERE published_at IS NULL AND topic = ANY($1)
ORDER BY id
LIMIT $2
FOR NO KEY UPDATE SKIP LOCKED`
	rows, err := tx.Query(ctx, claim, topics, limit)
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

	handed, handErr := hand(ctx, batch, func(ctx context.Context, refs []WebhookDeliveryRef) ([]int64, error) {
		return recordWebhookDeliveries(ctx, tx, refs)
	})
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
	FOR NO KEY UPDATE SKIP LOCKED
)`
	_, err := s.pool.Exec(ctx, q, ids)
	return mapErr(err, "outbox")
}

// OutboxBacklog reports how many rows are not yet handed over, when the
// oldest of them was written (the zero time when there are none), and how
// many of them, by topic, have a topic outside routed: rows the caller's
// relay will never claim, which only a relay that routes their topic hands
// over.
func (s *Store) OutboxBacklog(ctx context.Context, routed []string) (count int, oldest time.Time, unrouted map[string]int, err error) {
	// One row per topic: topics are few, so this costs what a plain count of
	// the unpublished rows costs.
	const q = `SELECT topic, count(*), min(created_at) FROM outbox WHERE published_at IS NULL GROUP BY topic`
	rows, err := s.pool.Query(ctx, q)
	if err != nil {
		return 0, time.Time{}, nil, mapErr(err, "outbox")
	}
	defer rows.Close()
	unrouted = map[string]int{}
	for rows.Next() {
		var (
			topic string
			n     int
			first time.Time
		)
		if err := rows.Scan(&topic, &n, &first); err != nil {
			return 0, time.Time{}, nil, mapErr(err, "outbox")
		}
		count += n
		if oldest.IsZero() || first.Before(oldest) {
			oldest = first
		}
		if !slices.Contains(routed, topic) {
			unrouted[topic] += n
		}
	}
	if err := rows.Err(); err != nil {
		return 0, time.Time{}, nil, mapErr(err, "outbox")
	}
	return count, oldest, unrouted, nil
}

// DeletePublishedOutbox deletes up to limit rows, oldest id first, that
// were published more than olderThan ago and that no webhook_deliveries row
// references, and reports how many it deleted. Callers repeat it until it
// deletes fewer than limit: each call is one short statement, so retention
// never holds many locks or one long transaction.
//
// A published row has done its work (its tasks are queued and, with the
// queue's own retention, long done), but a delivery record still points at
// its event, so that row is kept while one does. Rows another transaction
// holds (a delivery being recorded for it, a concurrent deletion by another
// replica) are skipped, not waited for; the next pass takes them. Unpublished
// rows are never deleted, however old.
func (s *Store) DeletePublishedOutbox(ctx context.Context, olderThan time.Duration, limit int) (deleted int, err error) {
	if limit <= 0 {
		return 0, fmt.Errorf("store: outbox deletion batch size %d is not positive", limit)
	}
	if olderThan <= 0 {
		return 0, fmt.Errorf("store: outbox retention %v is not positive", olderThan)
	}
	// The age is measured against the database clock, which also set
	// published_at, so the worker's clock cannot shorten the retention.
	const q = `
DELETE FROM outbox
WHERE id IN (
	SELECT o.id FROM outbox o
	WHERE o.published_at < now() - make_interval(secs => $1)
	  AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.outbox_id = o.id)
	ORDER BY o.id
	LIMIT $2
	FOR UPDATE SKIP LOCKED
)`
	tag, err := s.pool.Exec(ctx, q, olderThan.Seconds(), limit)
	if err != nil {
		return 0, mapErr(err, "outbox")
	}
	return int(tag.RowsAffected()), nil
}
