package simulate

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
)

// Families mode: students whose hidden tastes are not the service's score.
//
// In Run, a student's hidden utility is the service's own match score with
// hidden weights (plus a small taste term): every taste it makes is one the
// model can express exactly, which flatters any learner built on that
// score. RunFamilies draws students from families of tastes of other
// shapes, computed from the schools' data directly (net price, distance,
// size, setting, admission rate, SAT range, completion, earnings, program
// shares), never from the service's factors or curves:
//
//   - budget: a gate on the student's net price at their budget, then
//     quality (completion and earnings);
//   - prestige: selectivity, gated by whether the school's SAT range is
//     within the student's reach;
//   - near: closeness with a decay the student chooses, then quality;
//   - size and setting: a preferred enrolment with a preferred width, and
//     a preferred campus setting;
//   - mixed: random weights over ten standardised school features.
//
// Each family has three variants with different shapes (Variant 0 is the
// one the learner's tunables were chosen on; Variant 1 changes the gate's
// form, the decay's curve, the size preference from two-sided to
// one-sided, the quality measure, and the mixed tastes' weights to sparse
// ones with an interaction), so a gain can be checked on tastes it was not
// tuned on. Variant 2 holds shapes further still from both, which nothing
// in the service was measured on before it was written: a hard cap on the
// net price then earnings for the money; a brand (top completion and
// earnings, selectivity) whatever the student's SAT; the student's own
// state; a small school in a town or the country, both at once; and one of
// the student's majors strongly taught, then cheapness.
//
// Every student has a complete profile that tells the truth about what the
// form asks (an SAT score, a home, a budget, a family income, intended
// majors; a max distance; a preferred size and setting when their taste is
// about size and setting), and likes a school when its utility, with
// noise, is above the student's own like percentile (each student likes
// between 12 % and 30 % of the catalogue); 3 % of swipes are flipped.
//
// NDCG@20 is measured as in Run (gains 7/3/1 for the student's top 1, 3 and
// 10 % by utility), over the schools the learner's student has not swiped,
// at the checkpoints, for:
//
//   - learner: the service, as in Run (the model folded swipe by swipe, the
//     feed assembled with probes, exploration and the geographic mix);
//   - weights only: the same learner without its residual (the eight
//     weights alone, as the service learned before it), on its own
//     trajectory;
//   - ceiling: the student's ideal order served under the same feed rules:
//     the best any learner can do under the spec's rules;
//   - best 8 weights: the fixed preference weights that best rank the
//     whole catalogue for this student (fitted offline by search), served
//     under the rules: the ceiling of a model of the eight weights alone;
//   - logistic: an L2-regularised logistic regression over the residual's
//     school features (match.ResidualFeatures), fitted from scratch on the
//     learner's swipes so far, served under the rules: a textbook learner;
//   - popularity and random: fixed orders.

// Family is a family of hidden tastes.
type Family int

const (
	FamilyBudget Family = iota
	FamilyPrestige
	FamilyNear
	FamilySizeSetting
	FamilyMixed
	NumFamilies
)

var familyNames = [NumFamilies]string{"budget", "prestige", "near", "size and setting", "mixed"}

// String is the family's name in reports.
func (f Family) String() string { return familyNames[f] }

// FamilyPolicy is a way of choosing what a student sees, in families mode.
type FamilyPolicy int

const (
	FLearner FamilyPolicy = iota
	FWeightsOnly
	FCeiling
	FBest8
	FLogistic
	FPopularity
	FRandom
	NumFamilyPolicies
)

var familyPolicyNames = [NumFamilyPolicies]string{"learner", "weights only", "ceiling", "best 8 weights", "logistic", "popularity", "random"}

// String is the policy's name in reports.
func (p FamilyPolicy) String() string { return familyPolicyNames[p] }

// FamiliesConfig is one families-mode run.
type FamiliesConfig struct {
	// Schools is the catalogue (required): the service's bundled one for
	// the published figures.
	Schools []domain.School
	// Students in all, spread evenly over the families (default 200).
	Students int
	// Swipes per student (default 50).
	Swipes int
	Seed   uint64 // default 1
	// Variant 0, 1 or 2: the families' shapes (see the package doc).
	Variant int
	// PageSize is the client's page (default 10).
	PageSize int
	// Workers is how many students are simulated at once (default 1).
	Workers int
	// Checkpoints are the swipe counts NDCG is measured at (default 0, 10,
	// 20, 30, 50; those past Swipes are dropped).
	Checkpoints []int
	// Gain is how NDCG grades a school (default GainSteep).
	Gain Gain
}

// Gain is how NDCG@20 grades a school for a student.
type Gain int

const (
	// GainSteep: 7, 3 and 1 for the student's top 1, 3 and 10 % by
	// utility, 0 for the rest: only the few best schools count.
	GainSteep Gain = iota
	// GainPercentile: the school's percentile by utility (1 for the
	// student's best, 0.5 for a middling school, 0 for the worst, in
	// hundredths): every step up the student's own order counts.
	GainPercentile
)

// String is the gain's name.
func (g Gain) String() string {
	if g == GainPercentile {
		return "percentile"
	}
	return "steep"
}

// ParseGain reads a gain's name: steep or percentile.
func ParseGain(name string) (Gain, error) {
	switch name {
	case "", "steep":
		return GainSteep, nil
	case "percentile":
		return GainPercentile, nil
	}
	return 0, fmt.Errorf("gain %q: want steep or percentile", name)
}

// FamiliesResult is what a families-mode run measured.
type FamiliesResult struct {
	Config      FamiliesConfig
	Checkpoints []int
	// NDCG[p][f][k] is policy p's mean NDCG@20 at Checkpoints[k] over the
	// students of family f; f == NumFamilies is all students.
	NDCG [NumFamilyPolicies][NumFamilies + 1][]float64
	// StableLike[f] is the learner's like rate over swipes 31 and after.
	StableLike [NumFamilies + 1]float64
	// StableLikeCeiling[f] is the same for the ceiling on a trajectory of
	// its own (the student swiping the ideal order served under the rules,
	// the prior's probes and exploration): the like rate a perfect ranking
	// reaches under the spec's rules.
	StableLikeCeiling [NumFamilies + 1]float64
	// Students[f] is the number of students of family f.
	Students [NumFamilies + 1]int
}

func (c FamiliesConfig) withDefaults() FamiliesConfig {
	if c.Students <= 0 {
		c.Students = 200
	}
	if c.Swipes <= 0 {
		c.Swipes = 50
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.PageSize <= 0 {
		c.PageSize = 10
	}
	c.PageSize = min(c.PageSize, ndcgK)
	if c.Workers <= 0 {
		c.Workers = 1
	}
	c.Checkpoints = FamilyCheckpoints(c.Checkpoints, c.Swipes)
	return c
}

// FamilyCheckpoints are the swipe counts a families run measures at: cps (0,
// 10, 20, 30 and 50 when empty) without those outside 0..swipes.
func FamilyCheckpoints(cps []int, swipes int) []int {
	if len(cps) == 0 {
		cps = []int{0, 10, 20, 30, 50}
	}
	var out []int
	for _, t := range cps {
		if t >= 0 && t <= swipes {
			out = append(out, t)
		}
	}
	return out
}

// famWorld is what every student of a families run shares: the catalogue
// and each school's data as the tastes read it.
type famWorld struct {
	cfg     FamiliesConfig
	cat     *match.Catalog
	n       int
	homes   []int
	popular []int32

	lat, lon []float64 // NaN when unknown
	logSize  []float64 // log10 enrolment, NaN when unknown
	adm      []float64 // admission rate, NaN when unknown
	satMid   []float64 // middle of the SAT range, NaN when unknown
	quality  []float64 // percentile of completion and earnings together, in [0,1]
	earnPct  []float64 // percentile of earnings
	setting  []int8    // 0 city .. 3 rural, -1 unknown
}

func newFamWorld(cfg FamiliesConfig) *famWorld {
	cat := match.NewCatalog(cfg.Schools)
	n := cat.Len()
	w := &famWorld{cfg: cfg, cat: cat, n: n,
		lat: make([]float64, n), lon: make([]float64, n), logSize: make([]float64, n), adm: make([]float64, n),
		satMid: make([]float64, n), quality: make([]float64, n), earnPct: make([]float64, n), setting: make([]int8, n)}
	nan := math.NaN()
	grad, earn := make([]float64, n), make([]float64, n)
	for i := range cat.Schools {
		s := &cat.Schools[i]
		w.lat[i], w.lon[i] = nan, nan
		if s.Lat != nil && s.Lon != nil {
			w.lat[i], w.lon[i] = *s.Lat, *s.Lon
			w.homes = append(w.homes, i)
		}
		w.logSize[i] = nan
		if s.Size != nil && *s.Size > 0 {
			w.logSize[i] = math.Log10(float64(*s.Size))
		}
		w.adm[i] = nan
		if s.AdmissionRate != nil && *s.AdmissionRate > 0 && *s.AdmissionRate <= 1 {
			w.adm[i] = *s.AdmissionRate
		}
		w.satMid[i] = nan
		switch {
		case s.SAT25 != nil && s.SAT75 != nil:
			w.satMid[i] = float64(*s.SAT25+*s.SAT75) / 2
		case s.ACT25 != nil && s.ACT75 != nil:
			w.satMid[i] = float64(match.ACTToSAT(int(*s.ACT25))+match.ACTToSAT(int(*s.ACT75))) / 2
		}
		grad[i], earn[i] = nan, nan
		if s.GradRate != nil {
			grad[i] = *s.GradRate
		}
		switch {
		case s.Earnings10yr != nil:
			earn[i] = float64(*s.Earnings10yr)
		case s.Earnings6yr != nil:
			earn[i] = 1.25 * float64(*s.Earnings6yr)
		}
		w.setting[i] = -1
		if s.Locale != nil {
			switch domain.SettingFromLocale(int(*s.Locale)) {
			case domain.SettingCity:
				w.setting[i] = 0
			case domain.SettingSuburb:
				w.setting[i] = 1
			case domain.SettingTown:
				w.setting[i] = 2
			case domain.SettingRural:
				w.setting[i] = 3
			}
		}
	}
	gp, ep := percentiles(grad, 0.35), percentiles(earn, 0.35)
	for i := range n {
		w.quality[i] = (gp[i] + ep[i]) / 2
		w.earnPct[i] = ep[i]
	}
	w.popular = make([]int32, n)
	for i := range w.popular {
		w.popular[i] = int32(i)
	}
	slices.SortStableFunc(w.popular, func(a, b int32) int { return cmp.Compare(w.quality[b], w.quality[a]) })
	return w
}

// percentiles is each value's percentile among the known values; a
// missing one takes missing.
func percentiles(v []float64, missing float64) []float64 {
	idx := make([]int, 0, len(v))
	for i, x := range v {
		if !math.IsNaN(x) {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(v[a], v[b]) })
	out := make([]float64, len(v))
	for i := range out {
		out[i] = missing
	}
	for k, i := range idx {
		out[i] = (float64(k) + 0.5) / float64(len(idx))
	}
	return out
}

// famStudent is one student of a families run.
type famStudent struct {
	student
	family Family
	likeR  *rand.Rand
	noise  float64 // sd of the decision noise, in utility units
}

// RunFamilies runs cfg.
func RunFamilies(cfg FamiliesConfig) FamiliesResult {
	cfg = cfg.withDefaults()
	w := newFamWorld(cfg)
	type out struct {
		family Family
		ndcg   [NumFamilyPolicies][]float64
		likes  [2]int // the learner's and the ceiling's, in the stable phase
		stable [2]int
	}
	outs := make([]out, cfg.Students)
	var wg sync.WaitGroup
	next := make(chan int)
	for range cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				st := w.newStudent(i)
				o := out{family: st.family}
				o.ndcg, o.likes, o.stable = w.run(st)
				outs[i] = o
			}
		}()
	}
	for i := range cfg.Students {
		next <- i
	}
	close(next)
	wg.Wait()

	res := FamiliesResult{Config: cfg, Checkpoints: cfg.Checkpoints}
	var likes, stable [2][NumFamilies + 1]int
	for p := range NumFamilyPolicies {
		for f := range NumFamilies + 1 {
			res.NDCG[p][f] = make([]float64, len(cfg.Checkpoints))
		}
	}
	for _, o := range outs {
		for _, f := range []int{int(o.family), int(NumFamilies)} {
			if o.ndcg[0] == nil {
				continue
			}
			for p := range NumFamilyPolicies {
				for k, v := range o.ndcg[p] {
					res.NDCG[p][f][k] += v
				}
			}
			res.Students[f]++
			for j := range o.likes {
				likes[j][f] += o.likes[j]
				stable[j][f] += o.stable[j]
			}
		}
	}
	for f := range NumFamilies + 1 {
		if c := res.Students[f]; c > 0 {
			for p := range NumFamilyPolicies {
				for k := range res.NDCG[p][f] {
					res.NDCG[p][f][k] /= float64(c)
				}
			}
		}
		if stable[0][f] > 0 {
			res.StableLike[f] = float64(likes[0][f]) / float64(stable[0][f])
		}
		if stable[1][f] > 0 {
			res.StableLikeCeiling[f] = float64(likes[1][f]) / float64(stable[1][f])
		}
	}
	return res
}

// NDCGAt is policy p's NDCG@20 at swipe count t over family f's students
// (NumFamilies: all); NaN when t is not a checkpoint.
func (r FamiliesResult) NDCGAt(p FamilyPolicy, f Family, t int) float64 {
	for k, c := range r.Checkpoints {
		if c == t {
			return r.NDCG[p][f][k]
		}
	}
	return math.NaN()
}

func (w *famWorld) rng(i int, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(w.cfg.Seed*0x9e3779b97f4a7c15+uint64(i)*7919+uint64(w.cfg.Variant)*0x51ed27, stream))
}

// newStudent draws student i: its family, profile and hidden utility.
func (w *famWorld) newStudent(i int) *famStudent {
	r := w.rng(i, 1)
	st := &famStudent{family: Family(i % int(NumFamilies))}
	st.index, st.id, st.archetype = i, "fam-student-"+itoa(i), -1

	ds := domain.Student{ID: st.id}
	home := w.homes[r.IntN(len(w.homes))]
	lat, lon := w.lat[home]+0.6*(r.Float64()-0.5), w.lon[home]+0.6*(r.Float64()-0.5)
	ds.HomeLat, ds.HomeLon, ds.State = &lat, &lon, w.cat.Schools[home].State
	sat := int(math.Round(max(800, min(1600, 1120+190*r.NormFloat64()))/10) * 10)
	ds.SAT = &sat
	inc := int(math.Round(70000 * math.Exp(0.7*r.NormFloat64())))
	ds.FamilyIncome = &inc
	for range 1 + r.IntN(2) {
		ds.IntendedMajors = append(ds.IntendedMajors, popularMajors[r.IntN(len(popularMajors))])
	}
	budget := 15000 + 1000*r.IntN(31)
	maxDist := []int{150, 250, 300, 500, 800, 1500}[r.IntN(6)]
	v := w.cfg.Variant

	u := make([]float64, w.n)
	dist := func(k int) float64 {
		if math.IsNaN(w.lat[k]) {
			return math.NaN()
		}
		return haversineMiles(lat, lon, w.lat[k], w.lon[k])
	}
	switch st.family {
	case FamilyBudget:
		budget = 8000 + 1000*r.IntN(23)
		ds.Budget = &budget
		st.profile = match.NewProfile(ds)
		B := float64(budget)
		for k := range u {
			np := match.EstimateNetPrice(st.profile, w.cat, k)
			g := 0.2
			switch v {
			case 0:
				if np.Known() {
					g = sigmoid((B - float64(np.Amount)) / (0.06 * B))
				}
				u[k] = g * (0.25 + 0.75*w.quality[k])
			case 2:
				g, ratio := 0.3, 1.0
				if np.Known() {
					ratio = float64(np.Amount) / B
					g = 0.05
					if ratio <= 1.3 {
						g = 1
					}
				}
				u[k] = g * (0.3 + 0.7*w.earnPct[k]*(1-0.5*min(1, ratio)))
			default:
				if np.Known() {
					g = clamp((1.15*B-float64(np.Amount))/(0.3*B), 0, 1)
				}
				p := 0.0
				if np.Known() {
					p = float64(np.Amount)
				}
				u[k] = g*(0.4+0.6*w.earnPct[k]) + 0.1*(1-min(1, p/60000))
			}
		}
	case FamilyPrestige:
		ds.Budget = &budget
		st.profile = match.NewProfile(ds)
		R, W := 80*r.Float64(), 35.0
		if v == 1 {
			R, W = -60+200*r.Float64(), 70
		}
		for k := range u {
			sel := 0.2
			if !math.IsNaN(w.adm[k]) {
				sel = 1 - w.adm[k]
			}
			reach := 0.5
			if !math.IsNaN(w.satMid[k]) {
				reach = sigmoid((float64(sat) + R - w.satMid[k]) / W)
			}
			switch v {
			case 0:
				u[k] = reach*sel + 0.15*w.quality[k]
			case 2: // a brand, whatever the reach
				q := w.quality[k]
				u[k] = q * q * q * q
				if sel >= 0.75 {
					u[k] += 0.3
				}
			default:
				u[k] = reach * (0.5*sel + 0.5*w.earnPct[k])
			}
		}
	case FamilyNear:
		ds.Budget = &budget
		if v == 2 { // the student's own state
			md := 300
			ds.MaxDistanceMiles = &md
			st.profile = match.NewProfile(ds)
			for k := range u {
				u[k] = 0.15 * w.quality[k]
				if w.cat.Schools[k].State == ds.State {
					u[k] += 0.6 + 0.4*w.quality[k]
				}
			}
			break
		}
		L, a := 60+240*r.Float64(), 0.65+0.25*r.Float64()
		if v == 1 {
			L = 100 + 400*r.Float64()
		}
		md := int(math.Round(2*L/50) * 50)
		ds.MaxDistanceMiles = &md
		st.profile = match.NewProfile(ds)
		prog := programPercentile(w, st.profile)
		for k := range u {
			d := dist(k)
			c := 0.0
			if !math.IsNaN(d) {
				if v == 0 {
					c = math.Exp(-d / L)
				} else {
					c = 1 / (1 + (d/L)*(d/L))
				}
			}
			second := w.quality[k]
			if v == 1 {
				second = prog[k]
			}
			u[k] = a*c + (1-a)*second
		}
	case FamilySizeSetting:
		ds.Budget = &budget
		c := 2.7 + 1.8*r.Float64()
		switch {
		case c < 3.3:
			ds.PreferredSize = "small"
		case c < 3.9:
			ds.PreferredSize = "medium"
		default:
			ds.PreferredSize = "large"
		}
		pref := int8(r.IntN(4))
		second := int8(-1)
		if v == 1 {
			second = (pref + 1 + int8(r.IntN(3))) % 4
		}
		if v == 2 { // small, and in a town or the country: both at once
			pref = 2 + int8(r.IntN(2))
			ds.PreferredSize = "small"
			ds.PreferredSetting = string([4]domain.Setting{domain.SettingCity, domain.SettingSuburb, domain.SettingTown, domain.SettingRural}[pref])
			st.profile = match.NewProfile(ds)
			for k := range u {
				u[k] = 0.2 * w.quality[k]
				if ls := w.logSize[k]; (w.setting[k] == 2 || w.setting[k] == 3) && !math.IsNaN(ls) && ls < 3.6 {
					u[k]++
				}
			}
			break
		}
		ds.PreferredSetting = string([4]domain.Setting{domain.SettingCity, domain.SettingSuburb, domain.SettingTown, domain.SettingRural}[pref])
		st.profile = match.NewProfile(ds)
		atLeast := r.IntN(2) == 0
		for k := range u {
			sz := 0.3
			if ls := w.logSize[k]; !math.IsNaN(ls) {
				if v == 0 {
					d := (ls - c) / 0.3
					sz = math.Exp(-d * d / 2)
				} else if atLeast {
					sz = sigmoid((ls - c) / 0.15)
				} else {
					sz = sigmoid((c - ls) / 0.15)
				}
			}
			set := 0.45
			switch {
			case w.setting[k] == pref:
				set = 1
			case w.setting[k] == second:
				set = 0.9
			case v == 1:
				set = 0.3
			}
			u[k] = sz*set + 0.1*w.quality[k]
		}
	default: // FamilyMixed
		ds.Budget = &budget
		ds.MaxDistanceMiles = &maxDist
		st.profile = match.NewProfile(ds)
		if v == 2 { // a major strongly taught, then cheapness
			prog := programPercentile(w, st.profile)
			for k := range u {
				cheap := 0.5
				if np := match.EstimateNetPrice(st.profile, w.cat, k); np.Known() {
					cheap = 1 - min(1, float64(np.Amount)/60000)
				}
				u[k] = sigmoid((prog[k]-0.8)/0.05)*(0.5+0.5*cheap) + 0.1*w.quality[k]
			}
			break
		}
		feats := mixedFeatures(w, st.profile, lat, lon, float64(sat))
		var beta [nMixed]float64
		inter := 0.0
		if v == 0 {
			for j := range beta {
				beta[j] = r.NormFloat64()
			}
		} else {
			for _, j := range r.Perm(nMixed)[:3] {
				s := 1.0
				if r.IntN(2) == 0 {
					s = -1
				}
				beta[j] = s * (0.5 + r.Float64())
			}
			inter = r.NormFloat64()
		}
		for k := range u {
			x := &feats[k]
			for j := range nMixed {
				u[k] += beta[j] * x[j]
			}
			u[k] += inter * x[0] * x[6]
		}
	}
	st.seen = ds
	st.prior = match.SeedWeights(st.profile)

	// Likes: above the student's own percentile, with noise.
	st.util = u
	sorted := slices.Clone(u)
	slices.Sort(sorted)
	q := func(share float64) float64 {
		return sorted[max(0, min(w.n-1, int(math.Floor(float64(w.n)*(1-share)))))]
	}
	share := 0.12 + 0.18*r.Float64()
	st.tau = q(share)
	mean, sq := 0.0, 0.0
	for _, x := range u {
		mean += x
		sq += x * x
	}
	mean /= float64(w.n)
	st.noise = 0.25 * math.Sqrt(max(0, sq/float64(w.n)-mean*mean))
	graded := w.cfg.Gain == GainPercentile
	if graded {
		// The school's percentile by utility, in hundredths: 1 for the
		// best, 0 for the worst.
		st.gain = make([]float64, w.n)
		order := make([]int, w.n)
		for k := range order {
			order[k] = k
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(u[a], u[b]) })
		for pos, k := range order {
			st.gain[k] = math.Round(gradedSteps*float64(pos)/float64(max(1, w.n-1))) / gradedSteps
		}
	} else {
		st.gain = steepGains(u, q)
	}
	st.ideal = newIdealGains(st.gain, graded)
	st.likeR = w.rng(i, 2)
	return st
}

// decide draws the student's swipe on school k.
func (st *famStudent) decide(k int) bool {
	like := st.util[k]+st.noise*st.likeR.NormFloat64() > st.tau
	if st.likeR.Float64() < 0.03 {
		like = !like
	}
	return like
}

// nMixed is the number of school features mixed tastes weigh.
const nMixed = 10

// mixedFeatures are ten school features, standardised over the catalogue:
// cheapness, closeness, size, selectivity, SAT fit, completion, earnings,
// program share, city, rural.
func mixedFeatures(w *famWorld, p match.Profile, lat, lon, sat float64) [][nMixed]float64 {
	out := make([][nMixed]float64, w.n)
	prog := programPercentile(w, p)
	for k := range out {
		x := &out[k]
		np := match.EstimateNetPrice(p, w.cat, k)
		x[0] = -30000
		if np.Known() {
			x[0] = -float64(np.Amount)
		}
		x[1] = 0
		if !math.IsNaN(w.lat[k]) {
			x[1] = math.Exp(-haversineMiles(lat, lon, w.lat[k], w.lon[k]) / 300)
		}
		x[2] = 3.3
		if !math.IsNaN(w.logSize[k]) {
			x[2] = w.logSize[k]
		}
		x[3] = 0.3
		if !math.IsNaN(w.adm[k]) {
			x[3] = 1 - w.adm[k]
		}
		x[4] = -150
		if !math.IsNaN(w.satMid[k]) {
			x[4] = -math.Abs(sat - w.satMid[k])
		}
		x[5] = w.quality[k]
		x[6] = w.earnPct[k]
		x[7] = prog[k]
		x[8] = b2f(w.setting[k] == 0)
		x[9] = b2f(w.setting[k] == 3)
	}
	for j := range nMixed {
		mean, sq := 0.0, 0.0
		for k := range out {
			mean += out[k][j]
			sq += out[k][j] * out[k][j]
		}
		mean /= float64(w.n)
		sd := math.Sqrt(max(1e-12, sq/float64(w.n)-mean*mean))
		for k := range out {
			out[k][j] = (out[k][j] - mean) / sd
		}
	}
	return out
}

// programPercentile is, for each school, the percentile of its largest
// share of degrees among the student's intended majors.
func programPercentile(w *famWorld, p match.Profile) []float64 {
	v := make([]float64, w.n)
	for k := range v {
		v[k] = math.NaN()
		s := &w.cat.Schools[k]
		if len(s.ProgramShares) == 0 {
			continue
		}
		best := 0.0
		for _, m := range p.Majors {
			best = max(best, s.ProgramShares[m])
		}
		v[k] = best
	}
	return percentiles(v, 0.3)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// haversineMiles is the great-circle distance between two points.
func haversineMiles(lat1, lon1, lat2, lon2 float64) float64 {
	const r = 3958.8
	p1, p2 := lat1*math.Pi/180, lat2*math.Pi/180
	dp, dl := p2-p1, (lon2-lon1)*math.Pi/180
	a := math.Sin(dp/2)*math.Sin(dp/2) + math.Cos(p1)*math.Cos(p2)*math.Sin(dl/2)*math.Sin(dl/2)
	return 2 * r * math.Asin(math.Sqrt(min(1, a)))
}

// run runs the learner's trajectory for st and measures every policy at
// the checkpoints; it returns the NDCG per policy and checkpoint, and the
// likes and swipes in the stable phase (31 and after) of the learner and
// of the ceiling on its own trajectory.
func (w *famWorld) run(st *famStudent) (ndcg [NumFamilyPolicies][]float64, likes, stable [2]int) {
	cfg := w.cfg
	for p := range ndcg {
		ndcg[p] = make([]float64, len(cfg.Checkpoints))
	}
	base := match.Rank(nil, st.profile, st.prior, w.cat) // distances and components for served orders
	byIndex := make([]match.Scored, w.n)
	for _, s := range base {
		byIndex[s.Index] = s
	}
	priorModel := match.NewModel(st.prior)

	// The ceiling's order: the student's utility.
	ceiling := w.order(byIndex, st.util)
	// The best fixed 8 weights for this student.
	best := w.bestWeights(st)
	best8 := match.Rank(nil, st.profile, best, w.cat)
	best8Model := match.NewModel(best)
	// The logistic learner's features.
	feats := match.ResidualFeatures(nil, st.profile, w.cat)

	perm := make([]int32, w.n)
	for k := range perm {
		perm[k] = int32(k)
	}
	pr := w.rng(st.index, 3)
	pr.Shuffle(len(perm), func(a, b int) { perm[a], perm[b] = perm[b], perm[a] })

	// The learner without its residual, on its own trajectory.
	w.walk(st, nil, func(m match.Model, o match.Observation) match.Model {
		m, _ = m.ObserveWeights(st.profile, w.cat, o)
		return m
	}, func(k, _ int, feed []match.FeedItem, p *path) {
		ndcg[FWeightsOnly][k] = st.ndcgOfFeed(feed, &p.ideal)
	})
	// The ceiling on its own trajectory, for its like rate: the prior's
	// model (its probes and exploration) is never folded.
	c := w.walk(st, ceiling, func(m match.Model, _ match.Observation) match.Model { return m },
		func(int, int, []match.FeedItem, *path) {})
	// The learner, and every reference on its unswiped schools.
	p := w.walk(st, nil, func(m match.Model, o match.Observation) match.Model {
		m, _ = m.Observe(st.profile, w.cat, o)
		return m
	}, func(k, t int, feed []match.FeedItem, p *path) {
		served := func(model match.Model, order []match.Scored) float64 {
			return st.ndcgOfFeed(w.serve(st, p, t, model, order), &p.ideal)
		}
		ndcg[FLearner][k] = st.ndcgOfFeed(feed, &p.ideal)
		ndcg[FCeiling][k] = served(priorModel, ceiling)
		ndcg[FBest8][k] = served(best8Model, best8)
		ndcg[FLogistic][k] = served(priorModel, w.order(byIndex, fitLogistic(feats, p.swiped, p.ys)))
		ndcg[FPopularity][k] = st.ndcgOfOrder(w.popular, p.excluded, &p.ideal)
		ndcg[FRandom][k] = st.ndcgOfOrder(perm, p.excluded, &p.ideal)
	})
	return ndcg, [2]int{p.likes, c.likes}, [2]int{p.stable, c.stable}
}

// path is where a learner's trajectory stands: the schools swiped (and
// so excluded), what the student did about them, the ideal gains left,
// and the likes among the swipes of the stable phase.
type path struct {
	excluded      []bool
	swiped        []int
	ys            []bool
	ideal         idealGains
	likes, stable int
}

// walk runs a learner's trajectory for st from its prior: the feed is
// rebuilt after every swipe (from fixed, an order served as it is, or else
// the model's ranking), the client swipes pages of it in order, and fold
// folds each swipe into the model. At each checkpoint k (t swipes) at is
// called with the feed served then. The student decides from the same
// draws on every walk.
func (w *famWorld) walk(st *famStudent, fixed []match.Scored, fold func(match.Model, match.Observation) match.Model,
	at func(k, t int, feed []match.FeedItem, p *path)) *path {
	cfg := w.cfg
	st.likeR = w.rng(st.index, 2)
	p := &path{excluded: make([]bool, w.n), ideal: st.ideal}
	m := match.NewModel(st.prior)
	var ranked []match.Scored
	var page []match.FeedItem
	cp := 0
	for t := 0; t <= cfg.Swipes; t++ {
		if fixed != nil {
			ranked = fixed
		} else {
			ranked = match.RankModel(ranked, st.profile, m, w.cat)
		}
		feed := w.serve(st, p, t, m, ranked)
		if cp < len(cfg.Checkpoints) && cfg.Checkpoints[cp] == t {
			at(cp, t, feed, p)
			cp++
		}
		if t == cfg.Swipes {
			break
		}
		if len(page) == 0 {
			page = feed[:min(len(feed), cfg.PageSize)]
		}
		if len(page) == 0 {
			break
		}
		idx := int(page[0].Index)
		page = page[1:]
		liked := st.decide(idx)
		if t >= 30 {
			p.stable++
			if liked {
				p.likes++
			}
		}
		d := match.Dislike
		if liked {
			d = match.Like
		}
		m = fold(m, match.SwipeObservation(idx, d))
		p.excluded[idx] = true
		p.swiped = append(p.swiped, idx)
		p.ys = append(p.ys, liked)
		p.ideal.remove(st.gain[idx])
	}
	return p
}

// serve is the feed an order is served as after t swipes on path p:
// through the feed rules, with model's probes and exploration.
func (w *famWorld) serve(st *famStudent, p *path, t int, model match.Model, order []match.Scored) []match.FeedItem {
	return match.AssembleFeed(match.FeedInput{
		Catalog: w.cat, Profile: st.profile, Model: model, Ranked: order, Swipes: t,
		Length: ndcgK, PageSize: w.cfg.PageSize, Excluded: p.excluded,
		SwipedRegions: match.RegionsOf(w.cat, p.swiped), Seed: match.FeedSeed(st.id, t),
	})
}

// order is the catalogue ordered by score (best first, ties by index), as
// Scored values whose distances and components are base's: what feed
// assembly reads to serve an order under the rules.
func (w *famWorld) order(base []match.Scored, score []float64) []match.Scored {
	out := make([]match.Scored, w.n)
	for k := range out {
		out[k] = base[k]
		out[k].Score = score[k]
	}
	slices.SortStableFunc(out, func(a, b match.Scored) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.Index, b.Index))
	})
	// Feed assembly reads scores in [0,1].
	lo, hi := out[len(out)-1].Score, out[0].Score
	for k := range out {
		if hi > lo {
			out[k].Score = (out[k].Score - lo) / (hi - lo)
		} else {
			out[k].Score = 0.5
		}
	}
	return out
}

// bestWeights searches the fixed preference weights whose ranking of the
// whole catalogue has the best NDCG@20 for the student: random starts,
// then coordinate passes over a grid.
func (w *famWorld) bestWeights(st *famStudent) match.Weights {
	r := w.rng(st.index, 4)
	var buf []match.Scored
	ideal := st.student.ideal
	score := func(wt match.Weights) float64 {
		buf = match.Rank(buf, st.profile, wt, w.cat)
		return st.ndcgOfRanked(buf, nil, &ideal)
	}
	best, bestV := st.prior, score(st.prior)
	if v := score(match.DefaultWeights()); v > bestV {
		best, bestV = match.DefaultWeights(), v
	}
	for range 40 {
		c := match.Weights{CostWeight: r.Float64(), DistanceWeight: r.Float64(), OutcomesWeight: r.Float64(),
			CampusWeight: r.Float64(), ProgramWeight: r.Float64(), AidWeight: r.Float64(),
			AcademicSelectivity: r.Float64(), SizePreference: r.Float64()}
		if v := score(c); v > bestV {
			best, bestV = c, v
		}
	}
	grid := []float64{0.02, 0.15, 0.3, 0.45, 0.6, 0.75, 0.9, 0.98}
	for range 2 {
		for _, key := range match.WeightKeys {
			m := best.Map()
			for _, g := range grid {
				m[key] = g
				c := match.WeightsFromMap(m)
				if v := score(c); v > bestV {
					best, bestV = c, v
				}
			}
		}
	}
	return best
}

// rankWith is the catalogue ranked for st with fixed weights.
func (w *famWorld) rankWith(st *famStudent, wt match.Weights) []match.Scored {
	return match.Rank(nil, st.profile, wt, w.cat)
}

// fitLogistic fits an L2-regularised logistic regression (with an
// intercept, features standardised over the catalogue, penalty 1) to the
// swipes by Newton's method, and returns its score for every school.
func fitLogistic(feats [][match.ResidualFeatureCount]float64, swiped []int, ys []bool) []float64 {
	// The school features only: the last is the service's own score,
	// which a textbook learner does not have.
	const d = match.ResidualFeatureCount - 1
	n := len(feats)
	var mean, sd [d]float64
	for _, x := range feats {
		for j := range d {
			mean[j] += x[j]
		}
	}
	for j := range d {
		mean[j] /= float64(n)
	}
	for _, x := range feats {
		for j := range d {
			sd[j] += (x[j] - mean[j]) * (x[j] - mean[j])
		}
	}
	for j := range d {
		sd[j] = math.Sqrt(sd[j]/float64(n)) + 1e-9
	}
	z := func(x *[match.ResidualFeatureCount]float64, j int) float64 {
		if j == d {
			return 1
		}
		return (x[j] - mean[j]) / sd[j]
	}
	const p = d + 1
	var beta [p]float64
	for range 25 {
		var g [p]float64
		var h [p][p]float64
		for j := range d {
			g[j] = -beta[j]
			h[j][j] = 1
		}
		h[d][d] = 1e-3
		for k, i := range swiped {
			x := &feats[i]
			s := 0.0
			for j := range p {
				s += beta[j] * z(x, j)
			}
			pr := sigmoid(s)
			y := b2f(ys[k])
			for a := range p {
				za := z(x, a)
				g[a] += (y - pr) * za
				for b := range p {
					h[a][b] += pr * (1 - pr) * za * z(x, b)
				}
			}
		}
		step := solve(h, g)
		for j := range p {
			beta[j] += step[j]
		}
	}
	out := make([]float64, n)
	for i := range feats {
		for j := range d {
			out[i] += beta[j] * z(&feats[i], j)
		}
	}
	return out
}

// solve solves h x = g by Gaussian elimination with partial pivoting (h
// is positive definite here).
func solve(h [match.ResidualFeatureCount][match.ResidualFeatureCount]float64, g [match.ResidualFeatureCount]float64) [match.ResidualFeatureCount]float64 {
	const n = match.ResidualFeatureCount
	for c := range n {
		piv := c
		for r := c + 1; r < n; r++ {
			if math.Abs(h[r][c]) > math.Abs(h[piv][c]) {
				piv = r
			}
		}
		h[c], h[piv] = h[piv], h[c]
		g[c], g[piv] = g[piv], g[c]
		if h[c][c] == 0 {
			continue
		}
		for r := c + 1; r < n; r++ {
			f := h[r][c] / h[c][c]
			for k := c; k < n; k++ {
				h[r][k] -= f * h[c][k]
			}
			g[r] -= f * g[c]
		}
	}
	var x [n]float64
	for c := n - 1; c >= 0; c-- {
		s := g[c]
		for k := c + 1; k < n; k++ {
			s -= h[c][k] * x[k]
		}
		if h[c][c] != 0 {
			x[c] = s / h[c][c]
		}
	}
	return x
}

// Lift is the net lift of policy p over family f (NumFamilies: all): its
// share of the ceiling at the last checkpoint minus the same at the first.
func (r FamiliesResult) Lift(p FamilyPolicy, f Family) float64 {
	k := len(r.Checkpoints) - 1
	if k < 1 {
		return math.NaN()
	}
	at := func(k int) float64 { return r.NDCG[p][f][k] / r.NDCG[FCeiling][f][k] }
	return at(k) - at(0)
}
