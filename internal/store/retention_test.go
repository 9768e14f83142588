package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
)

const day = 24 * time.Hour

// delivery writes a delivery of event to its own endpoint in status, last
// changed ago, with attempts attempt rows, and returns its id.
func delivery(t *testing.T, db *store.Store, event int64, status string, ago time.Duration, attempts int) int64 {
	t.Helper()
	ctx := context.Background()
	var id int64
	require.NoError(t, db.Pool().QueryRow(ctx, `
INSERT INTO webhook_deliveries (outbox_id, endpoint_url, webhook_id, event, status, attempts, updated_at, next_attempt_at)
VALUES ($1::bigint, 'https://' || gen_random_uuid() || '.example/h', 'msg_' || $1::bigint, 'swipe.recorded', $2::text, $3,
	now() - make_interval(secs => $4), CASE WHEN $2::text = 'pending' THEN now() END)
RETURNING id`, event, status, attempts, ago.Seconds()).Scan(&id))
	for i := range attempts {
		_, err := db.Pool().Exec(ctx, `INSERT INTO webhook_attempts (delivery_id, attempt, status_code, latency_ms) VALUES ($1, $2, 500, 3)`,
			id, i+1)
		require.NoError(t, err)
	}
	return id
}

func ids(t *testing.T, db *store.Store, q string) []int64 {
	t.Helper()
	rows, err := db.Pool().Query(context.Background(), q)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	return out
}

// Ended deliveries go after the retention with their attempts; pending
// and recent ones stay. Published events then go after 7 days once no
// delivery that may still be sent refers to them.
func TestRetentionDeletesEndedDeliveriesThenTheirEvents(t *testing.T) {
	ctx := context.Background()
	db := store.New(testutil.NewDB(t))
	const retention = 720 * time.Hour
	ev := insertEvents(t, db, uuid.NewString(), "swipe.recorded", "swipe.recorded", "swipe.recorded", "swipe.recorded",
		"swipe.recorded", "swipe.recorded", "swipe.recorded", "swipe.recorded")
	long, week := 40*day, 8*day
	age(t, db, long, &long, ev[0], ev[1], ev[2], ev[3], ev[4])
	age(t, db, week, &week, ev[5], ev[6])
	// ev[7] is new and unpublished.
	oldSucceeded := delivery(t, db, ev[0], "succeeded", 31*day, 2)
	oldParked := delivery(t, db, ev[1], "parked", 31*day, 9)
	oldDisabled := delivery(t, db, ev[2], "disabled", 35*day, 1)
	oldPending := delivery(t, db, ev[3], "pending", 31*day, 8) // still owed, however old
	recentParked := delivery(t, db, ev[4], "parked", 29*day, 9)
	recentSucceeded := delivery(t, db, ev[5], "succeeded", 7*day, 1)
	alsoOld := delivery(t, db, ev[5], "succeeded", 31*day, 1) // the same event to another endpoint
	fresh := delivery(t, db, ev[7], "pending", 0, 0)

	var deliveries, attempts []int
	for {
		d, a, err := db.DeleteFinalWebhookDeliveries(ctx, retention, 2)
		require.NoError(t, err)
		deliveries, attempts = append(deliveries, d), append(attempts, a)
		if d < 2 {
			break
		}
	}
	assert.Equal(t, []int{2, 2, 0}, deliveries, "two per statement")
	assert.Equal(t, 2+9+1+1, attempts[0]+attempts[1]+attempts[2])
	assert.ElementsMatch(t, []int64{oldPending, recentParked, recentSucceeded, fresh},
		ids(t, db, `SELECT id FROM webhook_deliveries`))
	assert.Zero(t, count(t, db, `SELECT count(*) FROM webhook_attempts WHERE delivery_id <> ALL($1)`,
		[]int64{oldPending, recentParked, recentSucceeded, fresh}))
	assert.Equal(t, 8+9+1, count(t, db, `SELECT count(*) FROM webhook_attempts`), "the attempts of what stays stay")
	_ = []int64{oldSucceeded, oldParked, oldDisabled, alsoOld}

	// The events: ev[0], ev[1], ev[2] lost their deliveries, ev[6] never had
	// one and ev[5]'s only delivery left succeeded: they go. ev[3] (pending)
	// and ev[4] (parked, replayable) stay, and so does the unpublished ev[7].
	n, _, err := db.DeletePublishedOutbox(ctx, 7*day, 100, time.Time{})
	require.NoError(t, err)
	assert.Equal(t, 5, n)
	assert.Equal(t, []int64{ev[3], ev[4], ev[7]}, outboxIDs(t, db))

	// The succeeded delivery's record outlives its event; it cannot be
	// replayed any more, and nothing is changed by trying.
	_, err = db.ReplayWebhookDelivery(ctx, recentSucceeded)
	assert.Equal(t, domain.KindNotFound, domain.KindOf(err))
	var status string
	require.NoError(t, db.Pool().QueryRow(ctx, `SELECT status FROM webhook_deliveries WHERE id = $1`, recentSucceeded).Scan(&status))
	assert.Equal(t, "succeeded", status)
	// The parked one still can.
	d, err := db.ReplayWebhookDelivery(ctx, recentParked)
	require.NoError(t, err)
	assert.Equal(t, "pending", d.Status)

	_, _, err = db.DeleteFinalWebhookDeliveries(ctx, 0, 10)
	assert.Error(t, err)
	_, _, err = db.DeleteFinalWebhookDeliveries(ctx, retention, 0)
	assert.Error(t, err)
}

// A replay that holds its event keeps the pruning off it: the pruning
// skips the row rather than wait, and takes it on a later pass only if the
// delivery ended again.
func TestPruningSkipsAnEventAReplayHolds(t *testing.T) {
	ctx := context.Background()
	db := store.New(testutil.NewDB(t))
	ev := insertEvents(t, db, uuid.NewString(), "swipe.recorded")
	week := 8 * day
	age(t, db, week, &week, ev...)
	id := delivery(t, db, ev[0], "succeeded", day, 1)

	tx, err := db.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `UPDATE webhook_deliveries d SET status = 'pending' WHERE id = $1
		AND EXISTS (SELECT 1 FROM outbox o WHERE o.id = d.outbox_id FOR KEY SHARE)`, id)
	require.NoError(t, err)
	dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	n, _, err := db.DeletePublishedOutbox(dctx, 7*day, 10, time.Time{})
	require.NoError(t, err, "must not wait for the held row")
	assert.Zero(t, n)
	require.NoError(t, tx.Commit(ctx))
	n, _, err = db.DeletePublishedOutbox(ctx, 7*day, 10, time.Time{})
	require.NoError(t, err)
	assert.Zero(t, n, "a pending delivery needs its event")
}

// The deletions, the lookups of a student's data and the operator's
// webhook lists read indexes, not whole tables: with sequential scans
// priced out, no plan holds one on a table that grows with the traffic.
func TestRetentionAndStudentLookupsUseIndexes(t *testing.T) {
	ctx := context.Background()
	db := store.New(testutil.NewDB(t))
	student := uuid.NewString()
	conn, err := db.Pool().Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, `SET enable_seqscan = off`)
	require.NoError(t, err)
	defer func() { _, _ = conn.Exec(ctx, `RESET enable_seqscan`) }()

	queries := map[string]struct {
		sql  string
		args []any
	}{
		"ended deliveries":  {store.DeleteFinalDeliveriesSQL, []any{float64(3600), 10}},
		"published events":  {store.DeletePublishedOutboxSQL, []any{float64(3600), 10, time.Time{}}},
		"export events":     {store.ExportOutboxSQL, []any{student}},
		"export deliveries": {store.ExportDeliveriesSQL, []any{student}},
		"lock events":       {store.LockEventsSQL, []any{student}},
		"erase events":      {store.DeleteEventsSQL, []any{[]int64{1, 2}}},
		"anonymise swipes":  {store.AnonymiseSwipesSQL, []any{student}},
		"failed deliveries": {store.FailedDeliveriesSQL, []any{10}},
		"replay failed":     {store.ReplayFailedSQL, []any{time.Time{}, nil, 10, ""}},
		"replay endpoint's": {store.ReplayFailedSQL, []any{time.Time{}, nil, 10, "https://a.example/h"}},
		"webhook backlog":   {store.WebhookBacklogSQL, nil},
	}
	for name, f := range map[string]store.WebhookAttemptFilter{
		"attempts of a student": {StudentID: student},
		"attempts of an event":  {OutboxID: 7},
		"attempts of an id":     {OutboxID: 7, WebhookID: "msg_7_abc"},
	} {
		sql, args := store.AttemptLogQuery(f, 100)
		queries[name] = struct {
			sql  string
			args []any
		}{sql, args}
	}
	for name, q := range queries {
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		rows, err := tx.Query(ctx, "EXPLAIN "+q.sql, q.args...)
		require.NoError(t, err, name)
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err, name)
		require.NoError(t, tx.Rollback(ctx))
		plan := strings.Join(lines, "\n")
		for _, table := range []string{"outbox", "webhook_deliveries", "webhook_attempts", "swipes"} {
			assert.NotContains(t, plan, "Seq Scan on "+table+" ", "%s:\n%s", name, plan)
		}
	}
}
