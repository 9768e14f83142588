package match

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/collegematch/matching/internal/domain"
)

// ParseProfile reads a profile as json.Unmarshal reads it into a Profile.
// A stored feed keeps its profile as json.Marshal writes it, and every
// swipe reads it back to predict its answer: that layout (every field, in
// order, strings of printable ASCII) is read here directly, anything else
// through encoding/json, so the result is json.Unmarshal's either way.
func ParseProfile(b []byte) (Profile, error) {
	if p, ok := parseProfileLayout(b); ok {
		return p, nil
	}
	var p Profile
	err := json.Unmarshal(b, &p)
	return p, err
}

// parseProfileLayout reads b when it is a profile as json.Marshal writes
// it with plain strings; ok is false for anything else.
func parseProfileLayout(b []byte) (p Profile, ok bool) {
	r := profileReader{b: b}
	p.SAT = r.int(`{"SAT":`)
	basis := r.int(`,"Basis":`)
	if basis < 0 || basis > 255 {
		return p, false
	}
	p.Basis = AcademicBasis(basis)
	p.ACT = r.int(`,"ACT":`)
	p.GPA = r.float(`,"GPA":`)
	p.HasGPA = r.bool(`,"HasGPA":`)
	p.HasHome = r.bool(`,"HasHome":`)
	p.HomeLat = r.float(`,"HomeLat":`)
	p.HomeLon = r.float(`,"HomeLon":`)
	p.HomeApprox = r.bool(`,"HomeApprox":`)
	p.State = r.str(`,"State":`)
	p.MaxDistanceMiles = r.float(`,"MaxDistanceMiles":`)
	p.Budget = r.int(`,"Budget":`)
	p.HasBudget = r.bool(`,"HasBudget":`)
	p.IncomeBand = r.int(`,"IncomeBand":`)
	p.Majors = r.majors(`,"Majors":`)
	p.PreferredSize = r.str(`,"PreferredSize":`)
	p.PreferredSetting = domain.Setting(r.str(`,"PreferredSetting":`))
	r.lit(`}`)
	return p, r.ok && len(r.b) == 0
}

// profileReader reads the fields of a profile off b in order; ok turns
// false at the first thing it does not expect.
type profileReader struct {
	b  []byte
	ok bool
}

// lit reads the literal s.
func (r *profileReader) lit(s string) {
	if r.b != nil && bytes.HasPrefix(r.b, []byte(s)) {
		r.b = r.b[len(s):]
		r.ok = true
		return
	}
	r.b, r.ok = nil, false
}

// number reads a JSON number after name, as written: the bytes of
// -?digits(.digits)?([eE][+-]?digits)?.
func (r *profileReader) number(name string) string {
	r.lit(name)
	if !r.ok {
		return ""
	}
	n := 0
	if n < len(r.b) && r.b[n] == '-' {
		n++
	}
	digits := func() int {
		start := n
		for n < len(r.b) && r.b[n] >= '0' && r.b[n] <= '9' {
			n++
		}
		return n - start
	}
	whole := digits()
	if whole == 0 || whole > 1 && r.b[n-whole] == '0' {
		r.b, r.ok = nil, false // none, or a leading zero
		return ""
	}
	if n < len(r.b) && r.b[n] == '.' {
		n++
		if digits() == 0 {
			r.b, r.ok = nil, false
			return ""
		}
	}
	if n < len(r.b) && (r.b[n] == 'e' || r.b[n] == 'E') {
		n++
		if n < len(r.b) && (r.b[n] == '+' || r.b[n] == '-') {
			n++
		}
		if digits() == 0 {
			r.b, r.ok = nil, false
			return ""
		}
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// int reads an int after name; a number with a fraction or an exponent,
// or out of range, is not read (json.Unmarshal refuses it).
func (r *profileReader) int(name string) int {
	s := r.number(name)
	v, err := strconv.Atoi(s)
	if err != nil {
		r.b, r.ok = nil, false
	}
	return v
}

// float reads a float64 after name.
func (r *profileReader) float(name string) float64 {
	s := r.number(name)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		r.b, r.ok = nil, false
	}
	return v
}

// bool reads true or false after name.
func (r *profileReader) bool(name string) bool {
	r.lit(name)
	switch {
	case !r.ok:
		return false
	case bytes.HasPrefix(r.b, []byte("true")):
		r.b = r.b[4:]
		return true
	case bytes.HasPrefix(r.b, []byte("false")):
		r.b = r.b[5:]
		return false
	}
	r.b, r.ok = nil, false
	return false
}

// str reads a string of printable ASCII, without escapes, after name (an
// empty name: at the reader).
func (r *profileReader) str(name string) string {
	if name != "" {
		r.lit(name)
	}
	if !r.ok || len(r.b) == 0 || r.b[0] != '"' {
		r.b, r.ok = nil, false
		return ""
	}
	for n := 1; n < len(r.b); n++ {
		switch c := r.b[n]; {
		case c == '"':
			s := string(r.b[1:n])
			r.b = r.b[n+1:]
			return s
		case c < 0x20 || c > 0x7e || c == '\\':
			r.b, r.ok = nil, false // an escape, or more than ASCII: encoding/json reads it
			return ""
		}
	}
	r.b, r.ok = nil, false
	return ""
}

// majors reads null or an array of strings after name.
func (r *profileReader) majors(name string) []domain.Major {
	r.lit(name)
	switch {
	case !r.ok:
		return nil
	case bytes.HasPrefix(r.b, []byte("null")):
		r.b = r.b[4:]
		return nil
	}
	r.lit("[")
	out := []domain.Major{}
	if r.ok && len(r.b) > 0 && r.b[0] == ']' {
		r.b = r.b[1:]
		return out
	}
	for r.ok {
		out = append(out, domain.Major(r.str("")))
		if len(r.b) > 0 && r.b[0] == ',' {
			r.b = r.b[1:]
			continue
		}
		r.lit("]")
		break
	}
	return out
}
