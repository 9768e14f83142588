package catalog

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"unicode"

	"github.com/google/uuid"

	"github.com/collegematch/matching/internal/domain"
)

// DefaultSeedCount is how many schools `matchctl seed --synthetic` generates.
const DefaultSeedCount = 6500

// SourceSeed is the School.Source of generated schools.
const SourceSeed = "seed"

// SeedNamespace is the UUID namespace of generated schools: the school with
// index i has id UUIDv5(SeedNamespace, "seed:<i>"), so a catalogue generated
// again gets the same ids and re-seeding is idempotent.
const SeedNamespace = "4f6b8d2e-9a1c-5b7e-8c3d-2e1f0a9b8c7d"

var seedNamespace = uuid.MustParse(SeedNamespace)

// SeedSchoolID is the id of the generated school with index i.
func SeedSchoolID(i int) string {
	return uuid.NewSHA1(seedNamespace, []byte("seed:"+strconv.Itoa(i))).String()
}

// Generate returns n generated schools whose fields follow real US
// distributions: institutions per state in proportion to IPEDS counts (every
// state and DC gets some), the public / private nonprofit / for-profit mix,
// places around real cities, selectivity that drives test scores, graduation
// rates, aid and earnings, and program mixes of real kinds of institutions.
// It is pure: the same (n, seed) gives the same schools, a different seed
// different ones.
func Generate(n int, seed uint64) []domain.School {
	if n <= 0 {
		return []domain.School{}
	}
	g := &seedGen{
		rng:   rand.New(rand.NewPCG(seed, 0x5eedc011e9e5ca7a)),
		names: make(map[string]bool, n),
	}
	states := g.stateSlots(n)
	out := make([]domain.School, n)
	seen := make(map[string]bool, len(seedStates))
	for i, st := range states {
		k := g.pickKind()
		if !seen[st.Code] {
			// Every state has at least one public research university.
			seen[st.Code] = true
			k = &seedKinds[seedKindPublicResearch]
		}
		out[i] = g.school(i, st, k)
	}
	return out
}

type seedGen struct {
	rng   *rand.Rand
	names map[string]bool
}

// stateSlots apportions n schools among the states by their IPEDS weight
// (largest remainder, with a floor of a few per state when n allows), then
// shuffles the order so ids do not group by state.
func (g *seedGen) stateSlots(n int) []*seedState {
	floor := min(3, n/len(seedStates))
	total := 0
	for _, s := range seedStates {
		total += s.Institutions
	}
	rest := n - floor*len(seedStates)
	counts := make([]int, len(seedStates))
	type remainder struct {
		i int
		r float64
	}
	rems := make([]remainder, len(seedStates))
	given := 0
	for i, s := range seedStates {
		exact := float64(rest) * float64(s.Institutions) / float64(total)
		counts[i] = floor + int(exact)
		given += counts[i]
		rems[i] = remainder{i, exact - math.Floor(exact)}
	}
	// Hand out what is left to the largest remainders; ties go to the
	// earlier state so the result is deterministic.
	for left := n - given; left > 0; left-- {
		best := 0
		for j := range rems {
			if rems[j].r > rems[best].r {
				best = j
			}
		}
		counts[rems[best].i]++
		rems[best].r = -1
	}
	slots := make([]*seedState, 0, n)
	for i := range seedStates {
		for range counts[i] {
			slots = append(slots, &seedStates[i])
		}
	}
	g.rng.Shuffle(len(slots), func(i, j int) { slots[i], slots[j] = slots[j], slots[i] })
	return slots
}

// seedKind is a kind of institution: who runs it, how selective and large
// it tends to be, what it awards and teaches, and how it is named.
type seedKind struct {
	name       string
	control    domain.Control
	weight     float64    // share of all institutions
	qLo, qHi   float64    // range of the latent selectivity q in [0,1]
	qSkew      float64    // q = qLo + (qHi-qLo)*u^qSkew; > 1 makes the top rarer
	open       float64    // probability of open admission
	sizeMedian float64    // undergraduates
	sizeSigma  float64    // log-normal spread
	degree     [3]float64 // probability of predominant degree 1, 2, 3
	earnBase   float64    // median earnings 10 years out before selectivity and programs
	programs   map[domain.Major]float64
	names      []seedTemplate
}

// seedTemplate is a name pattern: {S} state name, {C} city, {N} a family
// name, {F} a given name, {P} a place name, {T} a saint, {R} a
// denomination, {D} a direction.
type seedTemplate struct {
	pattern string
	weight  float64
}

// seedKindPublicResearch is the index of public research universities in
// seedKinds.
const seedKindPublicResearch = 0

// seedKinds weights give about 31 % public, 36 % private nonprofit and 33 %
// for-profit institutions. Predominantly certificate-granting schools are
// about a quarter of the catalogue, fewer than the third IPEDS lists,
// because the students this service serves look for degrees.
var seedKinds = []seedKind{
	{
		name: "public research", control: domain.ControlPublic, weight: 0.025,
		qLo: 0.45, qHi: 0.95, qSkew: 1.3, sizeMedian: 24000, sizeSigma: 0.45,
		degree: [3]float64{0, 0, 1}, earnBase: 34000, programs: seedProgramsResearch,
		names: []seedTemplate{{"University of {S}", 3}, {"{S} State University", 2}, {"University of {S} at {C}", 3}, {"{S} University", 1},
			{"University of {C}", 1}, {"{C} State University", 1}, {"{D} {S} University", 1}},
	},
	{
		name: "private research", control: domain.ControlNonprofit, weight: 0.018,
		qLo: 0.72, qHi: 1.0, qSkew: 1.2, sizeMedian: 7000, sizeSigma: 0.5,
		degree: [3]float64{0, 0, 1}, earnBase: 36000, programs: seedProgramsResearch,
		names: []seedTemplate{{"{N} University", 4}, {"{F} {N} University", 3}, {"University of {C}", 1}, {"{N} Institute", 1}},
	},
	{
		name: "public regional", control: domain.ControlPublic, weight: 0.075,
		qLo: 0.25, qHi: 0.65, qSkew: 1, open: 0.08, sizeMedian: 7000, sizeSigma: 0.6,
		degree: [3]float64{0, 0.05, 0.95}, earnBase: 33000, programs: seedProgramsComprehensive,
		names: []seedTemplate{{"{C} State University", 3}, {"University of {S} at {C}", 2}, {"{D} {S} University", 2},
			{"{S} State University at {C}", 1}, {"{C} State College", 1}, {"University of {C}", 1}, {"{N} State University", 1},
			{"{P} State University", 1}, {"{F} {N} State University", 1}},
	},
	{
		name: "public engineering", control: domain.ControlPublic, weight: 0.006,
		qLo: 0.55, qHi: 0.85, qSkew: 1, sizeMedian: 6000, sizeSigma: 0.5,
		degree: [3]float64{0, 0, 1}, earnBase: 40000, programs: seedProgramsEngineering,
		names: []seedTemplate{{"{S} Institute of Technology", 2}, {"{S} Polytechnic University", 2}, {"{S} School of Mines", 1},
			{"{S} Technological University", 1}, {"{C} Polytechnic State University", 1}},
	},
	{
		name: "public health sciences", control: domain.ControlPublic, weight: 0.004,
		qLo: 0.4, qHi: 0.7, qSkew: 1, sizeMedian: 1200, sizeSigma: 0.6,
		degree: [3]float64{0, 0.1, 0.9}, earnBase: 42000, programs: seedProgramsHealth,
		names: []seedTemplate{{"{S} Health Sciences University", 1}, {"University of {S} Health Science Center at {C}", 1},
			{"{C} College of Nursing and Health Sciences", 1}},
	},
	{
		name: "community college", control: domain.ControlPublic, weight: 0.15,
		qLo: 0.15, qHi: 0.35, qSkew: 1, open: 1, sizeMedian: 5000, sizeSigma: 0.85,
		degree: [3]float64{0.1, 0.9, 0}, earnBase: 27000, programs: seedProgramsCommunity,
		names: []seedTemplate{{"{C} Community College", 4}, {"{P} Community College", 2}, {"{N} Community College", 1},
			{"{D} {S} Community College", 1}, {"{N} County Community College", 1}, {"{C} College", 1}, {"{P} College", 1},
			{"{C} Area Community College", 1}, {"{C} City College", 1}},
	},
	{
		name: "technical college", control: domain.ControlPublic, weight: 0.05,
		qLo: 0.15, qHi: 0.35, qSkew: 1, open: 1, sizeMedian: 1500, sizeSigma: 0.8,
		degree: [3]float64{0.5, 0.5, 0}, earnBase: 29000, programs: seedProgramsTechnical,
		names: []seedTemplate{{"{C} Technical College", 3}, {"{P} Technical College", 2}, {"{S} College of Technology at {C}", 1},
			{"{N} Technical Institute", 1}, {"{C} Area Technical Center", 1}},
	},
	{
		name: "private comprehensive", control: domain.ControlNonprofit, weight: 0.10,
		qLo: 0.3, qHi: 0.8, qSkew: 1.3, open: 0.03, sizeMedian: 3500, sizeSigma: 0.7,
		degree: [3]float64{0, 0.03, 0.97}, earnBase: 34000, programs: seedProgramsComprehensive,
		names: []seedTemplate{{"{N} University", 3}, {"{F} {N} University", 2}, {"{T} University", 2}, {"{C} University", 1},
			{"University of {C}", 1}, {"{N} College", 1}, {"{C} {R} University", 1}},
	},
	{
		name: "liberal arts college", control: domain.ControlNonprofit, weight: 0.065,
		qLo: 0.35, qHi: 0.97, qSkew: 1.8, sizeMedian: 1800, sizeSigma: 0.4,
		degree: [3]float64{0, 0, 1}, earnBase: 32000, programs: seedProgramsLiberalArts,
		names: []seedTemplate{{"{N} College", 4}, {"{F} {N} College", 2}, {"{P} College", 2}, {"College of {T}", 1}, {"{T} College", 1}},
	},
	{
		name: "religious college", control: domain.ControlNonprofit, weight: 0.055,
		qLo: 0.2, qHi: 0.5, qSkew: 1, open: 0.2, sizeMedian: 700, sizeSigma: 0.8,
		degree: [3]float64{0.02, 0.08, 0.9}, earnBase: 28000, programs: seedProgramsReligious,
		names: []seedTemplate{{"{C} Bible College", 2}, {"{N} {R} College", 2}, {"{R} University of {S}", 1},
			{"{N} Theological Seminary", 1}, {"{C} Christian College", 1}, {"{T} Seminary College", 1}, {"{P} {R} College", 1}},
	},
	{
		name: "nursing and health college", control: domain.ControlNonprofit, weight: 0.045,
		qLo: 0.35, qHi: 0.6, qSkew: 1, open: 0.1, sizeMedian: 500, sizeSigma: 0.8,
		degree: [3]float64{0.15, 0.25, 0.6}, earnBase: 36000, programs: seedProgramsHealth,
		names: []seedTemplate{{"{C} School of Nursing", 2}, {"{N} College of Nursing", 2}, {"{N} College of Health Sciences", 2},
			{"{T} College of Nursing", 1}, {"{C} College of Health Professions", 1}},
	},
	{
		name: "art and music school", control: domain.ControlNonprofit, weight: 0.025,
		qLo: 0.3, qHi: 0.7, qSkew: 1, open: 0.1, sizeMedian: 900, sizeSigma: 0.7,
		degree: [3]float64{0, 0.05, 0.95}, earnBase: 28000, programs: seedProgramsArt,
		names: []seedTemplate{{"{C} College of Art and Design", 2}, {"{N} School of Music", 1}, {"{C} Conservatory of Music", 1},
			{"{N} College of Art", 1}, {"{C} Institute of Art", 1}, {"{N} School of Design", 1}},
	},
	{
		name: "private engineering institute", control: domain.ControlNonprofit, weight: 0.01,
		qLo: 0.55, qHi: 0.99, qSkew: 1.2, sizeMedian: 3000, sizeSigma: 0.6,
		degree: [3]float64{0, 0, 1}, earnBase: 42000, programs: seedProgramsEngineering,
		names: []seedTemplate{{"{N} Institute of Technology", 3}, {"{N} Polytechnic Institute", 2}, {"{C} Institute of Technology", 1},
			{"{N} Institute of Engineering and Science", 1}},
	},
	{
		name: "business college", control: domain.ControlNonprofit, weight: 0.017,
		qLo: 0.3, qHi: 0.6, qSkew: 1, open: 0.15, sizeMedian: 1500, sizeSigma: 0.8,
		degree: [3]float64{0, 0.15, 0.85}, earnBase: 36000, programs: seedProgramsBusiness,
		names: []seedTemplate{{"{N} College of Business", 2}, {"{N} University of Business and Technology", 1},
			{"{C} School of Business", 1}, {"{N} Business College", 1}},
	},
	{
		name: "junior college", control: domain.ControlNonprofit, weight: 0.025,
		qLo: 0.2, qHi: 0.35, qSkew: 1, open: 0.8, sizeMedian: 700, sizeSigma: 0.6,
		degree: [3]float64{0.1, 0.9, 0}, earnBase: 28000, programs: seedProgramsCommunity,
		names: []seedTemplate{{"{N} Junior College", 2}, {"{P} Junior College", 1}, {"{F} {N} Junior College", 1}},
	},
	{
		name: "cosmetology school", control: domain.ControlForProfit, weight: 0.09,
		qLo: 0.15, qHi: 0.3, qSkew: 1, open: 1, sizeMedian: 160, sizeSigma: 0.6,
		degree: [3]float64{1, 0, 0}, earnBase: 21000, programs: seedProgramsCosmetology,
		names: []seedTemplate{{"{C} Beauty Academy", 2}, {"{N} School of Cosmetology", 2}, {"{N} Beauty Institute", 1},
			{"{P} Academy of Hair Design", 1}, {"{C} Barber College", 1}, {"{N} Academy of Cosmetology and Esthetics", 1},
			{"{N} Beauty School-{C}", 1}},
	},
	{
		name: "trade school", control: domain.ControlForProfit, weight: 0.05,
		qLo: 0.15, qHi: 0.3, qSkew: 1, open: 1, sizeMedian: 300, sizeSigma: 0.7,
		degree: [3]float64{0.8, 0.2, 0}, earnBase: 30000, programs: seedProgramsTrade,
		names: []seedTemplate{{"{C} Technical Institute", 2}, {"{N} Career Institute", 2}, {"{C} Automotive Institute", 1},
			{"{N} Welding School", 1}, {"{C} Truck Driving School", 1}, {"{P} Institute of Trades", 1},
			{"{N} Institute of HVAC Technology", 1}},
	},
	{
		name: "health career school", control: domain.ControlForProfit, weight: 0.09,
		qLo: 0.15, qHi: 0.35, qSkew: 1, open: 0.85, sizeMedian: 350, sizeSigma: 0.8,
		degree: [3]float64{0.6, 0.35, 0.05}, earnBase: 27000, programs: seedProgramsHealthCareers,
		names: []seedTemplate{{"{C} Medical Career Institute", 2}, {"{N} College of Health Careers", 2}, {"{N} Institute of Allied Health", 1},
			{"{N} Career College", 2}, {"{C} School of Medical Assisting", 1}, {"{P} School of Practical Nursing", 1}},
	},
	{
		name: "career university", control: domain.ControlForProfit, weight: 0.05,
		qLo: 0.15, qHi: 0.35, qSkew: 1, open: 0.9, sizeMedian: 4000, sizeSigma: 1.1,
		degree: [3]float64{0, 0.1, 0.9}, earnBase: 33000, programs: seedProgramsCareerUniversity,
		names: []seedTemplate{{"{N} University", 2}, {"{P} University", 2}, {"{N} University of Applied Sciences", 1},
			{"{N} Global University", 1}, {"{S} Technical University", 1}, {"{N} University of Professional Studies", 1}},
	},
	{
		name: "culinary and design institute", control: domain.ControlForProfit, weight: 0.02,
		qLo: 0.15, qHi: 0.35, qSkew: 1, open: 0.7, sizeMedian: 500, sizeSigma: 0.7,
		degree: [3]float64{0.1, 0.5, 0.4}, earnBase: 24000, programs: seedProgramsCulinaryDesign,
		names: []seedTemplate{{"{C} Culinary Institute", 2}, {"{N} Institute of Design", 1}, {"{N} Culinary Academy", 1},
			{"{C} Institute of Art and Design", 1}},
	},
	{
		name: "business and technology college", control: domain.ControlForProfit, weight: 0.03,
		qLo: 0.15, qHi: 0.35, qSkew: 1, open: 0.9, sizeMedian: 600, sizeSigma: 0.8,
		degree: [3]float64{0.2, 0.5, 0.3}, earnBase: 30000, programs: seedProgramsBusinessIT,
		names: []seedTemplate{{"{N} College of Business and Technology", 2}, {"{C} Institute of Technology", 1},
			{"{N} Technical College", 1}, {"{N} Career College", 1}},
	},
}

func (g *seedGen) pickKind() *seedKind {
	total := 0.0
	for _, k := range seedKinds {
		total += k.weight
	}
	x := g.rng.Float64() * total
	for i := range seedKinds {
		if x -= seedKinds[i].weight; x < 0 {
			return &seedKinds[i]
		}
	}
	return &seedKinds[len(seedKinds)-1]
}

// school builds the school with index i of kind k in state st.
func (g *seedGen) school(i int, st *seedState, k *seedKind) domain.School {
	info, _ := domain.LookupState(st.Code)
	city := g.pickCity(st)
	s := domain.School{
		ID:      SeedSchoolID(i),
		City:    city.Name,
		State:   st.Code,
		Region:  info.Region,
		Control: k.control,
		Active:  true,
		Source:  SourceSeed,
	}
	lat, lon, locale := g.place(city)
	if !g.missing(0.01) {
		s.Lat, s.Lon = &lat, &lon
	}
	s.Locale = seedMaybe(g, 0.02, int16(locale))

	q := k.qLo + (k.qHi-k.qLo)*math.Pow(g.rng.Float64(), k.qSkew)
	degree := g.pickDegree(k)
	s.PredDegree = seedMaybe(g, 0.01, int16(degree))
	size := k.sizeMedian * math.Exp(k.sizeSigma*g.rng.NormFloat64())
	s.Size = seedMaybe(g, 0.01, int32(seedClamp(math.Round(size), 60, 62000)))

	shares := g.programs(k)
	s.ProgramShares = shares
	stem := seedShareOf(shares, seedSTEM)
	trade := seedShareOf(shares, seedTrades)

	open := g.rng.Float64() < k.open
	g.admissions(&s, k, q, degree, open)
	g.costs(&s, st, k, q, degree)
	g.outcomes(&s, k, q, degree, stem, trade, size)

	s.Name = g.name(k, info.Name, city.Name)
	s.URL = g.url(s.Name, k.control, degree)
	return s
}

// pickCity chooses a place of the state, metros more often than towns.
func (g *seedGen) pickCity(st *seedState) seedCity {
	weight := func(c seedCity) float64 {
		switch c.Kind {
		case seedPlaceMetro:
			return 5
		case seedPlaceCity:
			return 2.5
		}
		return 1.2
	}
	total := 0.0
	for _, c := range st.Cities {
		total += weight(c)
	}
	x := g.rng.Float64() * total
	for _, c := range st.Cities {
		if x -= weight(c); x < 0 {
			return c
		}
	}
	return st.Cities[len(st.Cities)-1]
}

// place scatters a school around city and gives it an NCES locale code that
// fits how far out it is: the core of a city is 11-13, its ring suburban
// (21-23), farther out town (31-33) or rural (41-43).
func (g *seedGen) place(c seedCity) (lat, lon float64, locale int) {
	type band struct {
		p        float64
		locales  []int
		from, to float64 // fraction of the radius
	}
	var radius float64
	var bands []band
	switch c.Kind {
	case seedPlaceMetro:
		radius = 14
		bands = []band{{0.55, []int{11}, 0, 0.4}, {0.4, []int{21}, 0.4, 1}, {0.05, []int{41}, 0.8, 1.2}}
	case seedPlaceCity:
		radius = 9
		bands = []band{{0.45, []int{12, 13}, 0, 0.4}, {0.3, []int{21, 22, 23}, 0.4, 1}, {0.15, []int{31}, 0.6, 1.2}, {0.1, []int{41}, 0.8, 1.3}}
	default:
		radius = 7
		bands = []band{{0.1, []int{13}, 0, 0.3}, {0.55, []int{31, 32, 32, 33}, 0, 0.6}, {0.35, []int{41, 42, 42, 43}, 0.5, 1.3}}
	}
	if c.Radius > 0 {
		radius = c.Radius
	}
	b := bands[len(bands)-1]
	x := g.rng.Float64()
	for _, bb := range bands {
		if x -= bb.p; x < 0 {
			b = bb
			break
		}
	}
	locale = b.locales[g.rng.IntN(len(b.locales))]
	dist := radius * (b.from + (b.to-b.from)*math.Sqrt(g.rng.Float64()))
	bearing := 2 * math.Pi * g.rng.Float64()
	const milesPerDegree = 69.05
	lat = c.Lat + dist*math.Cos(bearing)/milesPerDegree
	lon = c.Lon + dist*math.Sin(bearing)/(milesPerDegree*math.Cos(c.Lat*math.Pi/180))
	return seedRound(lat, 5), seedRound(lon, 5), locale
}

func (g *seedGen) pickDegree(k *seedKind) int {
	x := g.rng.Float64()
	for d, p := range k.degree {
		if x -= p; x < 0 {
			return d + 1
		}
	}
	return 3
}

// admissions sets the admission rate and test score ranges. Selective
// schools admit few and report high scores; open-admission schools admit
// (nearly) everyone and report no scores.
func (g *seedGen) admissions(s *domain.School, k *seedKind, q float64, degree int, open bool) {
	var adm float64
	switch {
	case open && g.missing(0.2):
		// Open-admission schools often report no admission rate at all.
	case open:
		adm = 1
		if g.rng.Float64() < 0.6 {
			adm = 0.75 + 0.25*g.rng.Float64()
		}
		s.AdmissionRate = seedPtr(seedRound(adm, 4))
	default:
		adm = (0.98 - 0.95*math.Pow(q, 2.2)) * math.Exp(0.12*g.rng.NormFloat64())
		adm = seedClamp(adm, 0.03, 0.99)
		s.AdmissionRate = seedMaybe(g, 0.02, seedRound(adm, 4))
	}
	if open || degree < 3 || s.AdmissionRate == nil {
		return
	}
	// Test-optional schools and most for-profits publish no scores.
	noScores := 0.1
	if k.control == domain.ControlForProfit {
		noScores = 0.8
	}
	if g.rng.Float64() < noScores {
		return
	}
	// Fit to Scorecard: 25th percentile ~1450 at a 5 % admission rate,
	// ~950 at 80 %, with the 75th 120-200 points higher (narrower at the top).
	sel := math.Pow(math.Max(0, (0.85-adm)/0.8), 1.3)
	sat25 := 950 + 490*sel - 100*math.Max(0, adm-0.8)/0.2 + 35*g.rng.NormFloat64()
	gap := seedClamp(200-75*sel+12*g.rng.NormFloat64(), 120, 200)
	sat25 = seedClamp(math.Round(sat25/10)*10, 400, 1480)
	sat75 := math.Min(1600, sat25+math.Round(gap/10)*10)
	if sat75-sat25 < 120 {
		sat25 = sat75 - 120
	}
	s.SAT25, s.SAT75 = seedPtr(int16(sat25)), seedPtr(int16(sat75))
	act25, act75 := seedACT(int(sat25)), seedACT(int(sat75))
	if act75 <= act25 {
		act75 = min(36, act25+1)
		act25 = act75 - 1
	}
	s.ACT25, s.ACT75 = seedPtr(int16(act25)), seedPtr(int16(act75))
}

// seedConcordance is the SAT total matching each ACT composite (2018
// ACT/SAT concordance), from ACT 9 to 36.
var seedConcordance = [...]int{590, 630, 670, 710, 760, 800, 850, 890, 930, 970, 1010, 1040, 1080, 1110,
	1140, 1180, 1210, 1240, 1280, 1310, 1340, 1370, 1400, 1430, 1460, 1500, 1540, 1590}

// seedACT is the ACT composite concordant with an SAT total.
func seedACT(sat int) int {
	if sat < seedConcordance[0] {
		return max(1, 9-(seedConcordance[0]-sat+20)/40)
	}
	best := 0
	for i, v := range seedConcordance {
		if seedAbs(v-sat) < seedAbs(seedConcordance[best]-sat) {
			best = i
		}
	}
	return 9 + best
}

func seedAbs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// costs sets tuition and net prices. Net price by family income rises from
// the lowest band to the highest; private schools with large endowments
// (high q) charge low-income families very little.
func (g *seedGen) costs(s *domain.School, st *seedState, k *seedKind, q float64, degree int) {
	noise := func(sd float64) float64 { return math.Exp(sd * g.rng.NormFloat64()) }
	var tuitionIn, tuitionOut, coa, base, top float64
	switch k.control {
	case domain.ControlPublic:
		if degree == 3 {
			tuitionIn = seedClamp(10000*st.TuitionFactor*noise(0.15)*(0.9+0.2*q), 4500, 18500)
			tuitionOut = math.Min(45000, tuitionIn*(2+g.rng.Float64()))
			coa = tuitionIn + 13000*noise(0.1)
			base, top = coa*(0.48-0.15*q), coa*0.88
		} else {
			tuitionIn = seedClamp(3800*st.TuitionFactor*noise(0.2), 1200, 9000)
			tuitionOut = tuitionIn * (2 + g.rng.Float64())
			coa = tuitionIn + 9000*noise(0.1)
			base, top = coa*0.35, coa*0.8
		}
	case domain.ControlNonprofit:
		tuitionIn = 15000 + 45000*math.Pow(q, 1.2)*noise(0.08) + 3000*g.rng.NormFloat64()
		if degree < 3 {
			tuitionIn *= 0.6
		}
		tuitionIn = seedClamp(tuitionIn, 9000, 62000)
		tuitionOut = tuitionIn
		coa = tuitionIn + 15000*noise(0.1)
		base = coa * seedClamp(0.55-0.5*math.Pow(q, 1.6)+0.04*g.rng.NormFloat64(), 0.03, 0.7)
		top = coa * seedClamp(0.6+0.3*q*q+0.03*g.rng.NormFloat64(), 0.5, 0.95)
	default:
		tuitionIn = 16000 * noise(0.25)
		if degree == 1 {
			tuitionIn *= 0.8
		}
		tuitionIn = seedClamp(tuitionIn, 7000, 32000)
		tuitionOut = tuitionIn
		coa = tuitionIn + 10000*noise(0.1)
		base, top = coa*0.6, coa*0.92
	}
	s.TuitionIn = seedMaybe(g, 0.03, int32(math.Round(tuitionIn/10)*10))
	if s.TuitionIn != nil {
		s.TuitionOut = seedPtr(int32(math.Round(tuitionOut/10) * 10))
	}

	// Band weights between the lowest and the highest band's net price.
	bandW := [domain.IncomeBands]float64{0, 0.12, 0.32, 0.62, 1}
	var np [domain.IncomeBands]float64
	prev := 0.0
	for b := range np {
		v := (base + (top-base)*bandW[b]) * noise(0.03)
		v = math.Max(v, prev)
		np[b], prev = v, v
	}
	// The average weighs the bands by the share of students in each, which
	// follows the Pell share: poorer student bodies pay nearer the low end.
	pell := g.pell(k, q, degree)
	// Like the Scorecard's, the average covers aid recipients only, who lean
	// towards the lower bands.
	share := [domain.IncomeBands]float64{0.6*pell + 0.05, 0.4*pell + 0.1, 0.3 * (1 - pell), 0.3 * (1 - pell), 0.25 * (1 - pell)}
	avg, sum := 0.0, 0.0
	for b := range np {
		avg += share[b] * np[b]
		sum += share[b]
		s.NetPriceByBand[b] = seedMaybe(g, 0.04, int32(math.Round(np[b])))
	}
	avg /= sum
	s.AvgNetPrice = seedMaybe(g, 0.03, int32(math.Round(avg)))
	s.PellRate = seedMaybe(g, 0.03, seedRound(pell, 4))
}

// pell is the share of undergraduates with a Pell grant: high at open
// access and for-profit schools, low at the most selective.
func (g *seedGen) pell(k *seedKind, q float64, degree int) float64 {
	var p float64
	switch {
	case k.control == domain.ControlForProfit:
		p = 0.62 + 0.08*g.rng.NormFloat64()
	case degree < 3:
		p = 0.38 + 0.08*g.rng.NormFloat64()
	default:
		p = 0.72 - 0.62*q + 0.05*g.rng.NormFloat64()
	}
	return seedClamp(p, 0.1, 0.8)
}

// outcomes sets loans, debt, completion, retention and earnings.
func (g *seedGen) outcomes(s *domain.School, k *seedKind, q float64, degree int, stem, trade, size float64) {
	n := g.rng.NormFloat64
	var loan, debt, grad, ret float64
	switch {
	case k.control == domain.ControlForProfit:
		loan = 0.68 + 0.08*n()
		debt = 9000 + 2500*n()
		if degree == 3 {
			debt = 27000 + 4000*n()
		}
	case degree < 3:
		loan = 0.2 + 0.07*n()
		debt = 9500 + 1500*n()
	case k.control == domain.ControlPublic:
		loan = 0.45 - 0.3*(q-0.5) + 0.07*n()
		debt = 14000 + 12000*math.Pow(1-q, 0.7) + 2000*n()
	default:
		loan = 0.62 - 0.55*math.Pow(q, 3) + 0.07*n()
		debt = 14000 + 12000*math.Pow(1-q, 0.7) + 2000*n()
	}
	switch degree {
	case 1:
		// Short certificate programmes are completed more often than degrees.
		grad = 0.66 + 0.08*n()
		ret = 0.7 + 0.06*n()
	case 2:
		grad = 0.1 + 0.8*q + 0.06*n()
		ret = 0.55 + 0.06*n()
	default:
		grad = 0.22 + 0.73*math.Pow(q, 1.2) + 0.05*n()
		if k.control == domain.ControlForProfit {
			grad = 0.3 + 0.08*n()
		}
		ret = math.Max(0.55+0.42*q+0.04*n(), grad+0.02)
	}
	s.LoanRate = seedMaybe(g, 0.03, seedRound(seedClamp(loan, 0.02, 0.95), 4))
	s.MedianDebt = seedMaybe(g, 0.05, int32(math.Round(seedClamp(debt, 3500, 45000)/10)*10))
	s.GradRate = seedMaybe(g, 0.04, seedRound(seedClamp(grad, 0.08, 0.97), 4))
	s.RetentionRate = seedMaybe(g, 0.05, seedRound(seedClamp(ret, 0.3, 0.99), 4))

	e10 := k.earnBase + 35000*stem + 15000*trade
	if degree == 3 {
		e10 += 45000 * q * q
	}
	e10 = seedClamp(e10*math.Exp(0.08*n()), 18000, 145000)
	e6 := e10 * (0.72 + 0.14*g.rng.Float64())
	// Small schools' earnings are often privacy-suppressed.
	pMissing := 0.04
	if size < 200 {
		pMissing = 0.2
	}
	if !g.missing(pMissing) {
		s.Earnings10yr = seedPtr(int32(math.Round(e10/100) * 100))
		s.Earnings6yr = seedPtr(int32(math.Round(e6/100) * 100))
	}
}

// Program profiles: typical shares of degrees by field for each kind of
// institution; programs perturbs them per school.
var (
	seedProgramsResearch = map[domain.Major]float64{
		"business_marketing": 0.12, "engineering": 0.11, "social_science": 0.11, "biological": 0.09,
		"computer": 0.08, "health": 0.07, "psychology": 0.06, "communication": 0.04, "visual_performing": 0.04,
		"mathematics": 0.03, "physical_science": 0.03, "english": 0.02, "history": 0.02, "education": 0.03,
		"multidiscipline": 0.03, "parks_recreation_fitness": 0.02, "resources": 0.015, "agriculture": 0.01,
		"public_administration_social_service": 0.015, "language": 0.01, "philosophy_religious": 0.01,
		"architecture": 0.01, "ethnic_cultural_gender": 0.008, "humanities": 0.01, "family_consumer_science": 0.008,
		"security_law_enforcement": 0.01, "engineering_technology": 0.005,
	}
	seedProgramsComprehensive = map[domain.Major]float64{
		"business_marketing": 0.19, "health": 0.13, "education": 0.06, "psychology": 0.06, "social_science": 0.06,
		"biological": 0.06, "computer": 0.05, "security_law_enforcement": 0.04, "communication": 0.04,
		"visual_performing": 0.04, "engineering": 0.03, "parks_recreation_fitness": 0.03, "multidiscipline": 0.03,
		"public_administration_social_service": 0.025, "english": 0.015, "history": 0.012, "mathematics": 0.01,
		"physical_science": 0.012, "family_consumer_science": 0.01, "agriculture": 0.008, "resources": 0.008,
		"humanities": 0.01, "engineering_technology": 0.012, "language": 0.006, "philosophy_religious": 0.005,
		"communications_technology": 0.005, "legal": 0.004,
	}
	seedProgramsLiberalArts = map[domain.Major]float64{
		"social_science": 0.18, "biological": 0.1, "psychology": 0.09, "visual_performing": 0.08, "english": 0.06,
		"history": 0.05, "multidiscipline": 0.05, "physical_science": 0.05, "mathematics": 0.04, "language": 0.04,
		"humanities": 0.04, "computer": 0.04, "business_marketing": 0.04, "philosophy_religious": 0.03,
		"communication": 0.03, "resources": 0.03, "ethnic_cultural_gender": 0.02, "education": 0.02,
	}
	seedProgramsEngineering = map[domain.Major]float64{
		"engineering": 0.45, "computer": 0.18, "physical_science": 0.06, "engineering_technology": 0.06,
		"business_marketing": 0.06, "mathematics": 0.05, "biological": 0.04, "architecture": 0.03,
		"social_science": 0.02, "science_technology": 0.02, "communications_technology": 0.01, "visual_performing": 0.01,
	}
	seedProgramsHealth = map[domain.Major]float64{
		"health": 0.75, "biological": 0.06, "psychology": 0.04, "public_administration_social_service": 0.04,
		"parks_recreation_fitness": 0.03, "business_marketing": 0.03, "family_consumer_science": 0.02,
		"multidiscipline": 0.02,
	}
	seedProgramsBusiness = map[domain.Major]float64{
		"business_marketing": 0.65, "computer": 0.1, "health": 0.05, "communication": 0.05,
		"security_law_enforcement": 0.04, "legal": 0.03, "psychology": 0.03, "social_science": 0.03,
		"visual_performing": 0.02,
	}
	seedProgramsArt = map[domain.Major]float64{
		"visual_performing": 0.75, "communications_technology": 0.06, "communication": 0.05, "architecture": 0.04,
		"computer": 0.04, "english": 0.02, "business_marketing": 0.02, "education": 0.02,
	}
	seedProgramsReligious = map[domain.Major]float64{
		"theology_religious_vocation": 0.45, "philosophy_religious": 0.1, "education": 0.08, "business_marketing": 0.08,
		"psychology": 0.07, "public_administration_social_service": 0.05, "visual_performing": 0.05,
		"communication": 0.04, "health": 0.04, "humanities": 0.03,
	}
	seedProgramsCommunity = map[domain.Major]float64{
		"humanities": 0.3, "health": 0.2, "business_marketing": 0.1, "multidiscipline": 0.06, "security_law_enforcement": 0.04,
		"computer": 0.04, "mechanic_repair_technology": 0.03, "engineering_technology": 0.03, "personal_culinary": 0.03,
		"education": 0.03, "construction": 0.02, "precision_production": 0.02, "family_consumer_science": 0.02,
		"public_administration_social_service": 0.02, "visual_performing": 0.02, "science_technology": 0.01,
		"parks_recreation_fitness": 0.01, "transportation": 0.01, "legal": 0.01, "biological": 0.01, "agriculture": 0.01,
	}
	seedProgramsTechnical = map[domain.Major]float64{
		"health": 0.25, "mechanic_repair_technology": 0.15, "precision_production": 0.1, "construction": 0.1,
		"engineering_technology": 0.08, "computer": 0.06, "business_marketing": 0.06, "personal_culinary": 0.05,
		"transportation": 0.05, "security_law_enforcement": 0.03, "humanities": 0.03, "agriculture": 0.02,
		"communications_technology": 0.02,
	}
	seedProgramsCosmetology = map[domain.Major]float64{
		"personal_culinary": 0.95, "business_marketing": 0.03, "health": 0.02,
	}
	seedProgramsTrade = map[domain.Major]float64{
		"mechanic_repair_technology": 0.35, "precision_production": 0.2, "construction": 0.2, "transportation": 0.15,
		"engineering_technology": 0.05, "computer": 0.05,
	}
	seedProgramsHealthCareers = map[domain.Major]float64{
		"health": 0.85, "business_marketing": 0.05, "legal": 0.03, "computer": 0.03, "personal_culinary": 0.02,
		"security_law_enforcement": 0.02,
	}
	seedProgramsCareerUniversity = map[domain.Major]float64{
		"business_marketing": 0.4, "health": 0.2, "computer": 0.12, "psychology": 0.06, "education": 0.06,
		"security_law_enforcement": 0.06, "public_administration_social_service": 0.04, "multidiscipline": 0.03,
		"legal": 0.03,
	}
	seedProgramsCulinaryDesign = map[domain.Major]float64{
		"visual_performing": 0.45, "personal_culinary": 0.35, "communications_technology": 0.1, "computer": 0.05,
		"business_marketing": 0.05,
	}
	seedProgramsBusinessIT = map[domain.Major]float64{
		"business_marketing": 0.45, "computer": 0.3, "health": 0.1, "legal": 0.05, "security_law_enforcement": 0.05,
		"communications_technology": 0.05,
	}

	seedSTEM   = []domain.Major{"computer", "engineering", "engineering_technology", "mathematics", "physical_science", "biological", "science_technology"}
	seedTrades = []domain.Major{"mechanic_repair_technology", "construction", "precision_production", "transportation"}
)

// programs perturbs the kind's profile for one school: each share varies
// log-normally, shares under half a percent are dropped, the rest sum to 1.
func (g *seedGen) programs(k *seedKind) map[domain.Major]float64 {
	w := make([]float64, len(domain.Majors))
	total := 0.0
	for i, m := range domain.Majors {
		base := k.programs[m.Key]
		if m.Key == "agriculture" && k == &seedKinds[seedKindPublicResearch] && g.rng.Float64() < 0.5 {
			base += 0.05 // land-grant universities
		}
		if base == 0 {
			continue
		}
		w[i] = base * math.Exp(0.45*g.rng.NormFloat64())
		total += w[i]
	}
	kept := 0.0
	for i := range w {
		if w[i]/total < 0.005 {
			w[i] = 0
		}
		kept += w[i]
	}
	out := make(map[domain.Major]float64)
	for i, m := range domain.Majors {
		if w[i] > 0 {
			out[m.Key] = seedRound(w[i]/kept, 4)
		}
	}
	return out
}

func seedShareOf(shares map[domain.Major]float64, majors []domain.Major) float64 {
	sum := 0.0
	for _, m := range majors {
		sum += shares[m]
	}
	return sum
}

var (
	seedFamilyNames = []string{
		"Abbott", "Alden", "Ashford", "Avery", "Bancroft", "Barlow", "Beckett", "Bellamy", "Benning", "Blackwell",
		"Bradford", "Bramwell", "Brantley", "Brewster", "Caldwell", "Carlisle", "Carrington", "Chadwick", "Chandler",
		"Chesterfield", "Clairmont", "Clayton", "Crandall", "Crawford", "Dalton", "Davenport", "Delmont", "Denholm",
		"Dorsey", "Drayton", "Dunmore", "Easton", "Ellery", "Ellsworth", "Emberly", "Fairchild", "Fenwick", "Fielding",
		"Fleming", "Foxcroft", "Garrison", "Gilmore", "Goodwin", "Granger", "Greeley", "Hadley", "Halstead", "Hamlin",
		"Harcourt", "Harlow", "Hartwell", "Hastings", "Hawthorne", "Haywood", "Hollister", "Holloway", "Huntley",
		"Kendrick", "Kensington", "Kingsley", "Langford", "Larkin", "Lawson", "Lindell", "Lockhart", "Lyman",
		"Marlowe", "Mayfield", "Merrick", "Merriweather", "Montrose", "Morland", "Norwood", "Oakes", "Osborne",
		"Packard", "Pemberton", "Prescott", "Rainier", "Redmond", "Remington", "Ridgeway", "Rockwell", "Rutherford",
		"Sanford", "Sheffield", "Sherwood", "Sinclair", "Stanhope", "Sterling", "Stockton", "Sutton", "Talbot",
		"Thornton", "Thorne", "Tilden", "Townsend", "Underwood", "Vance", "Wadsworth", "Walcott", "Warrick", "Waverly",
		"Whitaker", "Whitcomb", "Whitfield", "Whitmore", "Winslow", "Woodbury", "Worthington", "Wyndham", "Yardley",
		"Ainsworth", "Albright", "Ashby", "Atwater", "Babcock", "Bainbridge", "Barrington", "Belden", "Blakely",
		"Bowden", "Bramhall", "Burnham", "Calloway", "Cartwright", "Channing", "Colfax", "Cromwell", "Dawson",
		"Delaney", "Donovan", "Eastman", "Everett", "Fenton", "Forsyth", "Garland", "Gladstone", "Gresham",
		"Griswold", "Hale", "Hargrove", "Harrington", "Haskell", "Hendricks", "Holbrook", "Hopewell", "Ingram",
		"Jarvis", "Keating", "Kerrigan", "Kimball", "Latham", "Leland", "Maddox", "Milbank", "Morrow", "Newcomb",
		"Norcross", "Oakley", "Pendleton", "Pomeroy", "Quincy", "Ramsey", "Rowland", "Sayer", "Shelby", "Slater",
		"Stafford", "Standish", "Stratton", "Thackeray", "Thayer", "Tolliver", "Trowbridge", "Vail", "Wakefield",
		"Wardell", "Welles", "Wexford", "Whitley", "Wilder", "Yates",
	}
	seedGivenNames = []string{
		"James", "John", "George", "Thomas", "William", "Henry", "Charles", "Edward", "Samuel", "Benjamin", "Robert",
		"Joseph", "Andrew", "Walter", "Arthur", "Frederick", "Elizabeth", "Mary", "Anne", "Margaret", "Eleanor",
		"Catherine", "Frances", "Harriet", "Clara", "Louisa", "Martha", "Abigail", "Grace", "Edith", "Alice",
	}
	seedPlaceNames = []string{
		"Cedar Valley", "Oak Ridge", "Pine Hill", "Maple Grove", "Willow Creek", "Eagle Rock", "Silver Lake",
		"Stone River", "Clear Springs", "Red Bluff", "Blue Mountain", "Green River", "Highland", "Lakeshore",
		"Riverbend", "Summit", "Meadowbrook", "Bayview", "Elmwood", "Fox Valley", "Heritage", "Horizon", "Iron Range",
		"Laurel Hill", "North Shore", "Pleasant Valley", "Rolling Hills", "Sandhills", "Shady Grove", "Spring Hill",
		"Sugar Creek", "Timberline", "Twin Rivers", "Westbrook", "Wildwood", "Canyon Ridge", "Golden Plains",
		"Hidden Valley", "Crystal Lake", "Lone Pine", "Cypress Bay", "Prairie Wind",
	}
	seedSaints = []string{
		"Saint Augustine", "Saint Brendan", "Saint Catherine", "Saint Clement", "Saint Columba", "Saint Dominic",
		"Saint Edmund", "Saint Francis", "Saint Gregory", "Saint Helena", "Saint Ignatius", "Saint Jerome",
		"Saint Jude", "Saint Lucy", "Saint Martin", "Saint Monica", "Saint Patrick", "Saint Raphael", "Saint Rose",
		"Saint Stephen", "Saint Teresa", "Saint Vincent", "Saint Benedict", "Saint Cecilia", "Saint Agnes",
		"Saint Ambrose", "Saint Basil", "Saint Luke",
	}
	seedDenominations = []string{"Baptist", "Christian", "Wesleyan", "Lutheran", "Methodist", "Presbyterian", "Nazarene", "Adventist", "Mennonite"}
	seedDirections    = []string{"Northern", "Southern", "Eastern", "Western", "Central", "Northeastern", "Northwestern", "Southeastern", "Southwestern"}
)

// name fills one of the kind's patterns and makes the name unique: after a
// few tries with other patterns it names the campus by its city, as chains
// do ("Hadley Beauty School-Dayton").
func (g *seedGen) name(k *seedKind, stateName, city string) string {
	fill := func(t string) string {
		pick := func(xs []string) string { return xs[g.rng.IntN(len(xs))] }
		var b strings.Builder
		for {
			i := strings.IndexByte(t, '{')
			if i < 0 || i+2 >= len(t) || t[i+2] != '}' {
				b.WriteString(t)
				return b.String()
			}
			b.WriteString(t[:i])
			switch t[i+1] {
			case 'S':
				b.WriteString(stateName)
			case 'C':
				b.WriteString(city)
			case 'N':
				b.WriteString(pick(seedFamilyNames))
			case 'F':
				b.WriteString(pick(seedGivenNames))
			case 'P':
				b.WriteString(pick(seedPlaceNames))
			case 'T':
				b.WriteString(pick(seedSaints))
			case 'R':
				b.WriteString(pick(seedDenominations))
			case 'D':
				b.WriteString(pick(seedDirections))
			}
			t = t[i+3:]
		}
	}
	// Patterns built on a city or state run out in big states, so after a
	// few tries only patterns with a family name (hundreds of choices) are
	// used.
	var named []seedTemplate
	for _, t := range k.names {
		if strings.Contains(t.pattern, "{N}") {
			named = append(named, t)
		}
	}
	var last string
	for try := range 12 {
		ts := k.names
		if try >= 4 && len(named) > 0 {
			ts = named
		}
		total := 0.0
		for _, t := range ts {
			total += t.weight
		}
		x := g.rng.Float64() * total
		t := ts[len(ts)-1].pattern
		for _, tt := range ts {
			if x -= tt.weight; x < 0 {
				t = tt.pattern
				break
			}
		}
		last = fill(t)
		if !g.names[last] {
			g.names[last] = true
			return last
		}
	}
	if !strings.Contains(last, city) {
		if n := last + "-" + city; !g.names[n] {
			g.names[n] = true
			return n
		}
	}
	for i := 1; ; i++ {
		n := last + "-" + seedDirections[(i-1)%len(seedDirections)] + " Campus"
		if i > len(seedDirections) {
			n += " " + strconv.Itoa(i/len(seedDirections)+1)
		}
		if !g.names[n] {
			g.names[n] = true
			return n
		}
	}
}

// url is a plausible homepage under .edu (.com for certificate-only
// for-profit schools). The host is the name's words; when that is long,
// generic words ("University", "College") shrink to their initials, and
// failing that every word does.
func (g *seedGen) url(name string, control domain.Control, degree int) string {
	if g.missing(0.02) {
		return ""
	}
	var words []string
	for _, w := range strings.FieldsFunc(name, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		switch lw := strings.ToLower(w); lw {
		case "of", "at", "and", "the", "d":
		default:
			words = append(words, lw)
		}
	}
	host := strings.Join(words, "")
	if len(host) > 22 {
		var b strings.Builder
		for _, w := range words {
			if seedGenericWords[w] {
				b.WriteByte(w[0])
			} else {
				b.WriteString(w)
			}
		}
		host = b.String()
	}
	if len(host) > 22 {
		var b strings.Builder
		for _, w := range words {
			b.WriteByte(w[0])
		}
		host = b.String()
	}
	tld := ".edu"
	if control == domain.ControlForProfit && degree == 1 {
		tld = ".com"
	}
	return "https://www." + host + tld
}

var seedGenericWords = map[string]bool{
	"university": true, "college": true, "community": true, "state": true, "institute": true, "technology": true,
	"technical": true, "school": true, "academy": true, "polytechnic": true, "career": true, "careers": true,
	"sciences": true, "science": true, "health": true, "area": true, "center": true, "campus": true,
	"saint": true, "junior": true, "global": true, "applied": true, "business": true, "design": true, "art": true,
}

// missing reports, with probability p, that a source would have no value.
func (g *seedGen) missing(p float64) bool { return g.rng.Float64() < p }

// seedMaybe is &v, or nil with probability p.
func seedMaybe[T any](g *seedGen, p float64, v T) *T {
	if g.missing(p) {
		return nil
	}
	return &v
}

func seedPtr[T any](v T) *T { return &v }

func seedClamp(x, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, x)) }

func seedRound(x float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(x*p) / p
}
