package command

import (
	"context"
	"log/slog"
	"math"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
)

// CategoryStore stores onboarding category swipes (*store.Store).
type CategoryStore interface {
	// SaveCategorySwipe stores the swipe in one statement and returns the
	// student with every category preference after it, and the new
	// version; INVALID_STUDENT_ID for an unknown or erased student.
	SaveCategorySwipe(ctx context.Context, studentID, categoryID, direction string) (domain.LearnerState, error)
}

// FeedDropper drops a student's stored feed once their state moved to
// version (cache.Feeds.Invalidate): later reads rebuild it.
type FeedDropper interface {
	Invalidate(ctx context.Context, studentID string, version int64) error
}

// Categories records onboarding category swipes (POST
// /v2/onboarding/category-swipe).
type Categories struct {
	store CategoryStore
	feeds FeedDropper
	log   *slog.Logger
}

// NewCategories builds the category swipe use case; every argument is
// required.
func NewCategories(store CategoryStore, feeds FeedDropper, log *slog.Logger) *Categories {
	if store == nil || feeds == nil || log == nil {
		panic("command.NewCategories: missing dependency")
	}
	return &Categories{store: store, feeds: feeds, log: log}
}

// SwipeCategory stores a student's swipe on a category (one statement),
// drops the student's stored feed (the next recommendations are ranked with
// the new prior; best effort, the feed's TTL bounds it) and returns the
// prior weights now, rounded to 4 decimals: the profile's seed weights
// moved by every category swipe (match.Start).
func (c *Categories) SwipeCategory(ctx context.Context, studentID, categoryID, direction string) (map[string]float64, error) {
	st, err := c.store.SaveCategorySwipe(ctx, studentID, categoryID, direction)
	if err != nil {
		return nil, err
	}
	if err := c.feeds.Invalidate(context.WithoutCancel(ctx), studentID, st.Version); err != nil {
		c.log.WarnContext(ctx, "feed not dropped after a category swipe; it expires with its TTL", "student_id", studentID, "err", err)
	}
	_, _, prior := match.Start(st)
	w := prior.Sanitize().Map()
	for k, v := range w {
		w[k] = math.Round(v*1e4) / 1e4
	}
	return w, nil
}
