package testutil

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Servers that tests start with the project's own scripts, on 127.0.0.1:
// a Redis Cluster (scripts/redis-cluster.sh), a Redis Sentinel set-up
// (scripts/redis-sentinel.sh) and PgBouncer in transaction pooling mode
// (scripts/pgbouncer.sh). Each takes a block of free ports from TEST_PORTS
// ("LOW-HIGH", default 20000-29999; a block is locked by a file in the temp
// directory, so test processes running at once never share one) and is
// stopped by Stop.

// ErrNotInstalled is returned when a script cannot find its server's
// binaries (redis-server 7 or later, pgbouncer).
var ErrNotInstalled = errors.New("not installed")

// Script is a set of servers one of the project's scripts started.
type Script struct {
	URL  string // what `start` printed: a REDIS_URL or DATABASE_URL
	Port int    // the first port of its block

	path    string
	env     []string
	release func()
	once    sync.Once
}

// portBlock is the size of a port block; every script needs fewer ports.
const portBlock = 10

// StartRedisCluster starts a Redis Cluster of three masters.
func StartRedisCluster(ctx context.Context) (*Script, error) {
	return startScript(ctx, "redis-cluster.sh", "REDIS_CLUSTER_DIR", nil)
}

// StartRedisSentinel starts one master, one replica and three sentinels;
// URL is the Sentinel REDIS_URL (master name "matching").
func StartRedisSentinel(ctx context.Context) (*Script, error) {
	return startScript(ctx, "redis-sentinel.sh", "REDIS_SENTINEL_DIR", nil)
}

// StartPgBouncer starts PgBouncer in transaction pooling mode in front of
// the server of TEST_DATABASE_URL, with poolSize server connections per
// database. DatabaseURL gives the URL of a database through it.
func StartPgBouncer(ctx context.Context, poolSize int) (*Script, error) {
	return startScript(ctx, "pgbouncer.sh", "PGBOUNCER_DIR",
		[]string{"DATABASE_URL=" + AdminURL(), "PGBOUNCER_POOL_SIZE=" + strconv.Itoa(poolSize)})
}

// DatabaseURL is direct (a URL on TEST_DATABASE_URL's server, such as
// NewDBURL returns) rewritten to go through this PgBouncer, with the pgx
// statement mode transaction pooling needs.
func (s *Script) DatabaseURL(direct string) string {
	u, err := url.Parse(s.PlainDatabaseURL(direct))
	if err != nil {
		panic(err)
	}
	q := u.Query()
	q.Set("default_query_exec_mode", "cache_describe")
	u.RawQuery = q.Encode()
	return u.String()
}

// PlainDatabaseURL is direct rewritten to go through this PgBouncer and
// nothing else: the URL an operator would write for PostgreSQL, naming no
// statement mode.
func (s *Script) PlainDatabaseURL(direct string) string {
	u, err := url.Parse(direct)
	if err != nil {
		panic(err)
	}
	u.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port))
	return u.String()
}

// Run runs another subcommand of the script (for example the Sentinel
// script's failover) and returns its output.
func (s *Script) Run(ctx context.Context, args ...string) (string, error) {
	return s.run(ctx, args...)
}

// Stop stops the servers and removes their files; later calls do nothing.
func (s *Script) Stop() error {
	var err error
	s.once.Do(func() {
		_, err = s.run(context.Background(), "stop")
		s.release()
	})
	return err
}

func (s *Script) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", append([]string{s.path}, append(args, strconv.Itoa(s.Port))...)...)
	cmd.Env = append(os.Environ(), s.env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errOut.String())
		if strings.Contains(msg, "not installed") || strings.Contains(msg, "too old") {
			return "", fmt.Errorf("%s %s: %w: %s", filepath.Base(s.path), args[0], ErrNotInstalled, msg)
		}
		return "", fmt.Errorf("%s %s: %w: %s", filepath.Base(s.path), args[0], err, msg)
	}
	return strings.TrimSpace(out.String()), nil
}

func startScript(ctx context.Context, name, dirVar string, env []string) (*Script, error) {
	_, self, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(self), "..", "..", "scripts", name)
	for attempt := 0; ; attempt++ {
		port, release, err := reservePorts()
		if err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp("", strings.TrimSuffix(name, ".sh")+"-")
		if err != nil {
			release()
			return nil, err
		}
		// The script makes the directory again (and removes it on stop).
		_ = os.Remove(dir)
		s := &Script{Port: port, path: path, env: append(env, dirVar+"="+dir), release: release}
		s.URL, err = s.run(ctx, "start")
		if err == nil {
			if i := strings.LastIndexByte(s.URL, '\n'); i >= 0 {
				s.URL = s.URL[i+1:]
			}
			return s, nil
		}
		_, _ = s.run(context.Background(), "stop")
		release()
		// Another process may have bound a port between the check and the
		// start: try another block, twice.
		if errors.Is(err, ErrNotInstalled) || attempt == 2 {
			return nil, err
		}
	}
}

// reservePorts finds a block of portBlock free ports in TEST_PORTS and
// locks it for this process.
func reservePorts() (int, func(), error) {
	lo, hi := 20000, 29999
	if r := os.Getenv("TEST_PORTS"); r != "" {
		a, b, ok := strings.Cut(r, "-")
		l, err1 := strconv.Atoi(a)
		h, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || h-l+1 < portBlock {
			return 0, nil, fmt.Errorf("TEST_PORTS=%q is not a range LOW-HIGH of at least %d ports", r, portBlock)
		}
		lo, hi = l, h
	}
	blocks := (hi - lo + 1) / portBlock
	first := rand.IntN(blocks)
	for i := range blocks {
		base := lo + ((first+i)%blocks)*portBlock
		f, err := os.OpenFile(filepath.Join(os.TempDir(), fmt.Sprintf("matching-test-ports-%d.lock", base)), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			return 0, nil, err
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			_ = f.Close()
			continue
		}
		if portsFree(base, portBlock) {
			return base, func() { _ = f.Close() }, nil // closing the file releases the lock
		}
		_ = f.Close()
	}
	return 0, nil, fmt.Errorf("no block of %d free ports in %d-%d (TEST_PORTS)", portBlock, lo, hi)
}

func portsFree(base, n int) bool {
	for p := base; p < base+n; p++ {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			return false
		}
		_ = ln.Close()
	}
	return true
}

// SkipOrFail skips the test when err says a server is not installed on
// this machine, unless CI is set (CI installs them); any other error
// fails it.
func SkipOrFail(tb testing.TB, err error) {
	tb.Helper()
	if err == nil {
		return
	}
	if errors.Is(err, ErrNotInstalled) && os.Getenv("CI") == "" {
		tb.Skipf("%v (CI runs this test)", err)
	}
	tb.Fatal(err)
}
