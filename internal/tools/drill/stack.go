package drill

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/collegematch/matching/internal/tools/faultproxy"
)

// proc is one process the drill started: the API, the worker or Redis.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited
}

// alive reports whether the process has not exited yet.
func (p *proc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// stack is the service as the drill runs it: its own Redis, a fault proxy
// in front of PostgreSQL, the API and the worker.
type stack struct {
	c     Config
	proxy *faultproxy.Proxy
	env   []string // the API's and the worker's environment

	mu    sync.Mutex
	procs map[string]*proc
}

// Addresses of the stack: Config.Port is the API, +1 the webhook receiver,
// +2 the API's operations port, +3 the worker's.
func (s *stack) apiURL() string { return fmt.Sprintf("http://127.0.0.1:%d", s.c.Port) }
func (s *stack) apiOps() string { return fmt.Sprintf("http://127.0.0.1:%d", s.c.Port+2) }
func (s *stack) workerOps() string {
	return fmt.Sprintf("http://127.0.0.1:%d", s.c.Port+3)
}
func (s *stack) redisURL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", s.c.RedisPort) }

// startStack starts Redis, the proxy, the worker and the API, and waits
// until both binaries are ready.
func startStack(ctx context.Context, c Config, hooks string) (*stack, error) {
	pg, err := url.Parse(c.DatabaseURL)
	if err != nil || pg.Host == "" || pg.Port() == "" {
		return nil, fmt.Errorf("DATABASE_URL must be a postgres:// URL with a host and port")
	}
	s := &stack{c: c, procs: map[string]*proc{}}
	if s.proxy, err = faultproxy.Start(pg.Host); err != nil {
		return nil, err
	}
	through := *pg
	through.Host = s.proxy.Addr()
	s.env = environ(map[string]string{
		"DATABASE_URL":           through.String(),
		"REDIS_URL":              s.redisURL(),
		"AUTH_HS256_SECRET":      c.Secret,
		"WEBHOOK_ENDPOINTS_FILE": hooks,
		"LOG_LEVEL":              "warn",
	})
	if err := s.startRedis(ctx); err != nil {
		s.stop()
		return nil, err
	}
	if err := s.startWorker(ctx); err != nil {
		s.stop()
		return nil, err
	}
	if err := s.startAPI(ctx); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// environ is this process's environment with set applied.
func environ(set map[string]string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			out = append(out, kv)
		}
	}
	for k, v := range set {
		out = append(out, k+"="+v)
	}
	return out
}

func (s *stack) startRedis(ctx context.Context) error {
	if err := s.start("redis", s.c.RedisServer, nil, "--port", strconv.Itoa(s.c.RedisPort), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.c.Work, "--logfile", ""); err != nil {
		return err
	}
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", s.c.RedisPort)})
	defer rdb.Close()
	return waitFor(ctx, 10*time.Second, "redis", func(ctx context.Context) bool {
		return rdb.Ping(ctx).Err() == nil
	})
}

func (s *stack) startWorker(ctx context.Context) error {
	env := append(slices.Clone(s.env), "OPS_ADDR="+strings.TrimPrefix(s.workerOps(), "http://"))
	if err := s.start("worker", filepath.Join(s.c.Bin, "worker"), env); err != nil {
		return err
	}
	return waitReady(ctx, s.workerOps(), "worker")
}

func (s *stack) startAPI(ctx context.Context) error {
	env := append(slices.Clone(s.env), "HTTP_ADDR="+strings.TrimPrefix(s.apiURL(), "http://"),
		"OPS_ADDR="+strings.TrimPrefix(s.apiOps(), "http://"))
	if err := s.start("api", filepath.Join(s.c.Bin, "api"), env); err != nil {
		return err
	}
	return waitReady(ctx, s.apiOps(), "api")
}

// start runs name's binary, its output appended to name.log in the work
// directory.
func (s *stack) start(name, bin string, env []string, args ...string) error {
	if !portFree(name, s) {
		return fmt.Errorf("%s: its port is taken", name)
	}
	logf, err := os.OpenFile(filepath.Join(s.c.Work, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	s.mu.Lock()
	s.procs[name] = p
	s.mu.Unlock()
	return s.writePIDs()
}

// portFree reports whether the port name listens on is free, so a process
// left over from another run is never mistaken for the one just started.
func portFree(name string, s *stack) bool {
	port := map[string]int{"redis": s.c.RedisPort, "api": s.c.Port, "worker": s.c.Port + 3}[name]
	deadline := time.Now().Add(5 * time.Second)
	for {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			ln.Close()
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kill sends sig to name's process and waits for it to exit (SIGKILL after
// 10 s).
func (s *stack) kill(name string, sig syscall.Signal) {
	s.mu.Lock()
	p := s.procs[name]
	delete(s.procs, name)
	s.mu.Unlock()
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	_ = s.writePIDs()
}

// writePIDs keeps the work directory's pids file (one PID a line) listing
// the processes running, for the script that started the drill to stop
// them should the drill itself be killed.
func (s *stack) writePIDs() error {
	s.mu.Lock()
	var b strings.Builder
	for _, p := range s.procs {
		fmt.Fprintf(&b, "%d\n", p.cmd.Process.Pid)
	}
	s.mu.Unlock()
	tmp := filepath.Join(s.c.Work, "pids.tmp")
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(s.c.Work, "pids"))
}

// stop ends every process (API first, then the worker, then Redis) and the
// proxy.
func (s *stack) stop() {
	for _, name := range []string{"api", "worker", "redis"} {
		s.kill(name, syscall.SIGTERM)
	}
	if s.proxy != nil {
		_ = s.proxy.Close()
	}
}

// exited names the processes that ended without the drill stopping them.
func (s *stack) exited() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for name, p := range s.procs {
		if !p.alive() {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// ready waits for the API and the worker to answer /readyz.
func (s *stack) ready(ctx context.Context) error {
	if err := waitReady(ctx, s.workerOps(), "worker"); err != nil {
		return err
	}
	return waitReady(ctx, s.apiOps(), "api")
}

func waitReady(ctx context.Context, ops, name string) error {
	client := &http.Client{Timeout: 2 * time.Second}
	return waitFor(ctx, 60*time.Second, name, func(ctx context.Context) bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ops+"/readyz", nil)
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// waitFor polls ok every 100 ms until it holds or within passes.
func waitFor(ctx context.Context, within time.Duration, what string, ok func(context.Context) bool) error {
	deadline := time.Now().Add(within)
	for !ok(ctx) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s was not ready after %s", what, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

var errStopped = errors.New("drill stopped")
