package httpapi_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/command"
	"github.com/collegematch/matching/internal/offline"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/wire"
)

func learnRouter() *tasks.Router {
	r := tasks.NewRouter()
	tasks.AddLearnRoutes(r)
	return r
}

func newSwipes(t testing.TB, db *store.Store, rdb redis.UniversalClient, cat *query.CatalogHolder, log *slog.Logger) *command.Swipes {
	q := asynq.NewClientFromRedisClient(rdb)
	t.Cleanup(func() { _ = q.Close() })
	return command.NewSwipes(command.SwipesConfig{Store: wire.WriteStore{Store: db}, Probes: cache.NewProbes(rdb, 5*time.Minute),
		Feeds: cache.NewFeeds(rdb, 5*time.Minute), Catalogs: wire.Catalogs{CatalogHolder: cat}, Queue: q, Router: learnRouter(), Log: log})
}

func newFeedback(t testing.TB, db *store.Store, rdb redis.UniversalClient, cat *query.CatalogHolder, log *slog.Logger) *command.Feedback {
	q := asynq.NewClientFromRedisClient(rdb)
	t.Cleanup(func() { _ = q.Close() })
	return command.NewFeedback(command.FeedbackConfig{Store: wire.WriteStore{Store: db}, Catalogs: wire.Catalogs{CatalogHolder: cat}, Queue: q,
		Router: learnRouter(), Log: log})
}

func newSync(t testing.TB, db *store.Store, rdb redis.UniversalClient, cat *query.CatalogHolder, queries *query.Service, log *slog.Logger) *offline.Service {
	q := asynq.NewClientFromRedisClient(rdb)
	t.Cleanup(func() { _ = q.Close() })
	return offline.New(offline.Config{Store: db, Feeds: queries, Versions: cache.NewFeeds(rdb, 5*time.Minute),
		Catalogs: wire.Catalogs{CatalogHolder: cat}, Queue: q, Router: learnRouter(), Log: log})
}
