//go:build unix

package loadtest

import (
	"os"
	"syscall"
)

// pauseProcess stops a process (SIGSTOP) until resumeProcess: the worker,
// while the API's swipes are measured alone.
func pauseProcess(pid int) error { return syscall.Kill(pid, syscall.SIGSTOP) }

// resumeProcess continues a process pauseProcess stopped (SIGCONT).
func resumeProcess(pid int) error { return syscall.Kill(pid, syscall.SIGCONT) }

// terminate asks a process to end (SIGTERM).
func terminate(p *os.Process) error { return p.Signal(syscall.SIGTERM) }
