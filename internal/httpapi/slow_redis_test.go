package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/testutil"
	"github.com/collegematch/matching/internal/tools/faultproxy"
)

// A Redis that answers every call 500 ms late in each direction (a second
// per round trip) must not make a swipe take seconds: each Redis call on the
// path has its own budget (the rate limit's 250 ms, the cache's 300 ms), a
// call that runs out opens the breaker so the calls after it are skipped,
// and the swipe is committed and answered from PostgreSQL.
func TestSwipeWithSlowRedisIsBounded(t *testing.T) {
	up := newTestAPI(t)
	schools := up.seedSchools(t, 400)
	id, tok := up.newStudent(t, completeProfile())
	require.Equal(t, http.StatusOK, up.do(t, "GET", "/m/recommendations/"+id, tok, nil).Status, "a stored feed to patch")

	proxy, err := faultproxy.Start(redisAddr(t))
	require.NoError(t, err)
	t.Cleanup(func() { proxy.Close() })
	rdb, _, err := cache.Open(context.Background(), fmt.Sprintf("redis://%s/%d", proxy.Addr(), testutil.RedisDBHTTPAPI))
	require.NoError(t, err)
	t.Cleanup(func() { rdb.Close() })
	slow := newTestAPIOn(t, up.Pool, rdb)
	proxy.Delay(500 * time.Millisecond)

	for i := range 6 {
		start := time.Now()
		res := slow.do(t, "POST", "/swipe", tok, map[string]any{"student_id": id, "school_id": schools[i].ID,
			"direction": "left", "swipe_id": uuid.NewString()})
		took := time.Since(start)
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		assert.EqualValues(t, i+1, res.Body["swipe_count"], "counted in PostgreSQL whatever Redis does")
		// The bound: the rate limit's call and the cache's call before the
		// commit, each cut at its budget; the breaker skips what follows.
		assert.Less(t, took, 1200*time.Millisecond, "swipe %d took %v", i, took)
	}
	assert.Equal(t, 6, slow.count(t, `SELECT count(*) FROM swipes WHERE student_id = $1`, id))
	assert.Equal(t, 6, slow.count(t, `SELECT count(*) FROM outbox WHERE student_id = $1`, id),
		"every event is in the outbox for the relay, whether or not its hand-over reached Redis")
}

// redisAddr is the host:port of the tests' Redis server.
func redisAddr(t testing.TB) string {
	t.Helper()
	opt, err := redis.ParseURL(testutil.RedisURL())
	require.NoError(t, err)
	return opt.Addr
}
