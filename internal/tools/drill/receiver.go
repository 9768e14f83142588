package drill

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/collegematch/matching/internal/webhook"
)

// receiver is the one webhook subscriber the drill configures: it answers
// every correctly signed swipe.recorded post with 204 and remembers the
// outbox row each one announces (its webhook-id is msg_<outbox id>_<key>).
type receiver struct {
	key  []byte
	srv  *http.Server
	addr string

	mu       sync.Mutex
	events   map[int64]struct{}
	posts    int
	rejected int // posts whose signature or body did not check out
}

func startReceiver(addr string, key []byte) (*receiver, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	r := &receiver{key: key, addr: ln.Addr().String(), events: map[int64]struct{}{}}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := r.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			panic(err)
		}
	}()
	return r, nil
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	id := req.Header.Get(webhook.HeaderID)
	ts, _ := strconv.ParseInt(req.Header.Get(webhook.HeaderTimestamp), 10, 64)
	var ev struct {
		ID    string `json:"id"`
		Event string `json:"event"`
	}
	outbox, ok := outboxID(id)
	ok = ok && json.Unmarshal(body, &ev) == nil && ev.ID == id && ev.Event == "swipe.recorded" &&
		signed(req.Header.Get(webhook.HeaderSignature), webhook.Sign(r.key, id, ts, body))
	r.mu.Lock()
	r.posts++
	if ok {
		r.events[outbox] = struct{}{}
	} else {
		r.rejected++
	}
	r.mu.Unlock()
	if !ok {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// signed reports whether one of the signatures in header (space-separated)
// is want.
func signed(header, want string) bool {
	for _, sig := range strings.Fields(header) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return true
		}
	}
	return false
}

// outboxID reads the outbox row's id out of a webhook-id.
func outboxID(webhookID string) (int64, bool) {
	rest, ok := strings.CutPrefix(webhookID, "msg_")
	if !ok {
		return 0, false
	}
	num, _, _ := strings.Cut(rest, "_")
	n, err := strconv.ParseInt(num, 10, 64)
	return n, err == nil
}

// received reports whether the event of outbox row id has arrived.
func (r *receiver) received(id int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.events[id]
	return ok
}

// counts returns the posts and the rejected posts so far.
func (r *receiver) counts() (posts, rejected int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.posts, r.rejected
}

func (r *receiver) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.srv.Shutdown(ctx)
}
