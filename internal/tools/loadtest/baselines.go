package loadtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/redis/go-redis/v9"
)

// RedisBaseline (B1) serves GET /v on 127.0.0.1 from a bare chi router:
// one Redis GET of a value of size bytes, written as it is. It returns the
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
