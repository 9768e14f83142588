package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/collegematch/matching/internal/domain"
)

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

// relayOutbox claims up to $2 unpublished rows of topics $1, oldest first,
// rows no other relay holds; marks them published; and writes, for each,
// one delivery per subscribed endpoint ($4 urls, $5 keys, $6 events): a
// pending one leased for $3 seconds to the task that makes its first
// attempt, or a disabled one for an endpoint disabled by 410 Gone. All in
// one statement, inside the caller's transaction.
const relayOutbox = `
WITH c AS (
	SELECT id FROM outbox WHERE published_at IS NULL AND topic = ANY($1)
	ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED
), m AS (
	UPDATE outbox o SET published_at = now() FROM c WHERE o.id = c.id
	RETURNING o.id, o.topic, coalesce(o.student_id::text, '') AS student_id, o.payload, o.created_at
), d AS (
	INSERT INTO webhook_deliveries (outbox_id, endpoint_url, webhook_id, event, status, next_attempt_at, last_error)
	SELECT m.id, e.url, 'msg_' || m.id || '_' || e.key, m.topic,
		CASE WHEN x.endpoint_url IS NULL THEN 'pending' ELSE 'disabled' END,
		CASE WHEN x.endpoint_url IS NULL THEN now() + make_interval(secs => $3) END,
		CASE WHEN x.endpoint_url IS NOT NULL THEN 'endpoint disabled: ' || x.reason END
	FROM m JOIN unnest($4::text[], $5::text[], $6::text[]) AS e (url, key, event) ON e.event = m.topic
	LEFT JOIN webhook_endpoint_state x ON x.endpoint_url = e.url
	ORDER BY m.id, e.url
	ON CONFLICT (outbox_id, endpoint_url) DO NOTHING
	RETURNING id, outbox_id, endpoint_url, webhook_id, status, next_attempt_at
)
SELECT m.id, m.topic, m.student_id, m.payload, m.created_at,
	d.id, d.endpoint_url, d.webhook_id, d.status = 'disabled', d.next_attempt_at
FROM m LEFT JOIN d ON d.outbox_id = m.id
ORDER BY m.id, d.endpoint_url`

// RelayOutbox is one pass of a relay over the outbox, in one transaction:
// it claims up to limit unpublished rows of topics (oldest first, none that
// another relay holds), marks them published and writes their webhook
// deliveries to subs (relayOutbox), then calls hand with what it wrote. The
// transaction commits when hand returns nil; otherwise it rolls back, and
// rows, marks and deliveries are as if the pass had not run (hand must
// then have queued nothing, or only tasks that are harmless twice).
//
// Only rows of topics are claimed: a relay passes the topics it knows, so
// a row of a topic a newer build writes while an older worker still runs
// (a rolling deploy) waits, unpublished, for a relay that knows it.
//
// claimed is the number of rows passed to hand.
func (s *Store) RelayOutbox(ctx context.Context, topics []string, subs []domain.Subscription, lease time.Duration, limit int,
	hand func(ctx context.Context, events []domain.RelayedEvent) error) (claimed int, err error) {
	if limit <= 0 {
		return 0, fmt.Errorf("store: outbox batch size %d is not positive", limit)
	}
	if len(topics) == 0 {
		return 0, nil
	}
	var urls, keys, events []string
	for _, sub := range subs {
		for _, ev := range sub.Events {
			urls, keys, events = append(urls, sub.URL), append(keys, sub.Key), append(events, ev)
		}
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, mapErr(err, "outbox")
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // no-op once committed

	rows, err := tx.Query(ctx, relayOutbox, topics, limit, lease.Seconds(), urls, keys, events)
	if err != nil {
		return 0, mapErr(err, "outbox")
	}
	var batch []domain.RelayedEvent
	for rows.Next() {
		var (
			r         domain.OutboxRow
			id        *int64
			endpoint  *string
			webhookID *string
			disabled  *bool
			leased    *time.Time
		)
		if err := rows.Scan(&r.ID, &r.Topic, &r.StudentID, &r.Payload, &r.CreatedAt, &id, &endpoint, &webhookID,
			&disabled, &leased); err != nil {
			rows.Close()
			return 0, mapErr(err, "outbox")
		}
		if n := len(batch); n == 0 || batch[n-1].ID != r.ID {
			batch = append(batch, domain.RelayedEvent{OutboxRow: r})
		}
		if id != nil {
			d := domain.NewDelivery{ID: *id, Endpoint: *endpoint, WebhookID: *webhookID, Disabled: *disabled}
			if leased != nil {
				d.LeasedUntil = *leased
			}
			ev := &batch[len(batch)-1]
			ev.Deliveries = append(ev.Deliveries, d)
		}
	}
	if err := rows.Err(); err != nil {
		return 0, mapErr(err, "outbox")
	}
	if len(batch) == 0 {
		return 0, nil
	}
	if err := hand(ctx, batch); err != nil {
		return len(batch), err
	}
	// The tasks are in the queue now: commit even when ctx has just ended
	// (shutdown), or the next pass writes the deliveries a second time.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := tx.Commit(cctx); err != nil {
		return len(batch), mapErr(err, "outbox")
	}
	return len(batch), nil
}

// OutboxBacklog reports how many rows are not yet published and when the
// oldest of them was written (the zero time when there are none).
func (s *Store) OutboxBacklog(ctx context.Context) (count int, oldest time.Time, err error) {
	const q = `SELECT count(*), coalesce(min(created_at), 'epoch') FROM outbox WHERE published_at IS NULL`
	err = s.pool.QueryRow(ctx, q).Scan(&count, &oldest)
	if count == 0 {
		oldest = time.Time{}
	}
	return count, oldest, mapErr(err, "outbox")
}

// deletePublishedOutbox is DeletePublishedOutbox's statement; it reads
// outbox_published_idx and the deliveries by event.
const deletePublishedOutbox = `
WITH gone AS (
	DELETE FROM outbox
	WHERE id IN (
		SELECT o.id FROM outbox o
		WHERE o.published_at < now() - make_interval(secs => $1)
		  AND o.published_at >= $3
		  AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.outbox_id = o.id AND d.status <> 'succeeded')
		ORDER BY o.published_at
		LIMIT $2
		FOR UPDATE SKIP LOCKED
	)
	RETURNING published_at
)
SELECT count(*), coalesce(max(published_at), $3) FROM gone`

// DeletePublishedOutbox deletes up to limit rows, oldest first, that were
// published more than olderThan ago, not before after, and that no webhook
// delivery which may still be sent refers to, and reports how many it
// deleted and the publication time of the last (after when none). Callers
// repeat it until it deletes fewer than limit, passing that time on as the
// next call's after: each call is one short statement, so retention never
// holds many locks or one long transaction, and the rows a pass keeps (an
// event whose delivery is parked stays for WEBHOOK_RETENTION) are read
// once per pass, not once per call.
//
// A published row has done its work (its tasks are queued and, with the
// queue's own retention, long done). A delivery that is pending still needs
// its event, and so does a parked or disabled one, which an operator may
// replay until the retention loop deletes it (WEBHOOK_RETENTION); a
// succeeded delivery does not, and its record outlives the event. Rows
// another transaction holds (a replay that locked its event, a concurrent
// deletion by another replica) are skipped, not waited for; the next pass
// takes them. Unpublished rows are never deleted, however old.
func (s *Store) DeletePublishedOutbox(ctx context.Context, olderThan time.Duration, limit int, after time.Time) (deleted int, last time.Time, err error) {
	if limit <= 0 {
		return 0, after, fmt.Errorf("store: outbox deletion batch size %d is not positive", limit)
	}
	if olderThan <= 0 {
		return 0, after, fmt.Errorf("store: outbox retention %v is not positive", olderThan)
	}
	// The age is measured against the database clock, which also set
	// published_at, so the worker's clock cannot shorten the retention.
	if err := s.pool.QueryRow(ctx, deletePublishedOutbox, olderThan.Seconds(), limit, after).Scan(&deleted, &last); err != nil {
		return 0, after, mapErr(err, "outbox")
	}
	return deleted, last, nil
}
