//go:build linux

package bench

import (
	"fmt"

	"github.com/prometheus/procfs"
)

// readRSS reads a process's resident set size (VmRSS in /proc/PID/status).
func readRSS(pid int) (int64, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, fmt.Errorf("read VmRSS: %w", err)
	}
	st, err := p.NewStatus()
	if err != nil {
		return 0, fmt.Errorf("read VmRSS: %w", err)
	}
	return int64(st.VmRSS), nil
}
