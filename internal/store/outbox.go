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

// claimOutbox claims up to $2 unpublished rows of topics $1, oldest first,
// rows no other relay holds, and marks them published; with each, the
// endpoints of $3 that have a delivery of it already (written by a task of
// an older build, which inserted the row it found missing), and, on every
// row, the endpoints of $3 that are disabled (410 Gone) with their reasons.
const claimOutbox = `
WITH c AS (
	SELECT id FROM outbox WHERE published_at IS NULL AND topic = ANY($1)
	ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED
), m AS (
	UPDATE outbox o SET published_at = now() FROM c WHERE o.id = c.id
	RETURNING o.id, o.topic, coalesce(o.student_id::text, '') AS student_id, o.payload, o.created_at
), x AS (
	SELECT coalesce(array_agg(endpoint_url), '{}') AS urls, coalesce(array_agg(reason), '{}') AS reasons
	FROM webhook_endpoint_state WHERE endpoint_url = ANY($3)
)
SELECT m.id, m.topic, m.student_id, m.payload, m.created_at,
	array(SELECT d.endpoint_url FROM webhook_deliveries d WHERE d.outbox_id = m.id AND d.endpoint_url = ANY($3)),
	x.urls, x.reasons
FROM m CROSS JOIN x ORDER BY m.id`

// writeDeliveries writes a relay's deliveries, each in its state after
// its first attempt together with that attempt, or without one (leased to
// a task, or ended: disabled), in one statement. A delivery that is there
// already is left as it is and not returned.
const writeDeliveries = `
WITH v AS (
	SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::text[],
		$8::bool[], $9::int[], $10::int[], $11::text[])
		AS v(outbox_id, endpoint_url, webhook_id, event, status, next_at, last_error, attempted, code, latency, err)
), d AS (
	INSERT INTO webhook_deliveries (outbox_id, endpoint_url, webhook_id, event, status, attempts, next_attempt_at, last_error)
	SELECT outbox_id, endpoint_url, webhook_id, event, status, CASE WHEN attempted THEN 1 ELSE 0 END, next_at,
		nullif(last_error, '')
	FROM v ORDER BY outbox_id, endpoint_url
	ON CONFLICT (outbox_id, endpoint_url) DO NOTHING
	RETURNING id, outbox_id, endpoint_url
), a AS (
	INSERT INTO webhook_attempts (delivery_id, attempt, status_code, latency_ms, error)
	SELECT d.id, 1, v.code, v.latency, nullif(v.err, '')
	FROM d JOIN v ON v.outbox_id = d.outbox_id AND v.endpoint_url = d.endpoint_url
	WHERE v.attempted
)
SELECT id, outbox_id, endpoint_url FROM d`

// OutboxWriter writes a claimed batch's deliveries (PublishOutbox): ids[i]
// is the row id of ds[i], 0 when a delivery of that event to that endpoint
// was there already (it is left as it was). It is called once per batch.
type OutboxWriter = func(ctx context.Context, ds []domain.DeliveryWrite) (ids []int64, err error)

// PublishOutbox is one pass of a relay over the outbox, in one
// transaction: it claims up to limit unpublished rows of topics (oldest
// first, none that another relay holds) and marks them published, then
// calls hand with them, the endpoints of endpoints that are disabled (410
// Gone; URL to reason) and a writer for their deliveries. The transaction
// commits when hand returns nil; otherwise it rolls back, and rows, marks
// and deliveries are as if the pass had not run. The claimed rows stay
// locked until then, so an erasure of their student waits for the pass.
//
// Only rows of topics are claimed: a relay passes the topics it knows, so
// a row of a topic a newer build writes while an older worker still runs
// (a rolling deploy) waits, unpublished, for a relay that knows it.
//
// claimed is the number of rows passed to hand.
func (s *Store) PublishOutbox(ctx context.Context, topics, endpoints []string, limit int,
	hand func(ctx context.Context, events []domain.ClaimedEvent, disabled map[string]string, write OutboxWriter) error) (claimed int, err error) {
	if limit <= 0 {
		return 0, fmt.Errorf("store: outbox batch size %d is not positive", limit)
	}
	if len(topics) == 0 {
		return 0, nil
	}
	if endpoints == nil {
		endpoints = []string{}
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, mapErr(err, "outbox")
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // no-op once committed

	events, disabled, err := claimEvents(ctx, tx, topics, endpoints, limit)
	if err != nil || len(events) == 0 {
		return 0, err
	}
	written := false
	write := func(ctx context.Context, ds []domain.DeliveryWrite) ([]int64, error) {
		if written {
			return nil, errors.New("store: a batch's deliveries are written once")
		}
		written = true
		return writeDeliveryRows(ctx, tx, ds)
	}
	if err := hand(ctx, events, disabled, write); err != nil {
		return len(events), err
	}
	// What hand did (attempts made, tasks queued) is done: commit even when
	// ctx has just ended (shutdown), or the next pass does it a second time.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := tx.Commit(cctx); err != nil {
		return len(events), mapErr(err, "outbox")
	}
	return len(events), nil
}

// claimEvents runs claimOutbox.
func claimEvents(ctx context.Context, tx pgx.Tx, topics, endpoints []string, limit int) ([]domain.ClaimedEvent, map[string]string, error) {
	rows, err := tx.Query(ctx, claimOutbox, topics, limit, endpoints)
	if err != nil {
		return nil, nil, mapErr(err, "outbox")
	}
	var (
		events   []domain.ClaimedEvent
		disabled map[string]string
	)
	for rows.Next() {
		var (
			e             domain.ClaimedEvent
			urls, reasons []string
		)
		if err := rows.Scan(&e.ID, &e.Topic, &e.StudentID, &e.Payload, &e.CreatedAt, &e.Delivered, &urls, &reasons); err != nil {
			rows.Close()
			return nil, nil, mapErr(err, "outbox")
		}
		if disabled == nil {
			disabled = make(map[string]string, len(urls))
			for i, u := range urls {
				disabled[u] = reasons[i]
			}
		}
		events = append(events, e)
	}
	return events, disabled, mapErr(rows.Err(), "outbox")
}

// writeDeliveryRows runs writeDeliveries.
func writeDeliveryRows(ctx context.Context, tx pgx.Tx, ds []domain.DeliveryWrite) ([]int64, error) {
	ids := make([]int64, len(ds))
	if len(ds) == 0 {
		return ids, nil
	}
	n := len(ds)
	outbox, urls, webhookIDs, events, statuses := make([]int64, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	nexts, lastErrs, attempted := make([]*time.Time, n), make([]string, n), make([]bool, n)
	codes, latencies, errs := make([]*int32, n), make([]int32, n), make([]string, n)
	at := make(map[deliveryKey]int, n)
	for i, d := range ds {
		outbox[i], urls[i], webhookIDs[i], events[i], statuses[i] = d.OutboxID, d.Endpoint, d.WebhookID, d.Topic, d.Status
		if !d.Next.IsZero() {
			nexts[i] = &ds[i].Next
		}
		lastErrs[i] = domain.ScrubError(d.LastError)
		if a := d.Attempt; a != nil {
			attempted[i] = true
			if a.StatusCode != 0 {
				c := int32(a.StatusCode)
				codes[i] = &c
			}
			latencies[i], errs[i] = int32(a.Latency.Milliseconds()), domain.ScrubError(a.Error)
		}
		at[deliveryKey{d.OutboxID, d.Endpoint}] = i
	}
	rows, err := tx.Query(ctx, writeDeliveries, outbox, urls, webhookIDs, events, statuses, nexts, lastErrs, attempted,
		codes, latencies, errs)
	if err != nil {
		return nil, mapErr(err, "webhook deliveries")
	}
	for rows.Next() {
		var (
			id int64
			k  deliveryKey
		)
		if err := rows.Scan(&id, &k.outboxID, &k.endpoint); err != nil {
			rows.Close()
			return nil, mapErr(err, "webhook deliveries")
		}
		if i, ok := at[k]; ok {
			ids[i] = id
		}
	}
	return ids, mapErr(rows.Err(), "webhook deliveries")
}

type deliveryKey struct {
	outboxID int64
	endpoint string
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
