package live

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/tools/simulate"
)

// FamiliesConfig is a run of the families mode's students (simulate.
// FamiliesConfig) against a running service: each onboards with its
// truthful profile, pages through POST /continuous-feed swiping what it is
// served with POST /swipe as its hidden taste decides (feedback prompts
// are left unanswered), and at each checkpoint reads its first page of
// POST /recommendations, which is judged against its own ideal list.
type FamiliesConfig struct {
	// API, Token, Schools and Client as in Config.
	API     string
	Token   func(studentID string) (string, error)
	Schools []domain.School
	Client  *http.Client
	// Students, Swipes, Seed, Variant, PageSize and Checkpoints as in
	// simulate.FamiliesConfig (defaults 200, 50, 1, 0, 10 and 0, 10, 20,
	// 30, 50); Workers students are driven at once (default 4).
	Students, Swipes, Variant, PageSize, Workers int
	Seed                                         uint64
	Checkpoints                                  []int
	Gain                                         simulate.Gain // as in simulate.FamiliesConfig
	// Settle is how long a student waits after its last swipe before a
	// checkpoint's read, so that the worker has learned from it (default
	// 1 s; the learned feed's lag is under 0.25 s at p99 on a quiet
	// service).
	Settle time.Duration
}

// Reference names what FamiliesResult holds beside the service.
const (
	RefService  = iota // the service's POST /recommendations
	RefCeiling         // the student's ideal order served under the feed rules
	RefLogistic        // the textbook learner on the same swipes, served under the rules
	numRefs
)

// FamiliesResult is what a families run measured.
type FamiliesResult struct {
	Config      FamiliesConfig
	Checkpoints []int
	// NDCG[r][f][k] is reference r's mean NDCG@20 at Checkpoints[k] over
	// the students of family f; f == simulate.NumFamilies is all students.
	NDCG [numRefs][simulate.NumFamilies + 1][]float64
	// StableLike[f] is the like rate of swipes 31 and after.
	StableLike [simulate.NumFamilies + 1]float64
	Students   [simulate.NumFamilies + 1]int
	Swipes     int
	Elapsed    time.Duration
}

// famOutcome is one student's measurements.
type famOutcome struct {
	family        simulate.Family
	ndcg          [numRefs][]float64
	likes, stable int
	swipes        int
}

// RunFamilies drives cfg.Students family students through the API,
// cfg.Workers at a time. It stops at the first error and returns it with
// what was measured until then (students that finished).
func RunFamilies(ctx context.Context, cfg FamiliesConfig) (FamiliesResult, error) {
	cfg = famDefaults(cfg)
	if cfg.API == "" || cfg.Token == nil || len(cfg.Schools) == 0 {
		return FamiliesResult{}, errors.New("live: API, Token and Schools are required")
	}
	start := time.Now()
	pop := simulate.NewFamilyPopulation(simulate.FamiliesConfig{Schools: cfg.Schools, Students: cfg.Students,
		Swipes: cfg.Swipes, Seed: cfg.Seed, Variant: cfg.Variant, PageSize: cfg.PageSize, Gain: cfg.Gain})
	var (
		mu   sync.Mutex
		outs []famOutcome
	)
	err := drive(ctx, cfg.Students, cfg.Workers, func(ctx context.Context, i int) error {
		d := &famDriver{driver: driver{cfg: Config{API: cfg.API, Client: cfg.Client}}, fcfg: cfg, st: pop.Student(i)}
		o, err := d.run(ctx, i)
		if err == nil {
			mu.Lock()
			outs = append(outs, o)
			mu.Unlock()
		}
		return err
	})
	res := summarise(cfg, outs)
	res.Elapsed = time.Since(start)
	return res, err
}

func famDefaults(c FamiliesConfig) FamiliesConfig {
	orDefault(&c.Students, 200)
	orDefault(&c.Swipes, 50)
	orDefault(&c.PageSize, 10)
	orDefault(&c.Workers, 4)
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Settle <= 0 {
		c.Settle = time.Second
	}
	c.Checkpoints = simulate.FamilyCheckpoints(c.Checkpoints, c.Swipes)
	c.Client, c.API = reach(c.Client, c.API)
	return c
}

// summarise averages the students' measurements by family.
func summarise(cfg FamiliesConfig, outs []famOutcome) FamiliesResult {
	res := FamiliesResult{Config: cfg, Checkpoints: cfg.Checkpoints}
	all := int(simulate.NumFamilies)
	for r := range res.NDCG {
		for f := range res.NDCG[r] {
			res.NDCG[r][f] = make([]float64, len(cfg.Checkpoints))
		}
	}
	var likes, stable [simulate.NumFamilies + 1]int
	for _, o := range outs {
		res.Swipes += o.swipes
		for _, f := range []int{int(o.family), all} {
			res.Students[f]++
			likes[f] += o.likes
			stable[f] += o.stable
			for r := range o.ndcg {
				for k, v := range o.ndcg[r] {
					res.NDCG[r][f][k] += v
				}
			}
		}
	}
	for f := range res.Students {
		if n := res.Students[f]; n > 0 {
			for r := range res.NDCG {
				for k := range res.NDCG[r][f] {
					res.NDCG[r][f][k] /= float64(n)
				}
			}
		}
		if stable[f] > 0 {
			res.StableLike[f] = float64(likes[f]) / float64(stable[f])
		}
	}
	return res
}

// famDriver is one family student's client.
type famDriver struct {
	driver
	fcfg FamiliesConfig
	st   *simulate.FamilyStudent
}

// servedItem is a feed item as the client reads it.
type servedItem struct {
	SchoolID string `json:"school_id"`
}

func (d *famDriver) run(ctx context.Context, i int) (famOutcome, error) {
	o := famOutcome{family: d.st.Family()}
	for r := range o.ndcg {
		o.ndcg[r] = make([]float64, len(d.fcfg.Checkpoints))
	}
	d.id = uuid.NewString()
	tok, err := d.fcfg.Token(d.id)
	if err != nil {
		return o, err
	}
	d.token = tok
	if err := d.call(ctx, "/v2/onboarding/minimal", onboardingBody(d.st.Profile(), i), http.StatusCreated, nil); err != nil {
		return o, fmt.Errorf("onboarding: %w", err)
	}
	var page []servedItem
	cp := 0
	for t := 0; ; t++ {
		if cp < len(d.fcfg.Checkpoints) && d.fcfg.Checkpoints[cp] == t {
			if err := d.checkpoint(ctx, &o, cp, t); err != nil {
				return o, err
			}
			cp++
		}
		if t == d.fcfg.Swipes {
			return o, nil
		}
		if len(page) == 0 {
			var feed struct {
				Recommendations []servedItem `json:"recommendations"`
			}
			body := map[string]any{"student_id": d.id, "limit": d.fcfg.PageSize}
			if err := d.call(ctx, "/continuous-feed", body, http.StatusOK, &feed); err != nil {
				return o, fmt.Errorf("continuous feed: %w", err)
			}
			if len(feed.Recommendations) == 0 {
				return o, fmt.Errorf("the continuous feed served nothing after %d swipes", t)
			}
			page = feed.Recommendations
		}
		id := page[0].SchoolID
		page = page[1:]
		like, known := d.st.Swipe(id)
		if !known {
			return o, fmt.Errorf("the service served school %s, which is not in the catalogue given", id)
		}
		dir := "left"
		if like {
			dir = "right"
		}
		var ans struct {
			SwipeCount int `json:"swipe_count"`
		}
		body := map[string]any{"student_id": d.id, "school_id": id, "direction": dir, "swipe_id": uuid.NewString()}
		if err := d.call(ctx, "/swipe", body, http.StatusOK, &ans); err != nil {
			return o, fmt.Errorf("swipe %d: %w", t+1, err)
		}
		if ans.SwipeCount != t+1 {
			return o, fmt.Errorf("swipe %d: the service counted %d", t+1, ans.SwipeCount)
		}
		o.swipes++
		if t >= 30 {
			o.stable++
			if like {
				o.likes++
			}
		}
	}
}

// checkpoint waits for the worker to learn the swipes made (Settle), reads
// the student's first page of POST /recommendations and judges it beside
// the references.
func (d *famDriver) checkpoint(ctx context.Context, o *famOutcome, k, t int) error {
	if t > 0 {
		select {
		case <-time.After(d.fcfg.Settle):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var recs struct {
		Recommendations []servedItem `json:"recommendations"`
	}
	body := map[string]any{"student_id": d.id, "limit": 20}
	if err := d.call(ctx, "/recommendations", body, http.StatusOK, &recs); err != nil {
		return fmt.Errorf("recommendations after %d swipes: %w", t, err)
	}
	ids := make([]string, len(recs.Recommendations))
	for j, it := range recs.Recommendations {
		ids[j] = it.SchoolID
	}
	o.ndcg[RefService][k] = d.st.NDCG(ids)
	o.ndcg[RefCeiling][k], o.ndcg[RefLogistic][k] = d.st.References()
	return nil
}

// Table is the result as Markdown: by checkpoint for all students, then
// by family from the first checkpoint to the last, with the net lift (the
// service's share of the ceiling at the last checkpoint minus the same at
// the first) and the like rate of swipes 31 and after.
func (r FamiliesResult) Table() string {
	var b strings.Builder
	all := int(simulate.NumFamilies)
	fmt.Fprintf(&b, "families through the API, variant %d: %d students, %d swipes in %s (seed %d, %s gains)\n\n",
		r.Config.Variant, r.Students[all], r.Swipes, r.Elapsed.Round(time.Second), r.Config.Seed, r.Config.Gain)
	b.WriteString("| swipes | service | ceiling | logistic |\n|---:|---:|---:|---:|\n")
	for k, t := range r.Checkpoints {
		fmt.Fprintf(&b, "| %d | %.3f | %.3f | %.3f |\n", t, r.NDCG[RefService][all][k], r.NDCG[RefCeiling][all][k], r.NDCG[RefLogistic][all][k])
	}
	if len(r.Checkpoints) == 0 {
		return b.String()
	}
	last := len(r.Checkpoints) - 1
	fmt.Fprintf(&b, "\n| family | students | service, %d -> %d | lift | ceiling | net lift | logistic | like rate, swipes 31+ |\n|---|---:|---:|---:|---:|---:|---:|---:|\n",
		r.Checkpoints[0], r.Checkpoints[last])
	for f := range all + 1 {
		name := "all"
		if f < all {
			name = simulate.Family(f).String()
		}
		s, c := r.NDCG[RefService][f], r.NDCG[RefCeiling][f]
		fmt.Fprintf(&b, "| %s | %d | %.3f -> %.3f | %+.3f | %.3f -> %.3f | %+.3f | %.3f -> %.3f | %.3f |\n", name, r.Students[f],
			s[0], s[last], s[last]-s[0], c[0], c[last], share(s[last], c[last])-share(s[0], c[0]),
			r.NDCG[RefLogistic][f][0], r.NDCG[RefLogistic][f][last], r.StableLike[f])
	}
	return b.String()
}

// share is a policy's NDCG as a share of the ceiling's (0 when the
// ceiling is 0).
func share(v, ceiling float64) float64 {
	if ceiling == 0 {
		return 0
	}
	return v / ceiling
}
