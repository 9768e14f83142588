package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/collegematch/matching/internal/handover"
)

// The write side's Redis: one round trip before a swipe's commit (what the
// answer is predicted from) and one after it (the stored feed patched, the
// learner's task handed over), each bounded by CallTimeout and skipped for
// RetryAfterFailure after a failure. Neither is needed for the swipe to be
// recorded: without the first the answer is predicted from PostgreSQL, and
// what the second does not do the worker's rebuild and learn sweep do.

// SwipeView is what the write side reads before recording swipes.
type SwipeView struct {
	// Found: the student has a stored feed (not a tombstone). Profile and
	// Model are the scoring view of the profile and the learned model it
	// was ranked with.
	Found   bool
	Profile []byte
	Model   []byte
	// Slots are, per school asked about, its place in the stored feed:
	// SlotProbe, SlotExploration, SlotRanked, or "" when it is not among
	// its items.
	Slots []string
	// WasProbe are, per school asked about, whether it was served to the
	// student as a probe within the probe memory's TTL (Probes).
	WasProbe []bool
}

// Slot kinds of a feed item.
const (
	SlotRanked      = "ranked"
	SlotExploration = "exploration"
	SlotProbe       = "probe"
)

// patchFeed moves a student's stored feed to writes just committed:
// KEYS[1] the feed; ARGV: the student version after them, the counted
// swipes after them, the TTL (ms), then for each school a counted swipe
// took, its 16 bytes and its id (lower case). It answers what it did, as
// the index of its PatchResult: a feed or tombstone of that version or
// newer is left alone (0, stale), and so is a student with none (3).
//
// When the swiped schools are the feed's next items (a client swipes its
// feed from the top), the patch keeps every later item where the probe
// rule wants it: the counts move and the schools are added, in order, to
// those taken off the top (x), which readers skip in the items, the
// compact page and the described items (pages.go), all left as built; so
// every later item moves up by as many places as the count moved, and the
// order stays the one learned before until the worker's rebuild (1). The
// patch reads the items and writes only the small fields: no page goes
// through the script. The schools taken out are kept in order, so a page
// deeper than the stored items extends the list the feed was built as
// (query: Service.deeper). Otherwise (a school further down, a repeat
// swipe on a school no longer listed) a patch would put probes in the
// wrong places: the feed is dropped for a tombstone of the new version
// instead, and the next read builds it (2). The tombstone keeps the
// header and the model (the profile and the learned model, which a swipe
// does not change), so the next swipe is still predicted from Redis
// rather than PostgreSQL; readers see no feed until one is built. A
// tombstone there already is given the new version (4).
var patchFeed = redis.NewScript(`
local cur = redis.call('HMGET', KEYS[1], 'sv', 'ib', 't', 'x')
if not cur[1] then
  return 3
end
if tonumber(cur[1]) >= tonumber(ARGV[1]) then
  return 0
end
local tomb = not cur[2]
local k = (#ARGV - 3) / 2
if k == 0 then
  redis.call('HSET', KEYS[1], 'sv', ARGV[1], 'n', ARGV[2])
  if tomb then
    return 4
  end
  return 1
end
local items, x = cur[2] or '', cur[4] or ''
local size = ` + strconv.Itoa(itemSize) + `
local from = #x / 16
local head, removed = {}, {}
for j = from, from + k - 1 do
  if #items < (j + 1) * size then
    head = nil
    break
  end
  local id = string.sub(items, j * size + 1, j * size + 16)
  head[id] = true
  removed[#removed + 1] = id
end
local ok = head ~= nil
if ok then
  local seen = {}
  for a = 4, #ARGV - 1, 2 do
    if not head[ARGV[a]] or seen[ARGV[a]] then
      ok = false
      break
    end
    seen[ARGV[a]] = true
  end
end
if not ok then
  local keep = redis.call('HMGET', KEYS[1], 'h', 'l')
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1], 'sv', ARGV[1], 'lv', '0', 'cv', '0')
  if keep[1] and keep[2] then
    redis.call('HSET', KEYS[1], 'h', keep[1], 'l', keep[2])
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  if tomb then
    return 4
  end
  return 2
end
redis.call('HSET', KEYS[1], 'sv', ARGV[1], 'n', ARGV[2], 'x', x .. table.concat(removed),
  't', tostring(math.max(0, (tonumber(cur[3]) or k) - k)))
return 1
`)

// SwipeTrips is the write side's Redis (see above), over the feed store
// (whose breaker it shares) and the task queue.
type SwipeTrips struct {
	feeds  *Feeds
	queuer *handover.Queuer
}

// NewSwipeTrips builds the write side's Redis over feeds.
func NewSwipeTrips(feeds *Feeds, queuer *handover.Queuer) *SwipeTrips {
	if feeds == nil || queuer == nil {
		panic("cache.NewSwipeTrips: nil dependency")
	}
	return &SwipeTrips{feeds: feeds, queuer: queuer}
}

// BeforeSwipe reads what swipes on schoolIDs are predicted from, in one
// round trip.
func (t *SwipeTrips) BeforeSwipe(ctx context.Context, studentID string, schoolIDs ...string) (SwipeView, error) {
	read, err := t.ViewRead(studentID, schoolIDs...)
	if err != nil {
		return SwipeView{}, err
	}
	var v SwipeView
	err = t.feeds.call(ctx, "read before a swipe", func(ctx context.Context) error {
		err := handover.Exec(ctx, t.feeds.rdb, nil, func(pipe redis.Pipeliner) error {
			read.Queue(ctx, pipe)
			return nil
		})
		if err != nil {
			return err
		}
		v, err = read.View()
		return err
	})
	return v, err
}

// SwipeViewRead is BeforeSwipe's read as commands for a pipeline of the
// caller's: POST /swipe queues it with the request's rate-limit count, so
// the swipe's Redis round trip before its commit is the count's. It is
// plain reads, no script: the feed's header, model, items and the schools
// taken off the top (one HMGET), and each school's probe memory (ZSCORE);
// the schools are looked up in the items here, so the items are read as
// they are stored rather than copied into a script.
type SwipeViewRead struct {
	studentID string
	schoolIDs []string
	ids       [][16]byte // schoolIDs as the items store them
	ttl       time.Duration
	fields    *redis.SliceCmd
	scores    []*redis.FloatCmd
}

// ViewRead builds the read of what swipes on schoolIDs are predicted from.
func (t *SwipeTrips) ViewRead(studentID string, schoolIDs ...string) (*SwipeViewRead, error) {
	ids := make([][16]byte, len(schoolIDs))
	for i, id := range schoolIDs {
		school, err := uuid.Parse(id)
		if err != nil {
			return nil, fmt.Errorf("cache: school id %q: %w", id, err)
		}
		ids[i] = school
	}
	return &SwipeViewRead{studentID: studentID, schoolIDs: schoolIDs, ids: ids, ttl: t.feeds.ttl}, nil
}

// Queue queues the read in pipe. The pipeline's Exec then reports
// redis.Nil for a school with no probe memory, which is no failure: View
// reads each answer.
func (r *SwipeViewRead) Queue(ctx context.Context, pipe redis.Pipeliner) {
	r.fields = pipe.HMGet(ctx, FeedKey(r.studentID), fieldHeader, fieldModel, fieldItems, fieldRemoved)
	r.scores = make([]*redis.FloatCmd, len(r.schoolIDs))
	probes := ProbesKey(r.studentID)
	for i, id := range r.schoolIDs {
		r.scores[i] = pipe.ZScore(ctx, probes, strings.ToLower(id))
	}
}

// For reports whether the read is of the swipes of studentID on schoolIDs.
func (r *SwipeViewRead) For(studentID string, schoolIDs ...string) bool {
	return r != nil && r.studentID == studentID && slices.Equal(r.schoolIDs, schoolIDs)
}

// View is the read's answer, once its pipeline ran. An error (not queued,
// Redis failed) leaves the caller to read again with BeforeSwipe.
func (r *SwipeViewRead) View() (SwipeView, error) {
	if r.fields == nil {
		return SwipeView{}, errors.New("cache: the read before a swipe was not made")
	}
	vals, err := r.fields.Result()
	if err != nil {
		return SwipeView{}, err
	}
	if len(vals) != 4 {
		return SwipeView{}, errors.New("cache: unexpected answer before a swipe")
	}
	n := len(r.schoolIDs)
	v := SwipeView{Slots: make([]string, n), WasProbe: make([]bool, n)}
	h, _ := vals[0].(string)
	l, _ := vals[1].(string)
	if h != "" && l != "" {
		if p, ok := headerProfile([]byte(h)); ok {
			v.Found, v.Profile, v.Model = true, p, []byte(l)
		}
	}
	items, _ := vals[2].(string)
	removed, _ := vals[3].(string)
	for k := range n {
		v.Slots[k] = slotIn(items, len(removed)/16, r.ids[k])
		score, err := r.scores[k].Result()
		switch {
		case errors.Is(err, redis.Nil):
		case err != nil:
			return SwipeView{}, err
		default:
			v.WasProbe[k] = time.Since(time.UnixMilli(int64(score))) <= r.ttl
		}
	}
	return v, nil
}

// slotIn is the slot of school among the stored items past the first
// skip (the schools swipes took off the top), "" when it is not among
// them.
func slotIn(items string, skip int, school [16]byte) string {
	for at := skip * itemSize; at+itemSize <= len(items); at += itemSize {
		if items[at:at+16] != string(school[:]) {
			continue
		}
		switch flags := items[at+itemSize-1]; {
		case flags&flagProbe != 0:
			return SlotProbe
		case flags&flagExploration != 0:
			return SlotExploration
		default:
			return SlotRanked
		}
	}
	return ""
}

// FeedPatch is what committed writes change in the student's stored feed.
type FeedPatch struct {
	StudentID  string
	Version    int64 // the student's version after the writes
	SwipeCount int   // the student's counted swipes after them
	// Swiped are the schools counted swipes took; they leave the feed.
	Swiped []string
}

// A PatchResult is what a write's patch did to the student's stored feed.
type PatchResult string

// The results of a patch (patchFeed's answers, in order: 0 to 4).
const (
	// PatchStale: a feed or tombstone of the writes' version or newer was
	// there, and is left alone.
	PatchStale PatchResult = "stale"
	// PatchPatched: the feed was moved to the writes (the swiped schools
	// were its next items, or the writes swiped none).
	PatchPatched PatchResult = "patched"
	// PatchDropped: the swiped schools were not the feed's next items, so
	// it was dropped for a tombstone; the next read or rebuild builds it.
	PatchDropped PatchResult = "dropped"
	// PatchNone: nothing was stored for the student.
	PatchNone PatchResult = "none"
	// PatchTombstone: a hash without items was there (a tombstone of a
	// dropped or invalidated feed; during a rolling deploy, also a feed of
	// an earlier layout); it now carries the writes' version.
	PatchTombstone PatchResult = "tombstone"
)

// PatchResults are every PatchResult, in the script's order.
var PatchResults = []PatchResult{PatchStale, PatchPatched, PatchDropped, PatchNone, PatchTombstone}

// AfterWrite patches the student's stored feed (see patchFeed; a feed the
// writes do not fit is dropped) and queues jobs, in one round trip, and
// says what the patch did. In the rare round trip that Redis had to be
// given a script again (NOSCRIPT: the pipeline runs twice), a patch made
// by the first run is told as stale. The jobs' results are not needed: a job whose
// id is in the queue already is there.
func (t *SwipeTrips) AfterWrite(ctx context.Context, p FeedPatch, jobs ...handover.Job) (PatchResult, error) {
	args := []any{p.Version, p.SwipeCount, t.feeds.ttl.Milliseconds()}
	for _, id := range p.Swiped {
		school, err := uuid.Parse(id)
		if err != nil {
			return "", fmt.Errorf("cache: school id %q: %w", id, err)
		}
		args = append(args, string(school[:]), strings.ToLower(id))
	}
	var patch *redis.Cmd
	err := t.feeds.call(ctx, "patch after a write", func(ctx context.Context) error {
		return handover.Exec(ctx, t.feeds.rdb, []*redis.Script{patchFeed}, func(pipe redis.Pipeliner) error {
			patch = patchFeed.EvalSha(ctx, pipe, []string{FeedKey(p.StudentID)}, args...)
			for _, j := range jobs {
				if _, err := t.queuer.Queue(ctx, pipe, j); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return "", err
	}
	n, err := patch.Int()
	if err != nil {
		return "", fmt.Errorf("cache: the feed patch's answer: %w", err)
	}
	if n < 0 || n >= len(PatchResults) {
		return "", fmt.Errorf("cache: the feed patch answered %d, which is no PatchResult", n)
	}
	return PatchResults[n], nil
}
