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

// model is the Model in holds, checked: see UnmarshalJSON.
func (in *modelJSON) model() Model {
	out := NewModel(DefaultWeights())
	pos := [nParams]int{} // position in the input of each of our parameters, -1 when absent
	for j, k := range paramKeys {
		pos[j] = -1
		for i, name := range in.Params {
			if name == k {
				pos[j] = i
			}
		}
	}
	get := func(a, b int) (float64, bool) {
		i, j := pos[a], pos[b]
		if i < 0 || j < 0 || i >= len(in.Cov) || j >= len(in.Cov[i]) || !finite(in.Cov[i][j]) {
			return 0, false
		}
		return in.Cov[i][j], true
	}
	for a := range nParams {
		if i := pos[a]; i >= 0 && i < len(in.Mean) && finite(in.Mean[i]) {
			out.mean[a] = clampParam(a, in.Mean[i])
		}
	}
	var cov [nParams][nParams]float64
	valid := true
	for a := range nParams {
		for b := range nParams {
			v, ok := get(a, b)
			valid = valid && ok
			cov[a][b] = v
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
			if v, ok := get(a, a); ok && v > 0 {
				out.cov[a][a] = min(priorVar[a], v)
			}
		}
	}
	for l, p := range levelParams {
		g, ok := in.Levels[paramKeys[p]]
		valid := ok && len(g) == levelBins
		for _, v := range g {
			valid = valid && finite(v) && v >= 0
		}
		if valid {
			copy(out.grid[l][:], g)
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
	if in.Residual != nil {
		in.Residual.into(&out)
	}
	out.swipes, out.signals, out.feedback = max(0, in.Swipes), max(0, in.Signals), max(0, in.Feedback)
	return out
}

// into sets m's residual from r, checked as the weights are: features
// matched by name, a coefficient that is missing or not finite at the
// prior (0), values clamped; history entries without a school id dropped,
// at most historyLen kept (the newest).
func (r *residualJSON) into(m *Model) {
	for j, k := range residualKeys {
		for i, name := range r.Features {
			if name == k && i < len(r.Mean) && finite(r.Mean[i]) {
				m.rmean[j] = clampResidual(r.Mean[i])
			}
		}
	}
	if finite(r.Intercept) {
		m.rconst = max(-1, min(1, r.Intercept))
	}
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
		m.hist[m.nhist] = swipeMemory{id: e.SchoolID, like: e.Like, weight: weightCode(w)}
		m.nhist++
	}
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
