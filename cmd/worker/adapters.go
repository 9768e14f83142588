package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/hibiken/asynq"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/webhook"
)

// redisLogger sends go-redis's own log lines (failed dials while Redis is
// down) to the worker's JSON log.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, fmt.Sprintf(format, v...))
}

// asynqLogger sends asynq's own log lines to the worker's JSON log.
type asynqLogger struct{ log *slog.Logger }

func (l asynqLogger) Debug(args ...any) { l.log.Debug(fmt.Sprint(args...)) }
func (l asynqLogger) Info(args ...any)  { l.log.Info(fmt.Sprint(args...)) }
func (l asynqLogger) Warn(args ...any)  { l.log.Warn(fmt.Sprint(args...)) }
func (l asynqLogger) Error(args ...any) { l.log.Error(fmt.Sprint(args...)) }

// Fatal keeps asynq's contract: log, then exit with status 1.
func (l asynqLogger) Fatal(args ...any) {
	l.log.Error(fmt.Sprint(args...))
	os.Exit(1)
}

// asynqLevel maps the service's log level onto asynq's.
func asynqLevel(l slog.Level) asynq.LogLevel {
	switch {
	case l <= slog.LevelDebug:
		return asynq.DebugLevel
	case l <= slog.LevelInfo:
		return asynq.InfoLevel
	case l <= slog.LevelWarn:
		return asynq.WarnLevel
	default:
		return asynq.ErrorLevel
	}
}

// subscriptions lists the configured endpoints as the relay writes
// deliveries for them.
func subscriptions(eps []webhook.Endpoint) []domain.Subscription {
	out := make([]domain.Subscription, len(eps))
	for i, e := range eps {
		out[i] = domain.Subscription{URL: e.URL, Key: tasks.EndpointKey(e.URL), Events: e.Events}
	}
	return out
}
