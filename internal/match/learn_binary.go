package match

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// The binary form of a Model: what MarshalJSON says, in a fifth of the
// bytes (about 1.7 kB) and with nothing to parse. It is the form stored:
// in PostgreSQL (learning_state.model_bin, read and written by every fold;
// under the 2 kB past which PostgreSQL compresses or moves a value out
// of the row, where the JSON form, 9 kB, is not) and in the read
// models the API decodes on every swipe (the model a stored feed was
// ranked with). People read the JSON form: an export or an explanation
// decodes and re-encodes it.
//
//	'M' ModelVersion
//	uvarint swipes, signals, feedback
//	mean     nParams float64s (little-endian), in paramKeys order
//	cov      its lower triangle, row by row (nParams*(nParams+1)/2 float64s)
//	levels   nLevels*levelBins float64s, in levelParams order
//	rconst   the residual's intercept, a float64
//	rmean    nResidual float64s, in residualKeys order
//	history  uvarint n, then n schools, oldest first: a byte (the like
//	         in its top bit, the weight in twentieths below), then the
//	         school id: 0 and its 16 bytes when it is a UUID in canonical
//	         form, else its length (1-255) and its bytes
//
// A decoded model goes through the same checks as a decoded JSON one.
const binaryModelMagic = 'M'

// binaryModelSize is the length of the binary form after its counts and
// before the history.
const binaryModelSize = 8 * (nParams + nParams*(nParams+1)/2 + nLevels*levelBins + 1 + nResidual)

// MarshalBinary encodes the model in its binary form.
func (m Model) MarshalBinary() ([]byte, error) {
	m = m.orDefault()
	b := make([]byte, 0, 2+3*binary.MaxVarintLen64+binaryModelSize)
	b = append(b, binaryModelMagic, ModelVersion)
	b = binary.AppendUvarint(b, uint64(m.swipes))
	b = binary.AppendUvarint(b, uint64(m.signals))
	b = binary.AppendUvarint(b, uint64(m.feedback))
	f64 := func(v float64) { b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v)) }
	for _, v := range m.mean {
		f64(v)
	}
	for a := range nParams {
		for _, v := range m.cov[a][:a+1] {
			f64(v)
		}
	}
	for l := range nLevels {
		for _, v := range m.grid[l] {
			f64(v)
		}
	}
	f64(m.rconst)
	for _, v := range m.rmean {
		f64(v)
	}
	b = binary.AppendUvarint(b, uint64(m.nhist))
	for _, h := range m.hist[:m.nhist] {
		meta := h.weight & 0x7f
		if h.like {
			meta |= 0x80
		}
		b = append(b, meta)
		if u, ok := parseUUID(h.id); ok {
			b = append(b, 0)
			b = append(b, u[:]...)
		} else {
			b = append(b, byte(len(h.id)))
			b = append(b, h.id...)
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
	var v modelValues
	for i := range v.counts {
		c, n := binary.Uvarint(b)
		if n <= 0 || c > math.MaxInt32 {
			return errBinaryModel
		}
		v.counts[i], b = int(c), b[n:]
	}
	if len(b) < binaryModelSize {
		return errBinaryModel
	}
	next := func() float64 {
		f := math.Float64frombits(binary.LittleEndian.Uint64(b))
		b = b[8:]
		return f
	}
	for a := range nParams {
		v.mean[a], v.hasMean[a] = next(), true
	}
	for a := range nParams {
		for c := 0; c <= a; c++ {
			v.cov[a][c] = next()
			v.cov[c][a] = v.cov[a][c]
			v.hasCov[a][c], v.hasCov[c][a] = true, true
		}
	}
	for l := range nLevels {
		for k := range levelBins {
			v.grid[l][k] = next()
		}
		v.hasGrid[l] = true
	}
	v.hasResidual = true
	v.rconst = next()
	for j := range nResidual {
		v.rmean[j], v.hasRmean[j] = next(), true
	}
	if err := v.readHistory(b); err != nil {
		return err
	}
	*m = v.checked()
	return nil
}

// readHistory reads the binary form's history into v: every school id it
// spells as a UUID goes into one string (one allocation, however many).
func (v *modelValues) readHistory(b []byte) error {
	nh, k := binary.Uvarint(b)
	if k <= 0 || nh > historyLen {
		return errBinaryModel
	}
	b = b[k:]
	var ids []byte
	type entry struct {
		meta       byte
		start, end int    // of its id in ids, when a UUID
		other      []byte // its id, when not
	}
	var entries [historyLen]entry
	for i := range nh {
		if len(b) < 2 {
			return errBinaryModel
		}
		e := entry{meta: b[0]}
		n := int(b[1])
		b = b[2:]
		if n == 0 {
			if len(b) < 16 {
				return errBinaryModel
			}
			if ids == nil {
				ids = make([]byte, 0, 36*nh)
			}
			e.start = len(ids)
			ids = appendUUID(ids, [16]byte(b[:16]))
			e.end = len(ids)
			b = b[16:]
		} else {
			if len(b) < n {
				return errBinaryModel
			}
			e.other = b[:n]
			b = b[n:]
		}
		entries[i] = e
	}
	if len(b) != 0 {
		return errBinaryModel
	}
	all := string(ids)
	for _, e := range entries[:nh] {
		id := all[e.start:e.end]
		if e.other != nil {
			id = string(e.other)
		}
		weight := e.meta & 0x7f
		if weight == 0 {
			weight = weightCode(1) // no weight: a counted swipe's, as in the JSON form
		}
		v.hist[v.nhist] = swipeMemory{id: id, like: e.meta&0x80 != 0, weight: weight}
		v.nhist++
	}
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

// parseUUID reads a UUID in canonical form (8-4-4-4-12 hex digits, lower
// case, as the catalogue writes them); ok is false for anything else, so
// that formatUUID gives back the same string.
func parseUUID(s string) (u [16]byte, ok bool) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, false
	}
	k := 0
	for i := 0; i < 36; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i++
			continue
		}
		hi, ok1 := hexDigit(s[i])
		lo, ok2 := hexDigit(s[i+1])
		if !ok1 || !ok2 {
			return u, false
		}
		u[k] = hi<<4 | lo
		k++
		i += 2
	}
	return u, true
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// formatUUID writes u in canonical form.
func formatUUID(u [16]byte) string { return string(appendUUID(make([]byte, 0, 36), u)) }

// appendUUID appends u in canonical form to b.
func appendUUID(b []byte, u [16]byte) []byte {
	const hexd = "0123456789abcdef"
	n := len(b)
	b = append(b, "00000000-0000-0000-0000-000000000000"...)
	out := b[n : n+36]
	k := 0
	for i, x := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			k++ // the dash already there
		}
		out[k], out[k+1] = hexd[x>>4], hexd[x&0xf]
		k += 2
	}
	return b
}
