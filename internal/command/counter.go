package command

import (
	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
)

// Counter counts what the write side committed, once each (a retry
// answered from the first swipe is not counted again): every counted
// swipe by direction, the phase its own count put the student in and the
// feed slot the school was served in (ranked, exploration, probe), and
// every feedback reason, and what each write's patch did to the student's
// stored feed (cache.PatchResult). metrics.Learning is one; wherever a
// swipe comes in (POST /swipe, the continuous feed, a sync push) it is
// counted here.
type Counter interface {
	Swipe(direction, phase, slot string)
	Feedback(reason string)
	FeedPatch(result string)
}

// noCount is the Counter of a write side configured without one.
type noCount struct{}

func (noCount) Swipe(string, string, string) {}
func (noCount) Feedback(string)              {}
func (noCount) FeedPatch(string)             {}

// orNoCount is c, or a Counter that counts nothing.
func orNoCount(c Counter) Counter {
	if c == nil {
		return noCount{}
	}
	return c
}

// slotLabel is the slot a swipe is counted in: probe when the school had
// been served as a probe, exploration when the stored feed held it as an
// exploration pick, else ranked (the learned ranking, where every school
// not among the stored items, or not known, stands too).
func slotLabel(sw domain.Swipe, slot string) string {
	switch {
	case sw.IsProbe:
		return cache.SlotProbe
	case slot == cache.SlotExploration:
		return cache.SlotExploration
	default:
		return cache.SlotRanked
	}
}

// countSwipe counts one newly recorded swipe, when it is a counted one.
func countSwipe(c Counter, rec domain.RecordedSwipe, slot string) {
	if rec.Duplicate || !rec.Counted() {
		return
	}
	c.Swipe(rec.Direction, string(match.PhaseFor(rec.SwipeCount)), slotLabel(rec.Swipe, slot))
}

// countBatch counts what a batch stored: each new counted swipe in the
// phase its own count gave it (slots names the slot a school was served
// in, nil when not known) and each new feedback reason.
func countBatch(c Counter, changes []domain.Change, stored domain.BatchResult, slots map[string]string) {
	for _, rec := range stored.Swipes {
		countSwipe(c, rec, slots[rec.SchoolID])
	}
	for i, ch := range changes {
		if ch.Type == domain.ChangeFeedback && i < len(stored.Outcomes) && stored.Outcomes[i] == domain.Accepted {
			c.Feedback(ch.Feedback.Reason)
		}
	}
}
