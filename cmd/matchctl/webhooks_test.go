package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/webhook"
)

// failedDelivery stores a swipe.recorded event written at eventAt and its
// delivery to url with status, and returns the delivery id.
func failedDelivery(t *testing.T, e *studentsEnv, url, status string, eventAt time.Time) (int64, int64) {
	t.Helper()
	ctx := context.Background()
	pool, err := store.Open(ctx, e.dbURL)
	require.NoError(t, err)
	defer pool.Close()
	var outboxID, id int64
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `INSERT INTO outbox (topic, student_id, payload, created_at, published_at)
VALUES ('swipe.recorded', $1, '{"student_id":"x"}', $2, $2) RETURNING id`, e.student, eventAt).Scan(&outboxID); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `INSERT INTO webhook_deliveries (outbox_id, endpoint_url, webhook_id, event, status, attempts, last_error)
VALUES ($1, $2, $3, 'swipe.recorded', $4, 9, 'HTTP 502: bad gateway') RETURNING id`,
			outboxID, url, webhook.MessageID(outboxID, url), status).Scan(&id)
	}))
	if status == "disabled" {
		_, err := pool.Exec(ctx, `INSERT INTO webhook_endpoint_state (endpoint_url, reason) VALUES ($1, '410') ON CONFLICT DO NOTHING`, url)
		require.NoError(t, err)
	}
	return outboxID, id
}

func TestWebhooksFailedAndReplay(t *testing.T) {
	e := newStudentsEnv(t)
	ctx := context.Background()
	const url = "https://user:pw@hooks.example.com/in?token=secret"
	now := time.Now()
	oldOutbox, parked := failedDelivery(t, e, url, "parked", now.Add(-30*time.Hour))
	newOutbox, disabled := failedDelivery(t, e, "https://gone.example.com/x", "disabled", now.Add(-time.Hour))

	code, out, errOut := e.run(t, "webhooks", "failed")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "ID")
	assert.Contains(t, out, strconv.FormatInt(parked, 10))
	assert.Contains(t, out, "https://hooks.example.com/in")
	assert.NotContains(t, out, "secret", "no credentials or query in the listing")
	assert.NotContains(t, out, "pw@")
	assert.Contains(t, out, webhook.MessageID(oldOutbox, url))
	assert.Contains(t, out, "HTTP 502: bad gateway")
	assert.Contains(t, out, "30h0m0s")
	assert.Contains(t, out, "disabled")

	// Replay one by id: pending again, a new task with the replay's id.
	code, out, errOut = e.run(t, "webhooks", "replay", strconv.FormatInt(parked, 10))
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "1 deliveries replayed")
	insp := asynq.NewInspectorFromRedisClient(e.rdb)
	info, err := insp.GetTaskInfo(tasks.QueueWebhooks, tasks.WebhookTaskID(oldOutbox, url, 1))
	require.NoError(t, err)
	assert.Equal(t, tasks.TypeWebhookDeliver, info.Type)
	var status string
	var replays int
	require.NoError(t, e.st.Pool().QueryRow(ctx, `SELECT status, replays FROM webhook_deliveries WHERE id = $1`, parked).Scan(&status, &replays))
	assert.Equal(t, "pending", status)
	assert.Equal(t, 1, replays)

	// Replay by time range: only the event written in range; the endpoint is re-enabled.
	code, out, errOut = e.run(t, "webhooks", "replay", "--since", "2h")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "1 deliveries replayed")
	_, err = insp.GetTaskInfo(tasks.QueueWebhooks, tasks.WebhookTaskID(newOutbox, "https://gone.example.com/x", 1))
	require.NoError(t, err)
	var n int
	require.NoError(t, e.st.Pool().QueryRow(ctx, `SELECT count(*) FROM webhook_endpoint_state`).Scan(&n))
	assert.Zero(t, n, "a replay re-enables the endpoint")
	require.NoError(t, e.st.Pool().QueryRow(ctx, `SELECT status FROM webhook_deliveries WHERE id = $1`, disabled).Scan(&status))
	assert.Equal(t, "pending", status)

	code, out, _ = e.run(t, "webhooks", "failed")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "no parked or disabled webhook deliveries")

	// A second replay of the same delivery is another task.
	code, _, errOut = e.run(t, "webhooks", "replay", strconv.FormatInt(parked, 10))
	require.Equal(t, 0, code, errOut)
	_, err = insp.GetTaskInfo(tasks.QueueWebhooks, tasks.WebhookTaskID(oldOutbox, url, 2))
	require.NoError(t, err)
}

func TestWebhooksUsage(t *testing.T) {
	e := newStudentsEnv(t)
	for _, args := range [][]string{
		{"webhooks"},
		{"webhooks", "nope"},
		{"webhooks", "replay"},
		{"webhooks", "replay", "abc"},
		{"webhooks", "replay", "1", "--since", "1h"},
		{"webhooks", "replay", "--until", "1h"},
		{"webhooks", "replay", "--since", "yesterday"},
		{"webhooks", "replay", "--since", "1h", "--until", "2h"},
		{"webhooks", "failed", "--limit", "0"},
		{"webhooks", "failed", "--since", "1h"},
	} {
		code, _, errOut := e.run(t, args...)
		assert.Equal(t, 2, code, "%v: %s", args, errOut)
		assert.True(t, strings.Contains(errOut, "usage"), errOut)
	}
	code, _, errOut := e.run(t, "webhooks", "replay", "999999")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "webhook delivery 999999 not found")
}

// Errors recorded by an older build, which named the endpoint with its
// token and quoted the subscriber's raw bytes, are scrubbed wherever they
// are shown: `webhooks failed` and a student's export (the answer to a
// family's data request).
func TestWebhookErrorsShownWithoutSecrets(t *testing.T) {
	e := newStudentsEnv(t)
	ctx := context.Background()
	const url = "http://hookuser:SECRET@127.0.0.1:4/hook?token=SECRET"
	_, id := failedDelivery(t, e, url, "parked", time.Now().Add(-time.Hour))
	const leaked = `Post "http://hookuser:SECRET@127.0.0.1:4/hook?token=SECRET": HTTP 500: MARKER ` + "\x1b[31m boom"
	_, err := e.st.Pool().Exec(ctx, `UPDATE webhook_deliveries SET last_error = $2 WHERE id = $1`, id, leaked)
	require.NoError(t, err)
	_, err = e.st.Pool().Exec(ctx, `INSERT INTO webhook_attempts (delivery_id, attempt, latency_ms, error) VALUES ($1, 1, 5, $2)`, id, leaked)
	require.NoError(t, err)

	code, failed, errOut := e.run(t, "webhooks", "failed")
	require.Equal(t, 0, code, errOut)
	code, export, errOut := e.run(t, "students", "export", e.student)
	require.Equal(t, 0, code, errOut)
	for what, out := range map[string]string{"webhooks failed": failed, "students export": export} {
		assert.Contains(t, out, "MARKER", what)
		assert.NotContains(t, out, "SECRET", what)
		assert.NotContains(t, out, "hookuser", what)
		assert.NotContains(t, out, "\x1b", what)
		assert.NotContains(t, out, `\u001b`, what)
	}
	assert.Contains(t, export, `"endpoint": "http://127.0.0.1:4/hook"`)
	assert.Contains(t, export, `\\x1b[31m boom`, "escaped, as the service records it now")
}
