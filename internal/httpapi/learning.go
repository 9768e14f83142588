package httpapi

import (
	"context"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/collegematch/matching/internal/command"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/metrics"
	"github.com/collegematch/matching/internal/offline"
)

// The learning counters (metrics.Learning) count what the API records, where
// it is recorded: these wrappers sit around the use cases the handlers call
// and count only what was committed, once (a retry answered from the first
// swipe is not counted again). cmd/api wraps the swipe recorder it gives both
// POST /swipe and POST /continuous-feed, the feedback recorder and offline
// sync.

// CountSwipes counts each counted swipe (interaction_type swipe) that s
// records, by direction, the phase it put the student in and the slot the
// school was served in (command.SwipeResult.Slot).
func CountSwipes(s Swipes, m *metrics.Learning) Swipes {
	if s == nil || m == nil {
		panic("httpapi.CountSwipes: missing dependency")
	}
	return countedSwipes{next: s, m: m}
}

type countedSwipes struct {
	next Swipes
	m    *metrics.Learning
}

func (c countedSwipes) Record(ctx context.Context, in command.SwipeInput) (command.SwipeResult, error) {
	res, err := c.next.Record(ctx, in)
	if err == nil && !res.Duplicate && countedInteraction(in.InteractionType) {
		c.m.Swipe(in.Direction, res.Phase, res.Slot)
	}
	return res, err
}

// countedInteraction reports whether an interaction_type counts as a swipe
// (the default, "swipe"); tap, detail_view and save are weak signals.
func countedInteraction(t string) bool { return t == "" || t == match.InteractionSwipe }

// CountFeedback counts each feedback reason f records.
func CountFeedback(f FeedbackRecorder, m *metrics.Learning) FeedbackRecorder {
	if f == nil || m == nil {
		panic("httpapi.CountFeedback: missing dependency")
	}
	return countedFeedback{next: f, m: m}
}

type countedFeedback struct {
	next FeedbackRecorder
	m    *metrics.Learning
}

func (c countedFeedback) Record(ctx context.Context, in command.FeedbackInput) (command.FeedbackResult, error) {
	res, err := c.next.Record(ctx, in)
	if err == nil {
		c.m.Feedback(in.Reason)
	}
	return res, err
}

// CountSync counts the swipes and feedback a push accepted (not its
// duplicates or rejections). A synced swipe is never taken as a probe, so
// it counts in slot "ranked"; its phase is the one its own count gave it:
// the push stores its swipes in occurred_at order and answers the count
// after the last one.
func CountSync(s Sync, m *metrics.Learning) Sync {
	if s == nil || m == nil {
		panic("httpapi.CountSync: missing dependency")
	}
	return countedSync{Sync: s, m: m}
}

type countedSync struct {
	Sync
	m *metrics.Learning
}

func (c countedSync) Push(ctx context.Context, studentID string, changes []offline.Change) (offline.PushResult, error) {
	res, err := c.Sync.Push(ctx, studentID, changes)
	if err != nil {
		return res, err
	}
	accepted := make(map[string]bool, len(res.Accepted))
	for _, id := range res.Accepted {
		accepted[id] = true
	}
	type swipe struct {
		direction string
		at        time.Time
	}
	var swipes []swipe
	for _, ch := range changes {
		id := canonicalUUID(ch.ID)
		if !accepted[id] {
			continue
		}
		delete(accepted, id) // an id is accepted once
		switch {
		case ch.Type == "feedback":
			c.m.Feedback(ch.Reason)
		case ch.Type == "swipe" && countedInteraction(ch.InteractionType):
			at, _ := time.Parse(time.RFC3339Nano, ch.OccurredAt) // accepted, so valid
			swipes = append(swipes, swipe{direction: ch.Direction, at: at})
		}
	}
	slices.SortStableFunc(swipes, func(a, b swipe) int { return a.at.Compare(b.at) })
	for k, sw := range swipes {
		count := res.SwipeCount - (len(swipes) - 1 - k)
		c.m.Swipe(sw.direction, string(match.PhaseFor(count)), "ranked")
	}
	return res, nil
}

// canonicalUUID is id in the form a push answers accepted ids in.
func canonicalUUID(id string) string {
	if u, err := uuid.Parse(id); err == nil {
		return u.String()
	}
	return id
}
