package httpapi_test

import (
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/collegematch/matching/internal/active"
	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/command"
	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/store"
)

// writeSide is the API's write side over db and rdb, wired as cmd/api
// wires it.
type writeSide struct {
	swipes     *command.Swipes
	feedback   *command.Feedback
	categories *command.Categories
	sync       *command.Sync
}

// count, when not nil, counts what it records (metrics.Learning in cmd/api).
func newWriteSide(db *store.Store, rdb redis.UniversalClient, cat *active.Holder, log *slog.Logger, count command.Counter) writeSide {
	feeds := cache.NewFeeds(rdb, 5*time.Minute)
	queuer := handover.NewQueuer()
	trips := cache.NewSwipeTrips(feeds, queuer)
	return writeSide{
		swipes: command.NewSwipes(command.SwipesConfig{Store: db, Batch: db, Redis: trips, Catalogs: cat, Log: log, Count: count}),
		feedback: command.NewFeedback(command.FeedbackConfig{Store: db, Redis: trips, Queue: handover.NewClient(rdb, queuer),
			Catalogs: cat, Log: log, Count: count}),
		categories: command.NewCategories(db, feeds, log),
		sync:       command.NewSync(command.SyncConfig{Store: db, Redis: trips, Catalogs: cat, Log: log, Count: count}),
	}
}
