package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// WebhookEvent is an outbox row as a webhook delivery sends it.
type WebhookEvent struct {
	Topic     string
	Payload   []byte
	CreatedAt time.Time
}

// WebhookDeliveryRef names the delivery of one outbox row to one endpoint.
type WebhookDeliveryRef struct {
	OutboxID  int64
	Endpoint  string
	WebhookID string
}

// RecordWebhookDeliveries writes a pending delivery row, due now, for each
// ref that has none yet, in one statement. Whoever hands an event to the
// queue calls it first, so a delivery is in PostgreSQL before its task is
// in Redis, and a task lost with Redis is found again from its row.
//
// It writes only for the outbox rows it can lock at once: skipped lists the
// others, which a relay is handing over right now (its transaction holds
// them and writes their deliveries itself), or which are gone. The caller
// leaves those to the relay rather than wait for its transaction.
func (s *Store) RecordWebhookDeliveries(ctx context.Context, refs []WebhookDeliveryRef) (skipped []int64, err error) {
	return recordWebhookDeliveries(ctx, s.pool, refs)
}

// DeliveryRecorder writes webhook deliveries as RecordWebhookDeliveries
// does, inside a transaction the caller does not see (RelayOutbox's, which
// holds the rows, so none is skipped).
type DeliveryRecorder func(ctx context.Context, refs []WebhookDeliveryRef) (skipped []int64, err error)

func recordWebhookDeliveries(ctx context.Context, db interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, refs []WebhookDeliveryRef) ([]int64, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(refs))
	eps := make([]string, len(refs))
	msgs := make([]string, len(refs))
	for i, r := range refs {
		ids[i], eps[i], msgs[i] = r.OutboxID, r.Endpoint, r.WebhookID
	}
	// The outbox rows are locked the way a relay claims them, skipping the
	// ones a relay holds (the relay's own transaction already holds them
	// and locks nothing twice). Rows go in key order, so two writers of
	// overlapping batches never deadlock.
	const q = `
WITH held AS (
	SELECT id, topic FROM outbox WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE SKIP LOCKED
), ins AS (
	INSERT INTO webhook_deliveries (outbox_id, endpoint_url, webhook_id, event, next_attempt_at)
	SELECT h.id, r.endpoint, r.webhook_id, h.topic, now()
	FROM unnest($1::bigint[], $2::text[], $3::text[]) AS r (outbox_id, endpoint, webhook_id)
	JOIN held h ON h.id = r.outbox_id
	ORDER BY h.id, r.endpoint
	ON CONFLICT (outbox_id, endpoint_url) DO NOTHING
)
SELECT id FROM held`
	rows, err := db.Query(ctx, q, ids, eps, msgs)
	if err != nil {
		return nil, mapErr(err, "webhook deliveries")
	}
	held, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, mapErr(err, "webhook deliveries")
	}
	seen := make(map[int64]bool, len(held))
	for _, id := range held {
		seen[id] = true
	}
	var skipped []int64
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			skipped = append(skipped, id)
		}
	}
	return skipped, nil
}

// WebhookDeliveryState is a delivery row as an attempt starts, with the
// event it sends.
type WebhookDeliveryState struct {
	ID               int64
	Status           string
	Attempts         int // in all, replays included
	RoundStart       int // attempts made before the last replay (0: never replayed)
	Replays          int
	EndpointDisabled bool
	// Claimed is true when this caller may make the next attempt: the
	// delivery was pending and due, and is now leased to it.
	Claimed bool
	// NextAttemptAt is when the delivery is due (or its lease ends); zero
	// when it is not pending.
	NextAttemptAt time.Time
	Event         WebhookEvent
}

// BeginWebhookDelivery claims the next attempt of the delivery of outbox
// row outboxID to endpoint, and returns the delivery with its event, in one
// round trip. A pending delivery due now (within slack, for clocks apart)
// is claimed: its next attempt is moved lease ahead, so another task for
// the same delivery (a duplicate queued during a deploy, or by the monitor
// for a task that was only late) finds it not due and makes no attempt
// meanwhile; recording the attempt sets the real next time. A delivery
// without a row (a task queued by an older build) gets one, claimed. A
// domain.KindNotFound error means the outbox row is gone.
func (s *Store) BeginWebhookDelivery(ctx context.Context, outboxID int64, endpoint, webhookID string, lease, slack time.Duration) (WebhookDeliveryState, error) {
	const q = `
WITH ev AS (
	SELECT id, topic, payload, created_at FROM outbox WHERE id = $1
), ins AS (
	INSERT INTO webhook_deliveries (outbox_id, endpoint_url, webhook_id, event, next_attempt_at)
	SELECT id, $2, $3, topic, now() + make_interval(secs => $4) FROM ev
	ON CONFLICT (outbox_id, endpoint_url) DO NOTHING
	RETURNING id, status, attempts, round_start, replays, next_attempt_at
), upd AS (
	UPDATE webhook_deliveries SET next_attempt_at = now() + make_interval(secs => $4)
	WHERE outbox_id = $1 AND endpoint_url = $2 AND status = 'pending'
		AND next_attempt_at <= now() + make_interval(secs => $5)
	RETURNING id, status, attempts, round_start, replays, next_attempt_at
), cur AS (
	SELECT true AS claimed, * FROM ins
	UNION ALL
	SELECT true, * FROM upd
	UNION ALL
	SELECT false, id, status, attempts, round_start, replays, next_attempt_at
	FROM webhook_deliveries WHERE outbox_id = $1 AND endpoint_url = $2
)
SELECT cur.claimed, cur.id, cur.status, cur.attempts, cur.round_start, cur.replays, cur.next_attempt_at,
	EXISTS (SELECT 1 FROM webhook_endpoint_state WHERE endpoint_url = $2),
	ev.topic, ev.payload, ev.created_at
FROM cur CROSS JOIN ev ORDER BY cur.claimed DESC LIMIT 1`
	var (
		d    WebhookDeliveryState
		next *time.Time
		err  error
	)
	// A concurrent first attempt that inserted the row after this
	// statement's snapshot leaves every part empty: the second try sees it.
	for range 2 {
		err = s.pool.QueryRow(ctx, q, outboxID, endpoint, webhookID, lease.Seconds(), slack.Seconds()).
			Scan(&d.Claimed, &d.ID, &d.Status, &d.Attempts, &d.RoundStart, &d.Replays, &next, &d.EndpointDisabled,
				&d.Event.Topic, &d.Event.Payload, &d.Event.CreatedAt)
		if !errors.Is(err, pgx.ErrNoRows) {
			break
		}
	}
	if next != nil {
		d.NextAttemptAt = *next
	}
	return d, mapErr(err, "outbox event")
}

// WebhookAttempt is one attempt's record.
type WebhookAttempt struct {
	StatusCode int // 0: no response
	Latency    time.Duration
	Error      string
}

// RecordWebhookAttempt adds an attempt row (numbered after the delivery's
// previous attempts) and moves the delivery to status with its next
// attempt at next (zero time: none), in one transaction. A delivery that
// is no longer pending (another attempt or an endpoint's 410 ended it)
// keeps its status, unless this attempt succeeded. replays is the
// delivery's replay count when the attempt was claimed: if an operator
// replayed it since, a failed attempt leaves it pending and due now, for
// the replay's fresh round, instead of parking it or scheduling the old
// round's wait.
func (s *Store) RecordWebhookAttempt(ctx context.Context, deliveryID int64, a WebhookAttempt, status string, next time.Time, replays int) error {
	// One statement, so one round trip and atomic.
	const q = `
WITH upd AS (
	UPDATE webhook_deliveries SET
		attempts = attempts + 1,
		status = CASE WHEN $2 = 'succeeded' THEN $2 WHEN status <> 'pending' THEN status
			WHEN replays <> $7 THEN 'pending' ELSE $2 END,
		next_attempt_at = CASE WHEN $2 = 'succeeded' THEN $3 WHEN status <> 'pending' THEN next_attempt_at
			WHEN replays <> $7 THEN now() ELSE $3 END,
		last_error = CASE WHEN $2 = 'succeeded' THEN last_error ELSE nullif($4, '') END,
		updated_at = now()
	WHERE id = $1
	RETURNING id, attempts
)
INSERT INTO webhook_attempts (delivery_id, attempt, status_code, latency_ms, error)
SELECT id, attempts, $5, $6, nullif($4, '') FROM upd`
	var nextAt *time.Time
	if !next.IsZero() {
		nextAt = &next
	}
	var code *int
	if a.StatusCode != 0 {
		code = &a.StatusCode
	}
	tag, err := s.pool.Exec(ctx, q, deliveryID, status, nextAt, a.Error, code, a.Latency.Milliseconds(), replays)
	if err == nil && tag.RowsAffected() == 0 {
		err = pgx.ErrNoRows
	}
	return mapErr(err, "webhook delivery")
}

// SetWebhookDeliveryStatus moves a pending delivery to status without an
// attempt (its endpoint is disabled or no longer configured).
func (s *Store) SetWebhookDeliveryStatus(ctx context.Context, deliveryID int64, status, lastError string) error {
	const q = `
UPDATE webhook_deliveries SET status = $2, last_error = $3, next_attempt_at = NULL, updated_at = now()
WHERE id = $1 AND status = 'pending'`
	_, err := s.pool.Exec(ctx, q, deliveryID, status, lastError)
	return mapErr(err, "webhook delivery")
}

// DisableWebhookEndpoint marks endpoint disabled (410 Gone) and moves its
// pending deliveries to disabled; it returns how many it moved.
func (s *Store) DisableWebhookEndpoint(ctx context.Context, endpoint, reason string) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		const mark = `
INSERT INTO webhook_endpoint_state (endpoint_url, reason) VALUES ($1, $2)
ON CONFLICT (endpoint_url) DO UPDATE SET disabled_at = now(), reason = excluded.reason`
		if _, err := tx.Exec(ctx, mark, endpoint, reason); err != nil {
			return err
		}
		const move = `
UPDATE webhook_deliveries SET status = 'disabled', next_attempt_at = NULL, updated_at = now(),
	last_error = 'endpoint disabled: ' || $2
WHERE endpoint_url = $1 AND status = 'pending'`
		tag, err := tx.Exec(ctx, move, endpoint, reason)
		n = int(tag.RowsAffected())
		return err
	})
	return n, mapErr(err, "webhook endpoint")
}

// WebhookBacklog counts pending deliveries and dates the oldest (zero time
// when none).
func (s *Store) WebhookBacklog(ctx context.Context) (pending int, oldest time.Time, err error) {
	const q = `SELECT count(*), coalesce(min(created_at), 'epoch') FROM webhook_deliveries WHERE status = 'pending'`
	err = s.pool.QueryRow(ctx, q).Scan(&pending, &oldest)
	if pending == 0 {
		oldest = time.Time{}
	}
	return pending, oldest, mapErr(err, "webhook deliveries")
}

// StaleWebhookDelivery is a pending delivery whose next attempt is overdue.
type StaleWebhookDelivery struct {
	ID       int64
	OutboxID int64
	Endpoint string
	Replays  int
}

// StaleWebhookDeliveries lists up to limit pending deliveries whose next
// attempt was due more than overdue ago, with ids above afterID, in id
// order: a caller pages through a backlog larger than limit by passing the
// last id it saw.
func (s *Store) StaleWebhookDeliveries(ctx context.Context, overdue time.Duration, afterID int64, limit int) ([]StaleWebhookDelivery, error) {
	const q = `
SELECT id, outbox_id, endpoint_url, replays FROM webhook_deliveries
WHERE status = 'pending' AND next_attempt_at < now() - make_interval(secs => $1) AND id > $2
ORDER BY id LIMIT $3`
	rows, err := s.pool.Query(ctx, q, overdue.Seconds(), afterID, limit)
	if err != nil {
		return nil, mapErr(err, "webhook deliveries")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (StaleWebhookDelivery, error) {
		var d StaleWebhookDelivery
		return d, r.Scan(&d.ID, &d.OutboxID, &d.Endpoint, &d.Replays)
	})
	return out, mapErr(err, "webhook deliveries")
}

// WebhookDelivery is a delivery as operators see it.
type WebhookDelivery struct {
	ID        int64
	OutboxID  int64
	Endpoint  string
	WebhookID string
	Event     string
	Status    string
	Attempts  int
	Replays   int
	LastError string
	CreatedAt time.Time // first attempt
	UpdatedAt time.Time
	EventAt   time.Time // the event's outbox row
}

const deliveryColumns = `d.id, d.outbox_id, d.endpoint_url, d.webhook_id, d.event, d.status, d.attempts, d.replays,
	coalesce(d.last_error, ''), d.created_at, d.updated_at, o.created_at`

func scanDelivery(r pgx.CollectableRow) (WebhookDelivery, error) {
	var d WebhookDelivery
	return d, r.Scan(&d.ID, &d.OutboxID, &d.Endpoint, &d.WebhookID, &d.Event, &d.Status, &d.Attempts, &d.Replays,
		&d.LastError, &d.CreatedAt, &d.UpdatedAt, &d.EventAt)
}

// FailedWebhookDeliveries lists parked and disabled deliveries, oldest
// event first, at most limit.
func (s *Store) FailedWebhookDeliveries(ctx context.Context, limit int) ([]WebhookDelivery, error) {
	q := `SELECT ` + deliveryColumns + `
FROM webhook_deliveries d JOIN outbox o ON o.id = d.outbox_id
WHERE d.status IN ('parked', 'disabled')
ORDER BY d.outbox_id, d.id LIMIT $1`
	rows, err := s.pool.Query(ctx, q, limit)
	if err != nil {
		return nil, mapErr(err, "webhook deliveries")
	}
	out, err := pgx.CollectRows(rows, scanDelivery)
	return out, mapErr(err, "webhook deliveries")
}

// ReplayWebhookDelivery makes delivery id pending again, whatever its
// status, counts the replay and clears its endpoint's disabled mark, so
// the replayed task is attempted. It returns the delivery as replayed.
func (s *Store) ReplayWebhookDelivery(ctx context.Context, id int64) (WebhookDelivery, error) {
	var d WebhookDelivery
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		d, err = replay(ctx, tx, `d.id = $1`, id)
		if err == nil && d.ID == 0 {
			err = pgx.ErrNoRows
		}
		return err
	})
	return d, mapErr(err, "webhook delivery")
}

// ReplayWebhookDeliveries replays every parked or disabled delivery of an
// event written in [since, until) (a zero until: no end), at most limit.
func (s *Store) ReplayWebhookDeliveries(ctx context.Context, since, until time.Time, limit int) ([]WebhookDelivery, error) {
	var out []WebhookDelivery
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		const q = `
SELECT d.id FROM webhook_deliveries d JOIN outbox o ON o.id = d.outbox_id
WHERE d.status IN ('parked', 'disabled') AND o.created_at >= $1 AND ($2::timestamptz IS NULL OR o.created_at < $2)
ORDER BY d.outbox_id, d.id LIMIT $3
FOR UPDATE OF d`
		var untilArg *time.Time
		if !until.IsZero() {
			untilArg = &until
		}
		rows, err := tx.Query(ctx, q, since, untilArg, limit)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		for _, id := range ids {
			d, err := replay(ctx, tx, `d.id = $1`, id)
			if err != nil {
				return err
			}
			out = append(out, d)
		}
		return nil
	})
	return out, mapErr(err, "webhook deliveries")
}

func replay(ctx context.Context, tx pgx.Tx, where string, id int64) (WebhookDelivery, error) {
	q := `
WITH upd AS (
	UPDATE webhook_deliveries d SET status = 'pending', replays = replays + 1, round_start = attempts,
		-- a pending delivery due within two minutes (or being attempted: its
		-- claim, a minute from the claim) keeps its time, so a replay never
		-- runs beside an attempt; clock_timestamp, not the transaction's
		-- start, so a claim made meanwhile counts
		next_attempt_at = CASE WHEN d.status = 'pending' AND d.next_attempt_at <= clock_timestamp() + interval '2 minutes'
			THEN d.next_attempt_at ELSE now() END,
		updated_at = now()
	WHERE ` + where + `
	RETURNING d.*
)
SELECT ` + deliveryColumns + ` FROM upd d JOIN outbox o ON o.id = d.outbox_id`
	rows, err := tx.Query(ctx, q, id)
	if err != nil {
		return WebhookDelivery{}, err
	}
	ds, err := pgx.CollectRows(rows, scanDelivery)
	if err != nil || len(ds) == 0 {
		return WebhookDelivery{}, err
	}
	const clear = `DELETE FROM webhook_endpoint_state WHERE endpoint_url = $1`
	_, err = tx.Exec(ctx, clear, ds[0].Endpoint)
	return ds[0], err
}
