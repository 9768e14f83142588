package match

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// The binary form of a Model: what MarshalJSON says, in about 40 % of
// the bytes (about 1.1 kB) and with nothing to parse. It is the form stored:
// in PostgreSQL (learning_state.model_bin, read and written by every fold;
// under the 2 kB past which PostgreSQL compresses or moves a value out
// of the row, where the JSON form, 2.7 kB, was not) and in the read
// models the API decodes on every swipe (the model a stored feed was
// ranked with). People read the JSON form: an export or an explanation
// decodes and re-encodes it.
//
//	'M' ModelVersion
//	uvarint swipes, signals, feedback
//	mean     nParams float64s (little-endian), in paramKeys order
//	cov      nParams*nParams float64s, row by row
//	levels   nLevels*levelBins float64s, in levelParams order
//
// A decoded model goes through the same checks as a decoded JSON one.
const binaryModelMagic = 'M'

// MarshalBinary encodes the model in its binary form.
func (m Model) MarshalBinary() ([]byte, error) {
	m = m.orDefault()
	b := make([]byte, 0, 2+3*binary.MaxVarintLen64+8*(nParams+nParams*nParams+nLevels*levelBins))
	b = append(b, binaryModelMagic, ModelVersion)
	b = binary.AppendUvarint(b, uint64(m.swipes))
	b = binary.AppendUvarint(b, uint64(m.signals))
	b = binary.AppendUvarint(b, uint64(m.feedback))
	for _, v := range m.mean {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	for a := range nParams {
		for _, v := range m.cov[a] {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		}
	}
	for l := range nLevels {
		for _, v := range m.grid[l] {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		}
	}
	return b, nil
}

// errBinaryModel is a binary model cut short or of another layout.
var errBinaryModel = errors.New("learning model: malformed binary form")

// UnmarshalBinary decodes what MarshalBinary wrote; another version is
// ErrModelVersion.
func (m *Model) UnmarshalBinary(b []byte) error {
	if len(b) < 2 || b[0] != binaryModelMagic {
		return errBinaryModel
	}
	if b[1] != ModelVersion {
		return fmt.Errorf("%w %d (want %d)", ErrModelVersion, b[1], ModelVersion)
	}
	b = b[2:]
	var counts [3]int
	for i := range counts {
		v, n := binary.Uvarint(b)
		if n <= 0 || v > math.MaxInt32 {
			return errBinaryModel
		}
		counts[i], b = int(v), b[n:]
	}
	if len(b) != 8*(nParams+nParams*nParams+nLevels*levelBins) {
		return errBinaryModel
	}
	next := func() float64 {
		v := math.Float64frombits(binary.LittleEndian.Uint64(b))
		b = b[8:]
		return v
	}
	in := modelJSON{Version: ModelVersion, Swipes: counts[0], Signals: counts[1], Feedback: counts[2],
		Params: paramKeys[:], Mean: make([]float64, nParams), Cov: make([][]float64, nParams),
		Levels: make(map[string][]float64, nLevels)}
	for a := range nParams {
		in.Mean[a] = next()
	}
	for a := range nParams {
		in.Cov[a] = make([]float64, nParams)
		for c := range nParams {
			in.Cov[a][c] = next()
		}
	}
	for _, p := range levelParams {
		g := make([]float64, levelBins)
		for k := range g {
			g[k] = next()
		}
		in.Levels[paramKeys[p]] = g
	}
	*m = in.model()
	return nil
}

// DecodeModel decodes a model in either form: binary, or JSON (what a
// build from before the binary form saved, until the student's next
// fold).
func DecodeModel(b []byte) (Model, error) {
	var m Model
	var err error
	if len(b) > 0 && b[0] == binaryModelMagic {
		err = m.UnmarshalBinary(b)
	} else {
		err = json.Unmarshal(b, &m)
	}
	return m, err
}
