//go:build !linux

package loadtest

import "syscall"

// childAttr: elsewhere than Linux, a child is stopped by the load test
// only (Stop, or the end of its context).
func childAttr() *syscall.SysProcAttr { return nil }
