package cache

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Stored pages of the standard envelope (POST /recommendations and
// /v2/recommendations). A feed keeps, besides its binary items, its first
// items as those endpoints show each one, encoded when the feed is built,
// and what the envelope around them says that a swipe's patch does not
// move (fieldEnvelope). A cached page is then one HMGET of the page's
// fields (PageRead, pipelined with the request's rate-limit count), whose
// item bytes the API wraps in the envelope without decoding them.
//
// Item k of the list as built is field "j:<k>": "P" and the school id (36
// characters) for a probe, "-" for any other item, then the item's JSON
// object. (The probes of the described items are remembered when the feed
// is stored, so a read no longer needs the id; it is kept so that replicas
// of the previous build, which read it, share stored feeds with this one.) A swipe's patch that takes schools off the top leaves these
// fields alone: it appends the schools to fieldRemoved, and item k of the
// patched list is field j:<k + removed>.
//
// fieldEnvelope is "<complete> <algorithm version> <weights JSON>":
// complete is 1 when the profile has everything POST /recommendations
// needs (0: only /v2 serves it), the weights are the preference weights
// shown, rounded.
const (
	fieldDescribedPrefix = "j:"
	fieldEnvelope        = "e"
)

// Described is one item of a feed as the standard envelope shows it.
type Described struct {
	SchoolID string // lower case
	Probe    bool
	// Field is the item as stored: AppendDescribedPrefix, then its JSON
	// object (none when it could not be encoded).
	Field []byte
}

// MaxDescribedPrefix is the longest prefix of a stored item: "P" and a
// school id.
const MaxDescribedPrefix = 1 + 36

// NewDescribed is the item of a school with its JSON object.
func NewDescribed(schoolID string, probe bool, json []byte) Described {
	f := AppendDescribedPrefix(make([]byte, 0, MaxDescribedPrefix+len(json)), schoolID, probe)
	return Described{SchoolID: schoolID, Probe: probe, Field: append(f, json...)}
}

// AppendDescribedPrefix appends to b what a stored item starts with: "P"
// and the school id for a probe, "-" for any other item. The item's JSON
// object follows it, so that the builder of a feed encodes items where
// they are stored from (describedFields copies nothing).
func AppendDescribedPrefix(b []byte, schoolID string, probe bool) []byte {
	if probe {
		return append(append(b, 'P'), schoolID...)
	}
	return append(b, '-')
}

// describedFields are the field-value pairs of items, for HSET.
func describedFields(items []Described) []any {
	out := make([]any, 0, 2*len(items))
	for k, it := range items {
		if k < len(describedArgs) {
			out = append(out, describedArgs[k], it.Field)
		} else {
			out = append(out, fieldDescribedPrefix+strconv.Itoa(k), it.Field)
		}
	}
	return out
}

// encodeEnvelope is the value of fieldEnvelope: "<complete> <algorithm
// version> <weights JSON>", then a newline and the learned preferences'
// JSON array when there are some.
func encodeEnvelope(f *Feed) []byte {
	complete := "0"
	if f.Complete {
		complete = "1"
	}
	b := make([]byte, 0, 32+len(f.ShownWeights)+len(f.ShownLearned))
	b = append(b, complete...)
	b = append(b, ' ')
	b = append(b, f.AlgorithmVersion...)
	b = append(b, ' ')
	b = append(b, f.ShownWeights...)
	if len(f.ShownLearned) > 0 {
		b = append(b, '\n')
		b = append(b, f.ShownLearned...)
	}
	return b
}

// pageMargin is how many items past a page a page read also asks for.
// The read is made before it knows how many schools swipes have taken off
// the feed's top since it was built (fieldRemoved: item k of the patched
// list is field j:<k + removed>), so it reads j:<from> to
// j:<from + limit + pageMargin - 1> with the removed schools, in the same
// HMGET, and uses the ones their count names. The worker's rebuild after a swipe starts the count again,
// so it is rarely above one or two; a read the margin does not cover is
// made again with the right names (Feeds.ReadPage).
const pageMargin = 4

// PageRead is a read of a page of a feed's described items in one plain
// command (an HMGET of the feed: one command sees one state of it, so a
// rebuild or a patch landing meanwhile cannot mix two), for a caller that
// queues it on a pipeline of its own (Queue) and reads its answer after
// the pipeline ran (Result). The page's probes were remembered when the feed was
// stored (query: Service.store), so the read writes nothing.
type PageRead struct {
	key         string
	from, limit int
	base        int                   // the removed count the read's names start at
	span        int                   // how many items past from+base it asks for
	fields      *redis.StringSliceCmd // an absent field reads ""
}

// PageRead is the read of items [offset, offset+limit) of studentID's
// feed.
func (s *Feeds) PageRead(studentID string, offset, limit int) *PageRead {
	return &PageRead{key: FeedKey(studentID), from: offset, limit: limit, span: limit + pageMargin}
}

// pageHead are the fields every page read asks for, before the items:
// catalogue version, counted swipes, schools eligible, envelope, and the
// schools swipes took off the top (16 bytes each).
var pageHead = []string{fieldCatalogVersion, fieldSwipes, fieldTotal, fieldEnvelope, fieldRemoved}

// Queue adds the read's command to pipe.
func (r *PageRead) Queue(ctx context.Context, pipe redis.Pipeliner) {
	args := make([]any, 0, 2+len(pageHead)+r.span)
	args = append(args, "hmget", r.key)
	args = append(args, pageHeadArgs...)
	for k := r.from + r.base; k < r.from+r.base+r.span; k++ {
		if k < len(describedArgs) {
			args = append(args, describedArgs[k])
		} else {
			args = append(args, fieldDescribedPrefix+strconv.Itoa(k))
		}
	}
	r.fields = redis.NewStringSliceCmd(ctx, args...)
	_ = pipe.Process(ctx, r.fields) // a pipeline queues; its Exec reports
}

// pageHeadArgs and describedArgs are the names a page read asks for, made
// into command arguments once: a page of 20 names 29 fields, which would
// otherwise each be formatted and boxed on every read.
var (
	pageHeadArgs  = toArgs(pageHead)
	describedArgs = func() []any {
		out := make([]any, 256)
		for k := range out {
			out[k] = fieldDescribedPrefix + strconv.Itoa(k)
		}
		return out
	}()
)

func toArgs(names []string) []any {
	out := make([]any, len(names))
	for i, n := range names {
		out[i] = n
	}
	return out
}

// errPageMoved is a read whose names missed the page: the feed's top moved
// by removed schools, which the read did not ask far enough for.
type errPageMoved struct{ removed int }

func (e errPageMoved) Error() string {
	return fmt.Sprintf("stored page: %d schools taken off the top, past the read's margin", e.removed)
}

// Result is the page the read found: ErrNotBuilt when the feed is not
// there (or is a tombstone, or has no described items) or when the page
// reaches past the described items while the list goes on; errPageMoved
// when the read must be made again (Feeds.ReadPage does).
func (r *PageRead) Result() (StoredPage, error) {
	var p StoredPage
	if r.fields == nil {
		return p, errors.New("stored page: read not made")
	}
	vals, err := r.fields.Result()
	if err != nil {
		return p, err
	}
	head := vals[:4] // pageHead's values but the removed schools
	for _, v := range head {
		if v == "" {
			return p, ErrNotBuilt
		}
	}
	var nums [3]int64
	for i := range nums {
		if nums[i], err = strconv.ParseInt(head[i], 10, 64); err != nil {
			return p, fmt.Errorf("stored page: header: %w", err)
		}
	}
	p.CatalogVersion, p.TotalSwipes, p.TotalCount = nums[0], int(nums[1]), int(nums[2])
	if err := parseEnvelope(&p, head[3]); err != nil {
		return p, err
	}
	last := min(r.from+r.limit, p.TotalCount)
	if last <= r.from {
		return p, nil
	}
	removed := len(vals[4]) / 16 // absent: none removed
	if removed < r.base || removed+last > r.from+r.base+r.span {
		return p, errPageMoved{removed}
	}
	items := vals[len(pageHead)+removed-r.base:]
	p.Items = make([]string, last-r.from)
	for k := range p.Items {
		v := items[k]
		if v == "" {
			return p, ErrNotBuilt
		}
		if v[0] == 'P' {
			v = v[min(len(v), MaxDescribedPrefix):]
		} else {
			v = v[1:]
		}
		p.Items[k] = v
	}
	return p, nil
}

// StoredPage is a page of described items as read from Redis.
type StoredPage struct {
	CatalogVersion   int64
	TotalSwipes      int      // the student's counted swipes (patched by swipes)
	TotalCount       int      // schools eligible (patched by swipes)
	Complete         bool     // the profile is complete (POST /recommendations serves it)
	AlgorithmVersion string   // the ranking the feed was built with
	Weights          []byte   // the preference weights shown, a JSON object (read-only: aliases the reply)
	Learned          []byte   // what was learned beyond the weights, a JSON array of strings; nil when the envelope has none (read-only)
	Items            []string // the page's JSON objects, as read (not copied); none for an empty page
}

// parseEnvelope reads fieldEnvelope into p.
func parseEnvelope(p *StoredPage, env string) error {
	complete, rest, ok1 := strings.Cut(env, " ")
	algo, weights, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 {
		return fmt.Errorf("stored page: malformed envelope %q", env)
	}
	p.Complete = complete == "1"
	weights, learned, _ := strings.Cut(weights, "\n")
	p.AlgorithmVersion, p.Weights = algo, aliasBytes(weights)
	if learned != "" {
		p.Learned = aliasBytes(learned)
	}
	return nil
}

// ReadPage reads items [offset, offset+limit) of a student's feed as the
// standard envelope shows them, in one round trip (two when the feed's top
// moved past the first read's margin). ErrNotBuilt when the feed is not
// there or the page reaches past the described items. r, when not nil, is
// a read already made: when it is this page's read, its answer is used,
// and the read made again only when it missed or did not answer.
func (s *Feeds) ReadPage(ctx context.Context, studentID string, offset, limit int, r *PageRead) (StoredPage, error) {
	read := s.PageRead(studentID, offset, limit)
	if r != nil && r.fields != nil && r.key == read.key && r.from == offset && r.limit == limit {
		p, err := r.Result()
		var moved errPageMoved
		switch {
		case err == nil, errors.Is(err, ErrNotBuilt):
			return p, err
		case errors.As(err, &moved):
			read.base, read.span = moved.removed, limit
		}
		// Otherwise the read did not answer: make it here.
	}
	var p StoredPage
	err := s.call(ctx, "read a page", func(ctx context.Context) error {
		for attempt := 0; ; attempt++ {
			if _, err := s.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
				read.Queue(ctx, pipe)
				return nil
			}); err != nil {
				return err
			}
			var (
				err   error
				moved errPageMoved
			)
			p, err = read.Result()
			switch {
			case !errors.As(err, &moved):
				return err
			case attempt == 2:
				return ErrNotBuilt // swipes keep moving it: the full path answers
			}
			read = &PageRead{key: read.key, from: offset, limit: limit, base: moved.removed, span: limit}
		}
	})
	return p, err
}
