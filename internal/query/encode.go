package query

import (
	"bytes"
	"maps"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/collegematch/matching/internal/active"
	"github.com/collegematch/matching/internal/match"
)

// The feed's stored items are encoded by hand rather than by encoding/json's
// reflection, which was a large share of a rebuild: the bytes are exactly
// what json.Marshal writes for the same value (field order and names of
// the struct tags, HTML characters escaped, floats as ES6 numbers, nil
// slices and pointers as null), as the tests check against json.Marshal.
// A non-finite float, which json.Marshal refuses, makes the encoding fail
// the same way.

// jsonAppender appends JSON values to b; bad is set by a value json.Marshal
// refuses (a NaN or infinite float).
type jsonAppender struct {
	b   []byte
	bad bool
}

// raw appends s as it is (punctuation and field names).
func (w *jsonAppender) raw(s string) { w.b = append(w.b, s...) }

func (w *jsonAppender) str(s string) { w.b = appendJSONText(w.b, s) }

func (w *jsonAppender) float(v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		w.bad = true
		return
	}
	w.b = appendJSONNumber(w.b, v)
}

func (w *jsonAppender) int(v int64) { w.b = strconv.AppendInt(w.b, v, 10) }

func (w *jsonAppender) bool(v bool) { w.b = strconv.AppendBool(w.b, v) }

func (w *jsonAppender) null() { w.b = append(w.b, "null"...) }

func (w *jsonAppender) strPtr(s *string) {
	if s == nil {
		w.null()
		return
	}
	w.str(*s)
}

func (w *jsonAppender) floatPtr(v *float64) {
	if v == nil {
		w.null()
		return
	}
	w.float(*v)
}

func (w *jsonAppender) int32Ptr(v *int32) {
	if v == nil {
		w.null()
		return
	}
	w.int(int64(*v))
}

func (w *jsonAppender) strings(ss []string) {
	if ss == nil {
		w.null()
		return
	}
	w.b = append(w.b, '[')
	for i, s := range ss {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.str(s)
	}
	w.b = append(w.b, ']')
}

func (w *jsonAppender) scoreRange(r *ScoreRange) {
	if r == nil {
		w.null()
		return
	}
	w.raw(`{"low":`)
	w.int(int64(r.Low))
	w.raw(`,"high":`)
	w.int(int64(r.High))
	w.b = append(w.b, '}')
}

// appendRecommendation appends r as json.Marshal writes it; ok is false
// when json.Marshal would refuse it (a float that is not finite).
func appendRecommendation(b []byte, r *Recommendation) (_ []byte, ok bool) {
	return appendRecommendationWith(b, r, nil)
}

// appendRecommendationWith is appendRecommendation with the school's record
// encoded already, but for its net price (school, from schoolRecords; of
// r.School only NetPrice is read then). A nil school encodes r.School.
func appendRecommendationWith(b []byte, r *Recommendation, school *schoolRecord) (_ []byte, ok bool) {
	w := jsonAppender{b: b}
	w.raw(`{"school_id":`)
	w.str(r.SchoolID)
	w.raw(`,"name":`)
	w.str(r.Name)
	w.raw(`,"match_score":`)
	w.float(r.MatchScore)
	w.raw(`,"match_grade":`)
	w.str(r.MatchGrade)
	w.raw(`,"match_reasons":`)
	reasons := len(w.b)
	w.strings(r.MatchReasons)
	reasonsEnd := len(w.b)
	c := &r.Components
	w.raw(`,"components":{"academic":`)
	w.float(c.Academic)
	w.raw(`,"financial":`)
	w.float(c.Financial)
	w.raw(`,"campus":`)
	w.float(c.Campus)
	w.raw(`,"outcomes":`)
	w.float(c.Outcomes)
	w.raw(`},"school":`)
	if school != nil {
		w.b = append(w.b, school.head...)
		w.netPrice(r.School.NetPrice)
		w.b = append(w.b, school.tail...)
	} else {
		w.schoolView(&r.School)
	}
	w.raw(`,"explanations":`)
	if sameStrings(r.Explanations, r.MatchReasons) {
		// The same lines (recommendation shows the reasons twice): their
		// encoding again.
		w.b = append(w.b, w.b[reasons:reasonsEnd]...)
	} else {
		w.strings(r.Explanations)
	}
	w.raw(`,"is_probe":`)
	w.bool(r.IsProbe)
	w.raw(`,"matched_majors":`)
	w.strings(r.MatchedMajors)
	w.raw(`,"distance":`)
	w.floatPtr(r.Distance)
	w.raw(`,"admission_band":`)
	w.str(r.AdmissionBand)
	w.b = append(w.b, '}')
	if w.bad {
		return b, false
	}
	return w.b, true
}

func (w *jsonAppender) schoolView(s *SchoolView) {
	w.raw(`{"id":`)
	w.str(s.ID)
	w.raw(`,"name":`)
	w.str(s.Name)
	w.raw(`,"city":`)
	w.str(s.City)
	w.raw(`,"state":`)
	w.str(s.State)
	w.raw(`,"control":`)
	w.strPtr(s.Control)
	w.raw(`,"setting":`)
	w.strPtr(s.Setting)
	w.raw(`,"size":`)
	w.int32Ptr(s.Size)
	w.raw(`,"admission_rate":`)
	w.floatPtr(s.AdmissionRate)
	w.raw(`,"sat_range":`)
	w.scoreRange(s.SATRange)
	w.raw(`,"act_range":`)
	w.scoreRange(s.ACTRange)
	w.raw(`,"net_price":`)
	w.netPrice(s.NetPrice)
	w.raw(netPriceEnd)
	w.floatPtr(s.GraduationRate)
	w.raw(`,"retention_rate":`)
	w.floatPtr(s.RetentionRate)
	w.raw(`,"median_earnings_10yr":`)
	w.int32Ptr(s.MedianEarnings10yr)
	w.raw(`,"median_earnings_6yr":`)
	w.int32Ptr(s.MedianEarnings6yr)
	w.raw(`,"url":`)
	w.strPtr(s.URL)
	w.b = append(w.b, '}')
}

// netPriceEnd is what follows a school record's net price: the next
// field's name (schoolRecords splits the record there).
const netPriceEnd = `,"graduation_rate":`

func (w *jsonAppender) netPrice(n *NetPriceView) {
	if n == nil {
		w.null()
		return
	}
	w.raw(`{"amount":`)
	w.int(int64(n.Amount))
	w.raw(`,"source":`)
	w.str(n.Source)
	w.b = append(w.b, '}')
}

// schoolRecord is a school's record (SchoolView) encoded but for its net
// price, which depends on the student: head ends with the net price's
// field name, tail starts after its value.
type schoolRecord struct {
	head, tail []byte
}

// schoolRecordSet is every school's record of one catalogue, in one
// buffer; a school whose record json.Marshal refuses (a float that is not
// finite) has none.
type schoolRecordSet struct {
	cat     *active.Catalog
	records []schoolRecord
}

var (
	lastSchoolRecords atomic.Pointer[schoolRecordSet]
	schoolRecordsMu   sync.Mutex
)

// schoolRecords gives the encoded records of cat's schools, made once per
// catalogue (the newest one's kept): a described item then copies its
// school's record instead of encoding it for every student again. It is
// nil, and items are encoded whole, while another caller makes them and
// for a catalogue older than the one they were made for (one still in use
// for a moment after a reload), so no caller waits and an old catalogue
// never replaces the new one's.
func schoolRecords(cat *active.Catalog) *schoolRecordSet {
	usable := func(set *schoolRecordSet) (*schoolRecordSet, bool) {
		switch {
		case set == nil:
			return nil, false
		case set.cat == cat:
			return set, true
		case set.cat.Version > cat.Version:
			return nil, true
		}
		return nil, false
	}
	if set, done := usable(lastSchoolRecords.Load()); done {
		return set
	}
	if !schoolRecordsMu.TryLock() {
		return nil
	}
	defer schoolRecordsMu.Unlock()
	if set, done := usable(lastSchoolRecords.Load()); done {
		return set
	}
	set := &schoolRecordSet{cat: cat, records: make([]schoolRecord, cat.Len())}
	type cut struct{ start, mid, end int }
	cuts := make([]cut, cat.Len())
	var all, scratch []byte
	for idx := range cuts {
		v := schoolViewPriced(cat, idx, match.NetPrice{})
		w := jsonAppender{b: scratch[:0]}
		w.schoolView(&v)
		scratch = w.b
		i := bytes.Index(w.b, []byte(`"net_price":null`+netPriceEnd))
		if w.bad || i < 0 {
			continue
		}
		mid := i + len(`"net_price":`)
		c := cut{start: len(all)}
		all = append(all, w.b[:mid]...)
		c.mid = len(all)
		all = append(all, w.b[mid+len("null"):]...)
		c.end = len(all)
		cuts[idx] = c
	}
	for idx, c := range cuts {
		if c.end > c.start {
			set.records[idx] = schoolRecord{head: all[c.start:c.mid:c.mid], tail: all[c.mid:c.end:c.end]}
		}
	}
	lastSchoolRecords.Store(set)
	return set
}

// of is school idx's record, nil when it has none (or s is nil).
func (s *schoolRecordSet) of(idx int) *schoolRecord {
	if s == nil || s.records[idx].head == nil {
		return nil
	}
	return &s.records[idx]
}

// sameStrings reports whether a and b are the same slice (the same array,
// length and nil-ness), so that they encode the same.
func sameStrings(a, b []string) bool {
	return len(a) == len(b) && (a == nil) == (b == nil) && (len(a) == 0 || &a[0] == &b[0])
}

// appendCompactItem appends c as json.Marshal writes it (p only when true).
func appendCompactItem(b []byte, c *compactItem) []byte {
	w := jsonAppender{b: b}
	w.raw(`{"i":`)
	w.str(c.I)
	w.raw(`,"n":`)
	w.str(c.N)
	w.raw(`,"s":`)
	w.int(int64(c.S))
	w.raw(`,"g":`)
	w.str(c.G)
	w.raw(`,"c":`)
	w.str(c.C)
	w.raw(`,"st":`)
	w.str(c.St)
	if c.P {
		w.raw(`,"p":true`)
	}
	w.b = append(w.b, '}')
	return w.b
}

// appendJSONNumber appends a finite float64 as encoding/json writes it:
// the shortest decimal that reads back the same, in exponent form below
// 1e-6 and from 1e21 (ES6 number to string), with the exponent unpadded.
func appendJSONNumber(b []byte, v float64) []byte {
	abs := math.Abs(v)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, v, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendJSONText appends s as a JSON string as encoding/json writes it:
// '"' and '\\' escaped, control characters as \b, \f, \n, \r, \t or
// \u00XX, '<', '>' and '&' as \u003c, \u003e and \u0026, invalid UTF-8 as
// \ufffd, and U+2028 and U+2029 as \u2028 and \u2029.
func appendJSONText(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		for i < len(s) && jsonSafe[s[i]] { // the common case, byte by byte
			i++
		}
		if i == len(s) {
			break
		}
		if c := s[i]; c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// jsonSafe are the bytes a JSON string holds as they are when HTML
// characters are escaped (encoding/json's htmlSafeSet): ASCII but control
// characters, '"', '\\', '<', '>' and '&'. Bytes from utf8.RuneSelf on are
// not in it: they start a rune that is looked at whole.
var jsonSafe = func() (t [256]bool) {
	for c := range utf8.RuneSelf {
		t[c] = c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendProfile appends p as json.Marshal writes it (match.Profile has no
// field tags: every field by its name, in order), nil when json.Marshal
// would refuse it (a float that is not finite). A rebuild encodes the
// profile every time (the factors' key, the stored feed's profile), and
// encoding/json's reflection was most of that.
// TestAppendProfileIsJSONMarshal keeps the two the same, field for field.
func appendProfile(b []byte, p *match.Profile) []byte {
	w := jsonAppender{b: b}
	w.raw(`{"SAT":`)
	w.int(int64(p.SAT))
	w.raw(`,"Basis":`)
	w.int(int64(p.Basis))
	w.raw(`,"ACT":`)
	w.int(int64(p.ACT))
	w.raw(`,"GPA":`)
	w.float(p.GPA)
	w.raw(`,"HasGPA":`)
	w.bool(p.HasGPA)
	w.raw(`,"HasHome":`)
	w.bool(p.HasHome)
	w.raw(`,"HomeLat":`)
	w.float(p.HomeLat)
	w.raw(`,"HomeLon":`)
	w.float(p.HomeLon)
	w.raw(`,"HomeApprox":`)
	w.bool(p.HomeApprox)
	w.raw(`,"State":`)
	w.str(p.State)
	w.raw(`,"MaxDistanceMiles":`)
	w.float(p.MaxDistanceMiles)
	w.raw(`,"Budget":`)
	w.int(int64(p.Budget))
	w.raw(`,"HasBudget":`)
	w.bool(p.HasBudget)
	w.raw(`,"IncomeBand":`)
	w.int(int64(p.IncomeBand))
	w.raw(`,"Majors":`)
	if p.Majors == nil {
		w.null()
	} else {
		w.b = append(w.b, '[')
		for i, m := range p.Majors {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.str(string(m))
		}
		w.b = append(w.b, ']')
	}
	w.raw(`,"PreferredSize":`)
	w.str(p.PreferredSize)
	w.raw(`,"PreferredSetting":`)
	w.str(string(p.PreferredSetting))
	w.b = append(w.b, '}')
	if w.bad {
		return nil
	}
	return w.b
}

// appendWeightsShown appends the weights as a page shows them, each
// rounded to 4 decimals, as json.Marshal writes the map (keys sorted); nil
// when json.Marshal would refuse it (a value that is not finite).
func appendWeightsShown(b []byte, weights map[string]float64) []byte {
	w := jsonAppender{b: b}
	w.b = append(w.b, '{')
	for i, k := range slices.Sorted(maps.Keys(weights)) {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.str(k)
		w.b = append(w.b, ':')
		w.float(round4(weights[k]))
	}
	w.b = append(w.b, '}')
	if w.bad {
		return nil
	}
	return w.b
}

// appendStrings appends ss as json.Marshal writes a []string.
func appendStrings(b []byte, ss []string) []byte {
	w := jsonAppender{b: b}
	w.strings(ss)
	return w.b
}
