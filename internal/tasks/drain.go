package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/match"
)

// The learn drain folds swipes in batches. A swipe (or a sync push, or the
// swipes a continuous-feed request carries) marks its student as pending in
// the student's shard (LearnMark): a sorted set of student ids scored by the
// student version the write produced. The mark queues a learn:drain task
// for the shard only when none is armed, so while a drain runs, the swipes
// of every student of its shard join its next batch instead of queueing a
// task each. A drain takes up to drainBatch students at a time, reads them
// with one statement, folds each student's new events once, saves every
// fold with one statement, rebuilds their feeds (eight to a Redis round
// trip), and clears the students whose folded version covers their mark in the same
// round trip that reads the next batch. When its shard is empty it
// disarms, and the next mark queues a new task.
//
// Learning stays exactly once: what a fold takes is what the student's
// learned state has not folded (its cursors), and a fold is saved only over
// the version it read. The pending set is only a hint of who to look at: a
// student it loses (Redis lost its data, a mark that failed after the
// commit) is found by the learn sweep, which marks them again.
const (
	// TypeLearnDrain is the task that drains one shard's pending students.
	TypeLearnDrain = "learn:drain"
	// DefaultLearnShards is how many shards students are spread over
	// unless SetLearnShards (LEARN_SHARDS) says otherwise: at most this
	// many drains run at once, fleet-wide, each on one core at a time (at
	// about 1.5 ms a fold and rebuild on 6,500 schools, some 2,500 folds a
	// second at 4). About twice the cores the workers fold on: fewer shards
	// make fuller batches (a shard's drain takes the students that swiped
	// while it worked or gathered, drainGather, so its read, save, Redis
	// round trips and queue task are shared by more swipes), and more
	// drains than that only take turns on the cores, every batch's
	// students waiting for the slowest (at 500 swipes/s on two cores, 8
	// shards left the learned feed 1.4-3 s behind at p99, 4 under 0.25 s).
	// A fleet that must fold more sets more.
	DefaultLearnShards = 4
	// maxLearnShard bounds the shard count and the shard a learn:drain task
	// may name: a task queued by an API spreading students over more shards
	// than this worker still drains its shard's pending set.
	maxLearnShard = 1024
	// legacyLearnShards is the spread of the builds before the count was a
	// setting: while an API of such a build runs beside this one (a rolling
	// update), it marks students in shards up to 31, whose drains this
	// worker runs; erasures forget marks there too, and LearnPending counts
	// them. The first shards are the same keys in every spread.
	legacyLearnShards = 32
	// formerDefaultShards is the default count of the builds before it was
	// four: an API of such a build marks students in shards up to 7.
	formerDefaultShards = 8

	// drainBatch is how many students one batch takes.
	drainBatch = 64
	// drainEvents is how many of one student's new events one batch reads;
	// a longer backlog is folded page by page in the batches that follow.
	drainEvents = 500
	// drainArmFor is how long an arm lasts without a batch renewing it: a
	// drain that died (its worker killed) holds its shard's marks back at
	// most this long (asynq also runs it again once its lease is over).
	drainArmFor = time.Minute
)

// drainGather is the least time between the starts of two batches of a
// drain, unless the last batch was full: the first swipe of a quiet shard
// is folded at once, and while swipes keep coming the drain lets them
// gather for this long, so that one read, one save and one Redis round
// trip serve several students (at 300 swipes/s over 4 shards, about
// eight). It adds at most this much to the learned feed's lag.
var drainGather = 100 * time.Millisecond

// drainRun is how long one drain task takes batches before it hands its
// shard on to a new task (so no task nears its timeout, and other queues
// get the slot now and then).
var drainRun = 10 * time.Second

// drainTimeout is asynq's timeout of a learn:drain task: its run and a
// last batch.
const drainTimeout = 30 * time.Second

// LearnDrainPayload names the shard a learn:drain task drains.
type LearnDrainPayload struct {
	Shard int `json:"shard"`
}

// learnShards is the shard count (SetLearnShards).
var learnShards atomic.Uint32

func init() { learnShards.Store(DefaultLearnShards) }

// SetLearnShards sets how many shards students are spread over
// (LEARN_SHARDS); the API and the worker must set the same count. It is
// called once at start-up.
func SetLearnShards(n int) error {
	if n < 1 || n > maxLearnShard {
		return fmt.Errorf("learn shards: %d is not from 1 to %d", n, maxLearnShard)
	}
	learnShards.Store(uint32(n))
	return nil
}

// LearnShards is how many shards students are spread over.
func LearnShards() int { return int(learnShards.Load()) }

// LearnShard is the shard of a student id (any case).
func LearnShard(studentID string) int { return shardOf(studentID, learnShards.Load()) }

// shardOf is the shard of a student id among n.
func shardOf(studentID string, n uint32) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(strings.ToLower(studentID)))
	return int(h.Sum32() % n)
}

// learnDrainName names the drain of shard in handover's keys.
func learnDrainName(shard int) string { return "learn:" + strconv.Itoa(shard) }

// learnDrainJob is a learn:drain task for shard, under a fresh id (a drain
// task is queued once per arm, so its id needs to be unique, not derived).
// Every swipe builds one (LearnMark), so it is built with few allocations.
func learnDrainJob(shard int) handover.Job {
	id := make([]byte, 0, 64)
	id = strconv.AppendInt(append(id, "learn-drain:"...), int64(shard), 10)
	id = strconv.AppendInt(append(id, ':'), time.Now().UnixNano(), 36)
	id = strconv.AppendUint(append(id, '-'), rand.Uint64(), 36)
	return handover.Job{ID: string(id), Type: TypeLearnDrain, Payload: drainPayloads[shard], Queue: QueueCritical,
		MaxRetry: 25, Timeout: drainTimeout}
}

// drainPayloads are the payloads of each shard's learn:drain tasks, made
// once (read only: a job's payload is copied into its task message).
var drainPayloads = func() (p [maxLearnShard][]byte) {
	for n := range p {
		p[n], _ = json.Marshal(LearnDrainPayload{Shard: n}) // a number
	}
	return p
}()

// RetryDelayFunc is the wait before a failed task runs again: for a
// learn:drain, DrainRetryDelay; for any other type, next's. A failed drain
// keeps its shard armed, so the shard's new marks wait for its retry
// (asynq's own backoff starts at 15 to 45 s).
func RetryDelayFunc(next asynq.RetryDelayFunc) asynq.RetryDelayFunc {
	return func(n int, err error, t *asynq.Task) time.Duration {
		if t != nil && t.Type() == TypeLearnDrain {
			return DrainRetryDelay(n, rand.Float64)
		}
		return next(n, err, t)
	}
}

// DrainRetryDelay is the wait before a learn:drain runs again after its
// n-th failure (n from 0): 1 s doubling to at most 30 s, with +-20 %
// jitter, so that the drains failed by one Redis or PostgreSQL hiccup do
// not all come back at once. rnd gives numbers in [0, 1).
func DrainRetryDelay(n int, rnd func() float64) time.Duration {
	d := 30 * time.Second
	if n < 5 {
		d = time.Second << n
	}
	return time.Duration(float64(d) * (1 + 0.2*(2*rnd()-1)))
}

// LearnMark is the hand-over of a swipe (or of several, in one write) that
// moved studentID to version: the student marked pending in their shard,
// and the shard's drain queued when none is armed.
func LearnMark(studentID string, version int64) handover.Job {
	shard := LearnShard(studentID)
	j := learnDrainJob(shard)
	j.Drain = &handover.DrainMark{Name: learnDrainName(shard), Member: strings.ToLower(studentID), Score: version,
		ArmFor: drainArmFor}
	return j
}

// LearnDrainKeys are the pending set and arm key of the student's shard.
func LearnDrainKeys(studentID string) (pending, armed string) {
	return handover.DrainKeys(QueueCritical, learnDrainName(LearnShard(studentID)))
}

// ForgetLearnMarks removes erased students from their shards' pending and
// order sets (in the spreads of older builds too, the former default of 8
// and the legacy 32: an older API may have marked them there), in one
// round trip.
// A mark in a spread of another count (LEARN_SHARDS changed while the
// student's mark waited) is not found here: its drain clears it, an erased
// student's with nothing folded.
func ForgetLearnMarks(ctx context.Context, rdb redis.UniversalClient, studentIDs ...string) error {
	if len(studentIDs) == 0 {
		return nil
	}
	// Each shard's pending set, with the students to take out of it.
	var keys []string
	members := map[string][]any{}
	for _, id := range studentIDs {
		shards := []int{LearnShard(id)}
		for _, spread := range []uint32{formerDefaultShards, legacyLearnShards} {
			if n := shardOf(id, spread); !slices.Contains(shards, n) {
				shards = append(shards, n)
			}
		}
		for _, n := range shards {
			pending, _ := handover.DrainKeys(QueueCritical, learnDrainName(n))
			if _, ok := members[pending]; !ok {
				keys = append(keys, pending)
			}
			members[pending] = append(members[pending], strings.ToLower(id))
		}
	}
	_, err := rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for _, k := range keys {
			pipe.ZRem(ctx, k, members[k]...)
			pipe.ZRem(ctx, handover.DrainOrder(k), members[k]...)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("forget %d students' learn marks: %w", len(studentIDs), err)
	}
	return nil
}

// LearnPending counts the students marked in every shard's learn drain,
// those of the legacy spread included (one round trip).
func LearnPending(ctx context.Context, rdb redis.UniversalClient) (int, error) {
	cmds := make([]*redis.IntCmd, max(LearnShards(), legacyLearnShards))
	_, err := rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for n := range cmds {
			pending, _ := handover.DrainKeys(QueueCritical, learnDrainName(n))
			cmds[n] = pipe.ZCard(ctx, pending)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("count the learn drains' students: %w", err)
	}
	total := 0
	for _, c := range cmds {
		total += int(c.Val())
	}
	return total, nil
}

// LearnDrains gives the worker's drains their Redis.
type LearnDrains struct {
	rdb    redis.UniversalClient
	client *handover.Client
}

// NewLearnDrains makes the drains on rdb (the queues' Redis).
func NewLearnDrains(rdb redis.UniversalClient) *LearnDrains {
	if rdb == nil {
		panic("tasks.NewLearnDrains: nil client")
	}
	return &LearnDrains{rdb: rdb, client: handover.NewClient(rdb, handover.NewQueuer())}
}

// Pending reports which of studentIDs are marked in their shard's learn
// drain while it is armed, in one round trip. A student marked in a shard
// that is not armed (its drain task died and its arm lapsed) is not: the
// next mark queues a drain for the shard.
func (d *LearnDrains) Pending(ctx context.Context, studentIDs []string) (map[string]bool, error) {
	scores := make([]*redis.FloatCmd, len(studentIDs))
	armed := make(map[int]*redis.IntCmd, min(len(studentIDs), LearnShards()))
	_, err := d.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, id := range studentIDs {
			shard := LearnShard(id)
			pending, arm := handover.DrainKeys(QueueCritical, learnDrainName(shard))
			scores[i] = pipe.ZScore(ctx, pending, strings.ToLower(id))
			if armed[shard] == nil {
				armed[shard] = pipe.Exists(ctx, arm)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) { // redis.Nil: a student not marked
		return nil, fmt.Errorf("read the learn drains' marks of %d students: %w", len(studentIDs), err)
	}
	out := make(map[string]bool, len(studentIDs))
	for i, id := range studentIDs {
		marked := scores[i].Err()
		arm, err := armed[LearnShard(id)].Result()
		switch {
		case err != nil:
			return nil, fmt.Errorf("read the learn drains' arms: %w", err)
		case marked != nil && !errors.Is(marked, redis.Nil):
			return nil, fmt.Errorf("read the learn drains' marks: %w", marked)
		}
		out[id] = marked == nil && arm == 1
	}
	return out, nil
}

func (d *LearnDrains) shard(n int) *handover.Drain {
	return handover.NewDrain(d.rdb, QueueCritical, learnDrainName(n), drainArmFor)
}

// handleLearnDrain drains one shard: batch after batch until the shard is
// empty (and so disarmed), or until drainRun has passed, when it queues a
// new task for the shard (which stays armed) and ends. A batch that fails
// fails the task: the students it did not clear stay pending, and asynq
// runs the task again.
func (h *Handler) handleLearnDrain(ctx context.Context, t *asynq.Task) error {
	var p LearnDrainPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.Shard < 0 || p.Shard >= maxLearnShard {
		return fmt.Errorf("decode %s payload %q: %w", t.Type(), t.Payload(), asynq.SkipRetry)
	}
	l := h.learn
	drain := l.drains.shard(p.Shard)
	until := l.now().Add(drainRun)
	// covered is the student version this task has folded and rebuilt
	// each student's feed to: a mark that comes back with no higher score
	// (its write was folded by a batch that read the student after it)
	// is cleared with no work.
	covered := map[string]int64{}
	var done []handover.Pending
	var gathered time.Time // when the next batch may be taken
	for {
		if wait := time.Until(gathered); wait > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err() // the students stay marked: the task runs again
			case <-time.After(wait):
			}
		}
		batch, err := drain.Next(ctx, done, drainBatch)
		if err != nil {
			return err
		}
		if len(batch) == 0 {
			return nil // disarmed: the next mark queues a new drain
		}
		if len(batch) < drainBatch {
			gathered = time.Now().Add(drainGather)
		} else {
			gathered = time.Time{} // more are waiting
		}
		if l.now().After(until) {
			if _, err := l.drains.client.Queue(ctx, learnDrainJob(p.Shard)); err != nil {
				return fmt.Errorf("hand the learn drain of shard %d on: %w", p.Shard, err)
			}
			return nil
		}
		if done, err = h.drainBatch(ctx, batch, covered); err != nil {
			return fmt.Errorf("learn drain of shard %d: %w", p.Shard, err)
		}
	}
}

// drainBatch folds the new events of batch's students, saves the folds and
// rebuilds their feeds, and returns the marks it covered, each with the
// student version folded (a mark scored at most that is cleared). A
// student whose save lost to another fold, or whose backlog is longer
// than a batch reads, is not returned: it stays pending and the next batch
// reads it again.
func (h *Handler) drainBatch(ctx context.Context, batch []handover.Pending, covered map[string]int64) ([]handover.Pending, error) {
	l := h.learn
	ids := make([]string, 0, len(batch))
	for _, p := range batch {
		if v, ok := covered[p.Member]; ok && p.Score <= v {
			l.m.Coalesced.Inc()
			continue
		}
		ids = append(ids, p.Member)
	}
	if len(ids) == 0 {
		return coveredMarks(batch, covered), nil
	}
	l.m.DrainBatch.Observe(float64(len(ids)))
	states, err := l.store.LearnerStates(ctx, ids, drainEvents)
	if err != nil {
		return nil, fmt.Errorf("read %d learning states: %w", len(ids), err)
	}
	cat, err := h.catalogFor(ctx, states)
	if err != nil {
		return nil, err
	}
	found := make(map[string]bool, len(states))
	var (
		saves   []domain.LearningSave
		folds   []drainFold
		rebuild []domain.LearnerState // nothing new to fold: rebuilt as they are
	)
	for _, st := range states {
		id := strings.ToLower(st.Student.ID)
		found[id] = true
		switch {
		case st.Student.DeletedAt != nil:
			covered[id] = st.Version
		case len(st.New) == 0:
			rebuild = append(rebuild, st)
		default:
			up, learned, rebuilt, err := learn(st, cat, func() ([]domain.LearnEvent, error) {
				return l.store.LearnHistory(ctx, st.Student.ID, max(st.LastSwipeID, lastSwipe(st.New)), max(st.LastFeedbackID, lastFeedback(st.New)))
			})
			if err != nil {
				return nil, fmt.Errorf("fold learning of %s: %w", st.Student.ID, err)
			}
			saves = append(saves, domain.LearningSave{StudentID: st.Student.ID, From: st.LearningVersion, Update: up})
			folds = append(folds, drainFold{st: st, up: up, learned: learned, rebuilt: rebuilt})
		}
	}
	for _, id := range ids {
		if !found[id] {
			covered[id] = 1<<63 - 1 // unknown (erased and gone): nothing will ever be folded
		}
	}
	saved, err := l.store.SaveLearnings(ctx, saves)
	if err != nil {
		return nil, fmt.Errorf("store %d learning states: %w", len(saves), err)
	}
	states = states[:0]
	models := make([]*match.Model, 0, len(folds)+len(rebuild))
	var lagged []domain.LearnEvent
	for i := range folds {
		f := &folds[i]
		version, ok := saved[f.st.Student.ID]
		if !ok {
			l.m.Conflicts.Inc()
			continue
		}
		if f.rebuilt {
			l.m.Rebuilds.Inc()
		}
		for _, e := range f.st.New {
			l.m.Events.WithLabelValues(eventKind(e)).Inc()
		}
		if len(f.st.New) >= drainEvents {
			continue // more to read: the feed is rebuilt once it is all folded
		}
		folded := f.st
		folded.Model, folded.Weights, folded.LearningVersion = f.up.Model, f.up.Weights, version
		folded.LastSwipeID, folded.LastFeedbackID, folded.LastSeq, folded.Swiped = f.up.LastSwipeID, f.up.LastFeedbackID, f.up.LastSeq, f.up.Swiped
		folded.New = nil
		states = append(states, folded)
		models = append(models, &f.learned)
		lagged = append(lagged, f.st.New...)
	}
	for _, st := range rebuild {
		states = append(states, st)
		models = append(models, nil)
	}
	if len(states) > 0 {
		if err := l.feeds.RebuildFeeds(ctx, states, models); err != nil {
			return nil, fmt.Errorf("rebuild %d feeds: %w", len(states), err)
		}
	}
	now := l.now()
	for _, e := range lagged {
		if e.SwipeID != 0 {
			l.m.FeedLag.Observe(max(0, now.Sub(e.CreatedAt).Seconds()))
		}
	}
	for _, st := range states {
		covered[strings.ToLower(st.Student.ID)] = st.Version
	}
	done := coveredMarks(batch, covered)
	if len(done) == 0 && len(saved) == 0 {
		// Nothing moved (every save lost to another fold, or the state read
		// is behind the marks): give the others a moment before reading again.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(noProgressPause):
		}
	}
	h.log.DebugContext(ctx, "learn drain batch", "students", len(ids), "folded", len(saved), "rebuilt", len(states))
	return done, nil
}

// noProgressPause is how long a drain waits after a batch that covered
// no mark and saved no fold.
const noProgressPause = 100 * time.Millisecond

// coveredMarks are the marks of batch that covered says are done, each
// with the version it was covered to (Drain.Next clears a mark scored at
// most that).
func coveredMarks(batch []handover.Pending, covered map[string]int64) []handover.Pending {
	done := make([]handover.Pending, 0, len(batch))
	for _, p := range batch {
		if v, ok := covered[p.Member]; ok && p.Score <= v {
			done = append(done, handover.Pending{Member: p.Member, Score: v})
		}
	}
	return done
}

// drainFold is one student's fold in a batch.
type drainFold struct {
	st      domain.LearnerState
	up      domain.LearningUpdate
	learned match.Model
	rebuilt bool
}

// catalogFor is the catalogue to fold states on: reloaded first when it
// lacks a school of their events (folding would leave the event out for
// good; a school still unknown after is no longer served).
func (h *Handler) catalogFor(ctx context.Context, states []domain.LearnerState) (*match.Catalog, error) {
	l := h.learn
	cat := l.catalogs.Scoring()
	for _, st := range states {
		if !knowsAll(cat, st.New) {
			if _, err := l.catalogs.Refresh(ctx); err != nil {
				return nil, fmt.Errorf("reload the catalogue: %w", err)
			}
			return l.catalogs.Scoring(), nil
		}
	}
	return cat, nil
}
