//go:build !linux

package drill

import "syscall"

// childAttr: elsewhere, the script that runs the drill stops its children
// by the PIDs in the work directory's pids file.
func childAttr() *syscall.SysProcAttr { return nil }
