package drill

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// A swipe the load sent, under its swipe_id (the idempotency key).
type swipe struct {
	id      string
	student string
	school  string
	dir     string

	attempts  int
	notBefore time.Time // a retry waits until then
	acked     bool      // some attempt was answered 2xx
	count     int       // the swipe_count the first 2xx answered
}

// load sends swipes at a steady rate over a set of students, as the app
// does: each swipe has its own swipe_id, and one answered 503 (or not
// answered at all) is sent again with the same swipe_id after its
// Retry-After, up to maxAttempts times.
type load struct {
	client   *http.Client
	api      string
	token    string
	students []string
	decks    map[string][]string // each student's schools not swiped yet

	mu      sync.Mutex
	active  []string // the students new swipes are for
	swipes  map[string]*swipe
	retries []*swipe
	stats   answers
}

// answers counts what the API answered.
type answers struct {
	requests int
	ok       int // 2xx answers
	s503     int // 503 with Retry-After
	other    map[string]int
	// lastFailure is when the last answer other than 2xx arrived.
	lastFailure time.Time
}

func (a *answers) otherTotal() int {
	n := 0
	for _, c := range a.other {
		n += c
	}
	return n
}

// otherLine lists the other answers, most frequent first.
func (a *answers) otherLine() string {
	type kv struct {
		k string
		n int
	}
	var all []kv
	for k, n := range a.other {
		all = append(all, kv{k, n})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n || all[i].n == all[j].n && all[i].k < all[j].k })
	parts := make([]string, len(all))
	for i, x := range all {
		parts[i] = fmt.Sprintf("%s x%d", x.k, x.n)
	}
	return strings.Join(parts, ", ")
}

const (
	maxAttempts = 5
	// requestTimeout is how long the load waits for an answer: longer than
	// any deadline the service sets itself, so a hang shows as a timeout.
	requestTimeout = 15 * time.Second
)

func newLoad(api, token string, students, schools []string, conns int) *load {
	tr := &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, IdleConnTimeout: time.Minute, DisableCompression: true}
	l := &load{client: &http.Client{Transport: tr, Timeout: requestTimeout}, api: api, token: token,
		students: students, active: students, decks: map[string][]string{}, swipes: map[string]*swipe{},
		stats: answers{other: map[string]int{}}}
	for _, s := range students {
		deck := make([]string, len(schools))
		for i, j := range rand.Perm(len(schools)) {
			deck[i] = schools[j]
		}
		l.decks[s] = deck
	}
	return l
}

// do sends one request with the service token and returns the status, the
// Retry-After header and the body (status 0: no answer).
func (l *load) do(ctx context.Context, method, path string, body any) (int, string, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, "", nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, l.api+path, rd)
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set("Authorization", "Bearer "+l.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", nil, err
	}
	return resp.StatusCode, resp.Header.Get("Retry-After"), b, nil
}

// prepare onboards every student (a complete profile) and builds their
// feed, as the app's first screens do.
func (l *load) prepare(ctx context.Context) error {
	states := []string{"CA", "TX", "NY", "FL", "IL", "PA", "OH", "GA", "NC", "MI", "WA", "MA", "AZ", "CO", "OR"}
	return forEach(ctx, len(l.students), 8, func(i int) error {
		s := l.students[i]
		status, _, body, err := l.do(ctx, http.MethodPost, "/v2/onboarding/minimal", map[string]any{
			"student_id": s, "name": fmt.Sprintf("Drill %d", i), "email": fmt.Sprintf("drill%d@example.com", i),
			"graduation_year": "2027", "gpa": 2.5 + float64(i%25)/10, "test_scores": map[string]int{"sat": 900 + (i%70)*10},
			"state": states[i%len(states)],
		})
		if err != nil || status != http.StatusOK && status != http.StatusCreated {
			return fmt.Errorf("onboarding a student: %d %s %v", status, body, err)
		}
		status, _, body, err = l.do(ctx, http.MethodGet, "/m/recommendations/"+s, nil)
		if err != nil || status != http.StatusOK {
			return fmt.Errorf("a student's first feed: %d %s %v", status, body, err)
		}
		return nil
	})
}

// forEach runs f(0..n-1) on conc goroutines and returns the first error.
func forEach(ctx context.Context, n, conc int, f func(int) error) error {
	next := make(chan int)
	errs := make(chan error, conc)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var err error
feed:
	for i := range n {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

// run sends swipes at rate per second from clients goroutines until stop
// is closed, then waits for the requests in flight (they are never cut
// short: an answer the load did not read would leave a swipe in doubt).
func (l *load) run(rate float64, clients int, stop <-chan struct{}) {
	interval := time.Duration(float64(clients) / rate * float64(time.Second))
	var wg sync.WaitGroup
	for w := range clients {
		wg.Go(func() {
			// Spread the clients' first requests over one interval.
			next := time.Now().Add(time.Duration(w) * interval / time.Duration(clients))
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Until(next)):
				}
				next = next.Add(interval)
				if late := time.Since(next); late > interval {
					next = time.Now() // answers were slow: no burst to catch up
				}
				l.send(l.nextSwipe())
			}
		})
	}
	wg.Wait()
}

// quieten makes the first half of the students stop swiping (their
// retries still go): students who swiped during the fault and then did
// nothing more, so no later swipe of theirs makes up for a learn task or an
// event the fault lost.
func (l *load) quieten() {
	l.mu.Lock()
	l.active = l.students[len(l.students)/2:]
	l.mu.Unlock()
}

// nextSwipe is a retry that is due, else a new swipe of a random student
// on a school they have not swiped.
func (l *load) nextSwipe() *swipe {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	for i, s := range l.retries {
		if !s.notBefore.After(now) {
			l.retries = append(l.retries[:i], l.retries[i+1:]...)
			return s
		}
	}
	student := l.active[rand.IntN(len(l.active))]
	deck := l.decks[student]
	school := deck[0]
	l.decks[student] = deck[1:]
	dir := "left"
	if rand.IntN(2) == 0 {
		dir = "right"
	}
	s := &swipe{id: uuid.NewString(), student: student, school: school, dir: dir}
	l.swipes[s.id] = s
	return s
}

// send sends one attempt of s and records the answer.
func (l *load) send(s *swipe) {
	status, retryAfter, body, err := l.do(context.Background(), http.MethodPost, "/swipe", map[string]any{
		"student_id": s.student, "school_id": s.school, "direction": s.dir, "swipe_id": s.id,
		"time_spent": 1.5,
	})
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stats.requests++
	s.attempts++
	if status >= 200 && status < 300 {
		l.stats.ok++
		var out struct {
			SwipeCount int `json:"swipe_count"`
		}
		if !s.acked {
			s.acked = true
			if json.Unmarshal(body, &out) == nil {
				s.count = out.SwipeCount
			}
		}
		return
	}
	l.stats.lastFailure = now
	wait := time.Second
	switch {
	case status == http.StatusServiceUnavailable && retryAfter != "":
		l.stats.s503++
		if secs, perr := strconv.Atoi(retryAfter); perr == nil {
			wait = min(time.Duration(max(secs, 1))*time.Second, 5*time.Second)
		}
	case status == http.StatusServiceUnavailable:
		l.stats.other["503 without Retry-After"]++
	case status != 0:
		l.stats.other[strconv.Itoa(status)]++
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		l.stats.other[fmt.Sprintf("no answer in %s", requestTimeout)]++
	default:
		l.stats.other["connection error"]++
	}
	if s.attempts < maxAttempts {
		s.notBefore = now.Add(wait)
		l.retries = append(l.retries, s)
	}
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// snapshot returns the swipes sent and the answers so far.
func (l *load) snapshot() (map[string]*swipe, answers) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]*swipe, len(l.swipes))
	for k, v := range l.swipes {
		c := *v
		out[k] = &c
	}
	a := l.stats
	a.other = map[string]int{}
	for k, v := range l.stats.other {
		a.other[k] = v
	}
	return out, a
}

// drain sends the retries still waiting, as the app would once the
// service answers again, until none is left or within has passed.
func (l *load) drain(within time.Duration) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		l.mu.Lock()
		if len(l.retries) == 0 {
			l.mu.Unlock()
			return
		}
		var due []*swipe
		var later []*swipe
		now := time.Now()
		for _, s := range l.retries {
			if s.notBefore.After(now) {
				later = append(later, s)
			} else {
				due = append(due, s)
			}
		}
		l.retries = later
		l.mu.Unlock()
		if len(due) == 0 {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		_ = forEach(context.Background(), len(due), 8, func(i int) error {
			l.send(due[i])
			return nil
		})
	}
}
