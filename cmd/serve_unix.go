//go:build unix

package cmd

import (
	"os/signal"
	"syscall"
)

// ignoreFileSizeSignal keeps the server alive past a file-size limit
// (ulimit -f): the write that crosses it then fails with EFBIG, so writes
// answer 503 "storage unavailable" and reads go on, as on a full disk,
// instead of SIGXFSZ killing the process.
func ignoreFileSizeSignal() { signal.Ignore(syscall.SIGXFSZ) }
