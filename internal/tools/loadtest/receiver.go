package loadtest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Receiver is a webhook subscriber for load runs: it answers every POST
// with 204 and remembers, per webhook-id, when the first attempt arrived
// and how long after the event's own timestamp.
type Receiver struct {
	mu    sync.Mutex
	first map[string]time.Duration // webhook-id -> lag of its first arrival
	posts int
	srv   *http.Server
	Addr  string
}

// StartReceiver listens on addr (127.0.0.1:PORT).
func StartReceiver(addr string) (*Receiver, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	r := &Receiver{first: map[string]time.Duration{}, Addr: ln.Addr().String()}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := r.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			panic(err)
		}
	}()
	return r, nil
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	var ev struct {
		Data struct {
			Timestamp time.Time `json:"timestamp"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &ev)
	id := req.Header.Get("webhook-id")
	r.mu.Lock()
	r.posts++
	if _, seen := r.first[id]; !seen && id != "" {
		lag := time.Duration(0)
		if !ev.Data.Timestamp.IsZero() {
			lag = max(at.Sub(ev.Data.Timestamp), 0)
		}
		r.first[id] = lag
	}
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// Counts returns the distinct events received and all posts (retries and
// duplicates included).
func (r *Receiver) Counts() (distinct, posts int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.first), r.posts
}

// Lags returns the first-arrival lag of every event received so far.
func (r *Receiver) Lags() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]time.Duration, 0, len(r.first))
	for _, l := range r.first {
		out = append(out, l)
	}
	return out
}

// Reset forgets what was received.
func (r *Receiver) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.first = map[string]time.Duration{}
	r.posts = 0
}

// Close stops the receiver.
func (r *Receiver) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.srv.Shutdown(ctx)
}
