// Package live drives a running matching service with the synthetic
// students of internal/tools/simulate, through its public HTTP API, as a client
// app would: each student onboards with its profile, pages through
// POST /continuous-feed, swipes each school it is served with POST /swipe
// (liking it as the simulation's student would) and, when an answer sets
// trigger_feedback, says why with POST /feedback. What the service answered
// is tallied (swipes by direction, phase and whether the school was served
// as a probe, feedback by reason), so a run can be compared with the
// service's learning counters (metrics.Learning) and with the pure
// simulation's like rates. `matchctl simulate --api URL` runs it.
package live

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/tools/simulate"
)

// Config is one run against a service.
type Config struct {
	// API is the base URL of the public API (http://127.0.0.1:8080).
	API string
	// Token returns a bearer token for a student id (a new student each
	// time): for a development server, an HS256 token minted with its
	// secret.
	Token func(studentID string) (string, error)
	// Schools is the catalogue the service serves: the students' hidden
	// preferences are over these schools.
	Schools []domain.School
	// Students, Swipes (per student), PageSize (the continuous feed's
	// limit), Seed and Workers (students driven at once) as in
	// simulate.Config; defaults 10, 40, 10, 1 and 2.
	Students, Swipes, PageSize int
	Seed                       uint64
	Workers                    int
	// NoFeedback leaves trigger_feedback unanswered.
	NoFeedback bool
	// Client is the HTTP client (optional; 30 s timeout).
	Client *http.Client
}

// Key is a kind of swipe: its direction (left, right), the phase the
// service answered for it, and whether the school had been served as a
// probe (the feed item's is_probe).
type Key struct {
	Direction string
	Phase     string
	Probe     bool
}

// Result is what a run did, as the service answered it.
type Result struct {
	Students, Swipes int
	// Counts are the swipes by kind.
	Counts map[Key]int
	// Feedback are the feedback reasons sent, by reason; Prompts the
	// answers that asked for feedback.
	Feedback map[string]int
	Prompts  int
	// StudentIDs are the students created, in the order they finished.
	StudentIDs []string
	Elapsed    time.Duration
}

// Tally is swipes and the likes among them.
type Tally struct{ Swipes, Likes int }

// Rate is the like rate, NaN without swipes.
func (t Tally) Rate() float64 {
	if t.Swipes == 0 {
		return math.NaN()
	}
	return float64(t.Likes) / float64(t.Swipes)
}

// Where sums the swipes whose kind keep accepts.
func (r Result) Where(keep func(Key) bool) Tally {
	var t Tally
	for k, n := range r.Counts {
		if keep(k) {
			t.Swipes += n
			if k.Direction == "right" {
				t.Likes += n
			}
		}
	}
	return t
}

// Table renders the run: like rate per phase and on probes, and the
// feedback given, as `matchctl simulate --api` prints it.
func (r Result) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d students, %d swipes through the API in %s\n\n", r.Students, r.Swipes, r.Elapsed.Round(100*time.Millisecond))
	b.WriteString("| swipes | count | likes | like rate |\n|---|---:|---:|---:|\n")
	row := func(name string, t Tally) {
		fmt.Fprintf(&b, "| %s | %d | %d | %s |\n", name, t.Swipes, t.Likes, rate(t))
	}
	for _, p := range []match.Phase{match.PhaseDiscovery, match.PhaseRefinement, match.PhaseStable} {
		row(string(p), r.Where(func(k Key) bool { return k.Phase == string(p) }))
	}
	row("on probes", r.Where(func(k Key) bool { return k.Probe }))
	row("all", r.Where(func(Key) bool { return true }))
	fmt.Fprintf(&b, "\nfeedback prompts %d; reasons sent:", r.Prompts)
	reasons := slices.Sorted(maps.Keys(r.Feedback))
	if len(reasons) == 0 {
		b.WriteString(" none")
	}
	for _, k := range reasons {
		fmt.Fprintf(&b, " %s %d", k, r.Feedback[k])
	}
	b.WriteString("\n")
	return b.String()
}

func rate(t Tally) string {
	if t.Swipes == 0 {
		return "-"
	}
	return strconv.FormatFloat(t.Rate(), 'f', 3, 64)
}

// Run drives cfg.Students students through the API, cfg.Workers at a time.
// It stops at the first error (a status the client does not expect, the
// feed running dry) and returns it with what was done until then.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg = withDefaults(cfg)
	if cfg.API == "" || cfg.Token == nil || len(cfg.Schools) == 0 {
		return Result{}, errors.New("live: API, Token and Schools are required")
	}
	start := time.Now()
	pop := simulate.NewPopulation(simulate.Config{Students: cfg.Students, Swipes: cfg.Swipes, Seed: cfg.Seed,
		PageSize: cfg.PageSize}, cfg.Schools)

	var (
		mu    sync.Mutex
		total = Result{Counts: map[Key]int{}, Feedback: map[string]int{}}
	)
	err := drive(ctx, cfg.Students, cfg.Workers, func(ctx context.Context, i int) error {
		d := &driver{cfg: cfg, st: pop.Student(i), res: Result{Counts: map[Key]int{}, Feedback: map[string]int{}}}
		err := d.run(ctx, i)
		mu.Lock()
		total.add(d.res)
		mu.Unlock()
		return err
	})
	total.Elapsed = time.Since(start)
	return total, err
}

// drive runs student(ctx, i) for i in 0..students-1, workers at a time,
// and stops at the first error, which it returns naming the student: the
// students not started are not run, and the context of those running is
// cancelled.
func drive(ctx context.Context, students, workers int, student func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu      sync.Mutex
		firstEr error
		wg      sync.WaitGroup
	)
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := student(ctx, i); err != nil {
					mu.Lock()
					if firstEr == nil {
						firstEr = fmt.Errorf("student %d: %w", i, err)
						cancel()
					}
					mu.Unlock()
				}
			}
		}()
	}
feed:
	for i := range students {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return firstEr
}

func withDefaults(c Config) Config {
	orDefault(&c.Students, 10)
	orDefault(&c.Swipes, 40)
	orDefault(&c.PageSize, 10)
	orDefault(&c.Workers, 2)
	if c.Seed == 0 {
		c.Seed = 1
	}
	c.Client, c.API = reach(c.Client, c.API)
	return c
}

// orDefault sets *v to d when it is not positive.
func orDefault(v *int, d int) {
	if *v <= 0 {
		*v = d
	}
}

// reach is the client (a default one with a 30 s timeout when nil) and
// the API's base URL (without a trailing slash) a run talks to.
func reach(client *http.Client, api string) (*http.Client, string) {
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	return client, strings.TrimRight(api, "/")
}

func (r *Result) add(o Result) {
	r.Students += o.Students
	r.Swipes += o.Swipes
	r.Prompts += o.Prompts
	r.StudentIDs = append(r.StudentIDs, o.StudentIDs...)
	for k, n := range o.Counts {
		r.Counts[k] += n
	}
	for k, n := range o.Feedback {
		r.Feedback[k] += n
	}
}

// driver is one student's client.
type driver struct {
	cfg   Config
	st    *simulate.Student
	id    string
	token string
	res   Result
}

func (d *driver) run(ctx context.Context, i int) error {
	d.id = uuid.NewString()
	tok, err := d.cfg.Token(d.id)
	if err != nil {
		return err
	}
	d.token = tok
	if err := d.call(ctx, "/v2/onboarding/minimal", onboardingBody(d.st.Profile(), i), http.StatusCreated, nil); err != nil {
		return fmt.Errorf("onboarding: %w", err)
	}
	d.res.Students = 1
	d.res.StudentIDs = []string{d.id}
	for d.res.Swipes < d.cfg.Swipes {
		var page struct {
			Recommendations []struct {
				SchoolID string `json:"school_id"`
				IsProbe  bool   `json:"is_probe"`
			} `json:"recommendations"`
		}
		body := map[string]any{"student_id": d.id, "limit": d.cfg.PageSize}
		if err := d.call(ctx, "/continuous-feed", body, http.StatusOK, &page); err != nil {
			return fmt.Errorf("continuous feed: %w", err)
		}
		if len(page.Recommendations) == 0 {
			return fmt.Errorf("the continuous feed served nothing after %d swipes", d.res.Swipes)
		}
		for _, it := range page.Recommendations {
			if d.res.Swipes == d.cfg.Swipes {
				break
			}
			if err := d.swipe(ctx, it.SchoolID, it.IsProbe); err != nil {
				return err
			}
		}
	}
	return nil
}

// swipe swipes one served school and answers a feedback prompt.
func (d *driver) swipe(ctx context.Context, schoolID string, probe bool) error {
	like, known := d.st.Decide(schoolID)
	if !known {
		return fmt.Errorf("the service served school %s, which is not in the catalogue given", schoolID)
	}
	dir := "left"
	if like {
		dir = "right"
	}
	var ans struct {
		SwipeCount      int    `json:"swipe_count"`
		Phase           string `json:"learning_phase"`
		TriggerFeedback bool   `json:"trigger_feedback"`
	}
	body := map[string]any{"student_id": d.id, "school_id": schoolID, "direction": dir, "swipe_id": uuid.NewString()}
	if err := d.call(ctx, "/swipe", body, http.StatusOK, &ans); err != nil {
		return fmt.Errorf("swipe %d: %w", d.res.Swipes+1, err)
	}
	d.res.Swipes++
	if ans.SwipeCount != d.res.Swipes {
		return fmt.Errorf("swipe %d: the service counted %d", d.res.Swipes, ans.SwipeCount)
	}
	d.res.Counts[Key{Direction: dir, Phase: ans.Phase, Probe: probe}]++
	if !ans.TriggerFeedback {
		return nil
	}
	d.res.Prompts++
	if d.cfg.NoFeedback {
		return nil
	}
	reason := d.st.Reason(schoolID, like)
	fb := map[string]any{"student_id": d.id, "school_id": schoolID, "reason": reason}
	if err := d.call(ctx, "/feedback", fb, http.StatusOK, nil); err != nil {
		return fmt.Errorf("feedback after swipe %d: %w", d.res.Swipes, err)
	}
	d.res.Feedback[reason]++
	return nil
}

// maxRetries bounds the retries of a 429 or 503 (each after Retry-After,
// at most maxRetryWait).
const (
	maxRetries   = 5
	maxRetryWait = 5 * time.Second
)

// call POSTs body as JSON and decodes a want-status answer into out (when
// not nil). A 429 or 503 is retried after its Retry-After.
func (d *driver) call(ctx context.Context, path string, body any, want int, out any) error {
	buf, err := json.Marshal(body)
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.cfg.API+path, bytes.NewReader(buf))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+d.token)
		req.Header.Set("Content-Type", "application/json")
		res, err := d.cfg.Client.Do(req)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(io.LimitReader(res.Body, 4<<20))
		res.Body.Close()
		if err != nil {
			return err
		}
		if (res.StatusCode == http.StatusTooManyRequests || res.StatusCode == http.StatusServiceUnavailable) && attempt < maxRetries {
			wait := time.Second
			if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && s >= 0 {
				wait = min(time.Duration(s)*time.Second, maxRetryWait)
			}
			select {
			case <-time.After(wait):
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if res.StatusCode != want {
			return fmt.Errorf("POST %s: %d %s", path, res.StatusCode, strings.TrimSpace(string(b[:min(len(b), 300)])))
		}
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("POST %s: decode the answer: %w", path, err)
		}
		return nil
	}
}

// onboardingBody is POST /v2/onboarding/minimal for a simulated student:
// its profile, with a made-up name and e-mail.
func onboardingBody(s domain.Student, i int) map[string]any {
	b := map[string]any{
		"name": "Simulated Student " + strconv.Itoa(i+1), "email": "sim-" + strconv.Itoa(i+1) + "@example.com",
		"graduation_year": "2027",
	}
	if s.GPA != nil {
		b["gpa"] = *s.GPA
	}
	scores := map[string]any{}
	if s.SAT != nil {
		scores["sat"] = *s.SAT
	}
	if s.ACT != nil {
		scores["act"] = *s.ACT
	}
	if len(scores) > 0 {
		b["test_scores"] = scores
	}
	if s.HomeLat != nil && s.HomeLon != nil {
		b["home"] = map[string]any{"lat": *s.HomeLat, "lon": *s.HomeLon}
	}
	if s.State != "" {
		b["state"] = s.State
	}
	if s.MaxDistanceMiles != nil {
		b["max_distance_miles"] = *s.MaxDistanceMiles
	}
	if s.Budget != nil {
		b["budget"] = *s.Budget
	}
	if s.FamilyIncome != nil {
		b["family_income"] = *s.FamilyIncome
	}
	if len(s.IntendedMajors) > 0 {
		majors := make([]string, len(s.IntendedMajors))
		for k, m := range s.IntendedMajors {
			majors[k] = string(m)
		}
		b["intended_majors"] = majors
	}
	if s.PreferredSize != "" {
		b["preferred_size"] = s.PreferredSize
	}
	if s.PreferredSetting != "" {
		b["preferred_setting"] = s.PreferredSetting
	}
	return b
}
