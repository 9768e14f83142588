package match

import (
	"github.com/collegematch/matching/internal/domain"
)

// Component and factor keys of match detail.
const (
	ComponentAcademic  = "academic"
	ComponentFinancial = "financial"
	ComponentCampus    = "campus"
	ComponentOutcomes  = "outcomes"

	FactorSATMatch        = "sat_match"
	FactorSelectivityFit  = "selectivity_fit"
	FactorProgramStrength = "program_strength"
	FactorAffordability   = "affordability"
	FactorAidAvailability = "aid_availability"
	FactorValueScore      = "value_score"
	FactorSizeFit         = "size_fit"
	FactorLocationFit     = "location_fit"
	FactorSettingFit      = "setting_fit"
	FactorGraduationRate  = "graduation_rate"
	FactorEmployment      = "employment"
	FactorEarnings        = "earnings"
)

// Component is one family of match detail: its score and named factors,
// each in [0,1].
type Component struct {
	Score   float64            `json:"score"`
	Factors map[string]float64 `json:"factors"`
}

// Components are the four families.
type Components struct {
	Academic  Component `json:"academic"`
	Financial Component `json:"financial"`
	Campus    Component `json:"campus"`
	Outcomes  Component `json:"outcomes"`
}

// MatchDetail is the full breakdown of one student-school match. Its JSON
// tags give the match detail shape; Index and Distance are for the caller.
type MatchDetail struct {
	Index         int            `json:"-"` // index of the school in Catalog.Schools
	OverallScore  float64        `json:"overall_score"`
	Grade         string         `json:"grade"`
	Components    Components     `json:"components"`
	Explanation   string         `json:"explanation"`
	Reasons       []string       `json:"match_reasons"`
	AdmissionBand string         `json:"admission_band"`
	NetPrice      NetPrice       `json:"net_price"`
	Confidence    float64        `json:"confidence"`
	Distance      float64        `json:"-"` // miles, -1 when unknown
	MatchedMajors []domain.Major `json:"matched_majors"`
}

// Detail computes everything about one school for a student: the score and
// components (identical to what Rank gives that school), every factor, the
// grade, admission band, net price, reasons and explanation. idx must be in
// range.
func Detail(p Profile, w Weights, cat *Catalog, idx int) MatchDetail {
	v := newView(p, w, cat, idx)
	b := &v.b
	o := outcomesOf(v.s)
	return MatchDetail{
		Index:        idx,
		OverallScore: b.score,
		Grade:        Grade(b.score),
		Components: Components{
			Academic: Component{Score: b.academic, Factors: map[string]float64{
				FactorSATMatch: b.satMatch, FactorSelectivityFit: b.selFit, FactorProgramStrength: b.program}},
			Financial: Component{Score: b.financial, Factors: map[string]float64{
				FactorAffordability: b.afford, FactorAidAvailability: b.aid, FactorValueScore: b.value}},
			Campus: Component{Score: b.campus, Factors: map[string]float64{
				FactorSizeFit: b.size, FactorLocationFit: b.loc, FactorSettingFit: b.setting}},
			Outcomes: Component{Score: b.outcomes, Factors: map[string]float64{
				FactorGraduationRate: o.grad, FactorEmployment: o.employ, FactorEarnings: o.earn}},
		},
		Explanation:   v.explanation(),
		Reasons:       v.reasons(),
		AdmissionBand: v.band,
		NetPrice:      v.price,
		Confidence:    b.confidence,
		Distance:      b.distance,
		MatchedMajors: MatchedMajors(p, cat, idx),
	}
}

// DetailModel is Detail for a student's learned model: the components and
// their factors are the weights' part (the four the spec defines), the
// overall score and grade are the whole model's, as a list shows them
// (AddResidual), and the reasons lead with the learned preference that
// favours the school (NewModelDescriber).
func DetailModel(p Profile, m Model, cat *Catalog, idx int) MatchDetail {
	m = m.orDefault()
	d := Detail(p, m.Weights(), cat, idx)
	s := []Scored{{Score: d.OverallScore, Index: int32(idx)}}
	m.AddResidual(p, cat, s)
	d.OverallScore, d.Grade = s[0].Score, Grade(s[0].Score)
	desc := NewModelDescriber(p, m, cat)
	d.Reasons = desc.Describe(idx).Reasons
	return d
}

// MatchedMajors lists the student's intended majors the school awards
// degrees in, in the student's order; empty (not nil) when none do or the
// school does not report degrees by field.
func MatchedMajors(p Profile, cat *Catalog, idx int) []domain.Major {
	out := []domain.Major{}
	if !cat.feat[idx].hasPrograms {
		return out
	}
	for _, m := range p.Majors {
		if j := majorIndex(m); j >= 0 && cat.programs[j][idx] > 0 {
			out = append(out, m)
		}
	}
	return out
}

// Reasons are the short match_reasons (and shape B explanations) lines for
// a school: up to four positives, the most relevant first, then neutral
// facts when fewer than three lines were found, then at most one caveat
// (the most relevant: over budget, beyond the max distance, below the
// middle 50%, no degrees in the major, ...). Each line states a figure from
// the data. A school with little data may get fewer than three lines.
func Reasons(p Profile, w Weights, cat *Catalog, idx int) []string {
	var v view // on the stack: a page describes many schools
	v.init(p, w, cat, idx)
	return v.reasons()
}

// Description is what a list shows of a school for a student beside its
// scores.
type Description struct {
	Reasons       []string       // Reasons
	AdmissionBand string         // AdmissionBand
	NetPrice      NetPrice       // EstimateNetPrice
	MatchedMajors []domain.Major // MatchedMajors
}

// Describe is Reasons, AdmissionBand, EstimateNetPrice and MatchedMajors
// of school idx at once, from one scoring of the school: what a page of
// recommendations shows of each item.
func Describe(p Profile, w Weights, cat *Catalog, idx int) Description {
	d := NewDescriber(p, w, cat)
	return d.Describe(idx)
}

// Describer describes schools of one catalogue for one student and
// weights (Describe), with what every school's description shares made
// once.
type Describer struct {
	p   Profile
	w   Weights // sanitized
	sc  scorer
	cat *Catalog
	// With a model (NewModelDescriber): the model and what it learned
	// beyond the weights, which the reasons name.
	m     *Model
	prefs []Learned
}

// NewDescriber is a Describer for the student p with the weights w on cat.
func NewDescriber(p Profile, w Weights, cat *Catalog) Describer {
	return Describer{p: p, w: w.Sanitize(), sc: newScorer(p, w, cat), cat: cat}
}

// NewModelDescriber is a Describer for the student p with the model m on
// cat: its weights' reasons, led by the learned preference (Model.
// LearnedPreferences) that favours the school most, when there is one
// ("You tend to like schools under about $20,000 a year"). The reasons
// then stay at most four positives and one caveat.
func NewModelDescriber(p Profile, m Model, cat *Catalog) Describer {
	m = m.orDefault()
	d := NewDescriber(p, m.Weights(), cat)
	if prefs := m.LearnedPreferences(p, cat); len(prefs) > 0 {
		d.m, d.prefs = &m, prefs
	}
	return d
}

// Learned is what the describer's model learned beyond the weights
// (Model.LearnedPreferences); nil for a describer without a model or
// while there is nothing to name.
func (d *Describer) Learned() []Learned { return d.prefs }

// LearnedTexts are the Text of each of prefs, in order: what a student is
// told was learned; empty (not nil) when there is none.
func LearnedTexts(prefs []Learned) []string {
	out := make([]string, len(prefs))
	for k, l := range prefs {
		out[k] = l.Text
	}
	return out
}

// Describe is Describe(p, w, cat, idx) for the describer's p, w and cat.
func (d *Describer) Describe(idx int) Description {
	var v view // on the stack: a page describes many schools
	v.initScorer(d.p, d.w, d.sc, d.cat, idx)
	if d.m != nil {
		in := residualInOf(d.cat, idx, &v.b)
		v.learned = d.m.learnedReason(d.prefs, &in, d.sc.strength())
	}
	return Description{Reasons: v.reasons(), AdmissionBand: v.band, NetPrice: v.price, MatchedMajors: MatchedMajors(d.p, d.cat, idx)}
}

// Explanation is the match detail paragraph for a school.
func Explanation(p Profile, w Weights, cat *Catalog, idx int) string {
	return newView(p, w, cat, idx).explanation()
}

// view is one scored school with what the wording needs.
type view struct {
	p     Profile
	w     Weights
	sc    scorer
	b     breakdown
	s     *domain.School
	f     *features
	cold  *coldFeatures
	band  string
	price NetPrice
	// learned is the reason line a learned preference gives, or "".
	learned string
}

func newView(p Profile, w Weights, cat *Catalog, idx int) *view {
	v := new(view)
	v.init(p, w, cat, idx)
	return v
}

// init makes v the view of school idx.
func (v *view) init(p Profile, w Weights, cat *Catalog, idx int) {
	v.initScorer(p, w.Sanitize(), newScorer(p, w, cat), cat, idx)
}

// initScorer is init with w sanitized and the student's scorer sc
// (newScorer(p, w, cat)) made already.
func (v *view) initScorer(p Profile, w Weights, sc scorer, cat *Catalog, idx int) {
	*v = view{p: p, w: w, sc: sc, s: &cat.Schools[idx], f: &cat.feat[idx], cold: &cat.cold[idx]}
	v.sc.score(v.f, idx, &v.b)
	v.band = AdmissionBand(p, cat, idx)
	v.price = netPrice(&v.sc, &v.b, v.s.Source)
}
