package loadtest

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/testutil"
)

// The log counters a measurement reports move with what PostgreSQL
// writes, and a checkpoint asked for in between is counted.
func TestSampleWALCountsWritesAndCheckpoints(t *testing.T) {
	ctx := context.Background()
	pool := testutil.NewDB(t)
	before := SampleWAL(ctx, pool)
	require.True(t, before.OK)

	// One connection writes, and hands its counters to the server's as soon
	// as it is idle (a backend does so at most once a second otherwise).
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	for _, q := range []string{
		`CREATE TABLE wal_probe (id int PRIMARY KEY, v text)`,
		`INSERT INTO wal_probe SELECT g, repeat('x', 100) FROM generate_series(1, 200) g`,
		`CHECKPOINT`,
		// The first change of a page after a checkpoint logs the whole page.
		`UPDATE wal_probe SET v = 'y' WHERE id = 1`,
		`SELECT pg_stat_force_next_flush()`,
	} {
		_, err = conn.Exec(ctx, q)
		require.NoError(t, err, q)
	}

	// The counters are the server's: other databases' writes only add.
	var d WALSample
	require.Eventually(t, func() bool {
		d = SampleWAL(ctx, pool).Sub(before)
		return d.OK && d.FPI >= 1 && d.Records > 200 && d.Bytes > 200*100 && d.Requested >= 1
	}, 10*time.Second, 100*time.Millisecond, "the writes, the checkpoint and the full page after it are counted")
	assert.Contains(t, d.Describe("swipe", 100), "checkpoints started during the measurement: ")

	sum := d.Add(d)
	assert.Equal(t, 2*d.Bytes, sum.Bytes)
	assert.Equal(t, 2*d.Requested, sum.Requested)
	assert.False(t, d.Add(WALSample{}).OK, "a span that was not read taints the sum")
	assert.Equal(t, "PostgreSQL's WAL counters could not be read.", WALSample{}.Describe("swipe", 10))
	assert.Equal(t, "PostgreSQL's log: no swipe to divide it by.", WALSample{OK: true}.Describe("swipe", 0))
}

// PostgreSQL's CPU between two samples is taken process by process: a
// connection that closed in between does not make it negative, one that
// opened counts whole, and each process counts for whose work it does (the
// service, B3, or PostgreSQL's own).
func TestCPUSubTakesBackendsOneByOne(t *testing.T) {
	before := CPUSample{Postgres: 6, backends: map[int]pgProc{1: {pgService, 1}, 2: {pgService, 5}, 7: {pgB3, 2}, 9: {pgServer, 10}}}
	after := CPUSample{Postgres: 1.7, backends: map[int]pgProc{1: {pgService, 1.5}, 3: {pgService, 0.2}, 7: {pgB3, 2.5}, 8: {pgB3, 0.1}, 9: {pgServer, 10.25}}}
	d := after.Sub(before)
	assert.InDelta(t, 0.7, d.Postgres, 1e-9)
	assert.InDelta(t, 0.6, d.B3Postgres, 1e-9)
	assert.InDelta(t, 0.25, d.PostgresServer, 1e-9)

	// Backends that could not be listed: the totals.
	assert.InDelta(t, -4.3, CPUSample{Postgres: 1.7}.Sub(before).Postgres, 1e-9)

	// What the totals add: the service's parts, B3's parts, PostgreSQL's
	// own processes in both.
	s := CPUSample{Service: []float64{1, 2}, Postgres: 3, PostgresServer: 0.5, Redis: 0.25, B3: 4, B3Postgres: 0.125,
		RoundTrips: []float64{10, 20}}
	assert.InDelta(t, 6.75, s.ServiceTotal(), 1e-9)
	assert.InDelta(t, 4.625, s.B3Total(), 1e-9)
	assert.InDelta(t, 30, s.RoundTripsTotal(), 1e-9)
	sum := s.Add(s)
	assert.Equal(t, []float64{2, 4}, sum.Service)
	assert.InDelta(t, 13.5, sum.ServiceTotal(), 1e-9)
}

// PostgreSQL's processes are sampled by whose work they do: the load
// test's own connections in no one's, B3's apart, the postmaster and the
// server's background processes as PostgreSQL's own.
func TestPostgresCPUTellsWhoseWork(t *testing.T) {
	ctx := context.Background()
	url := testutil.NewDBURL(t)
	pool := poolNamed(t, url, toolAppName)
	b3 := poolNamed(t, url, b3AppName)
	svc := poolNamed(t, url, "")
	var tool, b3pid, svcpid int32
	require.NoError(t, pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&tool))
	require.NoError(t, b3.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&b3pid))
	require.NoError(t, svc.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&svcpid))

	procs := postgresCPU(ctx, pool)
	require.NotNil(t, procs)
	assert.NotContains(t, procs, int(tool), "the load test's own connection")
	assert.Equal(t, pgB3, procs[int(b3pid)].part)
	assert.Equal(t, pgService, procs[int(svcpid)].part)
	var server int
	for _, p := range procs {
		if p.part == pgServer {
			server++
		}
	}
	assert.GreaterOrEqual(t, server, 3, "the postmaster and background processes (checkpointer, WAL writer, ...)")
}

func poolNamed(t *testing.T, url, app string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	if app != "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = app
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// What Redis ran between two samples is counted by command, and the table
// per swipe lists the costliest first. The counters are the server's, so
// other tests' commands can only add; the test itself touches no key.
func TestRedisCommandsCountWhatRan(t *testing.T) {
	ctx := context.Background()
	opt, err := redis.ParseURL(testutil.RedisURL())
	require.NoError(t, err)
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	before := SampleRedisCommands(ctx, rdb)
	require.NotNil(t, before)
	for range 20 {
		require.NoError(t, rdb.Echo(ctx, "x").Err())
	}
	d := SampleRedisCommands(ctx, rdb).Sub(before)
	require.NotNil(t, d)
	assert.GreaterOrEqual(t, d["echo"].Calls, int64(20))
	assert.GreaterOrEqual(t, d["info"].Calls, int64(1), "the first sample's own INFO")

	cmds := RedisCommands{"evalsha": {Calls: 10, Usec: 150}, "hget": {Calls: 30, Usec: 30}, "ping": {Calls: 1, Usec: 1}}
	table := cmds.Table("swipe", 10)
	assert.Equal(t, "| Redis command | calls per swipe | µs per swipe | µs per call |\n|---|---:|---:|---:|\n"+
		"| `evalsha` | 1.000 | 15.00 | 15.00 |\n| `hget` | 3.000 | 3.00 | 1.00 |\n| `ping` | 0.100 | 0.10 | 1.00 |\n", table)
	assert.Empty(t, cmds.Table("swipe", 0))
	assert.Nil(t, RedisCommands(nil).Sub(cmds), "a sample that failed taints the difference")
	assert.Nil(t, SampleRedisCommands(ctx, nil))
}

// The patches' shares are read from the labelled counter's samples, as
// the differences over a measurement.
func TestPatchSharesFromTheCounter(t *testing.T) {
	read := func(text string) map[string]float64 {
		out := map[string]float64{}
		for _, line := range strings.Split(text, "\n") {
			if label, v, ok := labelledSample(line, "matching_feed_patches_total"); ok {
				out[label] += v
			}
		}
		return out
	}
	before := read(`# HELP matching_feed_patches_total What each write did.
# TYPE matching_feed_patches_total counter
matching_feed_patches_total{result="dropped"} 10
matching_feed_patches_total{result="none"} 0
matching_feed_patches_total{result="patched"} 5
matching_feed_patches_total{result="stale"} 0
matching_feed_patches_total{result="tombstone"} 1
matching_feed_patches_totally{result="patched"} 99`)
	assert.Equal(t, map[string]float64{"dropped": 10, "none": 0, "patched": 5, "stale": 0, "tombstone": 1}, before)
	after := map[string]float64{"dropped": 40, "none": 0, "patched": 65, "stale": 0, "tombstone": 1}
	assert.Equal(t, "patched 66.7 %, dropped 33.3 %, tombstone 0.0 %, stale 0.0 %, none 0.0 % (90 writes)", patchShares(before, after))
	assert.Equal(t, "not counted by this build", patchShares(nil, map[string]float64{}))
}

// The histograms and the labelled counters are summed over every
// operations port that answers; one that does not is left out.
func TestMetricsAreSummedOverTheOperationsPorts(t *testing.T) {
	port := func(body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			_, _ = w.Write([]byte(body))
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	api := port(`matching_feed_patches_total{result="patched"} 3
matching_feed_patches_total{result="dropped"} 1
`)
	worker := port(`matching_feed_lag_seconds_bucket{le="0.1"} 2
matching_feed_lag_seconds_bucket{le="+Inf"} 5
matching_feed_lag_seconds_bucket{odd} 7
matching_feed_lag_seconds_count 5
matching_feed_patches_total{result="patched"} 1
`)
	r := &runner{c: Config{OpsURLs: []string{api, worker, "http://127.0.0.1:1"}}}
	ctx := context.Background()
	assert.Equal(t, map[string]float64{"patched": 4, "dropped": 1}, r.counters(ctx, "matching_feed_patches_total"))
	h := r.histogram(ctx, "matching_feed_lag_seconds")
	assert.Equal(t, 5.0, h.count)
	assert.Equal(t, []float64{0.1, math.Inf(1)}, h.bounds)
	assert.Equal(t, []float64{2, 5}, h.counts)
}
