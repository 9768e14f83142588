package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/collegematch/matching/internal/config"
)

// Fetch names a value to read in the same round trip as the count: an
// HGET of Field on Key, a GET of Key when Field is empty, or, when Read is
// set, the caller's own commands (Read queues them, and the caller reads
// their answers from its own value once AllowFetch returns). The zero
// Fetch reads nothing.
type Fetch struct {
	Key, Field string
	Read       PipeRead
}

// PipeRead is a read of the caller's own that goes in the count's
// pipeline.
type PipeRead interface {
	Queue(ctx context.Context, pipe redis.Pipeliner)
}

// Fetched is what a Fetch found.
type Fetched struct {
	Done  bool   // the read reached Redis and answered (found or not)
	Found bool   // the key (and field) exists
	Value []byte // the value when Found
	// Read is Fetch.Read once its commands ran (each with its own answer
	// or error, which the caller reads).
	Read PipeRead
}

// Pipelined is a Limiter that can also read one value in the same Redis
// round trip as the count (AllowFetch), for hot read paths where a second
// round trip would cost more than the handler itself. It counts with the
// same GCRA script as redis_rate v10, on the same keys, so it shares every
// budget with Limiter.Allow and with other replicas.
type Pipelined struct {
	*Limiter
	rdb  redis.UniversalClient
	args map[Group][]any // each group's script arguments (gcraArgs), made once
}

// NewPipelined builds a pipelining limiter on rdb with the configured
// allowances (see New).
func NewPipelined(rdb redis.UniversalClient, rl config.RateLimits) *Pipelined {
	p := &Pipelined{Limiter: New(rdb, rl), rdb: rdb, args: map[Group][]any{}}
	for g, lim := range p.limits {
		p.args[g] = gcraArgs(lim)
	}
	return p
}

// gcraArgs are the script's arguments for one request under lim, as
// redis_rate passes them: burst, rate, period in seconds, cost. They never
// change for a group, and go-redis only reads them, so one slice serves
// every call.
func gcraArgs(lim redis_rate.Limit) []any {
	return []any{lim.Burst, lim.Rate, lim.Period.Seconds(), 1}
}

// redisRatePrefix is the prefix redis_rate puts before every key.
const redisRatePrefix = "rate:"

// AllowFetch counts one request of group for key, as Allow does, and reads
// f in the same pipeline. The error is the count's: when it is not nil the
// caller applies its failure policy, and Fetched tells whether the read
// still answered. A read that failed leaves Fetched.Done false.
func (p *Pipelined) AllowFetch(ctx context.Context, group Group, key string, f Fetch) (Decision, Fetched, error) {
	lim, ok := p.limits[group]
	if !ok {
		return Decision{}, Fetched{}, fmt.Errorf("ratelimit: unknown group %q", group)
	}
	if p.breaker.Open() {
		return p.failed(ctx, group, key, lim, Fetched{}, ErrUnavailable)
	}
	callCtx, cancel := context.WithTimeout(ctx, p.breaker.Timeout())
	defer cancel()

	keys := []string{redisRatePrefix + Key(group, key)}
	args := p.args[group]
	pipe := p.rdb.Pipeline()
	count := pipe.EvalSha(callCtx, gcra.Hash(), keys, args...)
	var read interface{ Bytes() ([]byte, error) }
	switch {
	case f.Read != nil:
		f.Read.Queue(callCtx, pipe)
	case f.Field != "":
		read = pipe.HGet(callCtx, f.Key, f.Field)
	case f.Key != "":
		read = pipe.Get(callCtx, f.Key)
	}
	_, _ = pipe.Exec(callCtx) // errors are per command, below

	var fetched Fetched
	if f.Read != nil {
		fetched = Fetched{Done: true, Read: f.Read}
	}
	if read != nil {
		if v, err := read.Bytes(); err == nil {
			fetched = Fetched{Done: true, Found: true, Value: v}
		} else if errors.Is(err, redis.Nil) {
			fetched = Fetched{Done: true}
		}
	}

	res, err := count.Result()
	if err != nil && isNoScript(err) {
		// The script cache was flushed (a Redis restart): load it once.
		res, err = gcra.Run(callCtx, p.rdb, keys, args...).Result()
	}
	if err != nil {
		p.breaker.Failed(ctx)
		return p.failed(ctx, group, key, lim, fetched, err)
	}
	allowed, retryAfter, resetAfter, err := parseGCRA(res)
	if err != nil {
		return p.failed(ctx, group, key, lim, fetched, err)
	}
	p.counted()
	d := Decision{
		Allowed:    allowed,
		Limit:      lim.Rate,
		ResetAt:    p.now().Add(resetAfter),
		RetryAfter: max(retryAfter, 0),
	}
	if d.Allowed {
		d.Remaining = remaining(lim, resetAfter)
	}
	return d, fetched, nil
}

// failed answers a count Redis could not make: from memory, or the error
// (failing closed, or the caller gone).
func (p *Pipelined) failed(ctx context.Context, group Group, key string, lim redis_rate.Limit, fetched Fetched, err error) (Decision, Fetched, error) {
	if res, ok := p.fallback(ctx, group, key, lim, 1, false, err); ok {
		return decision(lim, res, true, p.now()), fetched, nil
	}
	return Decision{}, fetched, fmt.Errorf("ratelimit %s: %w", group, err)
}

func isNoScript(err error) bool { return strings.HasPrefix(err.Error(), "NOSCRIPT") }

// parseGCRA reads the script's answer as redis_rate does: {allowed,
// remaining, retry_after seconds, reset_after seconds}.
func parseGCRA(v any) (allowed bool, retryAfter, resetAfter time.Duration, err error) {
	vals, ok := v.([]any)
	if !ok || len(vals) != 4 {
		return false, 0, 0, fmt.Errorf("unexpected GCRA answer %v", v)
	}
	n, _ := vals[0].(int64)
	retry, err1 := gcraNumber(vals[2])
	reset, err2 := gcraNumber(vals[3])
	if err := errors.Join(err1, err2); err != nil {
		return false, 0, 0, fmt.Errorf("unexpected GCRA answer %v: %w", v, err)
	}
	return n > 0, seconds(retry), seconds(reset), nil
}

// gcraNumber reads a number of the script's answer: a string (the script
// answers tostring of its seconds), read without formatting it again.
func gcraNumber(v any) (float64, error) {
	if s, ok := v.(string); ok {
		return strconv.ParseFloat(s, 64)
	}
	return strconv.ParseFloat(fmt.Sprint(v), 64)
}

func seconds(f float64) time.Duration {
	if f == -1 {
		return -1
	}
	return time.Duration(f * float64(time.Second))
}

// gcra is redis_rate v10's allowN script, unchanged, so that both limiters
// run the same algorithm on the same keys (and Redis caches one script).
//
// Copied from github.com/go-redis/redis_rate v10.0.1 (lua.go):
//
//	Copyright (c) 2013 The github.com/go-redis/redis_rate Authors.
//	All rights reserved.
//
//	Redistribution and use in source and binary forms, with or without
//	modification, are permitted provided that the following conditions are
//	met:
//
//	   * Redistributions of source code must retain the above copyright
//	notice, this list of conditions and the following disclaimer.
//	   * Redistributions in binary form must reproduce the above
//	copyright notice, this list of conditions and the following disclaimer
//	in the documentation and/or other materials provided with the
//	distribution.
//
//	THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS
//	"AS IS" AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT
//	LIMITED TO, THE IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR
//	A PARTICULAR PURPOSE ARE DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT
//	OWNER OR CONTRIBUTORS BE LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL,
//	SPECIAL, EXEMPLARY, OR CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT
//	LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR SERVICES; LOSS OF USE,
//	DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER CAUSED AND ON ANY
//	THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY, OR TORT
//	(INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE
//	OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
//
// The script itself is, as redis_rate notes, Copyright (c) 2017 Pavel
// Pravosud, https://github.com/rwz/redis-gcra (perform_gcra_ratelimit.lua).
var gcra = redis.NewScript(`
-- this script has side-effects, so it requires replicate commands mode
redis.replicate_commands()

local rate_limit_key = KEYS[1]
local burst = ARGV[1]
local rate = ARGV[2]
local period = ARGV[3]
local cost = tonumber(ARGV[4])

local emission_interval = period / rate
local increment = emission_interval * cost
local burst_offset = emission_interval * burst

-- redis returns time as an array containing two integers: seconds of the epoch
-- time (10 digits) and microseconds (6 digits). for convenience we need to
-- convert them to a floating point number. the resulting number is 16 digits,
-- bordering on the limits of a 64-bit double-precision floating point number.
-- adjust the epoch to be relative to Jan 1, 2017 00:00:00 GMT to avoid floating
-- point problems. this approach is good until "now" is 2,483,228,799 (Wed, 09
-- Sep 2048 01:46:39 GMT), when the adjusted value is 16 digits.
local jan_1_2017 = 1483228800
local now = redis.call("TIME")
now = (now[1] - jan_1_2017) + (now[2] / 1000000)

local tat = redis.call("GET", rate_limit_key)

if not tat then
  tat = now
else
  tat = tonumber(tat)
end

tat = math.max(tat, now)

local new_tat = tat + increment
local allow_at = new_tat - burst_offset

local diff = now - allow_at
local remaining = diff / emission_interval

if remaining < 0 then
  local reset_after = tat - now
  local retry_after = diff * -1
  return {
    0, -- allowed
    0, -- remaining
    tostring(retry_after),
    tostring(reset_after),
  }
end

local reset_after = new_tat - now
if reset_after > 0 then
  redis.call("SET", rate_limit_key, new_tat, "EX", math.ceil(reset_after))
end
local retry_after = -1
return {cost, remaining, tostring(retry_after), tostring(reset_after)}
`)
