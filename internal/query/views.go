package query

import (
	"math"

	"github.com/collegematch/matching/internal/active"
	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
)

// The read side's answers are views: plain structs whose JSON is the API's
// shape, so handlers encode them as they are.

// RecommendationsPage is the answer of POST /recommendations: the union of
// the specification's shapes A and B (decisions.md, Shapes).
type RecommendationsPage struct {
	Recommendations []Recommendation `json:"recommendations"`
	Metadata        Metadata         `json:"metadata"`
	LearningState   LearningState    `json:"learning_state"`
	TotalSwipes     int              `json:"total_swipes"`
}

// Metadata describes the whole list a page is taken from.
type Metadata struct {
	TotalCount       int    `json:"total_count"`
	LearningPhase    string `json:"learning_phase"`
	AlgorithmVersion string `json:"algorithm_version"`
}

// LearningState is the student's learning state as recommendations show it.
type LearningState struct {
	Phase             string             `json:"phase"`
	Progress          float64            `json:"progress"`
	PreferenceWeights map[string]float64 `json:"preference_weights"`
	// LearnedPreferences is what the model learned beyond the eight
	// weights, in words ("prefers schools under about $20,000 a year"),
	// strongest first; empty while there is nothing to name.
	LearnedPreferences []string `json:"learned_preferences"`
}

// Recommendation is one item, with the fields of both client shapes.
type Recommendation struct {
	SchoolID      string          `json:"school_id"`
	Name          string          `json:"name"`
	MatchScore    float64         `json:"match_score"`
	MatchGrade    string          `json:"match_grade"`
	MatchReasons  []string        `json:"match_reasons"`
	Components    ComponentScores `json:"components"`
	School        SchoolView      `json:"school"`
	Explanations  []string        `json:"explanations"`
	IsProbe       bool            `json:"is_probe"`
	MatchedMajors []string        `json:"matched_majors"`
	Distance      *float64        `json:"distance"`
	AdmissionBand string          `json:"admission_band"`
}

// ComponentScores are the four family scores of an item.
type ComponentScores struct {
	Academic  float64 `json:"academic"`
	Financial float64 `json:"financial"`
	Campus    float64 `json:"campus"`
	Outcomes  float64 `json:"outcomes"`
}

// SchoolView is a school record in the standard endpoints: id, name, city
// and state always, the rest null when the data does not have it.
type SchoolView struct {
	ID                 string        `json:"id"`
	Name               string        `json:"name"`
	City               string        `json:"city"`
	State              string        `json:"state"`
	Control            *string       `json:"control"` // public, private_nonprofit, private_for_profit
	Setting            *string       `json:"setting"` // city, suburb, town, rural
	Size               *int32        `json:"size"`    // undergraduates
	AdmissionRate      *float64      `json:"admission_rate"`
	SATRange           *ScoreRange   `json:"sat_range"` // middle 50% of combined SAT
	ACTRange           *ScoreRange   `json:"act_range"` // middle 50% of the ACT composite
	NetPrice           *NetPriceView `json:"net_price"` // estimated for the student
	GraduationRate     *float64      `json:"graduation_rate"`
	RetentionRate      *float64      `json:"retention_rate"`
	MedianEarnings10yr *int32        `json:"median_earnings_10yr"`
	MedianEarnings6yr  *int32        `json:"median_earnings_6yr"`
	URL                *string       `json:"url"`
}

// ScoreRange is a middle-50% range (25th and 75th percentiles).
type ScoreRange struct {
	Low  int `json:"low"`
	High int `json:"high"`
}

// NetPriceView is a yearly price estimate and where it comes from.
type NetPriceView struct {
	Amount int    `json:"amount"`
	Source string `json:"source"`
}

// MatchDetailView is the answer of GET /match/{student_id}/{school_id}.
type MatchDetailView struct {
	StudentID        string           `json:"student_id"`
	SchoolID         string           `json:"school_id"`
	OverallScore     float64          `json:"overall_score"`
	Grade            string           `json:"grade"`
	Components       DetailComponents `json:"components"`
	Explanation      string           `json:"explanation"`
	MatchReasons     []string         `json:"match_reasons"`
	AdmissionBand    string           `json:"admission_band"`
	NetPrice         *NetPriceView    `json:"net_price"`
	Distance         *float64         `json:"distance"`
	MatchedMajors    []string         `json:"matched_majors"`
	Confidence       float64          `json:"confidence"`
	Missing          []string         `json:"missing"`
	School           SchoolView       `json:"school"`
	AlgorithmVersion string           `json:"algorithm_version"`
}

// DetailComponents are the four families of match detail.
type DetailComponents struct {
	Academic  DetailComponent `json:"academic"`
	Financial DetailComponent `json:"financial"`
	Campus    DetailComponent `json:"campus"`
	Outcomes  DetailComponent `json:"outcomes"`
}

// DetailComponent is one family: its score and named factors.
type DetailComponent struct {
	Score   float64            `json:"score"`
	Factors map[string]float64 `json:"factors"`
}

// BatchSchools is the answer of POST /m/batch/schools.
type BatchSchools struct {
	R       []CompactSchool `json:"r"`
	Missing []string        `json:"missing"`
}

// CompactSchool is a school in compact form. i, n, c and st are always
// present; the others only when the data has them.
type CompactSchool struct {
	I   string      `json:"i"`             // id
	N   string      `json:"n"`             // name
	C   string      `json:"c"`             // city
	St  string      `json:"st"`            // state
	Ctl string      `json:"ctl,omitempty"` // control: public, private_nonprofit, private_for_profit
	Set string      `json:"set,omitempty"` // setting: city, suburb, town, rural
	Sz  *int32      `json:"sz,omitempty"`  // undergraduates
	Ar  *int        `json:"ar,omitempty"`  // admission rate, percent
	SAT *[2]int     `json:"sat,omitempty"` // middle 50% of combined SAT: [25th, 75th]
	Np  *int32      `json:"np,omitempty"`  // average net price a year, USD
	Gr  *int        `json:"gr,omitempty"`  // graduation rate, percent
	E   *int32      `json:"e,omitempty"`   // median earnings 10 years after entry, USD
	U   string      `json:"u,omitempty"`   // website
	LL  *[2]float64 `json:"ll,omitempty"`  // [latitude, longitude]
}

// controlName names a school's control in the API.
func controlName(c domain.Control) *string {
	var s string
	switch c {
	case domain.ControlPublic:
		s = "public"
	case domain.ControlNonprofit:
		s = "private_nonprofit"
	case domain.ControlForProfit:
		s = "private_for_profit"
	default:
		return nil
	}
	return &s
}

func settingName(s *domain.School) *string {
	if s.Locale == nil {
		return nil
	}
	if v := string(domain.SettingFromLocale(int(*s.Locale))); v != "" {
		return &v
	}
	return nil
}

func scoreRange(lo, hi *int16) *ScoreRange {
	if lo == nil || hi == nil || *lo <= 0 || *hi <= 0 {
		return nil
	}
	return &ScoreRange{Low: int(*lo), High: int(*hi)}
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// schoolView is the standard record of school idx for the student p.
func schoolView(cat *active.Catalog, p match.Profile, idx int) SchoolView {
	return schoolViewPriced(cat, idx, match.EstimateNetPrice(p, cat.Catalog, idx))
}

// schoolViewPriced is schoolView with the school's net price for the
// student already estimated (match.Describe).
func schoolViewPriced(cat *active.Catalog, idx int, price match.NetPrice) SchoolView {
	s := &cat.Schools[idx]
	return SchoolView{
		ID: s.ID, Name: s.Name, City: s.City, State: s.State,
		Control: controlName(s.Control), Setting: settingName(s), Size: s.Size,
		AdmissionRate: s.AdmissionRate, SATRange: scoreRange(s.SAT25, s.SAT75), ACTRange: scoreRange(s.ACT25, s.ACT75),
		NetPrice:       netPriceView(price),
		GraduationRate: s.GradRate, RetentionRate: s.RetentionRate,
		MedianEarnings10yr: s.Earnings10yr, MedianEarnings6yr: s.Earnings6yr, URL: nonEmpty(s.URL),
	}
}

func netPriceView(n match.NetPrice) *NetPriceView {
	if !n.Known() {
		return nil
	}
	return &NetPriceView{Amount: n.Amount, Source: n.Source}
}

func distancePtr(d float64) *float64 {
	if d < 0 {
		return nil
	}
	return &d
}

func majorNames(ms []domain.Major) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m)
	}
	return out
}

// describer describes the schools of fs's feed: with the learned model it
// was ranked with (whose learned preferences the reasons name), else with
// its weights.
func (fs *feedState) describer(cat *active.Catalog) match.Describer {
	if fs.learner != nil {
		return match.NewModelDescriber(fs.profile, fs.learner.model, cat.Catalog)
	}
	if len(fs.feed.Model) > 0 {
		if m, err := match.DecodeModel(fs.feed.Model); err == nil {
			return match.NewModelDescriber(fs.profile, m, cat.Catalog)
		}
	}
	return match.NewDescriber(fs.profile, fs.weights, cat.Catalog)
}

// described is recommendation with the student's describer made already.
func described(cat *active.Catalog, describer *match.Describer, idx int, it cache.FeedItem) Recommendation {
	r, price := describedBare(cat, describer, idx, it)
	r.School = schoolViewPriced(cat, idx, price)
	return r
}

// describedBare is described without the school's record, and the net
// price the record shows.
func describedBare(cat *active.Catalog, describer *match.Describer, idx int, it cache.FeedItem) (Recommendation, match.NetPrice) {
	s := &cat.Schools[idx]
	d := describer.Describe(idx)
	return Recommendation{
		SchoolID:     s.ID,
		Name:         s.Name,
		MatchScore:   it.Score,
		MatchGrade:   match.Grade(it.Score),
		MatchReasons: d.Reasons,
		Components: ComponentScores{
			Academic: it.Academic, Financial: it.Financial, Campus: it.Campus, Outcomes: it.Outcomes,
		},
		Explanations:  d.Reasons,
		IsProbe:       it.Probe,
		MatchedMajors: majorNames(d.MatchedMajors),
		Distance:      distancePtr(it.Distance),
		AdmissionBand: d.AdmissionBand,
	}, d.NetPrice
}

// roundWeights rounds preference weights to 4 decimals for display.
func roundWeights(w map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(w))
	for k, v := range w {
		out[k] = round4(v)
	}
	return out
}

func roundFactors(f map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(f))
	for k, v := range f {
		out[k] = round4(v)
	}
	return out
}

func detailComponent(c match.Component) DetailComponent {
	return DetailComponent{Score: round4(c.Score), Factors: roundFactors(c.Factors)}
}

// percentOf is a share in [0,1] as a whole percent.
func percentOf(v *float64) *int {
	if v == nil || math.IsNaN(*v) {
		return nil
	}
	p := int(math.Round(min(max(*v, 0), 1) * 100))
	return &p
}

// compactSchool is school idx in compact form.
func compactSchool(cat *active.Catalog, idx int) CompactSchool {
	s := &cat.Schools[idx]
	c := CompactSchool{I: s.ID, N: s.Name, C: s.City, St: s.State, Sz: s.Size, Np: s.AvgNetPrice,
		Ar: percentOf(s.AdmissionRate), Gr: percentOf(s.GradRate), E: s.Earnings10yr, U: s.URL}
	if v := controlName(s.Control); v != nil {
		c.Ctl = *v
	}
	if v := settingName(s); v != nil {
		c.Set = *v
	}
	if r := scoreRange(s.SAT25, s.SAT75); r != nil {
		c.SAT = &[2]int{r.Low, r.High}
	}
	if s.Lat != nil && s.Lon != nil {
		c.LL = &[2]float64{*s.Lat, *s.Lon}
	}
	return c
}

// CompactSchools renders schools (as stored, active or not) as compact
// records, in the order given: offline sync sends the records of schools
// whose data changed, read from PostgreSQL rather than from the catalogue
// in memory, which may not have caught up with the change yet.
func CompactSchools(schools []domain.School) []CompactSchool {
	cat := active.NewCatalog(schools, 0)
	out := make([]CompactSchool, 0, len(schools))
	for _, s := range schools {
		if idx, ok := cat.Index(s.ID); ok {
			out = append(out, compactSchool(cat, idx))
		}
	}
	return out
}
