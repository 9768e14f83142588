//go:build !linux

package benchcpu

import "time"

// threadCPU is not known on this platform.
func threadCPU() (time.Duration, bool) { return 0, false }
