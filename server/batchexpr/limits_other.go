//go:build !linux

package batchexpr

import (
	"os"
	"os/exec"
)

// limitsMemory: limitMemory does nothing here.
const limitsMemory = false

// limitMemory is a no-op here: only Linux gives a dependable address-space
// limit (RLIMIT_AS). The worker's soft memory limit and its deadline
// still apply, and whatever it takes is the worker's, not the server's.
func limitMemory(int64) {}

// bindToParent is a no-op here: the worker ends when its stdin closes,
// which happens when the server exits.
func bindToParent(*exec.Cmd) {}

// selfExe is the running binary's path.
func selfExe() string {
	exe, err := os.Executable()
	if err != nil {
		return os.Args[0]
	}
	return exe
}
