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
	"time"

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
	// Compact is the compact first page, encoded when the feed was built;
	// CompactItems are its items' JSON objects, in order (the page is
	// {"r":[items]}), which a swipe's patch can drop one of.
	Compact      Compact
	CompactItems [][]byte
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
}

// ErrNotBuilt means the read model does not exist (never built, expired or
// invalidated): the caller computes it.
var ErrNotBuilt = errors.New("read model not built")

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

type decoder struct {
	b   []byte
	err error
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
// was built with, and the ETag), then the body.
func encodeCompact(f *Feed) []byte {
	head := strconv.FormatInt(f.CatalogVersion, 10) + " " + f.AlgorithmVersion + " " + f.Compact.ETag + "\n"
	b := make([]byte, 0, len(head)+len(f.Compact.Body))
	return append(append(b, head...), f.Compact.Body...)
}

// CompactBody is the compact page made of items: {"r":[items]}. The
// stored page and the page a swipe's patch leaves (feedScripts' patch) are
// both made this way.
func CompactBody(items [][]byte) []byte {
	n := len(`{"r":[]}`) + len(items)
	for _, it := range items {
		n += len(it)
	}
	b := make([]byte, 0, n)
	b = append(b, `{"r":[`...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	return append(b, "]}"...)
}

// ETag is the strong ETag of a compact body: its SHA-1 in hex, quoted, as
// the patch script makes it too (Redis' Lua has SHA-1 only), so a body
// has one ETag whoever encoded it.
func ETag(body []byte) string {
	sum := sha1.Sum(body)
	return `"` + hex.EncodeToString(sum[:]) + `"`
}

// joinLines joins JSON objects with newlines: compact JSON never holds a
// raw newline, so the patch script can split them again.
func joinLines(items [][]byte) []byte {
	return bytes.Join(items, []byte("\n"))
}

// StoredCompact is a compact page as read back from Redis.
type StoredCompact struct {
	CatalogVersion   int64
	AlgorithmVersion string
	Compact
}

// ParseCompact reads a stored compact value (the FieldCompact field of
// FeedKey). The body aliases raw.
func ParseCompact(raw []byte) (StoredCompact, error) {
	var out StoredCompact
	nl := bytes.IndexByte(raw, '\n')
	if nl < 0 {
		return out, errors.New("compact feed: no header line")
	}
	head := raw[:nl]
	sp1 := bytes.IndexByte(head, ' ')
	if sp1 < 0 {
		return out, errors.New("compact feed: malformed header")
	}
	rest := head[sp1+1:]
	sp2 := bytes.IndexByte(rest, ' ')
	if sp2 < 0 {
		return out, errors.New("compact feed: malformed header")
	}
	cv, err := strconv.ParseInt(string(head[:sp1]), 10, 64)
	if err != nil {
		return out, fmt.Errorf("compact feed: catalogue version: %w", err)
	}
	out.CatalogVersion = cv
	out.AlgorithmVersion = string(rest[:sp2])
	out.ETag = string(rest[sp2+1:])
	out.Body = raw[nl+1:]
	return out, nil
}
