package httpapi

import (
	"bytes"
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/collegematch/matching/internal/domain"
)

// fields parses a JSON object field by field, so every problem is reported
// under its own (dotted) name and absent, null and present are told apart.
type fields struct {
	prefix   string
	raw      map[string]json.RawMessage
	problems map[string]string
}

// objectFields splits a JSON object into its raw fields. known lists the
// accepted names; any other name is a problem, as is a name given twice.
// Only known fields are kept and at most maxReported unknown ones are
// reported, so what an object costs is bounded by known, not by the body.
func objectFields(prefix string, b json.RawMessage, known []string, problems map[string]string) (*fields, bool) {
	f := &fields{prefix: prefix, problems: problems, raw: map[string]json.RawMessage{}}
	var unknown []string
	nUnknown := 0
	ok := members(b, func(rawKey, value []byte) bool {
		i := knownIndex(known, rawKey)
		switch {
		case i < 0:
			nUnknown++
			if len(unknown) < maxReported {
				unknown = append(unknown, keyString(rawKey))
			}
		case f.raw[known[i]] != nil:
			f.bad(known[i], "is given more than once")
		default:
			f.raw[known[i]] = value
		}
		return true
	})
	if !ok {
		name := strings.TrimSuffix(prefix, ".")
		if name == "" {
			name = "body"
		}
		problems[name] = "must be a JSON object"
		return f, false
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		problems[prefix+clip(k, 64)] = "is not a known field"
	}
	if nUnknown > len(unknown) {
		problems[cmp.Or(strings.TrimSuffix(prefix, "."), "body")] = strconv.Itoa(nUnknown-len(unknown)) + " more unknown fields are not listed"
	}
	return f, true
}

// knownIndex is the index in known of the raw (still escaped) JSON key,
// -1 when it is none of them; it copies nothing unless the key is escaped.
func knownIndex(known []string, rawKey []byte) int {
	if hasEscape(rawKey) {
		return slices.Index(known, keyString(rawKey))
	}
	for i, k := range known {
		if len(rawKey) == len(k) && string(rawKey) == k {
			return i
		}
	}
	return -1
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (f *fields) bad(name, problem string) { f.problems[f.prefix+name] = problem }

// get returns the raw value of name and whether it is present and non-null.
func (f *fields) get(name string) (raw json.RawMessage, set, null bool) {
	raw, set = f.raw[name]
	null = set && string(bytes.TrimSpace(raw)) == "null"
	return raw, set, null
}

func (f *fields) String(name string, nullable bool) domain.Field[string] {
	raw, set, null := f.get(name)
	if !set {
		return domain.Field[string]{}
	}
	if null {
		if !nullable {
			f.bad(name, "must not be null")
		}
		return domain.Field[string]{Set: true, Null: true}
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		f.bad(name, "must be a string")
		return domain.Field[string]{}
	}
	if strings.ContainsFunc(s, unicode.IsControl) {
		f.bad(name, "must not contain control characters")
		return domain.Field[string]{}
	}
	return domain.Val(strings.TrimSpace(s))
}

func (f *fields) Number(name string, lo, hi float64) domain.Field[float64] {
	raw, set, null := f.get(name)
	if !set || null {
		return domain.Field[float64]{Set: set, Null: null}
	}
	var v float64
	if json.Unmarshal(raw, &v) != nil || math.IsNaN(v) {
		f.bad(name, "must be a number")
		return domain.Field[float64]{}
	}
	if v < lo || v > hi {
		f.bad(name, "must be between "+fmtNum(lo)+" and "+fmtNum(hi))
		return domain.Field[float64]{}
	}
	return domain.Val(v)
}

func (f *fields) Int(name string, lo, hi int) domain.Field[int] {
	n := f.Number(name, float64(lo), float64(hi))
	if !n.Set || n.Null {
		return domain.Field[int]{Set: n.Set, Null: n.Null}
	}
	if n.Value != math.Trunc(n.Value) {
		f.bad(name, "must be a whole number")
		return domain.Field[int]{}
	}
	return domain.Val(int(n.Value))
}

func (f *fields) Object(name string, known []string) (*fields, domain.Field[struct{}]) {
	raw, set, null := f.get(name)
	if !set || null {
		return nil, domain.Field[struct{}]{Set: set, Null: null}
	}
	sub, ok := objectFields(f.prefix+name+".", raw, known, f.problems)
	if !ok {
		return nil, domain.Field[struct{}]{}
	}
	return sub, domain.Val(struct{}{})
}

func (f *fields) StringArray(name string, maxLen int) domain.Field[[]string] {
	raw, set, null := f.get(name)
	if !set || null {
		return domain.Field[[]string]{Set: set, Null: null}
	}
	elems, tooMany, ok := elements(raw, maxLen)
	if tooMany {
		f.bad(name, "must have at most "+fmtNum(float64(maxLen))+" entries")
		return domain.Field[[]string]{}
	}
	v := make([]string, len(elems))
	for i, e := range elems {
		if json.Unmarshal(e, &v[i]) != nil {
			ok = false
		}
	}
	if !ok {
		f.bad(name, "must be an array of strings")
		return domain.Field[[]string]{}
	}
	return domain.Val(v)
}

func fmtNum(v float64) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func itoa(i int) string { return fmtNum(float64(i)) }
