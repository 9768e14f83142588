package match

import (
	"encoding/json"
	"errors"
	"fmt"
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

// modelParam is one parameter of a serialised model. Mean is in logit
// space for the weights, on the score scale for like_threshold.
type modelParam struct {
	Mean float64 `json:"mean"`
	Var  float64 `json:"var"`
}

type modelJSON struct {
	Version  int                   `json:"version"`
	Swipes   int                   `json:"swipes"`
	Signals  int                   `json:"signals"`
	Feedback int                   `json:"feedback"`
	Params   map[string]modelParam `json:"params"`
}

// MarshalJSON encodes the model as
//
//	{"version":1,"swipes":12,"signals":2,"feedback":1,
//	 "params":{"cost_weight":{"mean":0.41,"var":0.62}, ..., "like_threshold":{...}}}
//
// The zero Model encodes as the default model.
func (m Model) MarshalJSON() ([]byte, error) {
	m = m.orDefault()
	out := modelJSON{Version: ModelVersion, Swipes: m.swipes, Signals: m.signals, Feedback: m.feedback,
		Params: make(map[string]modelParam, nParams)}
	for j, k := range paramKeys {
		out.Params[k] = modelParam{Mean: m.mean[j], Var: m.vari[j]}
	}
	return json.Marshal(out)
}

// UnmarshalJSON decodes what MarshalJSON wrote. A version other than
// ModelVersion is ErrModelVersion. A parameter that is missing or not
// usable (a variance that is not positive, a value out of range) takes its
// prior, so a decoded model is always safe to use.
func (m *Model) UnmarshalJSON(b []byte) error {
	var in modelJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return fmt.Errorf("learning model: %w", err)
	}
	if in.Version != ModelVersion {
		return fmt.Errorf("%w %d (want %d)", ErrModelVersion, in.Version, ModelVersion)
	}
	out := NewModel(DefaultWeights())
	for j, k := range paramKeys {
		prm, ok := in.Params[k]
		if !ok {
			continue
		}
		if finite(prm.Mean) {
			out.mean[j] = clampParam(j, prm.Mean)
		}
		if finite(prm.Var) && prm.Var > 0 {
			out.vari[j] = max(minVarFraction*priorVar[j], min(priorVar[j], prm.Var))
		}
	}
	out.swipes, out.signals, out.feedback = max(0, in.Swipes), max(0, in.Signals), max(0, in.Feedback)
	*m = out
	return nil
}
