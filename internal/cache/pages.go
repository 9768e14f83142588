package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/collegematch/matching/internal/handover"
)

// Stored pages of the standard envelope (POST /recommendations and
// /v2/recommendations). A feed keeps, besides its binary items, its first
// items as those endpoints show each one, encoded when the feed is built,
// and what the envelope around them says that a swipe's patch does not
// move (fieldEnvelope). A cached page is then one script call that returns
// the page's item bytes, which the API wraps in the envelope without
// decoding them.
//
// Item k of the list as built is field "j:<k>": "P" and the school id (36
// characters) for a probe, "-" for any other item, then the item's JSON
// object. A swipe's patch that takes schools off the top leaves these
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
	JSON     []byte
}

// describedFields are the field-value pairs of items, for HSET.
func describedFields(items []Described) []any {
	out := make([]any, 0, 2*len(items))
	for k, it := range items {
		v := make([]byte, 0, len(it.JSON)+37)
		if it.Probe {
			v = append(v, 'P')
			v = append(v, it.SchoolID...)
		} else {
			v = append(v, '-')
		}
		out = append(out, fieldDescribedPrefix+strconv.Itoa(k), append(v, it.JSON...))
	}
	return out
}

// encodeEnvelope is the value of fieldEnvelope.
func encodeEnvelope(f *Feed) []byte {
	complete := "0"
	if f.Complete {
		complete = "1"
	}
	b := make([]byte, 0, 32+len(f.ShownWeights))
	b = append(b, complete...)
	b = append(b, ' ')
	b = append(b, f.AlgorithmVersion...)
	b = append(b, ' ')
	return append(b, f.ShownWeights...)
}

// pageRead answers a page of a feed's described items: KEYS[1] the feed,
// KEYS[2] the probe memory (ProbesKey); ARGV offset, limit, now (Unix ms),
// probe TTL (ms), probe cap. It answers false when the feed is not there
// (or is a tombstone, or has no described items) or when the page reaches
// past the described items while the list goes on; otherwise
// "<cv> <n> <t>\n<envelope>\n" and the page's JSON objects joined by
// commas. The page's probes are remembered as served (Probes), in the same
// call. Only the page's items are read.
var pageRead = redis.NewScript(`
local f = redis.call('HMGET', KEYS[1], 'cv', 'n', 't', 'e')
if not f[1] or not f[2] or not f[3] or not f[4] then
  return false
end
local from, limit, total = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(f[3])
local last = math.min(from + limit, total)
if last <= from then
  return f[1] .. ' ' .. f[2] .. ' ' .. f[3] .. '\n' .. f[4] .. '\n'
end
local shift = redis.call('HSTRLEN', KEYS[1], 'x') / 16
local names = {}
for k = from, last - 1 do
  names[#names + 1] = 'j:' .. (k + shift)
end
local vals = redis.call('HMGET', KEYS[1], unpack(names))
local out, probes = {}, {}
for i, v in ipairs(vals) do
  if not v then
    return false
  end
  if string.byte(v, 1) == 80 then
    probes[#probes + 1] = string.sub(v, 2, 37)
    out[i] = string.sub(v, 38)
  else
    out[i] = string.sub(v, 2)
  end
end
if #probes > 0 then
  local now = tonumber(ARGV[3])
  for _, id in ipairs(probes) do
    redis.call('ZADD', KEYS[2], now, id)
  end
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - tonumber(ARGV[4]))
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -tonumber(ARGV[5]) - 1)
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
end
return f[1] .. ' ' .. f[2] .. ' ' .. f[3] .. '\n' .. f[4] .. '\n' .. table.concat(out, ',')
`)

// PageCall is a page read for a caller that runs it in a pipeline of its
// own (by its hash: on NOSCRIPT, read again with Feeds.Page, which loads
// it) and reads the answer with ParsePage.
type PageCall struct {
	Script *redis.Script
	Keys   []string
	Args   []any
}

// PageCall is the read of items [offset, offset+limit) of studentID's feed
// at nowMillis (see Page).
func (s *Feeds) PageCall(studentID string, offset, limit int, nowMillis int64) PageCall {
	return PageCall{Script: pageRead, Keys: pageKeys(studentID), Args: pageArgs(offset, limit, nowMillis, s.ttl.Milliseconds())}
}

// pageKeys are the keys of a page read of studentID's feed.
func pageKeys(studentID string) []string { return []string{FeedKey(studentID), ProbesKey(studentID)} }

// pageArgs are the arguments of a page read: items [offset, offset+limit)
// at nowMillis, probes remembered for probeTTL milliseconds.
func pageArgs(offset, limit int, nowMillis, probeTTL int64) []any {
	return []any{offset, limit, nowMillis, probeTTL, maxProbes}
}

// StoredPage is a page of described items as read from Redis.
type StoredPage struct {
	CatalogVersion   int64
	TotalSwipes      int    // the student's counted swipes (patched by swipes)
	TotalCount       int    // schools eligible (patched by swipes)
	Complete         bool   // the profile is complete (POST /recommendations serves it)
	AlgorithmVersion string // the ranking the feed was built with
	Weights          []byte // the preference weights shown, a JSON object
	Items            []byte // the page's JSON objects joined by commas; empty for an empty page
}

// ParsePage reads a page read's answer. The slices alias raw.
func ParsePage(raw []byte) (StoredPage, error) {
	var p StoredPage
	head, rest, ok := bytes.Cut(raw, []byte("\n"))
	if !ok {
		return p, errors.New("stored page: no header line")
	}
	env, items, ok := bytes.Cut(rest, []byte("\n"))
	if !ok {
		return p, errors.New("stored page: no envelope line")
	}
	nums := strings.Fields(string(head))
	if len(nums) != 3 {
		return p, fmt.Errorf("stored page: malformed header %q", head)
	}
	var ints [3]int64
	for i, s := range nums {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return p, fmt.Errorf("stored page: header: %w", err)
		}
		ints[i] = v
	}
	p.CatalogVersion, p.TotalSwipes, p.TotalCount = ints[0], int(ints[1]), int(ints[2])
	complete, env, ok1 := bytes.Cut(env, []byte(" "))
	algo, weights, ok2 := bytes.Cut(env, []byte(" "))
	if !ok1 || !ok2 {
		return p, fmt.Errorf("stored page: malformed envelope %q", env)
	}
	p.Complete = string(complete) == "1"
	p.AlgorithmVersion, p.Weights, p.Items = string(algo), weights, items
	return p, nil
}

// Page reads items [offset, offset+limit) of a student's feed as the
// standard envelope shows them, remembering its probes as served (for the
// feed TTL), in one round trip. ErrNotBuilt when the feed is not there or
// the page reaches past the described items.
func (s *Feeds) Page(ctx context.Context, studentID string, offset, limit int, nowMillis int64) (StoredPage, error) {
	var p StoredPage
	err := s.call(ctx, "read a page", func(ctx context.Context) error {
		var cmd *redis.Cmd
		err := handover.Exec(ctx, s.rdb, []*redis.Script{pageRead}, func(pipe redis.Pipeliner) error {
			c := s.PageCall(studentID, offset, limit, nowMillis)
			cmd = pageRead.EvalSha(ctx, pipe, c.Keys, c.Args...)
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		raw, err := cmd.Text()
		if errors.Is(err, redis.Nil) {
			return ErrNotBuilt
		}
		if err != nil {
			return err
		}
		p, err = ParsePage([]byte(raw))
		return err
	})
	return p, err
}
