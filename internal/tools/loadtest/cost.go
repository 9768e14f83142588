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

// CPU samples the CPU time of the service's processes (from their ops
// ports' process_cpu_seconds_total), of the PostgreSQL backends serving its
// database and of Redis, so a run can say what each request cost.
type CPU struct {
	OpsURLs []string // the API's and the worker's operations ports
	Pool    *pgxpool.Pool
	Redis   redis.UniversalClient
}

// CPUSample is CPU seconds used so far, by part.
type CPUSample struct {
	Service  []float64 // per ops URL
	Postgres float64
	Redis    float64
	At       time.Time
	// backends is each PostgreSQL backend's CPU, by process id: a
	// connection closed between two samples takes its CPU with it, so a
	// difference is taken backend by backend (Sub).
	backends map[int]float64
}

// Sample reads the counters now; a part that cannot be read counts 0.
func (c CPU) Sample(ctx context.Context) CPUSample {
	s := CPUSample{At: time.Now()}
	for _, u := range c.OpsURLs {
		s.Service = append(s.Service, processCPU(ctx, u))
	}
	if c.Pool != nil {
		s.backends = postgresCPU(ctx, c.Pool)
		for _, v := range s.backends {
			s.Postgres += v
		}
	}
	if c.Redis != nil {
		s.Redis = redisCPU(ctx, c.Redis)
	}
	return s
}

// Sub is the CPU used between two samples. PostgreSQL's is the backends'
// of the later sample, each less what it had used at the earlier one (a
// backend that connected since counts whole; one that closed since is not
// counted).
func (s CPUSample) Sub(before CPUSample) CPUSample {
	out := CPUSample{Postgres: s.Postgres - before.Postgres, Redis: s.Redis - before.Redis, At: s.At}
	if s.backends != nil && before.backends != nil {
		out.Postgres = 0
		for pid, v := range s.backends {
			out.Postgres += v - before.backends[pid]
		}
	}
	for i := range s.Service {
		if i < len(before.Service) {
			out.Service = append(out.Service, s.Service[i]-before.Service[i])
		}
	}
	return out
}

func processCPU(ctx context.Context, opsURL string) float64 {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, opsURL+"/metrics", nil)
	if err != nil {
		return 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	return metricValue(resp.Body, "process_cpu_seconds_total")
}

// metricValue finds an unlabelled sample in the Prometheus text format.
func metricValue(r io.Reader, name string) float64 {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return 0
}

// postgresCPU reads the CPU time of each backend connected to the pool's
// database (the service's pools, which live as long as the service); nil
// when they cannot be listed.
func postgresCPU(ctx context.Context, pool *pgxpool.Pool) map[int]float64 {
	rows, err := pool.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	if err != nil {
		return nil
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil
	}
	out := make(map[int]float64, len(pids))
	for _, pid := range pids {
		out[int(pid)] = procCPU(int(pid))
	}
	return out
}

// procCPU is a process's user + system CPU seconds (Linux /proc).
func procCPU(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	const clkTck = 100 // USER_HZ on Linux
	return (ut + st) / clkTck
}

func redisCPU(ctx context.Context, rdb redis.UniversalClient) float64 {
	info, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return 0
	}
	total := 0.0
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return total
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
