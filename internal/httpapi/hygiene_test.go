package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/httpapi"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/ratelimit"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/testutil"
	"github.com/collegematch/matching/internal/webhook"
)

// keyRule is what the service promises of one kind of Redis key.
type keyRule struct {
	kind string // Redis type
	cap  int64  // most members (sorted sets and sets); 0: not a collection
}

// redisKeyRules lists every kind of key the service writes, by the key's
// last segment (read models, rm:v2:{student:<id>}:<name>) or prefix (rate
// limits). A new kind of key must be added here with its cap.
var redisKeyRules = map[string]keyRule{
	"feed":   {kind: "hash"},                             // fixed fields: header, items, compact page
	"shown":  {kind: "zset", cap: cache.MaxShown},        // the continuous feed's cooldowns
	"swiped": {kind: "zset", cap: cache.MaxRecentSwipes}, // recent swipes
	"probes": {kind: "zset", cap: 256},                   // probes served (cache.Probes caps it at 256)
	"rate":   {kind: "string"},                           // redis_rate's GCRA counters
}

// The Redis hygiene promise (architecture.md): every key the service
// writes has a TTL, and every per-student collection is capped, so memory
// stays bounded however long students keep swiping. A realistic workload
// goes through the real router (onboarding, category swipes, every read,
// the compact feed, swipes, feedback, the continuous feed with swipes,
// rate limits up to 429) and the worker's task code (the outbox relay, and
// the learner folding the swipes in and rebuilding feeds); then every key
// of the Redis DB is checked.
//
// asynq's own keys (asynq:{<queue>}:..., the task queues, task hashes and
// server bookkeeping) are the exception: they are asynq's to manage (it
// deletes a task when it has run and expires its statistics and server
// entries); the service does not put TTLs on them. The learn drains' keys
// (drain:{<queue>}:...) are the queue's too: they have TTLs, and a pending
// set holds at most one member per student.
func TestRedisKeysHaveTTLsAndCaps(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBHTTPAPI)
	var queries *query.Service // the read side, which the worker rebuilds feeds with
	api := newTestAPIOn(t, testutil.NewDB(t), rdb, func(d *httpapi.Deps) { queries = d.Queries.(*query.Service) })
	ctx := context.Background()
	schools := api.seedSchools(t, 150)

	type student struct{ id, tok string }
	var students []student
	for i := range 3 {
		profile := completeProfile()
		if i == 2 {
			profile = map[string]any{"name": "Min", "email": "min@example.com", "graduation_year": "2028"}
		}
		id, tok := api.newStudent(t, profile)
		students = append(students, student{id, tok})
	}
	ok := func(res result) result {
		t.Helper()
		require.Less(t, res.Status, 300, "%s", res.Raw)
		return res
	}
	for i, s := range students {
		ok(api.do(t, "POST", "/v2/onboarding/category-swipe", s.tok,
			map[string]any{"student_id": s.id, "category_id": "liberal-arts", "direction": []string{"left", "right"}[i%2]}))
		ok(api.do(t, "GET", "/v2/onboarding/category-schools", s.tok, nil))
		ok(api.do(t, "POST", "/v2/recommendations", s.tok, map[string]any{"student_id": s.id, "limit": 30, "offset": 10}))
		ok(api.do(t, "GET", "/match/"+s.id+"/"+schools[i].ID, s.tok, nil))
		ok(api.do(t, "POST", "/m/batch/schools", s.tok, map[string]any{"school_ids": []string{schools[1].ID, uuid.NewString()}}))
		if i < 2 {
			ok(api.do(t, "POST", "/recommendations", s.tok, map[string]any{"student_id": s.id}))
			ok(api.do(t, "GET", "/m/recommendations/"+s.id, s.tok, nil))
		}
	}

	// Students swipe through the continuous feed, sending their swipes along,
	// and now and then through POST /swipe and POST /feedback.
	probes := false // a probe was served, so probe memory was written
	for round := range 12 {
		for i, s := range students {
			res := ok(api.do(t, "POST", "/continuous-feed", s.tok, map[string]any{"student_id": s.id, "limit": 6}))
			ids := feedIDs(t, res)
			for _, r := range res.Body["recommendations"].([]any) {
				probes = probes || r.(map[string]any)["is_probe"] == true
			}
			if len(ids) == 0 {
				continue
			}
			var swipes []any
			for j, id := range ids[:len(ids)-1] {
				swipes = append(swipes, map[string]any{"school_id": id, "direction": []string{"left", "right"}[(i+j)%2],
					"time_spent": 1.5, "swipe_id": uuid.NewString()})
			}
			ok(api.do(t, "POST", "/continuous-feed", s.tok, map[string]any{"student_id": s.id, "limit": 4, "swipes": swipes}))
			last := ids[len(ids)-1]
			ok(api.do(t, "POST", "/swipe", s.tok, map[string]any{"student_id": s.id, "school_id": last, "direction": "left"}))
			if round%4 == 0 {
				ok(api.do(t, "POST", "/feedback", s.tok, map[string]any{"student_id": s.id, "school_id": last, "reason": "too_expensive"}))
			}
		}
	}
	// The worker: its relay hands over whatever the API did not, and its
	// learner folds every student's swipes and feedback in and rebuilds
	// their feeds into Redis, as cmd/worker wires them.
	relay := webhook.NewRelay(testutil.Logger(t), api.Store, handover.NewClient(rdb, handover.NewQueuer()), nil,
		webhook.NewRelayMetrics(prometheus.NewRegistry()), webhook.RelayConfig{})
	_, err := relay.Drain(ctx)
	require.NoError(t, err)
	worker := tasks.NewHandler(tasks.Deps{Log: testutil.Logger(t), LearnDrains: tasks.NewLearnDrains(rdb), Learning: api.Store,
		Feeds: queries, Catalogs: api.Catalog, LearnMetrics: tasks.NewLearnMetrics(prometheus.NewRegistry())})
	for _, s := range students {
		task, err := tasks.NewStudentLearnTask(s.id, 0)
		require.NoError(t, err)
		require.NoError(t, worker.HandleStudentLearn(ctx, asynq.NewTask(task.Type(), task.Payload())))
		ok(api.do(t, "POST", "/continuous-feed", s.tok, map[string]any{"student_id": s.id}))
	}

	// One student runs into the recommendations allowance.
	limited := false
	for range 70 {
		res := api.do(t, "POST", "/continuous-feed", students[0].tok, map[string]any{"student_id": students[0].id, "limit": 1})
		if res.Status == http.StatusTooManyRequests {
			limited = true
			break
		}
	}
	require.True(t, limited, "the workload reaches a 429")

	want := []string{"feed", "shown", "swiped", "rate", "asynq", "drain"}
	if probes {
		want = append(want, "probes")
	}
	checkRedisHygiene(t, ctx, rdb, want)
}

// checkRedisHygiene scans every key of the DB: each of the service's keys
// has a TTL and, for a collection, at most its cap of members; asynq's keys
// are counted, not checked. want lists the kinds of key the workload must
// have produced, so the check is not vacuous.
func checkRedisHygiene(t *testing.T, ctx context.Context, rdb redis.UniversalClient, want []string) {
	t.Helper()
	found := map[string]int{}
	var cursor uint64
	for {
		keys, next, err := rdb.Scan(ctx, cursor, "*", 500).Result()
		require.NoError(t, err)
		for _, key := range keys {
			if strings.HasPrefix(key, "asynq:") {
				found["asynq"]++
				continue
			}
			if strings.HasPrefix(key, "drain:") {
				// A drain's pending set (one member per student with writes
				// not yet learned) and arm key: the queue's, with TTLs.
				found["drain"]++
				ttl, err := rdb.PTTL(ctx, key).Result()
				require.NoError(t, err)
				assert.True(t, ttl > 0 || ttl == -2*time.Nanosecond || ttl == -2*time.Millisecond, "%s has a TTL", key)
				continue
			}
			name := key[strings.LastIndex(key, ":")+1:]
			if strings.HasPrefix(key, "rate:") {
				name = "rate"
			}
			rule, known := redisKeyRules[name]
			if !assert.True(t, known, "%s: a key of an unknown kind; give it a TTL and a cap and list it in redisKeyRules", key) {
				continue
			}
			found[name]++
			assert.True(t, strings.HasPrefix(key, "rm:v2:{student:") || name == "rate", "%s: read models carry the prefix and hash tag", key)
			if _, tagged, ok := strings.Cut(key, "{student:"); assert.True(t, ok, "%s: a per-student key", key) {
				id, _, _ := strings.Cut(tagged, "}")
				assert.Contains(t, append(cache.StudentKeys(id), ratelimit.StudentKeys(id)...), key,
					"%s: listed by cache.StudentKeys or ratelimit.StudentKeys, which an erasure drops by name", key)
			}
			ttl, err := rdb.PTTL(ctx, key).Result()
			require.NoError(t, err)
			if ttl == -2*time.Nanosecond || ttl == -2*time.Millisecond {
				continue // expired between SCAN and PTTL
			}
			assert.Greater(t, ttl, time.Duration(0), "%s has a TTL", key)
			kind, err := rdb.Type(ctx, key).Result()
			require.NoError(t, err)
			assert.Equal(t, rule.kind, kind, key)
			if rule.cap > 0 {
				n, err := rdb.ZCard(ctx, key).Result()
				require.NoError(t, err)
				assert.LessOrEqual(t, n, rule.cap, "%s is capped", key)
			}
		}
		cursor = next
		if cursor == 0 {
			break
		}
	}
	t.Logf("keys by kind: %v", found)
	for _, k := range want {
		assert.Positive(t, found[k], "the workload wrote %s keys", k)
	}
}
