package main

import (
	"context"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/command"
)

// burstSize is the number of swipes of TestWebhookBurst: 2,000 by default,
// WEBHOOK_BURST to measure a bigger burst (docs/benchmarks.md was measured
// with 10,000).
func burstSize(t *testing.T) int {
	if v := os.Getenv("WEBHOOK_BURST"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		return n
	}
	if testing.Short() {
		return 300
	}
	return 2000
}

// A burst of swipes, written by 8 concurrent clients through the API's
// write side, reaches a receiver completely; the test reports the
// end-to-end delivery rate and the lag from each swipe's timestamp to its
// arrival at the receiver (the learner runs on the same worker meanwhile).
func TestWebhookBurst(t *testing.T) {
	n := burstSize(t)
	rc := newReceiver(t, nil)
	eps := []endpointEntry{{rc, "/burst", true}}
	w := newHookWorld(t, 300, 40, "", eps...)
	startWith(t, w.env, options{})

	const writers = 8
	begin := time.Now()
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := g; i < n; i += writers {
				_, err := w.write.swipes.Record(context.Background(), command.SwipeInput{StudentID: w.students[i%len(w.students)],
					SchoolID: w.schools[(i/len(w.students))%len(w.schools)], Direction: []string{"left", "right"}[i%2],
					ClientID: uuid.NewString()})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	written := time.Since(begin)
	require.Eventually(t, func() bool { return len(rc.delivered()) == n }, time.Duration(n)*20*time.Millisecond+30*time.Second,
		100*time.Millisecond, "delivered %d of %d", len(rc.delivered()), n)

	reqs := rc.requests()
	var (
		lags []time.Duration
		last time.Time
		seen = map[int64]bool{}
	)
	for _, r := range reqs {
		if r.Status != 200 || seen[r.OutboxID] {
			continue
		}
		seen[r.OutboxID] = true
		ts, err := time.Parse(time.RFC3339Nano, r.Data["timestamp"])
		require.NoError(t, err)
		lags = append(lags, r.At.Sub(ts))
		if r.At.After(last) {
			last = r.At
		}
		require.True(t, r.Signed)
	}
	require.Len(t, lags, n)
	slices.Sort(lags)
	pct := func(p float64) time.Duration {
		return lags[min(int(p*float64(len(lags))), len(lags)-1)].Round(time.Millisecond)
	}
	total := last.Sub(begin)
	t.Logf("burst of %d swipes: written in %v (%.0f/s); all delivered %v after the first swipe: %.0f deliveries/s; "+
		"lag p50 %v, p90 %v, p99 %v, max %v; %d requests in all",
		n, written.Round(time.Millisecond), float64(n)/written.Seconds(), total.Round(time.Millisecond),
		float64(n)/total.Seconds(), pct(0.50), pct(0.90), pct(0.99), lags[len(lags)-1].Round(time.Millisecond), len(reqs))
}
