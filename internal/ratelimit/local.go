package ratelimit

import (
	"hash/maphash"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
)

// local counts allowances in the replica's own memory, for the time Redis
// cannot count them (Limiter falls back to it). It runs the same GCRA as
// redis_rate's scripts with the same limits (burst, rate and period of
// each group), keyed by the same Key, so a replica lets a student through
// no more than Redis would; a fleet of N replicas, each counting alone,
// lets through at most N times the allowance. What was counted in Redis
// before the outage is not known here: each student starts the outage with
// a full allowance on each replica.
//
// Memory is bounded whatever the number of students seen: a state is a
// 64-bit hash of its key and a time (a hash collision merges two students'
// budgets, about once in 10^9 with the table full), held in shards of at
// most localShardCap states. A state whose allowance is full again is the
// same as none and is dropped when room is needed; when a shard is full of
// live states, the eighth nearest to a full allowance are dropped, and
// those students start over with a full allowance (only a flood of more
// distinct students than the table holds, within one period, gets there).
type local struct {
	seed   maphash.Seed
	now    func() time.Time
	shards [localShards]localShard
}

type localShard struct {
	mu  sync.Mutex
	tat map[uint64]int64 // key hash -> theoretical arrival time, Unix ns
}

const (
	localShards = 64
	// localShardCap bounds each shard: 64 x 2,048 = 131,072 states, a few
	// MiB at most.
	localShardCap = 2048
)

func newLocal(now func() time.Time) *local {
	l := &local{seed: maphash.MakeSeed(), now: now}
	for i := range l.shards {
		l.shards[i].tat = make(map[uint64]int64)
	}
	return l
}

// size is how many states the table holds (tests).
func (l *local) size() int {
	n := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		n += len(s.tat)
		s.mu.Unlock()
	}
	return n
}

// take counts n units of lim for key as redis_rate's allowN script does
// (all or none; n = 0 only reads) or, when atMost, as its allowAtMost
// script does (as many whole units as are left, at least one or none).
func (l *local) take(key string, lim redis_rate.Limit, n int, atMost bool) *redis_rate.Result {
	h := maphash.String(l.seed, key)
	s := &l.shards[h%localShards]
	interval := float64(lim.Period) / float64(lim.Rate) // ns per unit
	burstOffset := interval * float64(lim.Burst)
	now := l.now().UnixNano()

	s.mu.Lock()
	defer s.mu.Unlock()
	tat := now
	if t, ok := s.tat[h]; ok && t > now {
		tat = t
	}
	res := &redis_rate.Result{Limit: lim, RetryAfter: -1}
	var newTat float64
	if atMost {
		diff := float64(now) - (float64(tat) - burstOffset)
		left := diff / interval
		if left < 1 {
			res.RetryAfter = time.Duration(interval - diff)
			res.ResetAfter = time.Duration(tat - now)
			return res
		}
		cost := min(float64(n), math.Floor(left))
		newTat = float64(tat) + interval*cost
		res.Allowed, res.Remaining = int(cost), int(left-cost)
	} else {
		newTat = float64(tat) + interval*float64(n)
		diff := float64(now) - (newTat - burstOffset)
		if diff < 0 {
			res.RetryAfter = time.Duration(-diff)
			res.ResetAfter = time.Duration(tat - now)
			return res
		}
		res.Allowed, res.Remaining = n, int(diff/interval)
	}
	res.ResetAfter = time.Duration(newTat - float64(now))
	if res.ResetAfter > 0 {
		if _, ok := s.tat[h]; !ok && len(s.tat) >= localShardCap {
			s.makeRoom(now)
		}
		s.tat[h] = int64(math.Ceil(newTat))
	}
	return res
}

// makeRoom drops the states whose allowance is full again and, when that
// frees less than an eighth of the shard, the states nearest to a full
// allowance until it does: a sort once every eighth of the shard's
// capacity of new students at most.
func (s *localShard) makeRoom(now int64) {
	for k, t := range s.tat {
		if t <= now {
			delete(s.tat, k)
		}
	}
	need := len(s.tat) - (localShardCap - localShardCap/8)
	if need <= 0 {
		return
	}
	tats := make([]int64, 0, len(s.tat))
	for _, t := range s.tat {
		tats = append(tats, t)
	}
	slices.Sort(tats)
	cut := tats[need-1]
	for k, t := range s.tat {
		if need == 0 {
			break
		}
		if t <= cut {
			delete(s.tat, k)
			need--
		}
	}
}
