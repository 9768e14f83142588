// Package benchcpu reports a benchmark's own CPU time per op next to the
// wall clock: on a shared machine the wall clock also counts time spent
// waiting for a core, the thread's CPU time does not.
package benchcpu

import (
	"runtime"
	"testing"
	"time"
)

// Meter measures the CPU time of the benchmark's OS thread from Start to
// Report.
type Meter struct {
	start time.Duration
	ok    bool
}

// Start locks the benchmark's goroutine to its OS thread (until Report)
// and starts measuring. Call it right before the benchmark's loop.
func Start() *Meter {
	runtime.LockOSThread()
	t, ok := threadCPU()
	return &Meter{start: t, ok: ok}
}

// Report adds the thread's CPU time per op ("cpu-ns/op") and, when per is
// above 0, per unit of work ("cpu-ns/<unit>") to b's figures, and unlocks
// the thread. Nothing is reported where the platform cannot tell.
func (m *Meter) Report(b *testing.B, per int, unit string) {
	end, ok := threadCPU()
	runtime.UnlockOSThread()
	if !m.ok || !ok || b.N == 0 {
		return
	}
	ns := float64((end - m.start).Nanoseconds()) / float64(b.N)
	b.ReportMetric(ns, "cpu-ns/op")
	if per > 0 {
		b.ReportMetric(ns/float64(per), "cpu-ns/"+unit)
	}
}
