//go:build linux

package query_test

import (
	"runtime"
	"syscall"
	"time"
)

// threadCPU is the CPU time the calling OS thread has used: benchmarks lock
// their goroutine to a thread and report CPU time per op next to the wall
// clock, which on a busy machine also counts time spent waiting for a core.
func threadCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	const rusageThread = 1 // RUSAGE_THREAD
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

func lockThread() func() {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}
