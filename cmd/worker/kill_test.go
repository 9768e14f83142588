package main

import (
	"bufio"
	"context"
	"os"
	osexec "os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
)

// workerChildEnv marks the test binary run as a worker process by
// TestWebhookWorkerProcessKilledMidDelivery.
const workerChildEnv = "MATCHING_TEST_WORKER_CHILD"

// TestWorkerChildProcess is the worker process of the kill test: it runs
// only when the test binary is started as that child, prints the ops
// address, and runs until it is killed.
func TestWorkerChildProcess(t *testing.T) {
	if os.Getenv(workerChildEnv) != "1" {
		t.Skip("runs only as the child process of TestWebhookWorkerProcessKilledMidDelivery")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	// Never outlive the test that started it (a test binary killed on
	// timeout leaves its children behind otherwise).
	parent := os.Getppid()
	ctx, orphaned := context.WithCancel(ctx)
	defer orphaned()
	go func() {
		for range time.Tick(time.Second) {
			if os.Getppid() != parent {
				orphaned()
				return
			}
		}
	}()
	ready := make(chan string, 1)
	go func() {
		addr := <-ready
		os.Stdout.WriteString("ops " + addr + "\n")
	}()
	if err := run(ctx, os.Getenv, os.Stderr, ready); err != nil {
		t.Fatal(err)
	}
}

// startWorkerProcess starts the worker as a process of its own, with env.
func startWorkerProcess(t *testing.T, env map[string]string) *osexec.Cmd {
	t.Helper()
	cmd := osexec.Command(os.Args[0], "-test.run=^TestWorkerChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), workerChildEnv+"=1")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ops ") {
				lines <- sc.Text()
			}
		}
	}()
	select {
	case <-lines:
	case <-time.After(30 * time.Second):
		t.Fatal("worker process did not get ready")
	}
	return cmd
}

// The worker process is killed (SIGKILL: no shutdown, nothing recorded)
// while receivers hold its requests open. Every event still reaches every
// endpoint once a worker runs again: the queue recovers the tasks whose
// worker died (after their lease, about a minute), and the deliveries'
// claims have ended by then; each duplicate carries the same webhook-id.
func TestWebhookWorkerProcessKilledMidDelivery(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the queue's recovery of a dead worker's tasks (1-2 min)")
	}
	eps, w := hangingWorld(t)
	a, b := eps[0].rc, eps[1].rc
	var ids []int64
	for i := range 8 {
		ids = append(ids, w.swipe(t, i%4, i))
	}
	child := startWorkerProcess(t, w.env)
	require.Eventually(t, func() bool { return a.arrived() == len(ids) && b.arrived() == len(ids) }, 20*time.Second,
		10*time.Millisecond, "every first attempt is in flight")
	require.NoError(t, child.Process.Kill())
	_ = child.Wait()

	startWith(t, w.env, options{})
	for _, id := range ids {
		for _, e := range eps {
			w.waitStatus(t, id, e.url(), domain.DeliverySucceeded, 3*time.Minute)
		}
	}
	checkAtLeastOnce(t, ids, eps)
}
