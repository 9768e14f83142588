package httpapi

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/collegematch/matching/internal/domain"
)

// Request bodies are checked against their endpoint's shape in one pass
// over their bytes before anything is decoded (decisions.md, "HTTP"):
// nesting depth, the length of every array the endpoint takes (stopping
// at the first element over the limit), and unknown and repeated fields,
// at most maxReported of them reported. The pass allocates nothing for a
// body that keeps to its shape, so a 1 MiB body of half a million array
// elements or keys is refused having materialised none of them. What the
// pass does not judge (value types and ranges, malformed JSON) is left to
// the decoders, which then work on bounded input.

// maxDepth is how deeply any body may nest objects and arrays; the
// deepest body the API takes ({"changes":[{...}]}) nests 3 deep.
const maxDepth = 8

// maxReported is how many field problems one answer lists.
const maxReported = 20

// shape describes what a body, or a value inside it, may hold when it is
// an object or an array. A value whose shape is nil, or whose JSON kind is
// not the shape's, is left to the decoder (only its depth is checked).
type shape struct {
	fields []field // an object's fields; any other name is unknown
	elem   *shape  // an array's elements
	max    int     // an array's most elements (0: not an array)
}

// field is one known field of an object and the shape of its value.
type field struct {
	name  string
	shape *shape
}

// object is the shape of an object with the given fields, each a string
// (its value unchecked) or a field (with a shape).
func object(fields ...any) *shape {
	s := &shape{}
	for _, f := range fields {
		switch f := f.(type) {
		case string:
			s.fields = append(s.fields, field{name: f})
		case field:
			s.fields = append(s.fields, f)
		case []string:
			for _, name := range f {
				s.fields = append(s.fields, field{name: name})
			}
		default:
			panic("httpapi.object: a field is a string, []string or field")
		}
	}
	if len(s.fields) > 64 {
		panic("httpapi.object: more than 64 fields")
	}
	return s
}

// arrayOf is the shape of an array of at most max elements of elem.
func arrayOf(max int, elem *shape) *shape { return &shape{elem: elem, max: max} }

// shapeProblems collects what a body breaks of its shape.
type shapeProblems struct {
	fields map[string]string
	more   int  // problems found beyond maxReported
	fatal  bool // too deep or too long: the body was not read to its end
	// trailing: the body's first value was read to its end and something
	// other than white space follows it.
	trailing bool
}

func (p *shapeProblems) add(path, problem string) {
	if p.fields == nil {
		p.fields = map[string]string{}
	}
	if _, dup := p.fields[path]; dup {
		return
	}
	if p.full() {
		p.more++
		return
	}
	p.fields[path] = problem
}

// full reports whether maxReported problems are listed: the next ones are
// only counted (and their paths need not be built).
func (p *shapeProblems) full() bool { return len(p.fields) >= maxReported }

// report adds the problem of the value at depth, building its path only
// when it will be listed.
func (c *shapeCheck) report(depth int, problem string) {
	if c.problems.full() {
		c.problems.more++
		return
	}
	c.problems.add(c.pathString(depth), problem)
}

// err is the 400 for the problems found, nil when none.
func (p *shapeProblems) err() error {
	if len(p.fields) == 0 {
		return nil
	}
	msg := summarize(p.fields)
	if p.more > 0 {
		msg = strconv.Itoa(len(p.fields)+p.more) + " fields are invalid; details.fields lists the first " +
			strconv.Itoa(len(p.fields))
	}
	return domain.Invalid(msg, p.fields)
}

// checkShape checks body against s (see above) and returns the 400 for
// what it breaks, nil when nothing.
func checkShape(body []byte, s *shape) error {
	p := scanShape(body, s)
	return p.err()
}

// scanShape checks body against s. Malformed JSON is not its concern: it
// stops there and leaves the decoder to say where. trailing reports
// whether anything but white space follows a body read to its end.
func scanShape(body []byte, s *shape) shapeProblems {
	c := shapeCheck{scan: jsonScan{b: body}}
	c.value(s, 0)
	if !c.stop {
		c.scan.ws()
		c.problems.trailing = c.scan.i < len(body)
	}
	return c.problems
}

// pathElem is one step of the path to a value: a field name or an index.
type pathElem struct {
	key   []byte // raw (still escaped) key; nil for an index
	index int
}

type shapeCheck struct {
	scan     jsonScan
	path     [maxDepth + 1]pathElem
	problems shapeProblems
	stop     bool // a problem that ends the check (too deep, too long)
}

// pathString renders the path of the value at depth: swipes[2].school_id.
func (c *shapeCheck) pathString(depth int) string {
	var b strings.Builder
	for i := 1; i <= depth; i++ {
		e := c.path[i]
		if e.key == nil {
			b.WriteString("[" + strconv.Itoa(e.index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(clip(keyString(e.key), 64))
	}
	if b.Len() == 0 {
		return "body"
	}
	return b.String()
}

// value checks the value at the scan position, at depth (0 = the body).
func (c *shapeCheck) value(s *shape, depth int) {
	if c.stop {
		return
	}
	sc := &c.scan
	sc.ws()
	switch sc.peek() {
	case '{':
		c.object(s, depth)
	case '[':
		c.array(s, depth)
	default:
		if !sc.scalar() {
			c.stop = true // malformed: the decoder reports it
		}
	}
}

func (c *shapeCheck) enter(depth int) bool {
	if depth >= maxDepth {
		c.problems.add("body", "is nested deeper than "+strconv.Itoa(maxDepth)+" levels")
		c.stop, c.problems.fatal = true, true
		return false
	}
	return true
}

func (c *shapeCheck) object(s *shape, depth int) {
	sc := &c.scan
	if !c.enter(depth) {
		return
	}
	sc.i++ // {
	if s != nil && s.max > 0 {
		s = nil // an array was expected: the decoder says so
	}
	var seen, repeated uint64
	first := true
	for !c.stop {
		sc.ws()
		if sc.peek() == '}' && first {
			sc.i++
			return
		}
		key, ok := sc.str()
		if !ok {
			c.stop = true
			return
		}
		sc.ws()
		if sc.peek() != ':' {
			c.stop = true
			return
		}
		sc.i++
		c.path[depth+1] = pathElem{key: key}
		var sub *shape
		if s != nil {
			i := s.fieldIndex(key)
			switch {
			case i < 0:
				c.report(depth+1, "is not a known field")
			case seen&(1<<i) != 0:
				if repeated&(1<<i) == 0 { // once per field
					c.report(depth+1, "is given more than once")
				}
				repeated |= 1 << i
			default:
				seen |= 1 << i
				sub = s.fields[i].shape
			}
		}
		c.value(sub, depth+1)
		if c.stop {
			return
		}
		first = false
		sc.ws()
		switch sc.peek() {
		case ',':
			sc.i++
		case '}':
			sc.i++
			return
		default:
			c.stop = true
			return
		}
	}
}

func (c *shapeCheck) array(s *shape, depth int) {
	sc := &c.scan
	if !c.enter(depth) {
		return
	}
	sc.i++ // [
	if s != nil && s.max == 0 {
		s = nil // an object was expected: the decoder says so
	}
	var elem *shape
	if s != nil {
		elem = s.elem
	}
	for n := 0; !c.stop; n++ {
		sc.ws()
		if sc.peek() == ']' && n == 0 {
			sc.i++
			return
		}
		if s != nil && n == s.max {
			c.report(depth, "must have at most "+strconv.Itoa(s.max)+" entries")
			c.stop, c.problems.fatal = true, true
			return
		}
		c.path[depth+1] = pathElem{index: n}
		c.value(elem, depth+1)
		if c.stop {
			return
		}
		sc.ws()
		switch sc.peek() {
		case ',':
			sc.i++
		case ']':
			sc.i++
			return
		default:
			c.stop = true
			return
		}
	}
}

// fieldIndex is the index of the field named by raw key, -1 when none.
func (s *shape) fieldIndex(key []byte) int {
	name := key
	if hasEscape(key) {
		name = []byte(keyString(key))
	}
	for i, f := range s.fields {
		if len(name) == len(f.name) && string(name) == f.name {
			return i
		}
	}
	return -1
}

// keyString is a raw JSON string's contents, unescaped.
func keyString(raw []byte) string {
	if !hasEscape(raw) {
		return string(raw)
	}
	var s string
	if json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &s) != nil {
		return string(raw)
	}
	return s
}

func hasEscape(b []byte) bool { return bytes.IndexByte(b, '\\') >= 0 }

// jsonScan walks JSON text without decoding it. Its methods advance past
// what they read and report false on malformed input (never panicking on
// any input); they are lenient where decoding will be strict (e.g. control
// characters inside strings, the digits of a number).
type jsonScan struct {
	b []byte
	i int
}

func (s *jsonScan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *jsonScan) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// str reads a string and returns its raw contents (between the quotes).
func (s *jsonScan) str() ([]byte, bool) {
	if s.peek() != '"' {
		return nil, false
	}
	start := s.i + 1
	for i := start; i < len(s.b); {
		q := bytes.IndexByte(s.b[i:], '"')
		if q < 0 {
			return nil, false
		}
		i += q
		// The quote ends the string unless an odd run of backslashes
		// escapes it.
		n := 0
		for j := i - 1; j >= start && s.b[j] == '\\'; j-- {
			n++
		}
		if n%2 == 0 {
			s.i = i + 1
			return s.b[start:i], true
		}
		i++
	}
	return nil, false
}

// scalar reads a string, number, true, false or null.
func (s *jsonScan) scalar() bool {
	switch c := s.peek(); {
	case c == '"':
		_, ok := s.str()
		return ok
	case c == '-' || (c >= '0' && c <= '9'):
		start := s.i
		for s.i < len(s.b) && numberByte(s.b[s.i]) {
			s.i++
		}
		return s.i > start
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return false
}

func numberByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

func (s *jsonScan) literal(lit string) bool {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

// skip reads any value, nested at most maxDepth deep.
func (s *jsonScan) skip(depth int) bool {
	s.ws()
	open := s.peek()
	if open != '{' && open != '[' {
		return s.scalar()
	}
	if depth >= maxDepth {
		return false
	}
	s.i++
	closer := byte('}')
	if open == '[' {
		closer = ']'
	}
	for n := 0; ; n++ {
		s.ws()
		if s.peek() == closer && n == 0 {
			s.i++
			return true
		}
		if open == '{' {
			if _, ok := s.str(); !ok {
				return false
			}
			s.ws()
			if s.peek() != ':' {
				return false
			}
			s.i++
		}
		if !s.skip(depth + 1) {
			return false
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
		case closer:
			s.i++
			return true
		default:
			return false
		}
	}
}

// members calls fn for each member of the JSON object raw, in order, with
// its raw key and raw value (sub-slices of raw, nothing copied), until fn
// returns false. It reports false when raw is not one well-formed object.
func members(raw []byte, fn func(key, value []byte) bool) bool {
	s := jsonScan{b: raw}
	s.ws()
	if s.peek() != '{' {
		return false
	}
	s.i++
	for n := 0; ; n++ {
		s.ws()
		if s.peek() == '}' && n == 0 {
			s.i++
			break
		}
		key, ok := s.str()
		if !ok {
			return false
		}
		s.ws()
		if s.peek() != ':' {
			return false
		}
		s.i++
		s.ws()
		start := s.i
		if !s.skip(1) {
			return false
		}
		if !fn(key, raw[start:s.i]) {
			return true
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
			continue
		case '}':
			s.i++
		default:
			return false
		}
		break
	}
	s.ws()
	return s.i == len(s.b)
}

// elements returns the raw elements of the JSON array raw (sub-slices,
// nothing copied), at most max of them: tooMany reports more, and the
// scan stops at the first element past max. ok is false when raw is not
// one well-formed array (as far as the scan went).
func elements(raw []byte, max int) (elems [][]byte, tooMany, ok bool) {
	s := jsonScan{b: raw}
	s.ws()
	if s.peek() != '[' {
		return nil, false, false
	}
	s.i++
	for n := 0; ; n++ {
		s.ws()
		if s.peek() == ']' && n == 0 {
			s.i++
			break
		}
		if n == max {
			return nil, true, true
		}
		start := s.i
		if !s.skip(1) {
			return nil, false, false
		}
		if elems == nil {
			elems = make([][]byte, 0, min(max, 16))
		}
		elems = append(elems, raw[start:s.i])
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
			continue
		case ']':
			s.i++
		default:
			return nil, false, false
		}
		break
	}
	s.ws()
	return elems, false, s.i == len(s.b)
}
