// Package simulate measures how well the learning loop learns: synthetic
// students with hidden preferences swipe through the feed the service
// would serve them, and what they are served is scored against what they
// really want. It is pure: no I/O, no clock, no global random source; the
// same Config gives the same Result, whatever the number of workers.
//
// # Students
//
// A student has a profile the service sees (an SAT or a GPA, a home near a
// real school of the catalogue, often a max distance, a budget, a family
// income and intended majors, sometimes a preferred size that agrees with
// their hidden one) and hidden true preference weights the service never
// sees: six importances drawn uniformly from [0,1], a preferred size
// uniform in [0.1, 0.95] and a preferred selectivity level around 0.5 (sd
// 0.18). A student drawn from an archetype (Config.Archetypes) has hidden
// weights within ArchetypeJitter of the prior the service gives a student
// who chose that category at onboarding (ServiceArchetypes), and that prior
// as the learner's starting point.
//
// The student's hidden utility for school s is
//
//	U(s) = S(profile, hidden weights, s) + TasteSD * e(s)
//
// where S is the service's match score computed with the hidden weights
// (cost against the budget, distance against the max distance, size and
// selectivity against the preferred ones, outcomes, program match, each
// with the student's true importance) and e(s) is a standard normal taste
// for that school drawn once per student and school: what moves a student
// about a school that no model of school attributes can represent.
//
// A student likes a school with probability sigmoid((U(s) - tau) / T), tau
// being the (1 - LikeShare) quantile of U over the catalogue: a student
// would like about LikeShare of all schools, and decides with noise T.
//
// # What is measured
//
// NDCG@20 of the first 20 items, with graded gains from U: a school in the
// student's top 1 % of the catalogue by U has grade 3, top 3 % grade 2,
// top 10 % grade 1, others 0; gain 2^grade - 1, discount log2(1 + position).
// After t swipes every policy is scored on the same schools, those the
// learner's student has not swiped yet, so they share one ideal (the best
// 20 of those schools).
//
//   - learner: the service. The model starts at the student's prior
//     (match.SeedWeights of the profile, or an archetype's weights); the feed
//     is match.Rank with the learned weights through match.AssembleFeed
//     (probes, exploration, geographic mix), rebuilt after every swipe; the
//     client takes pages of PageSize items (the continuous feed) and swipes
//     them in order; every swipe is folded in with Model.Observe.
//   - learner ranking: the first 20 of match.Rank with the learned weights,
//     without the feed rules: how good the learned ranking itself is.
//   - oracle: match.Rank with the hidden weights, the best ranking the
//     model family gives: the service knowing exactly what the student's
//     weights are. It misses only the taste term.
//   - oracle served: the oracle's ranking through match.AssembleFeed with
//     the rules the learner's feed follows, without learning: the
//     like-for-like reference for the served feed.
//   - popularity: the same order for every student, by the school's
//     outcomes (graduation, employment proxy, earnings); no learning.
//   - random: a random order per student.
//   - learner, uniform exploration (Config.CompareExploration): the
//     learner with exploration picks drawn uniformly from the same pools,
//     on its own trajectory (scored on its own unswiped schools).
//
// The like rate of a policy is measured on its own trajectory: the student
// swipes what that policy serves (pages of the served feed, or down the
// order).
//
// The learned model is also scored on the whole catalogue, swiped schools
// included (Result.Model): how well it knows the student, apart from which
// good schools have already been swiped.
package simulate

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
)

// Policy is a way of choosing what a student sees.
type Policy int

const (
	Learner        Policy = iota // the service: learned ranking through the feed rules
	LearnerRanking               // the learned ranking alone, on the learner's trajectory
	OracleServed                 // the hidden weights' ranking through the feed rules
	Oracle                       // the hidden weights' ranking
	Popularity                   // outcomes order, the same for everyone
	Random                       // a random order
	LearnerUniform               // the learner with uniform exploration
	NumPolicies
)

var policyNames = [NumPolicies]string{
	"learner", "learner ranking", "oracle served", "oracle", "popularity", "random", "learner, uniform exploration",
}

// String is the policy's name in reports.
func (p Policy) String() string { return policyNames[p] }

// hasSwipes reports whether the policy has its own swipes (a like rate).
func (p Policy) hasSwipes() bool { return p != LearnerRanking }

// Archetype is a cold-start prior: what the service starts a student from
// after they chose a category at onboarding. Start returns the profile the
// service scores them with and their prior weights. Students drawn from an
// archetype have hidden weights near that prior: their real preferences
// match the category they chose.
type Archetype struct {
	Name  string
	Start func(match.Profile) (match.Profile, match.Weights)
}

// Config is one simulation run.
type Config struct {
	Students int    // default 200
	Swipes   int    // swipes per student, default 40
	Schools  int    // generated catalogue size, default 6500
	Seed     uint64 // default 1
	// PageSize is how many items the simulated client takes per request
	// and swipes through (the continuous feed's default limit, 10).
	PageSize int
	// Workers is how many students are simulated at once (default 1).
	// The result does not depend on it.
	Workers int

	// TasteSD is the spread of the idiosyncratic taste term (default 0.03).
	TasteSD float64
	// LikeShare is the share of the catalogue a student would like
	// (default 0.1).
	LikeShare float64
	// LikeTemperature is the noise of a swipe decision (default 0.02).
	LikeTemperature float64

	// CompareExploration also runs the learner with uniform exploration.
	CompareExploration bool

	// WeightsOnly runs the learner without its residual (the model of the
	// eight weights alone, match.Model.ObserveWeights): the learner as it
	// was before the residual, for comparison.
	WeightsOnly bool

	// Archetypes, when set, are cold-start priors: ArchetypeShare of the
	// students (default 0.5) are drawn near one of them and start from it.
	Archetypes     []Archetype
	ArchetypeShare float64
	// ArchetypeJitter is the sd of the hidden weights around the archetype
	// (default 0.08).
	ArchetypeJitter float64
}

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	deff := func(v *float64, d float64) {
		if !(*v > 0) {
			*v = d
		}
	}
	def(&c.Students, 200)
	def(&c.Swipes, 40)
	def(&c.Schools, catalog.DefaultSeedCount)
	def(&c.PageSize, 10)
	def(&c.Workers, 1)
	if c.Seed == 0 {
		c.Seed = 1
	}
	deff(&c.TasteSD, 0.03)
	deff(&c.LikeShare, 0.1)
	deff(&c.LikeTemperature, 0.02)
	deff(&c.ArchetypeShare, 0.5)
	deff(&c.ArchetypeJitter, 0.08)
	c.PageSize = min(c.PageSize, ndcgK)
	return c
}

// ndcgK is the cut-off of NDCG.
const ndcgK = 20

// Result is what a run measured, averaged over students.
type Result struct {
	Config Config
	// NDCG[p][t] is the mean NDCG@20 of policy p's feed after t swipes,
	// t = 0..Swipes.
	NDCG [NumPolicies][]float64
	// NDCGSE[p][t] is its standard error over students.
	NDCGSE [NumPolicies][]float64
	// Like[p][t] is the share of students who liked the school of their
	// t-th swipe, t = 1..Swipes (index 0 unused).
	Like [NumPolicies][]float64
	// Model[0][t] is the mean NDCG@20 of the learned model's ranking of
	// the whole catalogue (swiped schools included) after t swipes,
	// Model[1][t] the same for the hidden weights (the oracle) and, with
	// CompareExploration, Model[2][t] for the learner with uniform
	// exploration.
	Model [3][]float64
	// Ran reports which policies were run.
	Ran [NumPolicies]bool
	// Of the learner's swipes: the share that were pattern breaks (the
	// model had predicted the other direction with probability >= 0.8),
	// the share on probes and on exploration picks, and the like rate of
	// each of those.
	PatternBreakRate              float64
	ProbeShare, ProbeLikeRate     float64
	ExploreShare, ExploreLikeRate float64
	// ColdStart is measured when Config.Archetypes is set.
	ColdStart *ColdStart
}

// ColdStart compares, for the students drawn from an archetype, the first
// feed (0 swipes) with the archetype as prior against the same students
// with the profile's prior and against the popularity order.
type ColdStart struct {
	Students int
	// NDCG@20 at 0 swipes.
	WithPrior, WithoutPrior, Popularity float64
	// The same for the ranking alone (no feed rules).
	RankingWithPrior, RankingWithoutPrior float64
}

// Run simulates cfg.
func Run(cfg Config) Result {
	cfg = cfg.withDefaults()
	cat := match.NewCatalog(catalog.Generate(cfg.Schools, cfg.Seed))
	w := newWorld(cfg, cat)

	outs := make([]studentResult, cfg.Students)
	var wg sync.WaitGroup
	next := make(chan int)
	for range cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				outs[i] = w.runStudent(i)
			}
		}()
	}
	for i := range cfg.Students {
		next <- i
	}
	close(next)
	wg.Wait()
	return w.aggregate(outs)
}

// world is what every student shares.
type world struct {
	cfg     Config
	cat     *match.Catalog
	popular []int32 // catalogue indices by outcomes, best first
	homes   []int   // schools with coordinates: where students live
}

func newWorld(cfg Config, cat *match.Catalog) *world {
	w := &world{cfg: cfg, cat: cat}
	ranked := match.Rank(nil, match.Profile{IncomeBand: -1}, match.DefaultWeights(), cat)
	byOutcome := slices.Clone(ranked)
	slices.SortFunc(byOutcome, func(a, b match.Scored) int {
		return cmp.Or(cmp.Compare(b.Outcomes, a.Outcomes), cmp.Compare(a.Index, b.Index))
	})
	w.popular = make([]int32, len(byOutcome))
	for i, s := range byOutcome {
		w.popular[i] = s.Index
	}
	for i := range cat.Schools {
		if cat.Schools[i].Lat != nil && cat.Schools[i].Lon != nil {
			w.homes = append(w.homes, i)
		}
	}
	return w
}

// student is one synthetic student.
type student struct {
	index     int
	id        string
	profile   match.Profile
	seen      domain.Student // the profile as onboarding takes it
	hidden    match.Weights
	prior     match.Weights
	archetype int       // -1 when not drawn from an archetype
	util      []float64 // U by catalogue index
	gain      []float64 // NDCG gain by catalogue index
	tau       float64   // like threshold on U
	ideal     idealGains
}

// studentResult is one student's measurements.
type studentResult struct {
	ndcg  [NumPolicies][]float64
	like  [NumPolicies][]bool
	model [3][]float64 // whole-catalogue NDCG of the learned weights, the hidden ones, the learned ones with uniform exploration
	// the learner's swipes: pattern breaks, and swipes and likes on probes
	// and on exploration picks
	breaks, probes, probeLikes, explores, exploreLikes int
	// cold start: NDCG at 0 swipes with the profile's prior instead of the archetype's
	coldServed, coldRanking float64
	archetype               int
}

func (w *world) rng(i int, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(w.cfg.Seed*0x9e3779b97f4a7c15+uint64(i), stream))
}

// newStudent draws student i.
func (w *world) newStudent(i int) *student {
	r := w.rng(i, 1)
	st := &student{index: i, id: "sim-student-" + itoa(i), archetype: -1}

	// The profile the service sees.
	ds := domain.Student{ID: st.id}
	home := &w.cat.Schools[w.homes[r.IntN(len(w.homes))]]
	lat, lon := *home.Lat+0.6*(r.Float64()-0.5), *home.Lon+0.6*(r.Float64()-0.5)
	ds.HomeLat, ds.HomeLon, ds.State = &lat, &lon, home.State
	sat := int(math.Round(max(800, min(1600, 1120+190*r.NormFloat64()))/10) * 10)
	if r.Float64() < 0.85 {
		ds.SAT = &sat
	} else {
		gpa := max(2.0, min(4.0, 3.3+0.45*r.NormFloat64()))
		ds.GPA = &gpa
	}
	if r.Float64() < 0.5 {
		d := []int{150, 250, 300, 500, 800, 1500}[r.IntN(6)]
		ds.MaxDistanceMiles = &d
	}
	if r.Float64() < 0.7 {
		inc := int(math.Round(70000 * math.Exp(0.7*r.NormFloat64())))
		ds.FamilyIncome = &inc
	}
	if r.Float64() < 0.6 {
		b := 6000 + 1000*r.IntN(40)
		ds.Budget = &b
	}
	if r.Float64() < 0.75 {
		for range 1 + r.IntN(2) {
			ds.IntendedMajors = append(ds.IntendedMajors, popularMajors[r.IntN(len(popularMajors))])
		}
	}

	// Hidden weights.
	h := match.Weights{
		CostWeight: r.Float64(), DistanceWeight: r.Float64(), OutcomesWeight: r.Float64(),
		CampusWeight: r.Float64(), ProgramWeight: r.Float64(), AidWeight: r.Float64(),
		AcademicSelectivity: clamp(0.5+0.18*r.NormFloat64(), 0.05, 0.95),
		SizePreference:      0.1 + 0.85*r.Float64(),
	}
	if n := len(w.cfg.Archetypes); n > 0 && r.Float64() < w.cfg.ArchetypeShare {
		// A student who chose a category, and whose real preferences are
		// near what the service makes of that choice.
		st.archetype = r.IntN(n)
		st.profile, st.prior = w.cfg.Archetypes[st.archetype].Start(match.NewProfile(ds))
		j := func(v float64) float64 { return clamp(v+w.cfg.ArchetypeJitter*r.NormFloat64(), 0, 1) }
		a := st.prior
		h = match.Weights{
			CostWeight: j(a.CostWeight), DistanceWeight: j(a.DistanceWeight), OutcomesWeight: j(a.OutcomesWeight),
			CampusWeight: j(a.CampusWeight), ProgramWeight: j(a.ProgramWeight), AidWeight: j(a.AidWeight),
			AcademicSelectivity: j(a.AcademicSelectivity), SizePreference: j(a.SizePreference),
		}
	} else {
		// Some students state a preferred size on the form; what they
		// state agrees with their hidden preference.
		if r.Float64() < 0.3 {
			switch {
			case h.SizePreference < 0.4:
				ds.PreferredSize = "small"
			case h.SizePreference < 0.75:
				ds.PreferredSize = "medium"
			default:
				ds.PreferredSize = "large"
			}
		}
		st.profile = match.NewProfile(ds)
		st.prior = match.SeedWeights(st.profile)
	}
	st.hidden = h
	st.seen = ds

	// Hidden utility, like threshold and gains.
	n := w.cat.Len()
	ranked := match.Rank(nil, st.profile, h, w.cat)
	st.util = make([]float64, n)
	for _, s := range ranked {
		st.util[s.Index] = s.Score
	}
	taste := w.rng(i, 2)
	for k := range st.util {
		st.util[k] += w.cfg.TasteSD * taste.NormFloat64()
	}
	sorted := slices.Clone(st.util)
	slices.Sort(sorted)
	q := func(share float64) float64 { return sorted[max(0, min(n-1, int(math.Floor(float64(n)*(1-share)))))] }
	st.tau = q(w.cfg.LikeShare)
	st.gain = steepGains(st.util, q)
	st.ideal = newIdealGains(st.gain, false)
	return st
}

// popularMajors are the intended majors students are drawn with.
var popularMajors = []domain.Major{
	"business_marketing", "health", "biological", "computer", "engineering", "psychology",
	"social_science", "visual_performing", "communication", "education", "mathematics", "english",
}

// likes draws the student's swipe on school i.
func (st *student) likes(i int, r *rand.Rand, temp float64) bool {
	return r.Float64() < sigmoid((st.util[i]-st.tau)/temp)
}

// runStudent runs every policy for student i.
func (w *world) runStudent(i int) studentResult {
	st := w.newStudent(i)
	out := studentResult{archetype: st.archetype}

	oracle := match.Rank(nil, st.profile, st.hidden, w.cat)
	order := make([]int32, len(oracle))
	for k, s := range oracle {
		order[k] = s.Index
	}
	perm := make([]int32, w.cat.Len())
	for k := range perm {
		perm[k] = int32(k)
	}
	pr := w.rng(i, 3)
	pr.Shuffle(len(perm), func(a, b int) { perm[a], perm[b] = perm[b], perm[a] })
	orders := map[Policy][]int32{Oracle: order, Popularity: w.popular, Random: perm}

	ideal := st.ideal
	ref := &reference{oracle: oracle, orders: orders, oracleFull: st.ndcgOfRanked(oracle, nil, &ideal)}
	w.learnerTrajectory(st, Learner, match.ExploreUncertainty, ref, &out)
	if w.cfg.CompareExploration {
		w.learnerTrajectory(st, LearnerUniform, match.ExploreUniform, nil, &out)
	}
	_, out.like[OracleServed] = w.servedTrajectory(st, OracleServed, st.hidden, oracle)
	for pol, o := range orders {
		out.like[pol] = w.orderTrajectory(st, pol, o)
	}

	if st.archetype >= 0 {
		// The same student's first feed had they not chosen the category.
		m := match.NewModel(match.SeedWeights(st.profile))
		ranked := match.Rank(nil, st.profile, m.Weights(), w.cat)
		feed := match.AssembleFeed(match.FeedInput{
			Catalog: w.cat, Profile: st.profile, Model: m, Ranked: ranked, Length: ndcgK,
			PageSize: w.cfg.PageSize, Seed: match.FeedSeed(st.id, 0),
		})
		out.coldServed = st.ndcgOfFeed(feed, &ideal)
		out.coldRanking = st.ndcgOfRanked(ranked, nil, &ideal)
	}
	return out
}

// reference holds the rankings the learner is compared with on its own
// trajectory: after t swipes, each is scored on the schools the learner's
// student has not swiped, so every NDCG at t has the same ideal.
type reference struct {
	oracle     []match.Scored
	orders     map[Policy][]int32
	oracleFull float64 // the oracle's NDCG on the whole catalogue
}

// learnerTrajectory runs the learner (with the given exploration) for a
// student: after every swipe the model is updated and the feed rebuilt;
// the client swipes through pages of PageSize items. With ref, it also
// measures the reference policies on the same pool.
func (w *world) learnerTrajectory(st *student, pol Policy, explore match.ExplorationStrategy, ref *reference, out *studentResult) {
	T := w.cfg.Swipes
	for _, p := range []Policy{pol, LearnerRanking, OracleServed, Oracle, Popularity, Random} {
		if p == pol || ref != nil {
			out.ndcg[p] = make([]float64, T+1)
		}
	}
	out.like[pol] = make([]bool, T+1)
	if ref != nil {
		out.model[0], out.model[1] = make([]float64, T+1), make([]float64, T+1)
	} else {
		out.model[2] = make([]float64, T+1)
	}
	full := st.ideal
	r := w.rng(st.index, 10+uint64(pol))
	m := match.NewModel(st.prior)
	oracleModel := match.NewModel(st.hidden)
	excluded := make([]bool, w.cat.Len())
	var swiped []int
	var ranked []match.Scored
	var page []match.FeedItem
	ideal := st.ideal
	for t := 0; t <= T; t++ {
		ranked = match.RankModel(ranked, st.profile, m, w.cat)
		in := match.FeedInput{
			Catalog: w.cat, Profile: st.profile, Model: m, Ranked: ranked, Swipes: t,
			Length: ndcgK, PageSize: w.cfg.PageSize, Excluded: excluded,
			SwipedRegions: match.RegionsOf(w.cat, swiped), Seed: match.FeedSeed(st.id, t), Exploration: explore,
		}
		feed := match.AssembleFeed(in)
		out.ndcg[pol][t] = st.ndcgOfFeed(feed, &ideal)
		if ref == nil {
			out.model[2][t] = st.ndcgOfRanked(ranked, nil, &full)
		}
		if ref != nil {
			out.ndcg[LearnerRanking][t] = st.ndcgOfRanked(ranked, excluded, &ideal)
			out.model[0][t] = st.ndcgOfRanked(ranked, nil, &full)
			out.model[1][t] = ref.oracleFull
			oin := in
			oin.Model, oin.Ranked, oin.Exploration = oracleModel, ref.oracle, match.ExploreUncertainty
			out.ndcg[OracleServed][t] = st.ndcgOfFeed(match.AssembleFeed(oin), &ideal)
			for p, o := range ref.orders {
				out.ndcg[p][t] = st.ndcgOfOrder(o, excluded, &ideal)
			}
		}
		if t == T {
			break
		}
		if len(page) == 0 {
			page = feed[:min(len(feed), w.cfg.PageSize)]
		}
		if len(page) == 0 {
			break
		}
		item := page[0]
		idx := int(item.Index)
		page = page[1:]
		liked := st.likes(idx, r, w.cfg.LikeTemperature)
		out.like[pol][t+1] = liked
		d := match.Dislike
		if liked {
			d = match.Like
		}
		if ref != nil {
			if m.PatternBreak(st.profile, w.cat, idx, d) {
				out.breaks++
			}
			switch {
			case item.IsProbe:
				out.probes++
				out.probeLikes += b2i(liked)
			case item.IsExploration:
				out.explores++
				out.exploreLikes += b2i(liked)
			}
		}
		if w.cfg.WeightsOnly {
			m, _ = m.ObserveWeights(st.profile, w.cat, match.SwipeObservation(idx, d))
		} else {
			m, _ = m.Observe(st.profile, w.cat, match.SwipeObservation(idx, d))
		}
		excluded[idx] = true
		swiped = append(swiped, idx)
		ideal.remove(st.gain[idx])
	}
}

// servedTrajectory serves a fixed ranking through the feed rules, without
// learning (the oracle served), and returns the NDCG on its own pool and
// the swipes.
func (w *world) servedTrajectory(st *student, pol Policy, weights match.Weights, ranked []match.Scored) ([]float64, []bool) {
	T := w.cfg.Swipes
	ndcg, like := make([]float64, T+1), make([]bool, T+1)
	r := w.rng(st.index, 10+uint64(pol))
	m := match.NewModel(weights)
	excluded := make([]bool, w.cat.Len())
	var swiped []int
	var page []match.FeedItem
	ideal := st.ideal
	for t := 0; t <= T; t++ {
		if len(page) == 0 || t == T {
			feed := match.AssembleFeed(match.FeedInput{
				Catalog: w.cat, Profile: st.profile, Model: m, Ranked: ranked, Swipes: t,
				Length: ndcgK, PageSize: w.cfg.PageSize, Excluded: excluded,
				SwipedRegions: match.RegionsOf(w.cat, swiped), Seed: match.FeedSeed(st.id, t),
			})
			ndcg[t] = st.ndcgOfFeed(feed, &ideal)
			page = feed[:min(len(feed), w.cfg.PageSize)]
		}
		if t == T || len(page) == 0 {
			break
		}
		idx := int(page[0].Index)
		page = page[1:]
		like[t+1] = st.likes(idx, r, w.cfg.LikeTemperature)
		excluded[idx] = true
		swiped = append(swiped, idx)
		ideal.remove(st.gain[idx])
	}
	return ndcg, like
}

// orderTrajectory runs a fixed order: the student swipes down it.
func (w *world) orderTrajectory(st *student, pol Policy, order []int32) []bool {
	T := w.cfg.Swipes
	like := make([]bool, T+1)
	r := w.rng(st.index, 10+uint64(pol))
	for t := 0; t < T && t < len(order); t++ {
		like[t+1] = st.likes(int(order[t]), r, w.cfg.LikeTemperature)
	}
	return like
}

func (st *student) ndcgOfFeed(feed []match.FeedItem, ideal *idealGains) float64 {
	dcg := 0.0
	for k, it := range feed[:min(len(feed), ndcgK)] {
		dcg += st.gain[it.Index] * discount[k]
	}
	return ideal.ndcg(dcg)
}

func (st *student) ndcgOfRanked(ranked []match.Scored, excluded []bool, ideal *idealGains) float64 {
	dcg, k := 0.0, 0
	for _, s := range ranked {
		if k == ndcgK {
			break
		}
		if excluded != nil && excluded[s.Index] {
			continue
		}
		dcg += st.gain[s.Index] * discount[k]
		k++
	}
	return ideal.ndcg(dcg)
}

func (st *student) ndcgOfOrder(order []int32, excluded []bool, ideal *idealGains) float64 {
	dcg, k := 0.0, 0
	for _, i := range order {
		if k == ndcgK {
			break
		}
		if excluded[i] {
			continue
		}
		dcg += st.gain[i] * discount[k]
		k++
	}
	return ideal.ndcg(dcg)
}

// discount[k] is 1/log2(k+2), the discount of position k+1.
var discount = func() [ndcgK]float64 {
	var d [ndcgK]float64
	for k := range d {
		d[k] = 1 / math.Log2(float64(k+2))
	}
	return d
}()

// steepGains grades each school by its utility u: 7, 3 and 1 for the top
// 1, 3 and 10 % (q(share) is the utility at that top share), 0 for the rest.
func steepGains(u []float64, q func(share float64) float64) []float64 {
	g3, g2, g1 := q(0.01), q(0.03), q(0.10)
	gain := make([]float64, len(u))
	for k, x := range u {
		switch {
		case x >= g3:
			gain[k] = 7
		case x >= g2:
			gain[k] = 3
		case x >= g1:
			gain[k] = 1
		}
	}
	return gain
}

// idealGains counts the schools not yet swiped by gain, for the ideal DCG.
// A gain is either one of gainLevels (the steep scale) or, graded, a
// percentile in hundredths (GainPercentile).
type idealGains struct {
	n      [gradedSteps + 1]int // schools by level: gainLevels' index, or 100 - hundredths
	graded bool
}

var gainLevels = [4]float64{7, 3, 1, 0}

// gradedSteps are the steps of a graded gain: hundredths.
const gradedSteps = 100

func newIdealGains(gains []float64, graded bool) idealGains {
	g := idealGains{graded: graded}
	for _, v := range gains {
		g.n[g.levelOf(v)]++
	}
	return g
}

func (g *idealGains) levelOf(v float64) int {
	if g.graded {
		return gradedSteps - int(math.Round(v*gradedSteps))
	}
	for l, x := range gainLevels {
		if v >= x {
			return l
		}
	}
	return 3
}

// gain is level l's gain.
func (g *idealGains) gain(l int) float64 {
	if g.graded {
		return float64(gradedSteps-l) / gradedSteps
	}
	return gainLevels[l]
}

func (g *idealGains) remove(v float64) { g.n[g.levelOf(v)]-- }

// ndcg normalises a DCG by the ideal DCG of the remaining schools.
func (g *idealGains) ndcg(dcg float64) float64 {
	ideal, k := 0.0, 0
	for l, c := range g.n {
		for ; c > 0 && k < ndcgK; c-- {
			ideal += g.gain(l) * discount[k]
			k++
		}
	}
	if ideal == 0 {
		return 0
	}
	return dcg / ideal
}

// aggregate averages the students' results.
func (w *world) aggregate(outs []studentResult) Result {
	T := w.cfg.Swipes
	res := Result{Config: w.cfg}
	for p := range NumPolicies {
		pol := Policy(p)
		res.Ran[p] = outs[0].ndcg[p] != nil
		if !res.Ran[p] {
			continue
		}
		res.NDCG[p] = make([]float64, T+1)
		res.NDCGSE[p] = make([]float64, T+1)
		for t := 0; t <= T; t++ {
			var sum, sq float64
			for _, o := range outs {
				v := o.ndcg[p][t]
				sum += v
				sq += v * v
			}
			n := float64(len(outs))
			mean := sum / n
			res.NDCG[p][t] = mean
			if n > 1 {
				res.NDCGSE[p][t] = math.Sqrt(max(0, sq/n-mean*mean) / (n - 1))
			}
		}
		if pol.hasSwipes() && outs[0].like[p] != nil {
			res.Like[p] = make([]float64, T+1)
			for t := 1; t <= T; t++ {
				c := 0
				for _, o := range outs {
					if o.like[p][t] {
						c++
					}
				}
				res.Like[p][t] = float64(c) / float64(len(outs))
			}
		}
	}
	for k := range res.Model {
		if outs[0].model[k] != nil {
			res.Model[k] = make([]float64, T+1)
		}
	}
	var breaks, probes, probeLikes, explores, exploreLikes int
	for _, o := range outs {
		for k := range res.Model {
			for t := range res.Model[k] {
				res.Model[k][t] += o.model[k][t] / float64(len(outs))
			}
		}
		breaks += o.breaks
		probes += o.probes
		probeLikes += o.probeLikes
		explores += o.explores
		exploreLikes += o.exploreLikes
	}
	swipes := float64(len(outs) * T)
	res.PatternBreakRate = float64(breaks) / swipes
	res.ProbeShare, res.ExploreShare = float64(probes)/swipes, float64(explores)/swipes
	res.ProbeLikeRate = float64(probeLikes) / float64(max(1, probes))
	res.ExploreLikeRate = float64(exploreLikes) / float64(max(1, explores))
	if len(w.cfg.Archetypes) > 0 {
		cs := &ColdStart{}
		for _, o := range outs {
			if o.archetype < 0 {
				continue
			}
			cs.Students++
			cs.WithPrior += o.ndcg[Learner][0]
			cs.RankingWithPrior += o.ndcg[LearnerRanking][0]
			cs.WithoutPrior += o.coldServed
			cs.RankingWithoutPrior += o.coldRanking
			cs.Popularity += o.ndcg[Popularity][0]
		}
		if n := float64(cs.Students); n > 0 {
			cs.WithPrior /= n
			cs.RankingWithPrior /= n
			cs.WithoutPrior /= n
			cs.RankingWithoutPrior /= n
			cs.Popularity /= n
		}
		res.ColdStart = cs
	}
	return res
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

func clamp(v, lo, hi float64) float64 { return max(lo, min(hi, v)) }

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b [20]byte
	k := len(b)
	for ; i > 0; i /= 10 {
		k--
		b[k] = byte('0' + i%10)
	}
	return string(b[k:])
}
