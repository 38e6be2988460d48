//go:build !unix

package worker

import (
	"os"
	"os/exec"
)

// ownProcessGroup does nothing where there are no process groups.
func ownProcessGroup(*exec.Cmd) {}

// signalGroup kills the process: without process groups or SIGTERM, a
// timeout and a stop both kill at once.
func signalGroup(p *os.Process, _ bool) { _ = p.Kill() }

func exitStatus(st *os.ProcessState) (int, string) { return st.ExitCode(), "" }
