package match

import "math"

// Preference-weight keys, as they appear in learning_state.preference_weights.
const (
	KeyCostWeight          = "cost_weight"
	KeyDistanceWeight      = "distance_weight"
	KeyOutcomesWeight      = "outcomes_weight"
	KeyCampusWeight        = "campus_weight"
	KeyProgramWeight       = "program_weight"
	KeyAidWeight           = "aid_weight"
	KeyAcademicSelectivity = "academic_selectivity"
	KeySizePreference      = "size_preference"
)

// WeightKeys lists every preference-weight key in a fixed order.
var WeightKeys = [...]string{
	KeyCostWeight, KeyDistanceWeight, KeyOutcomesWeight, KeyCampusWeight,
	KeyProgramWeight, KeyAidWeight, KeyAcademicSelectivity, KeySizePreference,
}

// Weights are a student's preference weights, each in [0,1].
//
// The six *Weight fields are importances: higher means the dimension matters
// more to this student. AcademicSelectivity is the preferred selectivity
// level (0.5 = schools that match the student's own academic strength,
// higher = more selective than that, lower = less). SizePreference is the
// preferred size (0 = very small, 1 = very large).
type Weights struct {
	CostWeight          float64 `json:"cost_weight"`
	DistanceWeight      float64 `json:"distance_weight"`
	OutcomesWeight      float64 `json:"outcomes_weight"`
	CampusWeight        float64 `json:"campus_weight"`
	ProgramWeight       float64 `json:"program_weight"`
	AidWeight           float64 `json:"aid_weight"`
	AcademicSelectivity float64 `json:"academic_selectivity"`
	SizePreference      float64 `json:"size_preference"`
}

// DefaultWeights are the weights of a student nothing is known about: every
// importance at 0.5, selectivity matched to the student's strength, and a
// mid-sized school preferred.
func DefaultWeights() Weights {
	return Weights{
		CostWeight: 0.5, DistanceWeight: 0.5, OutcomesWeight: 0.5, CampusWeight: 0.5,
		ProgramWeight: 0.5, AidWeight: 0.5, AcademicSelectivity: 0.5, SizePreference: 0.5,
	}
}

// Size preferences a stated preferred_size seeds size_preference with. The
// scale is the one size_fit uses: log of undergraduate enrollment from 1,000
// (0) to 30,000 (1), so 0.2 is about 2,000, 0.6 about 7,700 and 0.9 about
// 21,000 undergraduates.
const (
	sizePrefSmall  = 0.2
	sizePrefMedium = 0.6
	sizePrefLarge  = 0.9
)

// SeedWeights returns the starting weights for a student before any swipe:
// DefaultWeights with what the profile states folded in. A stated
// preferred_size sets size_preference (small 0.2, medium 0.6, large 0.9) and
// a stated budget raises cost_weight to 0.6 (the student told us cost
// matters). From then on the weights are what scoring uses: scoring reads
// size_preference, never Profile.PreferredSize, so what swipes teach wins
// over what the form said. The budget itself (an amount, not an
// importance) is always the profile's, and so is preferred_setting, which
// has no weight.
func SeedWeights(p Profile) Weights {
	w := DefaultWeights()
	switch p.PreferredSize {
	case "small":
		w.SizePreference = sizePrefSmall
	case "medium":
		w.SizePreference = sizePrefMedium
	case "large":
		w.SizePreference = sizePrefLarge
	}
	if p.HasBudget {
		w.CostWeight = 0.6
	}
	return w
}

// Map returns the weights keyed by their API names.
func (w Weights) Map() map[string]float64 {
	return map[string]float64{
		KeyCostWeight:          w.CostWeight,
		KeyDistanceWeight:      w.DistanceWeight,
		KeyOutcomesWeight:      w.OutcomesWeight,
		KeyCampusWeight:        w.CampusWeight,
		KeyProgramWeight:       w.ProgramWeight,
		KeyAidWeight:           w.AidWeight,
		KeyAcademicSelectivity: w.AcademicSelectivity,
		KeySizePreference:      w.SizePreference,
	}
}

// WeightsFromMap reads weights keyed by their API names. Keys that are
// absent or not a finite number take the default; values are clamped to
// [0,1]; unknown keys are ignored.
func WeightsFromMap(m map[string]float64) Weights {
	w := DefaultWeights()
	for k, v := range m {
		if p := w.field(k); p != nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
			*p = v
		}
	}
	return w.Sanitize()
}

func (w *Weights) field(key string) *float64 {
	switch key {
	case KeyCostWeight:
		return &w.CostWeight
	case KeyDistanceWeight:
		return &w.DistanceWeight
	case KeyOutcomesWeight:
		return &w.OutcomesWeight
	case KeyCampusWeight:
		return &w.CampusWeight
	case KeyProgramWeight:
		return &w.ProgramWeight
	case KeyAidWeight:
		return &w.AidWeight
	case KeyAcademicSelectivity:
		return &w.AcademicSelectivity
	case KeySizePreference:
		return &w.SizePreference
	}
	return nil
}

// Sanitize returns w with every value clamped to [0,1]; a NaN takes the
// default (0.5). Scoring sanitizes its input itself; this is for callers
// that store weights.
func (w Weights) Sanitize() Weights {
	for _, p := range [...]*float64{&w.CostWeight, &w.DistanceWeight, &w.OutcomesWeight, &w.CampusWeight,
		&w.ProgramWeight, &w.AidWeight, &w.AcademicSelectivity, &w.SizePreference} {
		*p = unitOr(*p, 0.5)
	}
	return w
}

// FamilyWeights is how much each family counts in match_score; the four
// values are non-negative and sum to 1.
type FamilyWeights struct {
	Academic, Financial, Campus, Outcomes float64
}

// FamilyWeightsFor maps preference weights to family weights. Each family
// has a floor so that none ever drops out, and academic fit has the largest
// floor because it is what a match is first about:
//
//	academic  = 0.35 + 0.5*program_weight
//	financial = 0.10 + 0.6*cost_weight + 0.3*aid_weight
//	campus    = 0.10 + 0.5*distance_weight + 0.4*campus_weight
//	outcomes  = 0.10 + 0.6*outcomes_weight
//
// then divided by their sum. With DefaultWeights that is academic 0.286,
// financial 0.262, campus 0.262, outcomes 0.190.
func FamilyWeightsFor(w Weights) FamilyWeights {
	w = w.Sanitize()
	f := FamilyWeights{
		Academic:  0.35 + 0.5*w.ProgramWeight,
		Financial: 0.10 + 0.6*w.CostWeight + 0.3*w.AidWeight,
		Campus:    0.10 + 0.5*w.DistanceWeight + 0.4*w.CampusWeight,
		Outcomes:  0.10 + 0.6*w.OutcomesWeight,
	}
	sum := f.Academic + f.Financial + f.Campus + f.Outcomes
	f.Academic /= sum
	f.Financial /= sum
	f.Campus /= sum
	f.Outcomes /= sum
	return f
}

// unitOr clamps v to [0,1], or returns def when v is NaN.
func unitOr(v, def float64) float64 {
	switch {
	case math.IsNaN(v):
		return def
	case v < 0:
		return 0
	case v > 1:
		return 1
	}
	return v
}

// clamp01 clamps v to [0,1]; NaN becomes 0.
func clamp01(v float64) float64 {
	if v > 0 {
		if v > 1 {
			return 1
		}
		return v
	}
	return 0
}
