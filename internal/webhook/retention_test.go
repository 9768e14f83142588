package webhook_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/testutil"
	"github.com/collegematch/matching/internal/webhook"
)

// ended writes a delivery of event in status, last changed ago, with one
// attempt.
func (e *env) ended(t *testing.T, event int64, endpoint, status string, ago time.Duration) {
	t.Helper()
	_, err := e.db.Pool().Exec(context.Background(), `
WITH d AS (
	INSERT INTO webhook_deliveries (outbox_id, endpoint_url, webhook_id, event, status, attempts, updated_at)
	VALUES ($1, $2, 'msg_' || $1::bigint, 'swipe.recorded', $3, 1, now() - make_interval(secs => $4))
	RETURNING id
)
INSERT INTO webhook_attempts (delivery_id, attempt, latency_ms) SELECT id, 1, 4 FROM d`, event, endpoint, status, ago.Seconds())
	require.NoError(t, err)
}

// The retention loop deletes ended deliveries past WEBHOOK_RETENTION in
// batches, one replica per pass; the relay's pruning then deletes their
// events, and nothing a pending delivery needs.
func TestRetentionDeletesEndedDeliveriesOneReplicaAtATime(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	const day = 24 * time.Hour
	ids := e.write(t, swipes(6)...)
	old := 40 * day
	e.setAge(t, old, &old, ids...)
	for i, status := range []string{"succeeded", "parked", "disabled", "succeeded"} {
		e.ended(t, ids[i], hookURLs[0], status, 31*day)
	}
	e.ended(t, ids[4], hookURLs[0], "parked", 10*day) // within the retention
	e.ended(t, ids[5], hookURLs[0], "pending", 31*day)

	reg := prometheus.NewRegistry()
	cfg := webhook.RetentionConfig{Deliveries: 30 * day, Interval: time.Second, BatchSize: 3}
	r := webhook.NewRetention(testutil.Logger(t), e.db, handover.NewLeader(e.rdb, "a"), reg, cfg)
	other := webhook.NewRetention(testutil.Logger(t), e.db, handover.NewLeader(e.rdb, "b"), prometheus.NewRegistry(), cfg)
	n, err := r.Pass(ctx)
	require.NoError(t, err)
	assert.Equal(t, 4, n, "in two statements of at most 3")
	n, err = other.Pass(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "another replica leads this pass")
	assert.Equal(t, 4.0, value(t, reg, "matching_webhook_deliveries_deleted_total"))
	assert.Equal(t, 4.0, value(t, reg, "matching_webhook_attempts_deleted_total"))
	assert.Equal(t, 1.0, value(t, reg, "matching_retention_passes_total", "result", "ok"))

	var left []string
	rows, err := e.db.Pool().Query(ctx, `SELECT status FROM webhook_deliveries ORDER BY outbox_id`)
	require.NoError(t, err)
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		left = append(left, s)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []string{"parked", "pending"}, left)

	deleted, err := e.relay(t, e.queue, webhook.RelayConfig{}).Prune(ctx)
	require.NoError(t, err)
	assert.Equal(t, 4, deleted)
	assert.Equal(t, []int64{ids[4], ids[5]}, e.outboxIDs(t), "the events a parked or pending delivery needs stay")

	// A retention below the floor is raised to it: a delivery that ended a
	// day ago stays.
	recent := e.write(t, swipes(1)...)
	e.ended(t, recent[0], hookURLs[1], "succeeded", day)
	short := webhook.NewRetention(testutil.Logger(t), e.db, handover.NewLeader(e.rdb, "c"), prometheus.NewRegistry(),
		webhook.RetentionConfig{Deliveries: time.Hour, Interval: time.Millisecond})
	require.NoError(t, e.rdb.Del(ctx, "lead:retention").Err())
	n, err = short.Pass(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the parked delivery that ended 10 days ago; not the one of a day ago (the floor is 48 h)")
}
