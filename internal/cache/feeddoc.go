package cache

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/google/uuid"
)

// Feed is a student's precomputed, ranked feed: the read model behind
// POST /recommendations, GET /m/recommendations and the student's side of
// GET /match. It is written whole and guarded by the versions it was built
// from (see Feeds.Put).
type Feed struct {
	StudentID string
	// The versions the feed was built from: the student's state
	// (students.version), the learned state (learning_state.version) and
	// the catalogue. A feed built from a newer student version wins, then
	// from a newer learned state, then from a newer catalogue (Feeds.Put).
	StudentVersion  int64
	LearningVersion int64
	CatalogVersion  int64
	// LearnedVersion is the student version the learned state covers: every
	// event recorded up to it is folded in (set by the learner's rebuild; 0
	// when not known). A swipe's patch moves StudentVersion, not this.
	LearnedVersion int64

	BuiltAt          time.Time
	AlgorithmVersion string
	TotalSwipes      int                // the student's counted swipes
	TotalCount       int                // schools eligible for the student (the whole ranked list)
	Weights          map[string]float64 // preference weights the feed was ranked with
	Profile          []byte             // the scoring view of the profile, opaque here (no name or e-mail)
	// Model is the learned model the feed was ranked with, serialised
	// (opaque here): what the write side predicts a swipe with.
	Model []byte
	// Removed are the schools swipes took off the top of the list since it
	// was built, in order (a swipe's patch): the list as built is Removed
	// followed by the items, built at TotalSwipes - len(Removed) swipes.
	Removed []uuid.UUID

	// Items are the top of the ranked list, best first, as a builder sets
	// them. A feed read back leaves Items nil and keeps them encoded:
	// read them with Len and Range, which decode only what is asked for.
	Items []FeedItem
	// Compact is the compact first page, encoded when the feed was built
	// (NewCompact).
	Compact Compact
	// Described are the first items as the standard envelope shows them
	// (pages.go); Complete and ShownWeights are what that envelope says
	// besides the counts: whether POST /recommendations serves the profile,
	// and the preference weights shown (a JSON object). Written by Put,
	// not read back with the feed.
	Described    []Described
	Complete     bool
	ShownWeights []byte
	// ShownLearned is what the envelope says the model learned beyond the
	// weights: a JSON array of strings (learning_state.learned_preferences).
	ShownLearned []byte

	encoded []byte // the items as read, fixed-size records
}

// Len is the number of items.
func (f *Feed) Len() int {
	if f.encoded != nil {
		return len(f.encoded) / itemSize
	}
	return len(f.Items)
}

// Range returns items [from, to), clamped to the items there are.
func (f *Feed) Range(from, to int) []FeedItem {
	n := f.Len()
	from, to = min(max(from, 0), n), min(max(to, 0), n)
	if from >= to {
		return []FeedItem{}
	}
	if f.encoded == nil {
		return f.Items[from:to]
	}
	items, _ := decodeItems(f.encoded[from*itemSize : to*itemSize]) // whole records: cannot fail
	return items
}

// FeedItem is one ranked school. Scores are stored to 1e-4 and distances
// to 0.1 mile: the precision the API shows, so a value read back is exactly
// the value that was written when it was already rounded that way.
type FeedItem struct {
	SchoolID    uuid.UUID
	Score       float64 // match_score
	Academic    float64
	Financial   float64
	Campus      float64
	Outcomes    float64
	Distance    float64 // miles; negative when unknown
	Probe       bool
	Exploration bool
}

// Compact is a pre-encoded compact page and its strong ETag (quoted).
type Compact struct {
	ETag string
	Body []byte
	// Starts are, in a page made by NewCompact, where each item starts in
	// Body and then where the list ends (len(Body) - 2): the page left
	// once swipes took the first k schools off the feed is {"r":[
	// followed by Body[Starts[k]:] (After).
	Starts []int
	// Next are the ETags of the pages left once 1, 2, ... schools are
	// taken off (at most PatchedETags), made with the page.
	Next []string
}

// PatchedETags is how many of the pages a swipe's patch leaves have their
// ETag made when the page is built: a swipe's patch leaves the page as
// built and a read serves it past the schools taken off (After), so the
// first ones are served without hashing the body on the read; a deeper
// one (more swipes than that before the worker's rebuild lands) is hashed
// by its read.
const PatchedETags = 2

// NewCompact is the compact page of items (JSON objects), with what its
// reads after a swipe's patch need (Starts, Next).
func NewCompact(items [][]byte) Compact {
	body := CompactBody(items)
	c := Compact{ETag: ETag(body), Body: body, Starts: make([]int, len(items)+1)}
	at := len(compactOpen)
	for k, it := range items {
		c.Starts[k] = at
		at += len(it) + 1 // the comma, or the closing bracket
	}
	c.Starts[len(items)] = len(body) - len(compactClose)
	for k := 1; k <= min(PatchedETags, len(items)); k++ {
		c.Next = append(c.Next, ETag(c.after(k)))
	}
	return c
}

// After is the page left once swipes took the first k schools off the
// feed (all of the page's when k reaches them): the same bytes and ETag
// a page of the items left would have. c must be NewCompact's (or read
// back by ParseCompact).
func (c Compact) After(k int) Compact {
	k = min(k, len(c.Starts)-1)
	if k <= 0 {
		return c
	}
	body := c.after(k)
	if k <= len(c.Next) {
		return Compact{ETag: c.Next[k-1], Body: body}
	}
	return Compact{ETag: ETag(body), Body: body}
}

// after is the body of the page without its first k items (0 < k <
// len(c.Starts)).
func (c Compact) after(k int) []byte {
	rest := c.Body[c.Starts[k]:]
	b := make([]byte, 0, len(compactOpen)+len(rest))
	return append(append(b, compactOpen...), rest...)
}

// compactOpen and compactClose are what a compact body starts and ends with.
const (
	compactOpen  = `{"r":[`
	compactClose = `]}`
)

// ErrNotBuilt means the read model does not exist (never built, expired or
// invalidated): the caller computes it.
var ErrNotBuilt = errors.New("read model not built")

// ErrMalformed means a stored read model could not be read (written by
// another layout): the caller computes it, as when it is not built.
var ErrMalformed = errors.New("read model malformed")

// itemSize is the size of one encoded FeedItem: the school's UUID, five
// scores as uint16 in 1e-4, the distance as uint16 in 0.1 mile
// (0xFFFF = unknown) and a flags byte.
const itemSize = 16 + 5*2 + 2 + 1

const (
	flagProbe       = 1 << 0
	flagExploration = 1 << 1

	distanceUnknown = math.MaxUint16
	maxDistance     = (math.MaxUint16 - 1) / 10.0
)

// headerMagic starts an encoded header; the byte after "F" is the layout.
var headerMagic = []byte("F2")

// encodeHeader encodes what does not change until the next build: when and
// how the feed was built, its weights and the profile. The versions and
// counts are fields of their own, which a swipe's patch moves.
func encodeHeader(f *Feed) []byte {
	b := make([]byte, 0, 64+len(f.Profile)+16*len(f.Weights))
	b = append(b, headerMagic...)
	b = binary.AppendVarint(b, f.BuiltAt.UnixMilli())
	b = appendString(b, f.AlgorithmVersion)
	keys := make([]string, 0, len(f.Weights))
	for k := range f.Weights {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		b = appendString(b, k)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f.Weights[k]))
	}
	b = appendString(b, string(f.Profile))
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodeHeader fills f from an encoded header.
func decodeHeader(b []byte, f *Feed) error {
	if !bytes.HasPrefix(b, headerMagic) {
		return errors.New("feed header: unknown layout")
	}
	d := decoder{b: b[len(headerMagic):]}
	f.BuiltAt = time.UnixMilli(d.varint()).UTC()
	f.AlgorithmVersion = d.str()
	n := d.uvarint()
	if d.err == nil && n > 64 {
		d.err = errors.New("too many weights")
	}
	f.Weights = make(map[string]float64, n)
	for range n {
		k := d.str()
		f.Weights[k] = math.Float64frombits(d.uint64())
	}
	if p := d.str(); p != "" {
		f.Profile = []byte(p)
	}
	if d.err != nil {
		return fmt.Errorf("feed header: %w", d.err)
	}
	return nil
}

// headerProfile is the profile an encoded header holds (aliasing b),
// read past the rest without decoding it: what a swipe reads of the
// header. ok is false for a header decodeHeader refuses.
func headerProfile(b []byte) (profile []byte, ok bool) {
	if !bytes.HasPrefix(b, headerMagic) {
		return nil, false
	}
	d := decoder{b: b[len(headerMagic):]}
	d.varint()
	d.skip()
	n := d.uvarint()
	if n > 64 {
		return nil, false
	}
	for range n {
		d.skip()
		d.uint64()
	}
	n = d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		return nil, false
	}
	if n == 0 {
		return nil, true
	}
	return d.b[:n:n], true
}

type decoder struct {
	b   []byte
	err error
}

// skip reads past a string.
func (d *decoder) skip() {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.fail()
		return
	}
	d.b = d.b[n:]
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errors.New("truncated")
	}
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uint64() uint64 {
	if len(d.b) < 8 {
		d.fail()
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) str() string {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.fail()
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// encodeItems encodes the items as fixed-size records.
func encodeItems(items []FeedItem) []byte {
	b := make([]byte, len(items)*itemSize)
	for i := range items {
		putItem(b[i*itemSize:(i+1)*itemSize], &items[i])
	}
	return b
}

func putItem(b []byte, it *FeedItem) {
	copy(b[:16], it.SchoolID[:])
	for j, v := range [5]float64{it.Score, it.Academic, it.Financial, it.Campus, it.Outcomes} {
		binary.LittleEndian.PutUint16(b[16+2*j:], unitToFixed(v))
	}
	dist := uint16(distanceUnknown)
	if it.Distance >= 0 && !math.IsNaN(it.Distance) {
		dist = uint16(math.Round(min(it.Distance, maxDistance) * 10))
	}
	binary.LittleEndian.PutUint16(b[26:], dist)
	var flags byte
	if it.Probe {
		flags |= flagProbe
	}
	if it.Exploration {
		flags |= flagExploration
	}
	b[28] = flags
}

// unitToFixed stores a value in [0,1] in units of 1e-4; NaN is 0.
func unitToFixed(v float64) uint16 {
	if !(v > 0) {
		return 0
	}
	return uint16(math.Round(min(v, 1) * 1e4))
}

// decodeItems decodes fixed-size item records.
func decodeItems(b []byte) ([]FeedItem, error) {
	if len(b)%itemSize != 0 {
		return nil, fmt.Errorf("feed items: %d bytes is not a whole number of %d-byte records", len(b), itemSize)
	}
	items := make([]FeedItem, len(b)/itemSize)
	for i := range items {
		r := b[i*itemSize : (i+1)*itemSize]
		it := &items[i]
		copy(it.SchoolID[:], r[:16])
		vals := [5]*float64{&it.Score, &it.Academic, &it.Financial, &it.Campus, &it.Outcomes}
		for j, p := range vals {
			*p = float64(binary.LittleEndian.Uint16(r[16+2*j:])) / 1e4
		}
		if d := binary.LittleEndian.Uint16(r[26:]); d == distanceUnknown {
			it.Distance = -1
		} else {
			it.Distance = float64(d) / 10
		}
		it.Probe = r[28]&flagProbe != 0
		it.Exploration = r[28]&flagExploration != 0
	}
	return items, nil
}

// encodeCompact is the stored compact value: a header line with what a
// reader checks before serving it (the catalogue and algorithm versions it
// was built with, and the ETag), a line of the items' offsets
// (Compact.Starts), a line of the ETags of the pages a patch leaves
// (Compact.Next), then the body.
func encodeCompact(f *Feed) []byte {
	c := &f.Compact
	b := make([]byte, 0, 64+8*len(c.Starts)+44*len(c.Next)+len(c.Body))
	b = strconv.AppendInt(b, f.CatalogVersion, 10)
	b = append(append(append(b, ' '), f.AlgorithmVersion...), ' ')
	b = append(append(b, c.ETag...), '\n')
	for k, at := range c.Starts {
		if k > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendInt(b, int64(at), 10)
	}
	b = append(b, '\n')
	b = append(append(b, strings.Join(c.Next, " ")...), '\n')
	return append(b, c.Body...)
}

// CompactBody is the compact page made of items: {"r":[items]}.
func CompactBody(items [][]byte) []byte {
	n := len(compactOpen) + len(compactClose) + len(items)
	for _, it := range items {
		n += len(it)
	}
	b := make([]byte, 0, n)
	b = append(b, compactOpen...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	return append(b, compactClose...)
}

// ETag is the strong ETag of a compact body: its SHA-1 in hex, quoted
// (what the patch script made while it rebuilt pages in Redis' Lua, which
// has SHA-1 only), so a body has one ETag whoever encoded it.
func ETag(body []byte) string {
	sum := sha1.Sum(body)
	return `"` + hex.EncodeToString(sum[:]) + `"`
}

// StoredCompact is a compact page as read back from Redis.
type StoredCompact struct {
	CatalogVersion   int64
	AlgorithmVersion string
	Compact
}

// aliasBytes is s as a []byte without a copy: the bytes must never be
// written to (a compact page read from Redis is only written out, or
// copied from by Compact.After).
func aliasBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// ParseCompact reads a stored compact value (encodeCompact). The body
// aliases raw.
func ParseCompact(raw []byte) (StoredCompact, error) { return parseCompact(raw, true) }

// parseCompact is ParseCompact; without full, the page is read to be
// served as built (no school taken off its top since): the item offsets
// and the ETags of the patched pages, which only Compact.After uses, are
// left unread, and the body is checked to be a page.
func parseCompact(raw []byte, full bool) (StoredCompact, error) {
	var out StoredCompact
	head, rest, ok := bytes.Cut(raw, []byte("\n"))
	starts, rest, ok2 := bytes.Cut(rest, []byte("\n"))
	next, body, ok3 := bytes.Cut(rest, []byte("\n"))
	if !ok || !ok2 || !ok3 {
		return out, errors.New("compact feed: no header lines")
	}
	cv, rest, ok := bytes.Cut(head, []byte(" "))
	algo, etag, ok2 := bytes.Cut(rest, []byte(" "))
	if !ok || !ok2 {
		return out, errors.New("compact feed: malformed header")
	}
	n, err := strconv.ParseInt(string(cv), 10, 64)
	if err != nil {
		return out, fmt.Errorf("compact feed: catalogue version: %w", err)
	}
	out.CatalogVersion, out.AlgorithmVersion = n, string(algo)
	out.ETag, out.Body = string(etag), body
	if !full {
		if !bytes.HasPrefix(body, []byte(compactOpen)) || !bytes.HasSuffix(body, []byte(compactClose)) {
			return out, errors.New("compact feed: the body is not a page")
		}
		return out, nil
	}
	if out.Starts, err = parseStarts(starts, body); err != nil {
		return out, err
	}
	if len(next) > 0 {
		out.Next = strings.Split(string(next), " ")
	}
	if len(out.Next) > len(out.Starts)-1 {
		return out, errors.New("compact feed: more ETags than items")
	}
	return out, nil
}

// parseStarts reads the items' offsets of a stored compact body: rising,
// from the first item to the closing bracket.
func parseStarts(line, body []byte) ([]int, error) {
	starts := make([]int, 0, 1+bytes.Count(line, []byte(" ")))
	for f := range bytes.SplitSeq(line, []byte(" ")) {
		at, err := strconv.Atoi(string(f))
		if err != nil {
			return nil, fmt.Errorf("compact feed: item offsets: %w", err)
		}
		starts = append(starts, at)
	}
	last := len(starts) - 1
	if starts[0] != len(compactOpen) || starts[last] != len(body)-len(compactClose) ||
		!bytes.HasPrefix(body, []byte(compactOpen)) || !bytes.HasSuffix(body, []byte(compactClose)) {
		return nil, errors.New("compact feed: item offsets do not fit the body")
	}
	for k := 1; k <= last; k++ {
		if starts[k] <= starts[k-1] {
			return nil, errors.New("compact feed: item offsets do not rise")
		}
	}
	return starts, nil
}
