package match

import (
	"cmp"
	"net/url"
	"strings"

	"github.com/collegematch/matching/internal/domain"
)

// ArchetypeID is the slug of an onboarding category (an archetype school
// group), as clients send it in category_id.
type ArchetypeID string

// The six archetypes, in the order onboarding shows them.
const (
	ArchetypeSelectiveResearch  ArchetypeID = "selective-research"
	ArchetypeLiberalArts        ArchetypeID = "liberal-arts"
	ArchetypePublicFlagship     ArchetypeID = "public-flagship"
	ArchetypeAffordableRegional ArchetypeID = "affordable-regional"
	ArchetypeTechEngineering    ArchetypeID = "tech-engineering"
	ArchetypeCommunityCollege   ArchetypeID = "community-college"
)

// Archetype is one onboarding category: what a student is shown before
// any swipe.
type Archetype struct {
	ID          ArchetypeID
	Name        string
	Description string
}

var archetypes = [...]Archetype{
	{ArchetypeSelectiveResearch, "Selective research universities",
		"Highly selective universities with major research, top outcomes and tough admissions."},
	{ArchetypeLiberalArts, "Small liberal-arts colleges",
		"Small private colleges with small classes, close professors and a broad arts-and-sciences education."},
	{ArchetypePublicFlagship, "Large public universities",
		"Big state flagships: huge campuses, every major, big-time sports and school spirit."},
	{ArchetypeAffordableRegional, "Affordable regional public universities",
		"Public universities that keep costs low, admit most applicants and stay close to home."},
	{ArchetypeTechEngineering, "Technical and engineering schools",
		"Institutes of technology where most students major in engineering or computer science."},
	{ArchetypeCommunityCollege, "Community and two-year colleges",
		"Start close to home for less: associate degrees, career certificates and transfer paths."},
}

// Archetypes returns the six archetypes in display order. The slice is a
// copy; callers may keep or change it.
func Archetypes() []Archetype {
	return append([]Archetype(nil), archetypes[:]...)
}

// LookupArchetype finds an archetype by its slug.
func LookupArchetype(id string) (Archetype, bool) {
	for _, a := range archetypes {
		if string(a.ID) == id {
			return a, true
		}
	}
	return Archetype{}, false
}

// Thresholds of the classification rules (see Classify).
const (
	selectiveAdmitRate   = 0.35  // at most this admission rate is selective
	selectiveSATMid      = 1300  // without an admission rate: SAT midpoint at least this
	researchMinSize      = 3000  // undergraduates of a research university, at least
	liberalArtsMaxSize   = 4000  // undergraduates of a liberal-arts college, at most
	liberalArtsMinShare  = 0.5   // arts-and-sciences share of degrees, at least
	liberalArtsMaxField  = 0.4   // largest single field's share, at most (breadth)
	flagshipMinSize      = 15000 // undergraduates of a large public university, at least
	regionalMinAdmitRate = 0.5   // admission rate of an accessible school, at least
	affordableMaxPrice   = 15000 // yearly net price of an affordable school, at most (USD)
	techMinShare         = 0.35  // engineering, engineering technology and computing share, at least
)

// artsAndSciences are the fields of a liberal-arts education.
var artsAndSciences = []domain.Major{
	"social_science", "biological", "psychology", "english", "history", "language", "humanities",
	"philosophy_religious", "mathematics", "physical_science", "visual_performing", "multidiscipline",
	"ethnic_cultural_gender", "resources",
}

// techFields are the fields of a technical or engineering school.
var techFields = []domain.Major{"engineering", "engineering_technology", "computer"}

// Name words that identify a technical school or a two-year college when a
// catalogue lacks program shares or the predominant degree.
var (
	techNameWords    = []string{"institute of technology", "polytechnic", "school of mines", "technological university"}
	twoYearNameWords = []string{"community college", "junior college"}
)

// Predominant degrees (the Scorecard's PREDDEG).
const (
	degreeAssociate = 2
	degreeBachelor  = 3
	degreeGraduate  = 4
)

// schoolFacts are the values of one school the rules read, checked once:
// non-finite and out-of-range values count as missing.
type schoolFacts struct {
	public, nonprofit bool

	fourYear, twoYear bool

	size    float64 // undergraduates
	hasSize bool

	admRate    float64
	hasAdmRate bool
	satMid     float64
	hasSAT     bool
	selLevel   float64 // 1 - admission rate, else from the SAT midpoint, else 0

	price    float64 // yearly net price, USD
	hasPrice bool

	outcomes float64 // the outcomes family score, Neutral when unknown

	hasPrograms  bool
	artsSciences float64 // share of degrees in artsAndSciences
	tech         float64 // share of degrees in techFields
	maxField     float64 // largest single field's share

	techName bool // no program data, and the name says technical school
}

func factsOf(s *domain.School) schoolFacts {
	f := schoolFacts{
		public:    s.Control == domain.ControlPublic,
		nonprofit: s.Control == domain.ControlNonprofit,
	}
	if lo, hi, ok := schoolRange(s); ok {
		f.satMid, f.hasSAT = (lo+hi)/2, true
	}
	if a, ok := rate(s.AdmissionRate); ok && a > 0 {
		f.admRate, f.hasAdmRate = a, true
		f.selLevel = 1 - a
	} else if f.hasSAT {
		f.selLevel = strengthOf(f.satMid)
	}

	total := 0.0
	for m, v := range s.ProgramShares {
		if !finite(v) || v <= 0 {
			continue
		}
		g, known := majorGroups[m]
		if !known {
			continue
		}
		v = clamp01(v)
		total += v
		f.maxField = max(f.maxField, v)
		switch g {
		case groupArtsSciences:
			f.artsSciences += v
		case groupTech:
			f.tech += v
		}
	}
	f.hasPrograms = total > 0
	f.artsSciences, f.tech = clamp01(f.artsSciences), clamp01(f.tech)

	// Names are read only where the data is missing.
	var name string
	if s.PredDegree == nil || !f.hasPrograms {
		name = strings.ToLower(s.Name)
	}
	f.techName = !f.hasPrograms && containsAny(name, techNameWords)
	switch {
	case s.PredDegree != nil:
		d := *s.PredDegree
		f.fourYear = d == degreeBachelor || d == degreeGraduate
		f.twoYear = d == degreeAssociate
	case containsAny(name, twoYearNameWords):
		f.twoYear = true
	default:
		// Only four-year schools publish admission test ranges.
		f.fourYear = f.hasSAT
	}

	if s.Size != nil && *s.Size > 0 {
		f.size, f.hasSize = float64(*s.Size), true
	}
	f.price, f.hasPrice = typicalNetPrice(s)
	f.outcomes, _ = outcomesOf(s).family()
	return f
}

// Groups of fields the rules add up.
const (
	groupOther uint8 = iota
	groupArtsSciences
	groupTech
)

// majorGroups maps every known field to its group.
var majorGroups = func() map[domain.Major]uint8 {
	m := make(map[domain.Major]uint8, len(domain.Majors))
	for _, mj := range domain.Majors {
		m[mj.Key] = groupOther
	}
	for _, mj := range artsAndSciences {
		m[mj] = groupArtsSciences
	}
	for _, mj := range techFields {
		m[mj] = groupTech
	}
	return m
}()

// typicalNetPrice is what a typical aided student pays a year: the average
// net price, else the price of the middle income band, else in-state tuition.
func typicalNetPrice(s *domain.School) (float64, bool) {
	if v, ok := dollars(s.AvgNetPrice); ok {
		return v, true
	}
	if v, ok := dollars(s.NetPriceByBand[domain.IncomeBand48to75k]); ok {
		return v, true
	}
	return dollars(s.TuitionIn)
}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

func (f *schoolFacts) selective() bool {
	if f.hasAdmRate {
		return f.admRate <= selectiveAdmitRate
	}
	return f.hasSAT && f.satMid >= selectiveSATMid
}

func (f *schoolFacts) accessible() bool {
	if f.hasAdmRate {
		return f.admRate >= regionalMinAdmitRate
	}
	return !f.hasSAT || f.satMid < selectiveSATMid
}

// cheapness is 1 at a net price of 0 and 0 at affordableMaxPrice or more.
func (f *schoolFacts) cheapness() float64 {
	if !f.hasPrice {
		return 0
	}
	return clamp01(1 - f.price/affordableMaxPrice)
}

// breadth is 1 minus the largest field's share of degrees: high for a
// comprehensive university, low for a specialised school; Neutral unknown.
func (f *schoolFacts) breadth() float64 {
	if !f.hasPrograms {
		return Neutral
	}
	return 1 - f.maxField
}

func (f *schoolFacts) sizeScale() float64 {
	if !f.hasSize {
		return 0
	}
	return sizeScale(f.size)
}

// fit reports whether a school with facts f belongs to archetype id and, if
// so, how typical a member it is (in [0,1]; the example school is the most
// typical member).
func (f *schoolFacts) fit(id ArchetypeID) (float64, bool) {
	degreeGranting := f.public || f.nonprofit
	switch id {
	case ArchetypeSelectiveResearch:
		if degreeGranting && f.fourYear && f.hasSize && f.size >= researchMinSize && f.selective() {
			return 0.7*f.selLevel + 0.3*f.outcomes, true
		}
	case ArchetypeLiberalArts:
		if f.nonprofit && f.fourYear && f.hasSize && f.size <= liberalArtsMaxSize && f.hasPrograms &&
			f.artsSciences >= liberalArtsMinShare && f.maxField <= liberalArtsMaxField {
			return 0.4*f.artsSciences + 0.4*f.selLevel + 0.2*f.outcomes, true
		}
	case ArchetypePublicFlagship:
		if f.public && f.fourYear && f.hasSize && f.size >= flagshipMinSize {
			return 0.4*f.sizeScale() + 0.3*f.outcomes + 0.3*f.selLevel, true
		}
	case ArchetypeAffordableRegional:
		if f.public && f.fourYear && (!f.hasSize || f.size < flagshipMinSize) && f.accessible() &&
			f.hasPrice && f.price <= affordableMaxPrice {
			return 0.35*f.cheapness() + 0.25*f.outcomes + 0.25*f.sizeScale() + 0.15*f.breadth(), true
		}
	case ArchetypeTechEngineering:
		tech := (f.hasPrograms && f.tech >= techMinShare) || (!f.hasPrograms && f.techName)
		if degreeGranting && f.fourYear && tech {
			share := f.tech
			if !f.hasPrograms {
				share = techMinShare
			}
			return 0.5*share + 0.5*f.selLevel, true
		}
	case ArchetypeCommunityCollege:
		if degreeGranting && f.twoYear {
			return 0.4*f.sizeScale() + 0.3*f.outcomes + 0.3*f.cheapness(), true
		}
	}
	return 0, false
}

// Classify returns the archetypes school s belongs to, in display order;
// none for a school no archetype describes (a for-profit or
// certificate-granting school, a specialised college outside the six). A
// school may belong to more than one (a large selective public university
// is both selective-research and public-flagship).
//
// Membership is derived from the school's data only, so it holds for a
// generated catalogue and after a College Scorecard import alike; a value
// the rule needs that the school lacks counts as not matching, never as
// matching. The rules (thresholds are the constants above):
//
//   - selective-research: public or private nonprofit, four-year
//     (predominant degree bachelor's or graduate), at least 3,000
//     undergraduates, admission rate at most 35 % (without an admission
//     rate: SAT midpoint at least 1300).
//   - liberal-arts: private nonprofit, four-year, at most 4,000
//     undergraduates, at least half of degrees in the arts and sciences
//     (social, biological, physical and natural sciences, psychology,
//     mathematics, humanities, languages, history, philosophy, the arts,
//     interdisciplinary studies) and no single field over 40 %.
//   - public-flagship: public, four-year, at least 15,000 undergraduates.
//   - affordable-regional: public, four-year, fewer than 15,000
//     undergraduates (or size unknown), admission rate at least 50 % (or
//     open admission), typical net price at most $15,000 a year (average
//     net price, else the $48-75k income band's, else in-state tuition).
//   - tech-engineering: public or private nonprofit, four-year, at least
//     35 % of degrees in engineering, engineering technology and computer
//     science; for a school without program data, a name such as
//     "Institute of Technology", "Polytechnic" or "School of Mines".
//   - community-college: public or private nonprofit, predominantly
//     associate degrees; for a school without a predominant degree, a name
//     with "Community College" or "Junior College".
//
// A school with no predominant degree counts as four-year when it
// publishes SAT or ACT ranges.
func Classify(s domain.School) []ArchetypeID {
	f := factsOf(&s)
	var out []ArchetypeID
	for _, a := range archetypes {
		if _, ok := f.fit(a.ID); ok {
			out = append(out, a.ID)
		}
	}
	return out
}

// DefaultImageBaseURL is the base of school image URLs when a deployment
// configures none.
const DefaultImageBaseURL = "https://images.collegematch.example"

// SchoolImageURL is the image URL of a school: base + "/schools/" + the
// school's id + ".jpg". The id is the school's stable UUID (UUIDv5 of the
// UNITID for imported schools), so the URL stays the same across
// catalogue imports and a CDN can hold one image per school; base "" means
// DefaultImageBaseURL. The catalogue carries no images: the image service
// behind base answers every school id, with a generic campus picture for a
// school it has no photo of.
func SchoolImageURL(base, schoolID string) string {
	base = strings.TrimRight(cmp.Or(base, DefaultImageBaseURL), "/")
	return base + "/schools/" + url.PathEscape(schoolID) + ".jpg"
}

// ExampleSchool is the school a category shows.
type ExampleSchool struct {
	ID       string
	Name     string
	City     string
	State    string
	ImageURL string
	Index    int // index in the catalogue
}

// Category is an archetype with what the loaded catalogue holds of it.
type Category struct {
	Archetype
	Members int // schools of the catalogue that belong to it
	// Example is the category's most typical member, nil only when the
	// catalogue has none (an empty catalogue, or one whose data lacks what
	// the rule needs).
	Example *ExampleSchool
}

// Categories returns the six categories in display order, each with its
// member count and an example school from cat. The example is the member
// with the highest fit (see Classify for membership; fit favours the most
// selective, the most typical programme mix, the largest, the cheapest,
// as suits the category, with outcomes), ties broken by name and then id.
// Categories are visited in display order and each takes the best member
// not already shown for an earlier category, so the six examples are six
// different schools whenever the catalogue allows. The result depends only
// on the catalogue's content. imageBase is passed to SchoolImageURL.
//
// It reads every school once (about 10 ms for 6,500 schools); a caller
// serving it per request keeps the result per catalogue.
func Categories(cat *Catalog, imageBase string) []Category {
	out := make([]Category, len(archetypes))
	type cand struct {
		idx int
		fit float64
	}
	members := make([][]cand, len(archetypes))
	if cat != nil {
		for i := range cat.Schools {
			f := factsOf(&cat.Schools[i])
			for a := range archetypes {
				if v, ok := f.fit(archetypes[a].ID); ok {
					members[a] = append(members[a], cand{i, v})
				}
			}
		}
	}
	used := map[int]bool{}
	better := func(a, b cand) bool { // a ranks before b
		if a.fit != b.fit {
			return a.fit > b.fit
		}
		sa, sb := &cat.Schools[a.idx], &cat.Schools[b.idx]
		if sa.Name != sb.Name {
			return sa.Name < sb.Name
		}
		return sa.ID < sb.ID
	}
	for a := range archetypes {
		out[a] = Category{Archetype: archetypes[a], Members: len(members[a])}
		best, bestFresh := -1, -1
		for j, c := range members[a] {
			if best < 0 || better(c, members[a][best]) {
				best = j
			}
			if !used[c.idx] && (bestFresh < 0 || better(c, members[a][bestFresh])) {
				bestFresh = j
			}
		}
		if bestFresh >= 0 {
			best = bestFresh
		}
		if best < 0 {
			continue
		}
		idx := members[a][best].idx
		used[idx] = true
		s := &cat.Schools[idx]
		out[a].Example = &ExampleSchool{
			ID: s.ID, Name: s.Name, City: s.City, State: s.State,
			ImageURL: SchoolImageURL(imageBase, s.ID), Index: idx,
		}
	}
	return out
}

// CategoryPreference is a student's swipe on a category: Liked for a right
// swipe, not Liked for a left one.
type CategoryPreference struct {
	ID    ArchetypeID
	Liked bool
}

// CategoryPreferenceFrom builds a preference from a stored category swipe
// (direction "right" is a like, anything else a dislike).
func CategoryPreferenceFrom(categoryID, direction string) CategoryPreference {
	return CategoryPreference{ID: ArchetypeID(categoryID), Liked: direction == "right"}
}

// categoryShifts are the weight changes a liked category makes to the
// prior; a disliked one moves the other way by dislikeStep times as much.
// Keys not named stay put. Community colleges' completion and earnings
// figures understate them (students who transfer out do not count as
// completers), so a student who likes them is taken to weigh cost and
// proximity over those figures: without the outcomes shift they would
// rarely reach a first page.
var categoryShifts = map[ArchetypeID]Weights{
	ArchetypeSelectiveResearch:  {AcademicSelectivity: 0.25, OutcomesWeight: 0.2},
	ArchetypeLiberalArts:        {SizePreference: -0.3, CampusWeight: 0.25},
	ArchetypePublicFlagship:     {SizePreference: 0.3, CampusWeight: 0.1, OutcomesWeight: 0.05},
	ArchetypeAffordableRegional: {CostWeight: 0.25, DistanceWeight: 0.2, AidWeight: 0.1, AcademicSelectivity: -0.1},
	ArchetypeTechEngineering:    {ProgramWeight: 0.3, OutcomesWeight: 0.1, AcademicSelectivity: 0.05},
	ArchetypeCommunityCollege:   {CostWeight: 0.4, DistanceWeight: 0.3, AcademicSelectivity: -0.4, OutcomesWeight: -0.3},
}

// dislikeStep scales a category's shifts for a left swipe: disliking says
// less than liking (a student may dislike a group for one reason only).
const dislikeStep = 0.5

// categoryMajors are the fields a liked category suggests to a student who
// has named none.
var categoryMajors = map[ArchetypeID][]domain.Major{
	ArchetypeTechEngineering: {"engineering", "computer"},
}

// CategoryPrior returns the weights a student starts with before any swipe:
// base (normally SeedWeights of the profile) moved by the student's
// category swipes. Each liked category adds its shifts:
//
//	selective-research   academic_selectivity +0.25, outcomes_weight +0.2
//	liberal-arts         size_preference -0.3, campus_weight +0.25
//	public-flagship      size_preference +0.3, campus_weight +0.1, outcomes_weight +0.05
//	affordable-regional  cost_weight +0.25, distance_weight +0.2, aid_weight +0.1, academic_selectivity -0.1
//	tech-engineering     program_weight +0.3, outcomes_weight +0.1, academic_selectivity +0.05
//	community-college    cost_weight +0.4, distance_weight +0.3, academic_selectivity -0.4, outcomes_weight -0.3
//
// and each disliked one subtracts half of them. The sum is added to base
// and every value clamped to [0,1]. Unknown category ids are ignored, each
// category counts once, and a category both liked and disliked in prefs
// counts as neither; the result does not depend on the order of prefs.
// base is not modified.
func CategoryPrior(base Weights, prefs []CategoryPreference) Weights {
	w := base.Sanitize()
	var shift Weights
	for _, a := range archetypes { // a fixed order, so sums round the same way
		liked, disliked := categoryState(a.ID, prefs)
		if liked == disliked {
			continue
		}
		step := 1.0
		if disliked {
			step = -dislikeStep
		}
		shift = priorAdd(shift, categoryShifts[a.ID], step)
	}
	return priorClamp(priorAdd(w, shift, 1))
}

// CategoryMajors returns the fields of study the liked categories in prefs
// suggest (tech-engineering: engineering and computer science), without
// duplicates, in display order; nil when none does. A caller scoring a
// student who named no intended majors may use them as the student's
// majors.
func CategoryMajors(prefs []CategoryPreference) []domain.Major {
	var out []domain.Major
	for _, a := range archetypes {
		liked, disliked := categoryState(a.ID, prefs)
		if !liked || disliked {
			continue
		}
		for _, m := range categoryMajors[a.ID] {
			if !containsMajor(out, m) {
				out = append(out, m)
			}
		}
	}
	return out
}

// CategoryStart is the cold-start view of a student: the profile, with the
// liked categories' majors when the student named none, and the prior
// weights CategoryPrior(SeedWeights(p), prefs).
func CategoryStart(p Profile, prefs []CategoryPreference) (Profile, Weights) {
	if len(p.Majors) == 0 {
		if ms := CategoryMajors(prefs); len(ms) > 0 {
			p.Majors = ms
		}
	}
	return p, CategoryPrior(SeedWeights(p), prefs)
}

func categoryState(id ArchetypeID, prefs []CategoryPreference) (liked, disliked bool) {
	for _, p := range prefs {
		if p.ID != id {
			continue
		}
		if p.Liked {
			liked = true
		} else {
			disliked = true
		}
	}
	return liked, disliked
}

func containsMajor(ms []domain.Major, m domain.Major) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}

// priorAdd returns w + k*d, key by key.
func priorAdd(w, d Weights, k float64) Weights {
	return Weights{
		CostWeight:          w.CostWeight + k*d.CostWeight,
		DistanceWeight:      w.DistanceWeight + k*d.DistanceWeight,
		OutcomesWeight:      w.OutcomesWeight + k*d.OutcomesWeight,
		CampusWeight:        w.CampusWeight + k*d.CampusWeight,
		ProgramWeight:       w.ProgramWeight + k*d.ProgramWeight,
		AidWeight:           w.AidWeight + k*d.AidWeight,
		AcademicSelectivity: w.AcademicSelectivity + k*d.AcademicSelectivity,
		SizePreference:      w.SizePreference + k*d.SizePreference,
	}
}

// priorClamp clamps every value to [0,1].
func priorClamp(w Weights) Weights {
	for _, p := range [...]*float64{&w.CostWeight, &w.DistanceWeight, &w.OutcomesWeight, &w.CampusWeight,
		&w.ProgramWeight, &w.AidWeight, &w.AcademicSelectivity, &w.SizePreference} {
		*p = clamp01(*p)
	}
	return w
}
