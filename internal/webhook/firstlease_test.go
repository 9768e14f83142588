package webhook_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/webhook"
)

// The lease of a first attempt is the base while first attempts start on
// time, grows by twice how late they start, halves that growth every 30 s
// without a later one, and never passes the ceiling.
func TestFirstLeaseFollowsLateFirstAttempts(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	observe, next := webhook.FirstLease(30*time.Second, 10*time.Minute)
	assert.Equal(t, 30*time.Second, next(t0), "nothing late: the base")

	observe(t0, 2*time.Second)
	assert.Equal(t, 34*time.Second, next(t0))
	observe(t0, 40*time.Second)
	observe(t0, 10*time.Second) // a lesser lateness does not lower it
	assert.Equal(t, 110*time.Second, next(t0))
	assert.Equal(t, 110*time.Second, next(t0.Add(29*time.Second)))
	assert.Equal(t, 70*time.Second, next(t0.Add(30*time.Second)), "halved after 30 s")
	assert.Equal(t, 50*time.Second, next(t0.Add(60*time.Second)))
	assert.Equal(t, 30*time.Second, next(t0.Add(time.Hour)), "back to the base")

	// On-time attempts after a late one do not hold its peak up.
	observe, next = webhook.FirstLease(30*time.Second, 10*time.Minute)
	observe(t0, 40*time.Second)
	observe(t0.Add(20*time.Second), 0)
	observe(t0.Add(25*time.Second), time.Second)
	assert.Equal(t, 70*time.Second, next(t0.Add(35*time.Second)), "halved 30 s after the late one")
	observe(t0.Add(40*time.Second), 30*time.Second) // later and later: the new peak
	assert.Equal(t, 90*time.Second, next(t0.Add(41*time.Second)))

	observe(t0, time.Hour)
	assert.Equal(t, 10*time.Minute, next(t0), "at most the ceiling")
	observe, next = webhook.FirstLease(30*time.Second, 10*time.Minute)
	observe(t0, -time.Hour) // clocks apart
	assert.Equal(t, 30*time.Second, next(t0))
	observe(t0, 1<<62) // a lateness no sum may overflow with
	assert.Equal(t, 10*time.Minute, next(t0))

	_, next = webhook.FirstLease(30*time.Second, time.Second)
	assert.Equal(t, 30*time.Second, next(t0), "a ceiling below the base is the base")
}

// A first attempt that starts late tells the relay of its worker, whose
// next batch leases its deliveries for longer: while the webhook queue is
// behind, first attempts keep going without a claim (one statement in a
// group commit) instead of two statements each.
func TestRelayLeasesLongerWhileFirstAttemptsStartLate(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	relay := e.relay(t, e.queue, webhook.RelayConfig{FirstLease: 30 * time.Second})

	e.write(t, swipes(1)...)
	_, err := relay.Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 30.0, value(t, e.reg, "matching_outbox_first_attempt_lease_seconds"))
	for _, ti := range e.queued(t, tasks.QueueWebhooks, "pending") {
		var p tasks.WebhookDeliverPayload
		require.NoError(t, json.Unmarshal(ti.Payload, &p))
		assert.Equal(t, int64(30_000), p.First.LeasedFor)
	}

	// A first attempt leased 40 s ago starts now (its lease over but for
	// 10 s): it claims its delivery, and says how late it is.
	now := time.Now()
	st := &hookStore{d: domain.WebhookDelivery{ID: 9, Status: domain.DeliveryPending, Claimed: true,
		Event: domain.WebhookEvent{Topic: tasks.TopicSwipeRecorded, Payload: []byte(`{}`), CreatedAt: now}}}
	h := webhook.NewHandler(webhook.Deps{Log: slog.New(slog.DiscardHandler), Relay: relay,
		Store: st, Poster: &okSender{}, Metrics: webhook.NewMetrics(prometheus.NewRegistry())})
	job := tasks.WebhookJob(1, hookURLs[0], 0, &tasks.FirstAttempt{DeliveryID: 9,
		LeasedUntil: now.Add(-10 * time.Second).UnixMilli(), LeasedFor: 30_000,
		Topic: tasks.TopicSwipeRecorded, Payload: []byte(`{}`), CreatedAt: now.Add(-40 * time.Second)})
	require.NoError(t, h.HandleDeliver(ctx, asynq.NewTask(job.Type, job.Payload)))
	assert.Equal(t, 1, st.begun, "late: claimed")

	// The relay's next batch leases for 30 s + twice 40 s.
	ids := e.write(t, swipes(1)...)
	_, err = relay.Drain(ctx)
	require.NoError(t, err)
	assert.InDelta(t, 110.0, value(t, e.reg, "matching_outbox_first_attempt_lease_seconds"), 0.5)
	hooks := e.queued(t, tasks.QueueWebhooks, "pending")
	ti, ok := hooks[tasks.WebhookTaskID(ids[0], hookURLs[0], 0)]
	require.True(t, ok)
	var p tasks.WebhookDeliverPayload
	require.NoError(t, json.Unmarshal(ti.Payload, &p))
	assert.InDelta(t, 110_000, p.First.LeasedFor, 500)
	assert.InDelta(t, 110_000, time.Until(time.UnixMilli(p.First.LeasedUntil)).Milliseconds(), 5_000,
		"the delivery's row is leased that long")
	var next time.Time
	require.NoError(t, e.db.Pool().QueryRow(ctx, `SELECT next_attempt_at FROM webhook_deliveries WHERE id = $1`,
		p.First.DeliveryID).Scan(&next))
	assert.WithinDuration(t, time.UnixMilli(p.First.LeasedUntil), next, time.Millisecond)
}
