//go:build !unix

package loadtest

import (
	"errors"
	"os"
)

func pauseProcess(int) error  { return errors.New("pausing a process needs a Unix system") }
func resumeProcess(int) error { return nil }

func terminate(p *os.Process) error { return p.Kill() }
