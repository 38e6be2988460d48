//go:build !linux

package bench

import (
	"errors"
	"fmt"
	"runtime"
)

// readRSS would read a process's resident set size: /proc/PID/status is
// Linux's.
func readRSS(int) (int64, error) {
	return 0, fmt.Errorf("VmRSS on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
