package match

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// ModelVersion is the version of a serialised Model and of the update that
// produced it. It changes whenever a stored model would mean something
// different to this code; a model of another version does not decode
// (ErrModelVersion) and is rebuilt from the student's history with Fold.
const ModelVersion = 1

// LearningVersion is the semantic version of the learner and the feed
// assembly; it changes whenever they change what a student is served.
const LearningVersion = "1.0.0"

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
	out.swipes, out.signals, out.feedback = max(0, in.Swipes), max(0, in.Signals), max(0, in.Feedback)
	return out
}

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
