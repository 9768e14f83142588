package match

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// ModelVersion is the version of a serialised Model and of the update that
// produced it (2: the residual, learn_residual.go). It changes whenever a stored model would mean something
// different to this code; a model of another version does not decode
// (ErrModelVersion) and is rebuilt from the student's history with Fold.
const ModelVersion = 2

// LearningVersion is the semantic version of the learner and the feed
// assembly; it changes whenever they change what a student is served
// (1.1.0: the residual).
const LearningVersion = "1.1.0"

// ErrModelVersion is returned when decoding a model of another version.
var ErrModelVersion = errors.New("learning model: unsupported version")

// paramKeys names the parameters in a serialised model.
var paramKeys = [nParams]string{
	KeyCostWeight, KeyDistanceWeight, KeyOutcomesWeight, KeyCampusWeight,
	KeyProgramWeight, KeyAidWeight, KeyAcademicSelectivity, KeySizePreference, KeyLikeThreshold,
}

type modelJSON struct {
	Version  int                  `json:"version"`
	Swipes   int                  `json:"swipes"`
	Signals  int                  `json:"signals"`
	Feedback int                  `json:"feedback"`
	Params   []string             `json:"params"`
	Mean     []float64            `json:"mean"`
	Cov      [][]float64          `json:"cov"`
	Levels   map[string][]float64 `json:"levels"`
	Residual *residualJSON        `json:"residual,omitempty"`
}

// residualJSON is the residual: its coefficients by feature name, its
// intercept, and the schools it was fitted on, oldest first.
type residualJSON struct {
	Features  []string     `json:"features"`
	Mean      []float64    `json:"mean"`
	Intercept float64      `json:"intercept"`
	History   []memoryJSON `json:"history"`
}

// memoryJSON is one school of the residual's history.
type memoryJSON struct {
	SchoolID string  `json:"school_id"`
	Like     bool    `json:"like"`
	Weight   float64 `json:"weight"`
}

// MarshalJSON encodes the model as
//
//	{"version":1,"swipes":12,"signals":2,"feedback":1,
//	 "params":["cost_weight", ..., "like_threshold"],
//	 "mean":[...], "cov":[[...], ...],
//	 "levels":{"academic_selectivity":[...], "size_preference":[...]}}
//
// params names the parameters in the order of mean and of the rows and
// columns of cov; the importances' means are in logit space, the levels'
// and like_threshold's on their own [0,1] scale. levels holds the
// posterior of each preferred level on its grid of values (bin k is the
// value (k+0.5)/n). The zero Model encodes as the default model.
func (m Model) MarshalJSON() ([]byte, error) {
	m = m.orDefault()
	out := modelJSON{Version: ModelVersion, Swipes: m.swipes, Signals: m.signals, Feedback: m.feedback,
		Params: paramKeys[:], Mean: m.mean[:], Cov: make([][]float64, nParams)}
	for a := range nParams {
		out.Cov[a] = m.cov[a][:]
	}
	out.Levels = make(map[string][]float64, nLevels)
	for l, p := range levelParams {
		out.Levels[paramKeys[p]] = m.grid[l][:]
	}
	r := &residualJSON{Features: residualKeys[:], Mean: m.rmean[:], Intercept: m.rconst, History: make([]memoryJSON, m.nhist)}
	for k, h := range m.hist[:m.nhist] {
		r.History[k] = memoryJSON{SchoolID: h.id, Like: h.like, Weight: float64(h.weight) / 20}
	}
	out.Residual = r
	return json.Marshal(out)
}

// UnmarshalJSON decodes what MarshalJSON wrote. A version other than
// ModelVersion is ErrModelVersion. Parameters are matched by name; one
// that is missing or not finite takes its prior, and a covariance that is
// not a valid one (not symmetric, not positive definite, a variance over
// its prior) is replaced by its diagonal, clamped; so a decoded model is
// always safe to use.
func (m *Model) UnmarshalJSON(b []byte) error {
	var in modelJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return fmt.Errorf("learning model: %w", err)
	}
	if in.Version != ModelVersion {
		return fmt.Errorf("%w %d (want %d)", ErrModelVersion, in.Version, ModelVersion)
	}
	*m = in.model()
	return nil
}

// model is the Model in holds, checked: see UnmarshalJSON. Parameters
// and residual features are matched by name.
func (in *modelJSON) model() Model {
	var v modelValues
	v.counts = [3]int{in.Swipes, in.Signals, in.Feedback}
	pos := [nParams]int{} // position in the input of each of our parameters, -1 when absent
	for j, k := range paramKeys {
		pos[j] = -1
		for i, name := range in.Params {
			if name == k {
				pos[j] = i
			}
		}
	}
	for a := range nParams {
		if i := pos[a]; i >= 0 && i < len(in.Mean) {
			v.mean[a], v.hasMean[a] = in.Mean[i], true
		}
		for b := range nParams {
			if i, j := pos[a], pos[b]; i >= 0 && j >= 0 && i < len(in.Cov) && j < len(in.Cov[i]) {
				v.cov[a][b], v.hasCov[a][b] = in.Cov[i][j], true
			}
		}
	}
	for l, p := range levelParams {
		if g, ok := in.Levels[paramKeys[p]]; ok && len(g) == levelBins {
			copy(v.grid[l][:], g)
			v.hasGrid[l] = true
		}
	}
	if r := in.Residual; r != nil {
		r.into(&v)
	}
	return v.checked()
}

// into sets v's residual from r: features matched by name (the last
// finite coefficient given for one), history entries without a school id
// dropped, at most historyLen kept (the newest), a weight that is missing
// or not a positive number read as a counted swipe's.
func (r *residualJSON) into(v *modelValues) {
	v.hasResidual = true
	for j, k := range residualKeys {
		for i, name := range r.Features {
			if name == k && i < len(r.Mean) && finite(r.Mean[i]) {
				v.rmean[j], v.hasRmean[j] = r.Mean[i], true
			}
		}
	}
	v.rconst = r.Intercept
	h := r.History
	if len(h) > historyLen {
		h = h[len(h)-historyLen:]
	}
	for _, e := range h {
		if e.SchoolID == "" || len(e.SchoolID) > maxMemoryID {
			continue
		}
		w := e.Weight
		if !finite(w) || w <= 0 {
			w = 1
		}
		v.hist[v.nhist] = swipeMemory{id: e.SchoolID, like: e.Like, weight: weightCode(w)}
		v.nhist++
	}
}

// modelValues are what a serialised model (either form) says, before it
// is checked: each value with whether the input had it.
type modelValues struct {
	counts  [3]int // swipes, signals, feedback
	mean    [nParams]float64
	hasMean [nParams]bool
	cov     [nParams][nParams]float64
	hasCov  [nParams][nParams]bool
	grid    [nLevels][levelBins]float64
	hasGrid [nLevels]bool

	hasResidual bool
	rmean       [nResidual]float64
	hasRmean    [nResidual]bool
	rconst      float64
	hist        [historyLen]swipeMemory
	nhist       int
}

// checked is the Model v holds, made safe to use: a parameter that is
// missing or not finite takes its prior, values are clamped, a covariance
// that is not a valid one (an entry missing, not symmetric, not positive
// definite, a variance over its prior) is replaced by its diagonal,
// clamped, and a level's grid that is missing or has a value that is not
// a finite non-negative number is its prior around the decoded mean.
func (v *modelValues) checked() Model {
	out := NewModel(DefaultWeights())
	get := func(a, b int) (float64, bool) {
		if !v.hasCov[a][b] || !finite(v.cov[a][b]) {
			return 0, false
		}
		return v.cov[a][b], true
	}
	for a := range nParams {
		if v.hasMean[a] && finite(v.mean[a]) {
			out.mean[a] = clampParam(a, v.mean[a])
		}
	}
	var cov [nParams][nParams]float64
	valid := true
	for a := range nParams {
		for b := range nParams {
			c, ok := get(a, b)
			valid = valid && ok
			cov[a][b] = c
		}
	}
	for a := range nParams {
		valid = valid && cov[a][a] > 0 && cov[a][a] <= priorVar[a]*(1+1e-9)
		for b := range a {
			valid = valid && math.Abs(cov[a][b]-cov[b][a]) <= 1e-9*(1+math.Abs(cov[a][b]))
		}
	}
	if valid && positiveDefinite(&cov) {
		out.cov = cov
	} else {
		for a := range nParams {
			if c, ok := get(a, a); ok && c > 0 {
				out.cov[a][a] = min(priorVar[a], c)
			}
		}
	}
	for l, p := range levelParams {
		valid := v.hasGrid[l]
		for _, g := range v.grid[l] {
			valid = valid && finite(g) && g >= 0
		}
		if valid {
			out.grid[l] = v.grid[l]
		} else {
			// No usable grid: the prior around the decoded mean.
			w := DefaultWeights()
			a := weightArray(w)
			a[p] = out.mean[p]
			out.grid[l] = NewModel(weightsFromArray(a)).grid[l]
		}
		out.syncLevel(l)
	}
	out.floorVariances()
	if v.hasResidual {
		for j := range nResidual {
			if v.hasRmean[j] && finite(v.rmean[j]) {
				out.rmean[j] = clampResidual(v.rmean[j])
			}
		}
		if finite(v.rconst) {
			out.rconst = max(-1, min(1, v.rconst))
		}
		out.hist, out.nhist = v.hist, v.nhist
	}
	out.swipes, out.signals, out.feedback = max(0, v.counts[0]), max(0, v.counts[1]), max(0, v.counts[2])
	return out
}

// maxMemoryID is the longest school id the history keeps (ids are UUIDs).
const maxMemoryID = 255

// positiveDefinite reports whether c has a Cholesky factorisation.
func positiveDefinite(c *[nParams][nParams]float64) bool {
	var l [nParams][nParams]float64
	for i := range nParams {
		for j := 0; j <= i; j++ {
			s := c[i][j]
			for k := range j {
				s -= l[i][k] * l[j][k]
			}
			if i == j {
				if !(s > 0) {
					return false
				}
				l[i][i] = math.Sqrt(s)
			} else {
				l[i][j] = s / l[j][j]
			}
		}
	}
	return true
}
