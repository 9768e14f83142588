package loadtest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// Statement is one normalised statement's cost over a run, from
// pg_stat_statements.
type Statement struct {
	Query   string
	Calls   int64
	TotalMs float64
	Rows    int64
}

// EnsureStatements creates pg_stat_statements in the database if missing
// (the extension must be loaded with shared_preload_libraries).
func EnsureStatements(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		return fmt.Errorf("pg_stat_statements: %w", err)
	}
	return nil
}

// ResetStatements empties pg_stat_statements (EnsureStatements first).
func ResetStatements(ctx context.Context, pool *pgxpool.Pool) error {
	if err := EnsureStatements(ctx, pool); err != nil {
		return err
	}
	_, err := pool.Exec(ctx, `SELECT pg_stat_statements_reset()`)
	return err
}

// ReadStatements returns the statements run in the pool's database since
// the last reset, most called first, leaving out the load test's own.
func ReadStatements(ctx context.Context, pool *pgxpool.Pool) ([]Statement, error) {
	const q = `
SELECT query, calls, total_exec_time, rows FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE '%loadtest_%'
  AND query NOT LIKE '%pg_stat_activity%'
ORDER BY calls DESC, total_exec_time DESC`
	rows, err := pool.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Statement, error) {
		var s Statement
		err := r.Scan(&s.Query, &s.Calls, &s.TotalMs, &s.Rows)
		return s, err
	})
}

// StatementCounters is pg_stat_statements's counters so far, by statement
// (queryid), in a database: what PostgreSQL ran over a span is the
// difference of two samples, which needs no reset.
type StatementCounters map[int64]Statement

// SampleStatements reads the counters of the pool's database now.
func SampleStatements(ctx context.Context, pool *pgxpool.Pool) (StatementCounters, error) {
	rows, err := pool.Query(ctx, `
SELECT queryid, query, calls, total_exec_time, rows FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND queryid IS NOT NULL`)
	if err != nil {
		return nil, fmt.Errorf("pg_stat_statements: %w", err)
	}
	out := StatementCounters{}
	var (
		id int64
		st Statement
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &st.Query, &st.Calls, &st.TotalMs, &st.Rows}, func() error {
		// One queryid can have a row per user (and top-level or not).
		cur := out[id]
		cur.Query, cur.Calls, cur.TotalMs, cur.Rows = st.Query, cur.Calls+st.Calls, cur.TotalMs+st.TotalMs, cur.Rows+st.Rows
		out[id] = cur
		return nil
	})
	return out, err
}

// Sub is what ran between two samples, most called first: the service's
// statements (b3 false) or B3's (true). The load test's own are in
// neither.
func (s StatementCounters) Sub(before StatementCounters, b3 bool) []Statement {
	var out []Statement
	for id, st := range s {
		if isB3Statement(st.Query) != b3 || (!b3 && isToolStatement(st.Query)) {
			continue
		}
		b := before[id]
		d := Statement{Query: st.Query, Calls: st.Calls - b.Calls, TotalMs: st.TotalMs - b.TotalMs, Rows: st.Rows - b.Rows}
		if d.Calls > 0 {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Calls != out[j].Calls {
			return out[i].Calls > out[j].Calls
		}
		return out[i].TotalMs > out[j].TotalMs
	})
	return out
}

func isB3Statement(q string) bool { return strings.Contains(q, "loadtest_b3_") }

// isToolStatement tells the load test's own statements (its readings of
// PostgreSQL's statistics and settings, its baselines' tables) from the
// service's, which touch none of these.
func isToolStatement(q string) bool {
	for _, s := range []string{"pg_stat_", "loadtest_", "current_setting", "pg_database", "CREATE EXTENSION", "ANALYZE"} {
		if strings.Contains(q, s) {
			return true
		}
	}
	return false
}

// CPU samples the CPU time of the service's processes (from their ops
// ports' process_cpu_seconds_total), of PostgreSQL's processes and of
// Redis, and with it the counters a cost per request is made of (Redis
// round trips and commands), so a run can say what each request cost. When
// B3PID is set, B3's process is sampled too.
type CPU struct {
	OpsURLs []string // the API's and the worker's operations ports
	Pool    *pgxpool.Pool
	Redis   redis.UniversalClient
	B3PID   int
}

// CPUSample is CPU seconds used so far, by part, and the counters read
// with them.
type CPUSample struct {
	Service []float64 // per ops URL
	// RoundTrips is matching_redis_round_trips_total, per ops URL.
	RoundTrips []float64
	// Postgres is the CPU of the backends serving the service (its
	// database's connections, but for the load test's own and B3's).
	Postgres float64
	// PostgresServer is the CPU of PostgreSQL's own processes (postmaster,
	// WAL writer, checkpointer, background writer, autovacuum): the whole
	// server's, shared by every database on it.
	PostgresServer float64
	B3             float64 // B3's process
	B3Postgres     float64 // the backends serving B3
	Redis          float64
	// RedisCommands is Redis's total_commands_processed.
	RedisCommands float64
	At            time.Time
	// backends is each PostgreSQL process's CPU, by process id: a
	// connection closed between two samples takes its CPU with it, so a
	// difference is taken process by process (Sub).
	backends map[int]pgProc
}

// pgProc is one PostgreSQL process: whose work it does and its CPU.
type pgProc struct {
	part pgPart
	cpu  float64
}

type pgPart int

const (
	pgService pgPart = iota // a backend of the service
	pgB3                    // a backend of B3
	pgServer                // PostgreSQL's own processes
)

// toolAppName is the application_name of the load test's own connections,
// which are counted in no one's CPU.
const toolAppName = "matchctl loadtest"

// Sample reads the counters now; a part that cannot be read counts 0.
func (c CPU) Sample(ctx context.Context) CPUSample {
	s := CPUSample{At: time.Now()}
	for _, u := range c.OpsURLs {
		cpu, trips := processCounters(ctx, u)
		s.Service = append(s.Service, cpu)
		s.RoundTrips = append(s.RoundTrips, trips)
	}
	if c.Pool != nil {
		s.backends = postgresCPU(ctx, c.Pool)
		for _, p := range s.backends {
			s.addPostgres(p.part, p.cpu)
		}
	}
	if c.Redis != nil {
		s.Redis, s.RedisCommands = redisCounters(ctx, c.Redis)
	}
	if c.B3PID > 0 {
		s.B3 = procCPU(c.B3PID)
	}
	return s
}

func (s *CPUSample) addPostgres(part pgPart, v float64) {
	switch part {
	case pgService:
		s.Postgres += v
	case pgB3:
		s.B3Postgres += v
	case pgServer:
		s.PostgresServer += v
	}
}

// Sub is the CPU used between two samples. PostgreSQL's is each process's
// of the later sample less what it had used at the earlier one (a process
// that started since counts whole; one that ended since is not counted).
func (s CPUSample) Sub(before CPUSample) CPUSample {
	out := CPUSample{
		Postgres: s.Postgres - before.Postgres, PostgresServer: s.PostgresServer - before.PostgresServer,
		B3: s.B3 - before.B3, B3Postgres: s.B3Postgres - before.B3Postgres,
		Redis: s.Redis - before.Redis, RedisCommands: s.RedisCommands - before.RedisCommands, At: s.At,
	}
	if s.backends != nil && before.backends != nil {
		out.Postgres, out.PostgresServer, out.B3Postgres = 0, 0, 0
		for pid, p := range s.backends {
			v := p.cpu
			if b, ok := before.backends[pid]; ok && b.part == p.part {
				v -= b.cpu
			}
			out.addPostgres(p.part, v)
		}
	}
	for i := range s.Service {
		if i < len(before.Service) {
			out.Service = append(out.Service, s.Service[i]-before.Service[i])
		}
		if i < len(s.RoundTrips) && i < len(before.RoundTrips) {
			out.RoundTrips = append(out.RoundTrips, s.RoundTrips[i]-before.RoundTrips[i])
		}
	}
	return out
}

// Add sums two spans.
func (s CPUSample) Add(o CPUSample) CPUSample {
	out := CPUSample{
		Postgres: s.Postgres + o.Postgres, PostgresServer: s.PostgresServer + o.PostgresServer,
		B3: s.B3 + o.B3, B3Postgres: s.B3Postgres + o.B3Postgres,
		Redis: s.Redis + o.Redis, RedisCommands: s.RedisCommands + o.RedisCommands,
		Service: addSlices(s.Service, o.Service), RoundTrips: addSlices(s.RoundTrips, o.RoundTrips),
	}
	return out
}

// ServiceTotal is the CPU of everything serving the service: its
// processes, their PostgreSQL backends, PostgreSQL's own processes and
// Redis.
func (s CPUSample) ServiceTotal() float64 {
	t := s.Postgres + s.PostgresServer + s.Redis
	for _, v := range s.Service {
		t += v
	}
	return t
}

// B3Total is B3's CPU: its process, its backends and PostgreSQL's own
// processes.
func (s CPUSample) B3Total() float64 { return s.B3 + s.B3Postgres + s.PostgresServer }

// RoundTripsTotal is the Redis round trips of every process sampled.
func (s CPUSample) RoundTripsTotal() float64 {
	t := 0.0
	for _, v := range s.RoundTrips {
		t += v
	}
	return t
}

func addSlices(a, b []float64) []float64 {
	var out []float64
	for i := range max(len(a), len(b)) {
		v := 0.0
		if i < len(a) {
			v += a[i]
		}
		if i < len(b) {
			v += b[i]
		}
		out = append(out, v)
	}
	return out
}

// processCounters reads a process's CPU seconds and Redis round trips
// from its operations port (0 for what cannot be read).
func processCounters(ctx context.Context, opsURL string) (cpu, roundTrips float64) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, opsURL+"/metrics", nil)
	if err != nil {
		return 0, 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0
	}
	defer resp.Body.Close()
	v := metricValues(resp.Body, "process_cpu_seconds_total", "matching_redis_round_trips_total")
	return v[0], v[1]
}

// metricValue finds an unlabelled sample in the Prometheus text format.
func metricValue(r io.Reader, name string) float64 { return metricValues(r, name)[0] }

// metricValues finds unlabelled samples in the Prometheus text format, in
// the order of names (0 for a name not found).
func metricValues(r io.Reader, names ...string) []float64 {
	out := make([]float64, len(names))
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for i, name := range names {
			if v, ok := strings.CutPrefix(line, name+" "); ok {
				out[i], _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
			}
		}
	}
	return out
}

// postgresCPU reads the CPU time of PostgreSQL's processes that serve the
// pool's database or the whole server (pg_stat_activity, the postmaster
// found as the backends' parent), by whose work each does; nil when they
// cannot be listed. Other databases' backends are left out.
func postgresCPU(ctx context.Context, pool *pgxpool.Pool) map[int]pgProc {
	rows, err := pool.Query(ctx, `
SELECT pid, backend_type = 'client backend', datname IS NULL OR datname = current_database(),
	coalesce(datname = current_database(), false), coalesce(application_name, '')
FROM pg_stat_activity`)
	if err != nil {
		return nil
	}
	type activity struct {
		pid              int32
		client, ours, db bool
		app              string
	}
	acts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (activity, error) {
		var a activity
		return a, r.Scan(&a.pid, &a.client, &a.ours, &a.db, &a.app)
	})
	if err != nil {
		return nil
	}
	out := make(map[int]pgProc, len(acts)+1)
	postmaster := 0
	for _, a := range acts {
		pid := int(a.pid)
		switch {
		case a.client && a.db && a.app == b3AppName:
			out[pid] = pgProc{pgB3, procCPU(pid)}
		case a.client && a.db && a.app != toolAppName:
			out[pid] = pgProc{pgService, procCPU(pid)}
		case !a.client && a.ours:
			out[pid] = pgProc{pgServer, procCPU(pid)}
		}
		if postmaster == 0 {
			postmaster = parentPID(pid)
		}
	}
	if postmaster > 1 {
		out[postmaster] = pgProc{pgServer, procCPU(postmaster)}
	}
	return out
}

// parentPID is a process's parent's id (Linux /proc; 0 when unknown).
func parentPID(pid int) int {
	f := procStat(pid)
	if len(f) < 2 {
		return 0
	}
	pp, _ := strconv.Atoi(f[1])
	return pp
}

// procStat is the fields of /proc/PID/stat after the command's name (the
// state first), nil when it cannot be read.
func procStat(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

// procCPU is a process's user + system CPU seconds (Linux /proc; 0 when
// it cannot be read).
func procCPU(pid int) float64 {
	f := procStat(pid)
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	const clkTck = 100 // USER_HZ on Linux
	return (ut + st) / clkTck
}

// redisCounters reads Redis's CPU seconds and the commands it has run.
func redisCounters(ctx context.Context, rdb redis.UniversalClient) (cpu, commands float64) {
	info, err := rdb.Info(ctx, "cpu", "stats").Result()
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		f, _ := strconv.ParseFloat(v, 64)
		switch k {
		case "used_cpu_sys", "used_cpu_user":
			cpu += f
		case "total_commands_processed":
			commands = f
		}
	}
	return cpu, commands
}

// WALSample is PostgreSQL's write-ahead log and checkpoint counters so far
// (pg_stat_wal, pg_stat_bgwriter: the whole server, which during a
// measurement is the service). A checkpoint makes the first change of
// every page after it log the whole page (a full-page image), so a
// measurement a checkpoint fell in writes several times the WAL of one
// without, and its statements run slower: a figure needs to say which it
// was.
type WALSample struct {
	Records, FPI, Bytes, BuffersFull int64
	Timed, Requested                 int64 // checkpoints started
	CheckpointBuffers                int64 // buffers written by checkpoints
	OK                               bool  // the counters were read
}

// SampleWAL reads the counters now; OK is false when they could not be
// read. PostgreSQL 17 moved the checkpoint counters from pg_stat_bgwriter
// to pg_stat_checkpointer.
func SampleWAL(ctx context.Context, pool *pgxpool.Pool) WALSample {
	var s WALSample
	err := pool.QueryRow(ctx, `
SELECT w.wal_records, w.wal_fpi, w.wal_bytes::bigint, w.wal_buffers_full
FROM pg_stat_wal w`).Scan(&s.Records, &s.FPI, &s.Bytes, &s.BuffersFull)
	if err != nil {
		return s
	}
	const (
		upTo16 = `SELECT checkpoints_timed, checkpoints_req, buffers_checkpoint FROM pg_stat_bgwriter`
		from17 = `SELECT num_timed, num_requested, buffers_written FROM pg_stat_checkpointer`
	)
	q := upTo16
	var version int
	if err := pool.QueryRow(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&version); err == nil && version >= 170000 {
		q = from17
	}
	err = pool.QueryRow(ctx, q).Scan(&s.Timed, &s.Requested, &s.CheckpointBuffers)
	s.OK = err == nil
	return s
}

// Sub is what happened between two samples (not OK unless both are).
func (s WALSample) Sub(before WALSample) WALSample {
	return WALSample{
		Records: s.Records - before.Records, FPI: s.FPI - before.FPI, Bytes: s.Bytes - before.Bytes,
		BuffersFull: s.BuffersFull - before.BuffersFull,
		Timed:       s.Timed - before.Timed, Requested: s.Requested - before.Requested,
		CheckpointBuffers: s.CheckpointBuffers - before.CheckpointBuffers,
		OK:                s.OK && before.OK,
	}
}

// Describe says what the log and the checkpoints did per unit (a swipe,
// a request) over n of them.
func (s WALSample) Describe(unit string, n int) string {
	switch {
	case !s.OK:
		return "PostgreSQL's WAL counters could not be read."
	case n == 0:
		return "PostgreSQL's log: no " + unit + " to divide it by."
	}
	per := func(v int64) float64 { return float64(v) / float64(n) }
	return fmt.Sprintf("PostgreSQL's log per %s: %.0f bytes in %.1f records, %.2f full-page images; "+
		"WAL buffers full %d times; checkpoints started during the measurement: %d timed, %d requested "+
		"(%d buffers written by checkpoints).",
		unit, per(s.Bytes), per(s.Records), per(s.FPI), s.BuffersFull, s.Timed, s.Requested, s.CheckpointBuffers)
}

// Add sums two spans (both must have been read).
func (s WALSample) Add(o WALSample) WALSample {
	return WALSample{
		Records: s.Records + o.Records, FPI: s.FPI + o.FPI, Bytes: s.Bytes + o.Bytes,
		BuffersFull: s.BuffersFull + o.BuffersFull,
		Timed:       s.Timed + o.Timed, Requested: s.Requested + o.Requested,
		CheckpointBuffers: s.CheckpointBuffers + o.CheckpointBuffers,
		OK:                s.OK && o.OK,
	}
}

// RedisCommands is what Redis ran so far, by command (INFO commandstats:
// the whole server, which during a measurement is the service when the
// load test runs its own Redis, as scripts/loadtest.sh does by default).
type RedisCommands map[string]RedisCommand

// RedisCommand is one command's calls and the microseconds Redis spent in
// them. A script's time (evalsha) includes the commands it called, which
// are also counted under their own names.
type RedisCommand struct {
	Calls int64
	Usec  int64
}

// SampleRedisCommands reads the counters now; nil when they could not be
// read.
func SampleRedisCommands(ctx context.Context, rdb redis.UniversalClient) RedisCommands {
	if rdb == nil {
		return nil
	}
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil
	}
	out := RedisCommands{}
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var c RedisCommand
		for _, kv := range strings.Split(stats, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "calls":
				c.Calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec":
				c.Usec, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		out[strings.TrimPrefix(name, "cmdstat_")] = c
	}
	return out
}

// Sub is what ran between two samples (nil unless both were read).
func (s RedisCommands) Sub(before RedisCommands) RedisCommands {
	if s == nil || before == nil {
		return nil
	}
	out := RedisCommands{}
	for name, c := range s {
		d := RedisCommand{Calls: c.Calls - before[name].Calls, Usec: c.Usec - before[name].Usec}
		if d.Calls > 0 {
			out[name] = d
		}
	}
	return out
}

// Table lists the commands per unit (a swipe) over n units, the costliest
// first, leaving out what ran less than once per 200 units.
func (s RedisCommands) Table(unit string, n int) string {
	if s == nil || n == 0 {
		return ""
	}
	names := make([]string, 0, len(s))
	for name := range s {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := s[names[i]], s[names[j]]
		if a.Usec != b.Usec {
			return a.Usec > b.Usec
		}
		return names[i] < names[j]
	})
	var b strings.Builder
	fmt.Fprintf(&b, "| Redis command | calls per %s | µs per %s | µs per call |\n|---|---:|---:|---:|\n", unit, unit)
	for _, name := range names {
		c := s[name]
		per := float64(c.Calls) / float64(n)
		if per < 0.005 {
			continue
		}
		fmt.Fprintf(&b, "| `%s` | %.3f | %.2f | %.2f |\n", name, per, float64(c.Usec)/float64(n), float64(c.Usec)/float64(c.Calls))
	}
	return b.String()
}
