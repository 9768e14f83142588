package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/auth"
	"github.com/collegematch/matching/internal/webhook"
)

// env is the deployment under test, from the E2E_ variables.
var env struct {
	api, secret, db, hookAddr, hookSecret string
}

// hooks receives the service's webhooks for the whole run (E2E_WEBHOOK_ADDR).
var hooks *receiver

func TestMain(m *testing.M) {
	env.api = strings.TrimRight(os.Getenv("E2E_API_URL"), "/")
	env.secret = os.Getenv("E2E_HS256_SECRET")
	env.db = os.Getenv("E2E_DATABASE_URL")
	env.hookAddr = os.Getenv("E2E_WEBHOOK_ADDR")
	env.hookSecret = os.Getenv("E2E_WEBHOOK_SECRET")
	if env.api != "" && env.hookAddr != "" {
		r, err := startReceiver(env.hookAddr, env.hookSecret)
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e: webhook receiver:", err)
			os.Exit(1)
		}
		hooks = r
		defer r.close()
	}
	code := m.Run()
	if hooks != nil {
		hooks.close()
	}
	os.Exit(code)
}

// deployment skips the test unless a deployment is named, and requires
// the variables every test needs.
func deployment(t *testing.T) {
	t.Helper()
	if env.api == "" {
		t.Skip("E2E_API_URL is not set: these tests run against a deployed service (scripts/scaleout.sh)")
	}
	require.NotEmpty(t, env.secret, "E2E_HS256_SECRET")
	require.NotEmpty(t, env.db, "E2E_DATABASE_URL")
}

// needHooks skips a webhook check when no receiver runs.
func needHooks(t *testing.T) {
	t.Helper()
	if hooks == nil {
		t.Skip("E2E_WEBHOOK_ADDR is not set")
	}
}

func durationEnv(name string, def time.Duration) time.Duration {
	if v := os.Getenv(name); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
		if n, err := strconv.Atoi(v); err == nil {
			return time.Duration(n) * time.Second
		}
	}
	return def
}

func intEnv(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

var (
	dbOnce sync.Once
	dbPool *pgxpool.Pool
	dbErr  error
)

// db is a pool on the service's PostgreSQL, for checks that read it.
func db(t *testing.T) *pgxpool.Pool {
	t.Helper()
	dbOnce.Do(func() {
		dbPool, dbErr = pgxpool.New(context.Background(), env.db)
	})
	require.NoError(t, dbErr)
	return dbPool
}

// schoolIDs returns n active school ids of the catalogue.
func schoolIDs(t *testing.T, n int) []string {
	t.Helper()
	rows, err := db(t).Query(context.Background(), `SELECT id::text FROM schools ORDER BY id LIMIT $1`, n)
	require.NoError(t, err)
	var ids []string
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	require.Len(t, ids, n, "the catalogue has fewer schools than the test needs")
	return ids
}

// client is one student talking to the API.
type client struct {
	id, token string
	http      *http.Client
}

var transport = &http.Transport{MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second}

func newStudent(t *testing.T) *client {
	t.Helper()
	id := uuid.NewString()
	tok, err := auth.MintHS256([]byte(env.secret), auth.MintOptions{Subject: id, TTL: 2 * time.Hour})
	require.NoError(t, err)
	return &client{id: id, token: tok, http: &http.Client{Transport: transport, Timeout: 30 * time.Second}}
}

// response is an answer: its status, headers, raw body and decoded JSON
// object (nil when it is not one).
type response struct {
	Status int
	Header http.Header
	Raw    []byte
	Body   map[string]any
}

func (c *client) do(method, path string, body any, headers ...string) (response, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return response{}, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, env.api+path, r)
	if err != nil {
		return response{}, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := c.http.Do(req)
	if err != nil {
		return response{}, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return response{}, err
	}
	out := response{Status: res.StatusCode, Header: res.Header, Raw: raw}
	_ = json.Unmarshal(raw, &out.Body)
	return out, nil
}

// must is do, requiring an answer with the given status.
func (c *client) must(t *testing.T, status int, method, path string, body any, headers ...string) response {
	t.Helper()
	res, err := c.do(method, path, body, headers...)
	require.NoError(t, err, "%s %s", method, path)
	require.Equal(t, status, res.Status, "%s %s: %s", method, path, res.Raw)
	return res
}

// onboard sends the minimal profile.
func (c *client) onboard(t *testing.T) {
	t.Helper()
	c.must(t, http.StatusCreated, "POST", "/v2/onboarding/minimal", map[string]any{
		"name": "Ada", "email": "ada@example.com", "graduation_year": "2027", "gpa": 3.7,
		"test_scores": map[string]any{"sat": 1350}, "state": "PA", "budget": 30000,
	})
}

// delivery is what the receiver saw of one event: the webhook-ids its
// posts carried and how many posts there were.
type delivery struct {
	ids   map[string]bool
	posts int
}

// receiver is the webhook subscriber of the run. It answers 204 to every
// post with a valid Standard Webhooks signature (401 otherwise) and keys
// what it saw by student and school, which identify a swipe in these tests.
type receiver struct {
	key    []byte
	srv    *http.Server
	mu     sync.Mutex
	seen   map[[2]string]*delivery
	posts  int
	forged int
}

func startReceiver(addr, secret string) (*receiver, error) {
	key, err := webhook.DecodeSecret(secret)
	if err != nil {
		return nil, fmt.Errorf("E2E_WEBHOOK_SECRET: %w", err)
	}
	var ln net.Listener
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		// The previous run's listener may still be closing.
		if ln, err = net.Listen("tcp", addr); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	r := &receiver{key: key, seen: map[[2]string]*delivery{}}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := r.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "e2e: webhook receiver:", err)
		}
	}()
	return r, nil
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	id := req.Header.Get(webhook.HeaderID)
	ts, _ := strconv.ParseInt(req.Header.Get(webhook.HeaderTimestamp), 10, 64)
	sig := req.Header.Get(webhook.HeaderSignature)
	var ev struct {
		ID    string `json:"id"`
		Event string `json:"event"`
		Data  struct {
			StudentID string `json:"student_id"`
			SchoolID  string `json:"school_id"`
		} `json:"data"`
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.posts++
	if id == "" || sig != webhook.Sign(r.key, id, ts, body) || json.Unmarshal(body, &ev) != nil || ev.ID != id {
		r.forged++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	k := [2]string{ev.Data.StudentID, ev.Data.SchoolID}
	d := r.seen[k]
	if d == nil {
		d = &delivery{ids: map[string]bool{}}
		r.seen[k] = d
	}
	d.ids[id] = true
	d.posts++
	w.WriteHeader(http.StatusNoContent)
}

// missing returns which of the swipes (student, school) have not arrived.
func (r *receiver) missing(swipes [][2]string) [][2]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out [][2]string
	for _, s := range swipes {
		if r.seen[s] == nil {
			out = append(out, s)
		}
	}
	return out
}

// check requires every swipe to have arrived within wait, each event under
// one webhook-id however often it was posted, and no post with a bad
// signature; it returns the posts those swipes took.
func (r *receiver) check(t *testing.T, swipes [][2]string, wait time.Duration) (posts int) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		left := r.missing(swipes)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			require.Failf(t, "webhooks missing", "%d of %d swipes not delivered within %s, e.g. %v", len(left), len(swipes), wait, left[0])
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Zero(t, r.forged, "posts with a bad signature")
	for _, s := range swipes {
		d := r.seen[s]
		require.Len(t, d.ids, 1, "swipe %v came under several webhook-ids: %v", s, d.ids)
		posts += d.posts
	}
	return posts
}

func (r *receiver) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_ = r.srv.Shutdown(ctx)
}
