package drill

import "syscall"

// childAttr makes the kernel kill a child when the drill's process ends,
// however it ends: nothing the drill started outlives it.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
