package loadtest

import "syscall"

// childAttr makes a child process (B3) receive SIGTERM when the load test
// dies, so none is left serving after a run that was killed.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
