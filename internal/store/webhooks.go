package store

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/collegematch/matching/internal/domain"
)

// BeginWebhookDelivery claims the next attempt of the delivery of outbox
// row outboxID to endpoint, and returns the delivery with its event, in one
// round trip. A pending delivery due now (within slack, for clocks apart)
// is claimed: its next attempt is moved lease ahead, so another task for
// the same delivery (a duplicate queued during a deploy, or by the monitor
// for a task that was only late) finds it not due and makes no attempt
// meanwhile; recording the attempt sets the real next time. A delivery
// without a row (a task queued by an older build) gets one, claimed, once
// no relay holds its event (a relay making the event's first attempts
// writes the row itself). A domain.KindNotFound error means the outbox
// row is gone.
func (s *Store) BeginWebhookDelivery(ctx context.Context, k domain.DeliveryKey) (domain.WebhookDelivery, error) {
	outboxID, endpoint, webhookID := k.OutboxID, k.Endpoint, k.MessageID
	lease, slack := domain.WebhookLease, domain.WebhookClockSlack
	const q = `
WITH ev AS (
	SELECT id, topic, payload, created_at FROM outbox WHERE id = $1
), lk AS (
	-- Only when the delivery has no row: the event's row is locked, so a
	-- relay that holds it (making the first attempt itself) is waited for,
	-- and its delivery found, rather than attempted beside it.
	SELECT id, topic FROM outbox WHERE id = $1
		AND NOT EXISTS (SELECT 1 FROM webhook_deliveries WHERE outbox_id = $1 AND endpoint_url = $2)
	FOR KEY SHARE
), ins AS (
	INSERT INTO webhook_deliveries (outbox_id, endpoint_url, webhook_id, event, next_attempt_at)
	SELECT id, $2, $3, topic, now() + make_interval(secs => $4) FROM lk
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
		d    domain.WebhookDelivery
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

// RecordWebhookAttempt adds an attempt row (numbered after the delivery's
// previous attempts) and moves the delivery to status with its next
// attempt at next (zero time: none), in one transaction. A delivery that
// is no longer pending (another attempt or an endpoint's 410 ended it)
// keeps its status, unless this attempt succeeded. replays is the
// delivery's replay count when the attempt was claimed: if an operator
// replayed it since, a failed attempt leaves it pending and due now, for
// the replay's fresh round, instead of parking it or scheduling the old
// round's wait.
func (s *Store) RecordWebhookAttempt(ctx context.Context, deliveryID int64, a domain.WebhookAttempt, status string, next time.Time, replays int) error {
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
	tag, err := s.pool.Exec(ctx, q, deliveryID, status, nextAt, domain.ScrubError(a.Error), code, a.Latency.Milliseconds(), replays)
	if err == nil && tag.RowsAffected() == 0 {
		err = pgx.ErrNoRows
	}
	return mapErr(err, "webhook delivery")
}

// RecordWebhookAttempts records many attempts, each as
// RecordWebhookAttempt records one, in one statement: the worker's
// delivery slots hand their first attempts' results over together (group
// commit). It reports which deliveries were recorded: one whose row is not
// there (not committed yet, or gone) is not. A delivery must appear once.
func (s *Store) RecordWebhookAttempts(ctx context.Context, recs []domain.AttemptRecord) (map[int64]bool, error) {
	const q = `
WITH v AS (
	SELECT * FROM unnest($1::bigint[], $2::text[], $3::timestamptz[], $4::text[], $5::int[], $6::int[], $7::int[])
		AS v(id, status, next_at, err, code, latency, replays)
), upd AS (
	UPDATE webhook_deliveries d SET
		attempts = d.attempts + 1,
		status = CASE WHEN v.status = 'succeeded' THEN v.status WHEN d.status <> 'pending' THEN d.status
			WHEN d.replays <> v.replays THEN 'pending' ELSE v.status END,
		next_attempt_at = CASE WHEN v.status = 'succeeded' THEN v.next_at WHEN d.status <> 'pending' THEN d.next_attempt_at
			WHEN d.replays <> v.replays THEN now() ELSE v.next_at END,
		last_error = CASE WHEN v.status = 'succeeded' THEN d.last_error ELSE nullif(v.err, '') END,
		updated_at = now()
	FROM v WHERE d.id = v.id
	RETURNING d.id, d.attempts, v.code, v.latency, v.err
), ins AS (
	INSERT INTO webhook_attempts (delivery_id, attempt, status_code, latency_ms, error)
	SELECT id, attempts, code, latency, nullif(err, '') FROM upd
	RETURNING delivery_id
)
SELECT delivery_id FROM ins`
	n := len(recs)
	ids, statuses, nexts, errs := make([]int64, n), make([]string, n), make([]*time.Time, n), make([]string, n)
	codes, latencies, replays := make([]*int32, n), make([]int32, n), make([]int32, n)
	for i, r := range recs {
		ids[i], statuses[i], errs[i] = r.DeliveryID, r.Status, domain.ScrubError(r.Attempt.Error)
		if !r.Next.IsZero() {
			nexts[i] = &recs[i].Next
		}
		if r.Attempt.StatusCode != 0 {
			c := int32(r.Attempt.StatusCode)
			codes[i] = &c
		}
		latencies[i], replays[i] = int32(r.Attempt.Latency.Milliseconds()), int32(r.Replays)
	}
	rows, err := s.pool.Query(ctx, q, ids, statuses, nexts, errs, codes, latencies, replays)
	if err != nil {
		return nil, mapErr(err, "webhook deliveries")
	}
	done := make(map[int64]bool, n)
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, mapErr(err, "webhook deliveries")
		}
		done[id] = true
	}
	return done, mapErr(rows.Err(), "webhook deliveries")
}

// SetWebhookDeliveryStatus moves a pending delivery to status without an
// attempt (its endpoint is disabled or no longer configured).
func (s *Store) SetWebhookDeliveryStatus(ctx context.Context, deliveryID int64, status, lastError string) error {
	const q = `
UPDATE webhook_deliveries SET status = $2, last_error = $3, next_attempt_at = NULL, updated_at = now()
WHERE id = $1 AND status = 'pending'`
	_, err := s.pool.Exec(ctx, q, deliveryID, status, domain.ScrubError(lastError))
	return mapErr(err, "webhook delivery")
}

// DisableWebhookEndpoint marks endpoint disabled (410 Gone) and moves its
// pending deliveries to disabled; it returns how many it moved.
func (s *Store) DisableWebhookEndpoint(ctx context.Context, endpoint, reason string) (int, error) {
	var n int
	reason = domain.ScrubError(reason)
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

// webhookBacklog reads webhook_deliveries_pending_idx.
const webhookBacklog = `SELECT count(*), coalesce(min(created_at), 'epoch') FROM webhook_deliveries WHERE status = 'pending'`

// WebhookBacklog counts pending deliveries and dates the oldest (zero time
// when none).
func (s *Store) WebhookBacklog(ctx context.Context) (pending int, oldest time.Time, err error) {
	err = s.pool.QueryRow(ctx, webhookBacklog).Scan(&pending, &oldest)
	if pending == 0 {
		oldest = time.Time{}
	}
	return pending, oldest, mapErr(err, "webhook deliveries")
}

// StaleWebhookDeliveries lists up to limit pending deliveries whose next
// attempt was due more than overdue ago, with ids above afterID, in id
// order: a caller pages through a backlog larger than limit by passing the
// last id it saw.
func (s *Store) StaleWebhookDeliveries(ctx context.Context, overdue time.Duration, afterID int64, limit int) ([]domain.StaleDelivery, error) {
	const q = `
SELECT id, outbox_id, endpoint_url, replays FROM webhook_deliveries
WHERE status = 'pending' AND next_attempt_at < now() - make_interval(secs => $1) AND id > $2
ORDER BY id LIMIT $3`
	rows, err := s.pool.Query(ctx, q, overdue.Seconds(), afterID, limit)
	if err != nil {
		return nil, mapErr(err, "webhook deliveries")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.StaleDelivery, error) {
		var d domain.StaleDelivery
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

// scanDelivery reads a delivery; its last error is scrubbed again
// (domain.ScrubError), whenever it was written.
func scanDelivery(r pgx.CollectableRow) (WebhookDelivery, error) {
	var d WebhookDelivery
	err := r.Scan(&d.ID, &d.OutboxID, &d.Endpoint, &d.WebhookID, &d.Event, &d.Status, &d.Attempts, &d.Replays,
		&d.LastError, &d.CreatedAt, &d.UpdatedAt, &d.EventAt)
	d.LastError = domain.ScrubError(d.LastError)
	return d, err
}

// failedDeliveries reads webhook_deliveries_failed_idx, which holds the
// parked and disabled deliveries only.
const failedDeliveries = `SELECT ` + deliveryColumns + `
FROM webhook_deliveries d JOIN outbox o ON o.id = d.outbox_id
WHERE d.status IN ('parked', 'disabled')
ORDER BY d.outbox_id, d.id LIMIT $1`

// FailedWebhookDeliveries lists parked and disabled deliveries, oldest
// event first, at most limit.
func (s *Store) FailedWebhookDeliveries(ctx context.Context, limit int) ([]WebhookDelivery, error) {
	rows, err := s.pool.Query(ctx, failedDeliveries, limit)
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

// replayFailedDeliveries picks the failed deliveries of events written in
// [$1, $2) through webhook_deliveries_failed_idx.
const replayFailedDeliveries = `
SELECT d.id FROM webhook_deliveries d JOIN outbox o ON o.id = d.outbox_id
WHERE d.status IN ('parked', 'disabled') AND o.created_at >= $1 AND ($2::timestamptz IS NULL OR o.created_at < $2)
	AND ($4 = '' OR d.endpoint_url = $4)
ORDER BY d.outbox_id, d.id LIMIT $3
FOR UPDATE OF d`

// ReplayWebhookDeliveries replays every parked or disabled delivery of an
// event written in [since, until) (a zero until: no end), to endpoint (its
// URL; empty: every endpoint), at most limit.
func (s *Store) ReplayWebhookDeliveries(ctx context.Context, since, until time.Time, endpoint string, limit int) ([]WebhookDelivery, error) {
	var out []WebhookDelivery
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var untilArg *time.Time
		if !until.IsZero() {
			untilArg = &until
		}
		rows, err := tx.Query(ctx, replayFailedDeliveries, since, untilArg, limit, endpoint)
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

// replay makes the deliveries where selects pending again. A delivery
// whose event is gone (retention deletes the events of succeeded
// deliveries after 7 days) is left alone: the event's row is locked first
// (KEY SHARE), so the pruning skips a row a replay is taking and a replay
// finds no row the pruning has taken.
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
		AND EXISTS (SELECT 1 FROM outbox o WHERE o.id = d.outbox_id FOR KEY SHARE)
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

// WebhookEventExists reports whether outbox row outboxID is still there
// (one primary-key read): DeleteStudent deletes an erased student's events
// with their deliveries, and a first attempt that carries its event checks
// this before it starts.
func (s *Store) WebhookEventExists(ctx context.Context, outboxID int64) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM outbox WHERE id = $1)`, outboxID).Scan(&ok)
	return ok, mapErr(err, "outbox event")
}

// WebhookEndpointState is an endpoint's delivery state as operators see it
// (matchctl webhooks endpoints), from the deliveries and attempts kept
// (WEBHOOK_RETENTION).
type WebhookEndpointState struct {
	Endpoint     string
	LastSuccess  time.Time // the last delivery that succeeded; zero: none kept
	FailingSince time.Time // the first failed attempt after LastSuccess; zero: none
	Pending      int       // deliveries not yet delivered and still being attempted
	Failed       int       // deliveries parked or disabled (matchctl webhooks replay)
	DisabledAt   time.Time // disabled after a 410 Gone; zero: enabled
	Reason       string    // why it was disabled
}

// webhookEndpointStates reads every kept delivery and its attempts once:
// an operator's command, bounded by the retention of ended deliveries.
const webhookEndpointStates = `
WITH d AS (
	SELECT endpoint_url,
		count(*) FILTER (WHERE status = 'pending') AS pending,
		count(*) FILTER (WHERE status IN ('parked', 'disabled')) AS failed,
		max(updated_at) FILTER (WHERE status = 'succeeded') AS last_ok
	FROM webhook_deliveries GROUP BY endpoint_url
), f AS (
	SELECT d.endpoint_url, min(a.created_at) AS failing_since
	FROM d JOIN webhook_deliveries wd ON wd.endpoint_url = d.endpoint_url
	JOIN webhook_attempts a ON a.delivery_id = wd.id
	WHERE (a.status_code IS NULL OR a.status_code NOT BETWEEN 200 AND 299)
		AND (d.last_ok IS NULL OR a.created_at > d.last_ok)
	GROUP BY d.endpoint_url
)
SELECT coalesce(d.endpoint_url, s.endpoint_url), d.last_ok, f.failing_since,
	coalesce(d.pending, 0), coalesce(d.failed, 0), s.disabled_at, coalesce(s.reason, '')
FROM d FULL JOIN webhook_endpoint_state s ON s.endpoint_url = d.endpoint_url
LEFT JOIN f ON f.endpoint_url = coalesce(d.endpoint_url, s.endpoint_url)
ORDER BY 1`

// WebhookEndpointStates returns the state of every endpoint that has
// deliveries kept or is disabled, by URL.
func (s *Store) WebhookEndpointStates(ctx context.Context) (map[string]WebhookEndpointState, error) {
	rows, err := s.pool.Query(ctx, webhookEndpointStates)
	if err != nil {
		return nil, mapErr(err, "webhook endpoints")
	}
	out := map[string]WebhookEndpointState{}
	for rows.Next() {
		var (
			st                      WebhookEndpointState
			lastOK, failing, disabl *time.Time
		)
		if err := rows.Scan(&st.Endpoint, &lastOK, &failing, &st.Pending, &st.Failed, &disabl, &st.Reason); err != nil {
			rows.Close()
			return nil, mapErr(err, "webhook endpoints")
		}
		for _, p := range []struct {
			dst *time.Time
			src *time.Time
		}{{&st.LastSuccess, lastOK}, {&st.FailingSince, failing}, {&st.DisabledAt, disabl}} {
			if p.src != nil {
				*p.dst = *p.src
			}
		}
		st.Reason = domain.ScrubError(st.Reason)
		out[st.Endpoint] = st
	}
	return out, mapErr(rows.Err(), "webhook endpoints")
}

// EnableWebhookEndpoint clears endpoint's disabled mark (a 410 Gone) so its
// new deliveries are attempted again; its deliveries disabled meanwhile
// stay disabled until replayed. It reports whether the endpoint was
// disabled, and how many of its deliveries are disabled.
func (s *Store) EnableWebhookEndpoint(ctx context.Context, endpoint string) (wasDisabled bool, disabledDeliveries int, err error) {
	const q = `
WITH del AS (DELETE FROM webhook_endpoint_state WHERE endpoint_url = $1 RETURNING 1)
SELECT EXISTS (SELECT 1 FROM del),
	(SELECT count(*) FROM webhook_deliveries WHERE endpoint_url = $1 AND status = 'disabled')`
	err = s.pool.QueryRow(ctx, q, endpoint).Scan(&wasDisabled, &disabledDeliveries)
	return wasDisabled, disabledDeliveries, mapErr(err, "webhook endpoint")
}

// WebhookAttemptFilter selects attempts for WebhookAttemptLog; empty
// fields select everything.
type WebhookAttemptFilter struct {
	Endpoint  string // the endpoint's URL
	OutboxID  int64  // the event
	WebhookID string // the delivery's webhook-id
	StudentID string // the events of this student
}

// WebhookAttemptEntry is one attempt as operators see it.
type WebhookAttemptEntry struct {
	At         time.Time
	Attempt    int // its number in its delivery
	StatusCode int // 0: no response
	Latency    time.Duration
	Error      string
	DeliveryID int64
	OutboxID   int64
	Endpoint   string
	WebhookID  string
	Event      string
	Status     string // the delivery's status now
}

// WebhookAttemptLog lists the attempts filter selects, newest first, at
// most limit. An event, webhook-id or student picks its few deliveries
// through their indexes first (outbox_id; a webhook-id names its event:
// msg_<outbox id>_...; outbox_student_idx), then their attempts; an
// endpoint alone, or nothing, reads the attempts newest first until limit.
func (s *Store) WebhookAttemptLog(ctx context.Context, f WebhookAttemptFilter, limit int) ([]WebhookAttemptEntry, error) {
	if f.WebhookID != "" && f.OutboxID == 0 {
		if id, ok := webhookIDOutbox(f.WebhookID); ok {
			f.OutboxID = id
		}
	}
	q, args := attemptLogQuery(f, limit)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, mapErr(err, "webhook attempts")
	}
	out, err := pgx.CollectRows(rows, scanAttemptEntry)
	return out, mapErr(err, "webhook attempts")
}

// attemptLogQuery is WebhookAttemptLog's statement for f, with only the
// conditions f sets (so that each filter gets a plan of its own).
func attemptLogQuery(f WebhookAttemptFilter, limit int) (string, []any) {
	var (
		conds []string
		args  = []any{limit}
	)
	arg := func(cond string, v any) {
		args = append(args, v)
		conds = append(conds, strings.ReplaceAll(cond, "$?", "$"+strconv.Itoa(len(args))))
	}
	from := `webhook_deliveries d`
	if f.StudentID != "" {
		from = `outbox o JOIN webhook_deliveries d ON d.outbox_id = o.id`
		arg(`o.student_id = $?::uuid`, f.StudentID)
	}
	if f.OutboxID != 0 {
		arg(`d.outbox_id = $?`, f.OutboxID)
	}
	if f.WebhookID != "" {
		arg(`d.webhook_id = $?`, f.WebhookID)
	}
	if f.Endpoint != "" {
		arg(`d.endpoint_url = $?`, f.Endpoint)
	}
	where := "true"
	if len(conds) > 0 {
		where = strings.Join(conds, " AND ")
	}
	const cols = `a.created_at, a.attempt, coalesce(a.status_code, 0), a.latency_ms, coalesce(a.error, ''),
	d.id, d.outbox_id, d.endpoint_url, d.webhook_id, d.event, d.status`
	q := `SELECT ` + cols + `
FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
WHERE ` + where + `
ORDER BY a.id DESC LIMIT $1`
	if f.OutboxID != 0 || f.WebhookID != "" || f.StudentID != "" {
		// A few deliveries: found first, so the plan does not walk every
		// attempt newest first looking for theirs.
		q = `WITH d AS MATERIALIZED (SELECT d.* FROM ` + from + ` WHERE ` + where + `)
SELECT ` + cols + `
FROM d JOIN LATERAL (SELECT * FROM webhook_attempts a WHERE a.delivery_id = d.id) a ON true
ORDER BY a.id DESC LIMIT $1`
	}
	return q, args
}

func scanAttemptEntry(r pgx.CollectableRow) (WebhookAttemptEntry, error) {
	var (
		e  WebhookAttemptEntry
		ms int64
	)
	err := r.Scan(&e.At, &e.Attempt, &e.StatusCode, &ms, &e.Error, &e.DeliveryID, &e.OutboxID, &e.Endpoint,
		&e.WebhookID, &e.Event, &e.Status)
	e.Latency = time.Duration(ms) * time.Millisecond
	e.Error = domain.ScrubError(e.Error)
	return e, err
}

// webhookIDOutbox reads the event's id from a delivery's webhook-id,
// msg_<outbox id>_<endpoint key> (webhook.MessageID).
func webhookIDOutbox(webhookID string) (int64, bool) {
	rest, ok := strings.CutPrefix(webhookID, "msg_")
	if !ok {
		return 0, false
	}
	num, _, _ := strings.Cut(rest, "_")
	id, err := strconv.ParseInt(num, 10, 64)
	return id, err == nil && id > 0
}
