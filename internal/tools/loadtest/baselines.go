package loadtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/collegematch/matching/internal/store"
)

// InsertBaseline is what the service's PostgreSQL takes at its simplest:
// conns connections, each inserting one row per transaction into a table of
// its own making (dropped afterwards), for d. It returns transactions per
// second. The pool sends its statements as the service would
// (store.ChooseStatementMode).
func InsertBaseline(ctx context.Context, databaseURL string, conns int, d time.Duration) (float64, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return 0, err
	}
	// The statement mode the service would use on this URL (through a
	// pooler, one that transaction pooling allows).
	if _, err := store.ChooseStatementMode(ctx, cfg); err != nil {
		return 0, err
	}
	cfg.MaxConns = int32(conns)
	cfg.MinConns = int32(conns)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return 0, err
	}
	defer pool.Close()
	const table = "loadtest_insert_baseline"
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (id bigserial PRIMARY KEY, student_id uuid NOT NULL, v integer NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return 0, err
	}
	defer pool.Exec(context.WithoutCancel(ctx), `DROP TABLE IF EXISTS `+table)

	rctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		mu    sync.Mutex
		total int
		fail  error
		wg    sync.WaitGroup
	)
	start := time.Now()
	for w := range conns {
		wg.Go(func() {
			n := 0
			for rctx.Err() == nil {
				_, err := pool.Exec(rctx, `INSERT INTO `+table+` (student_id, v) VALUES (gen_random_uuid(), $1)`, w)
				if err != nil {
					if rctx.Err() == nil {
						mu.Lock()
						fail = err
						mu.Unlock()
					}
					break
				}
				n++
			}
			mu.Lock()
			total += n
			mu.Unlock()
		})
	}
	wg.Wait()
	if fail != nil {
		return 0, fmt.Errorf("insert baseline: %w", fail)
	}
	return float64(total) / time.Since(start).Seconds(), nil
}

// RedisBaseline serves GET /v on 127.0.0.1 from a bare chi router: one
// Redis GET of a value of size bytes, written as it is. It returns the
// server's base URL and a function that stops it and deletes the key.
func RedisBaseline(ctx context.Context, rdb redis.UniversalClient, size int) (string, func(), error) {
	key := fmt.Sprintf("loadtest:baseline:%d", time.Now().UnixNano())
	if err := rdb.Set(ctx, key, strings.Repeat("x", size), 10*time.Minute).Err(); err != nil {
		return "", nil, fmt.Errorf("redis baseline: %w", err)
	}
	r := chi.NewRouter()
	r.Get("/v", func(w http.ResponseWriter, r *http.Request) {
		b, err := rdb.Get(r.Context(), key).Bytes()
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			panic(err)
		}
	}()
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		_ = rdb.Del(sctx, key).Err()
	}
	return "http://" + ln.Addr().String(), stop, nil
}
