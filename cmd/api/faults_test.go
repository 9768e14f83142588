package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/auth"
	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
	"github.com/collegematch/matching/internal/tools/faultproxy"
)

// faultAPI is the API run as cmd/api runs it, on a fresh database with a
// catalogue, reaching PostgreSQL through a fault proxy.
type faultAPI struct {
	base    string
	ops     string
	proxy   *faultproxy.Proxy
	direct  string // the database's URL, not through the proxy
	schools []domain.School
}

func startFaultAPI(t *testing.T, params ...string) *faultAPI {
	t.Helper()
	direct := testutil.NewDBURL(t)
	proxied, proxy := faultproxy.ForURL(t, direct)
	for _, p := range params { // connection parameters of DATABASE_URL
		proxied += "&" + p
	}
	f := startFaultAPIOn(t, direct, proxied)
	f.proxy = proxy
	t.Cleanup(func() { proxy.Blackhole(false) })
	return f
}

// startFaultAPIOn runs the API on dbURL, a way to the database direct
// (which it fills first).
func startFaultAPIOn(t *testing.T, direct, dbURL string) *faultAPI {
	t.Helper()
	ctx := context.Background()
	pool, err := store.Open(ctx, direct)
	require.NoError(t, err)
	schools := catalog.Generate(200, 11)
	_, err = store.New(pool).UpsertSchools(ctx, schools)
	require.NoError(t, err)
	pool.Close()

	env := map[string]string{
		"DATABASE_URL":      dbURL,
		"REDIS_URL":         testutil.RedisURLFor(t, testutil.RedisDBCmdAPI),
		"HTTP_ADDR":         "127.0.0.1:0",
		"OPS_ADDR":          "127.0.0.1:0",
		"AUTH_HS256_SECRET": secret,
	}
	testutil.NewRedis(t, testutil.RedisDBCmdAPI) // flushed before and after
	runCtx, cancel := context.WithCancel(ctx)
	ready := make(chan [2]string, 1)
	done := make(chan error, 1)
	go func() { done <- run(runCtx, func(k string) string { return env[k] }, io.Discard, ready) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(25 * time.Second):
			t.Error("api did not shut down")
		}
	})
	select {
	case addrs := <-ready:
		return &faultAPI{base: "http://" + addrs[0], ops: "http://" + addrs[1], direct: direct, schools: schools}
	case err := <-done:
		t.Fatalf("run returned early: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("api did not start")
	}
	return nil
}

// answer is one response, timed.
type answer struct {
	code       int
	retryAfter string
	body       []byte
	took       time.Duration
}

func (a answer) String() string {
	return fmt.Sprintf("%d in %v (Retry-After %q) %s", a.code, a.took.Round(time.Millisecond), a.retryAfter, a.body)
}

// faultClient answers every request within a minute, so a hang shows as
// a slow answer rather than a stuck test.
var faultClient = &http.Client{Timeout: time.Minute}

func (f *faultAPI) call(t *testing.T, student, method, path string, body any) answer {
	t.Helper()
	tok, err := auth.MintHS256([]byte(secret), auth.MintOptions{Subject: student, TTL: time.Hour})
	require.NoError(t, err)
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, f.base+path, r)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	res, err := faultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return answer{code: res.StatusCode, retryAfter: res.Header.Get("Retry-After"), body: b, took: time.Since(start)}
}

func (f *faultAPI) onboard(t *testing.T) string {
	t.Helper()
	id := uuid.NewString()
	a := f.call(t, id, "POST", "/v2/onboarding/minimal", map[string]any{"name": "Ada", "email": "ada@example.com",
		"graduation_year": "2027", "gpa": 3.7, "test_scores": map[string]any{"sat": 1350},
		"home": map[string]any{"lat": 39.95, "lon": -75.16}, "state": "PA", "max_distance_miles": 3000, "budget": 60000})
	require.Less(t, a.code, 300, "onboarding: %v", a)
	return id
}

func (f *faultAPI) swipe(t *testing.T, student string, school int) answer {
	t.Helper()
	return f.swipeOn(t, student, f.schools[school%len(f.schools)].ID)
}

func (f *faultAPI) swipeOn(t *testing.T, student, school string) answer {
	t.Helper()
	return f.call(t, student, "POST", "/swipe", map[string]any{"student_id": student,
		"school_id": school, "direction": "right", "swipe_id": uuid.NewString()})
}

// feed reads the student's compact feed and returns its school ids in order.
func (f *faultAPI) feed(t *testing.T, student string) (answer, []string) {
	t.Helper()
	a := f.call(t, student, "GET", "/m/recommendations/"+student, nil)
	var page struct {
		R []struct {
			I string `json:"i"`
		} `json:"r"`
	}
	var ids []string
	if a.code == http.StatusOK && json.Unmarshal(a.body, &page) == nil {
		for _, it := range page.R {
			ids = append(ids, it.I)
		}
	}
	return a, ids
}

// requireUnavailable checks the answer a request gets when PostgreSQL does
// not answer in time: 503 SERVICE_UNAVAILABLE with Retry-After, in the
// error body, within 5 s.
func requireUnavailable(t *testing.T, a answer) {
	t.Helper()
	require.Equal(t, http.StatusServiceUnavailable, a.code, "%v", a)
	assert.NotEmpty(t, a.retryAfter, "%v", a)
	var body struct {
		Error struct {
			Code    string         `json:"code"`
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(a.body, &body), "%v", a)
	assert.Equal(t, domain.CodeServiceUnavailable, body.Error.Code, "%v", a)
	assert.NotEmpty(t, body.Error.Message)
	assert.NotNil(t, body.Error.Details)
	assert.Less(t, a.took, 5*time.Second, "%v", a)
}

// PostgreSQL stops answering (the proxy forwards nothing, closes nothing):
// swipes answer 503 with Retry-After within 5 s, many at once too (more
// than the pool holds), never 500 and never a hang; the feed Redis holds
// keeps answering 200. Once PostgreSQL answers again, so do swipes.
func TestPostgresBlackholed(t *testing.T) {
	f := startFaultAPI(t)
	student := f.onboard(t)
	a, ids := f.feed(t, student) // the first read stores the feed
	require.Equal(t, http.StatusOK, a.code, "%v", a)
	require.Greater(t, len(ids), 10, "%v", a)
	// A client swipes its feed from the top: the stored feed is patched,
	// and the next read is still served from Redis.
	a = f.swipeOn(t, student, ids[0])
	require.Equal(t, http.StatusOK, a.code, "%v", a)

	f.proxy.Blackhole(true)
	requireUnavailable(t, f.swipeOn(t, student, ids[1]))

	// More swipes at once than the pool has connections: each one waits
	// for a connection, or on a connection that never answers, and each
	// ends in time.
	const many = 40
	answers := make([]answer, many)
	var wg sync.WaitGroup
	for i := range many {
		wg.Go(func() { answers[i] = f.swipeOn(t, student, ids[1+i%(len(ids)-1)]) })
	}
	wg.Wait()
	slowest := time.Duration(0)
	for _, a := range answers {
		requireUnavailable(t, a)
		slowest = max(slowest, a.took)
	}
	t.Logf("%d swipes at once while PostgreSQL does not answer: all 503, the slowest in %v", many, slowest.Round(time.Millisecond))
	// The waits for a connection that were given up show on the pool's
	// metrics.
	assert.Positive(t, counter(scrape(t, f.ops), "matching_db_pool_canceled_acquires_total", nil))

	// The writes that carry swipes end in time too.
	at := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	requireUnavailable(t, f.call(t, student, "POST", "/continuous-feed", map[string]any{"student_id": student, "limit": 5,
		"swipes": []any{map[string]any{"school_id": ids[1], "direction": "right", "swipe_id": uuid.NewString()}}}))
	requireUnavailable(t, f.call(t, student, "POST", "/m/sync/push", map[string]any{"student_id": student,
		"changes": []any{map[string]any{"id": uuid.NewString(), "type": "swipe", "school_id": ids[1],
			"direction": "left", "occurred_at": at}}}))
	requireUnavailable(t, f.call(t, student, "POST", "/feedback", map[string]any{"student_id": student,
		"school_id": ids[0], "reason": "too_expensive"}))

	// The stored feed does not need PostgreSQL.
	for range 3 {
		a, got := f.feed(t, student)
		assert.Equal(t, http.StatusOK, a.code, "%v", a)
		assert.Equal(t, ids[1:], got, "the feed as patched by the swipe that committed")
		assert.Less(t, a.took, time.Second, "%v", a)
	}

	f.proxy.Blackhole(false)
	healed := time.Now()
	for {
		a := f.swipeOn(t, student, ids[1])
		if a.code == http.StatusOK {
			break
		}
		requireUnavailable(t, a)
		require.Less(t, time.Since(healed), 15*time.Second, "swipes do not succeed after PostgreSQL answers again: %v", a)
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("swipes succeed again %v after PostgreSQL answers", time.Since(healed).Round(time.Millisecond))
	for _, id := range ids[2:6] {
		a := f.swipeOn(t, student, id)
		assert.Equal(t, http.StatusOK, a.code, "%v", a)
	}
	a, got := f.feed(t, student)
	assert.Equal(t, http.StatusOK, a.code, "%v", a)
	assert.Equal(t, ids[6:], got)
}

// One student's row is locked for 10 s by another transaction (an
// operator's session, a stuck job): that student's swipe answers 503 with
// Retry-After once lock_timeout passes, well within 5 s, and the swipes of
// every other student go on at their usual speed meanwhile. Once the lock
// is released the student swipes again.
func TestStudentRowLockedLeavesOthersUnaffected(t *testing.T) {
	f := startFaultAPI(t)
	victim := f.onboard(t)
	others := make([]string, 6)
	for i := range others {
		others[i] = f.onboard(t)
	}
	a := f.swipe(t, victim, 0)
	require.Equal(t, http.StatusOK, a.code, "%v", a)

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, f.direct)
	require.NoError(t, err)
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	var one int
	require.NoError(t, tx.QueryRow(ctx, "SELECT 1 FROM students WHERE id = $1 FOR UPDATE", victim).Scan(&one))
	locked := time.Now()
	const hold = 10 * time.Second

	// The other students swipe, one request after another each, while the
	// lock is held.
	var (
		mu    sync.Mutex
		took  []time.Duration
		wrong []answer
		wg    sync.WaitGroup
	)
	for i, s := range others {
		wg.Go(func() {
			for n := 0; time.Since(locked) < hold-time.Second; n++ {
				a := f.swipe(t, s, 1+i*50+n)
				mu.Lock()
				took = append(took, a.took)
				if a.code != http.StatusOK {
					wrong = append(wrong, a)
				}
				mu.Unlock()
				// At most 225 swipes each in the 9 s: within the swipes
				// allowance (300 a minute), however fast the service answers.
				time.Sleep(40 * time.Millisecond)
			}
		})
	}

	// The locked student's swipes: a clear 503 each, not a wait for the lock.
	var victims []answer
	for time.Since(locked) < hold-3*time.Second {
		a := f.swipe(t, victim, 1000+len(victims))
		requireUnavailable(t, a)
		victims = append(victims, a)
	}
	wg.Wait()
	time.Sleep(time.Until(locked.Add(hold)))
	require.NoError(t, tx.Rollback(ctx))

	assert.Empty(t, wrong, "other students' swipes failed while one student's row was locked")
	require.NotEmpty(t, took)
	slices.Sort(took)
	p50, p99 := took[len(took)/2], took[len(took)*99/100]
	t.Logf("locked student: %d swipes, 503 after %v; other students: %d swipes, p50 %v, p99 %v, max %v",
		len(victims), victims[0].took.Round(time.Millisecond), len(took), p50, p99, took[len(took)-1])
	// A swipe that waited for the lock would take lock_timeout (2 s); the
	// bound leaves room for a busy shared machine.
	assert.Less(t, p99, store.APILockTimeout/2, "other students' swipes slowed down")

	a = f.swipe(t, victim, 2000)
	assert.Equal(t, http.StatusOK, a.code, "%v", a)
}
