package batchexpr

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// limitsMemory: limitMemory works here.
const limitsMemory = true

// limitMemory caps the worker's address space at what it maps now plus
// bytes: an allocation past it fails, and the Go runtime then ends the
// worker ("fatal error: out of memory") instead of the machine paging.
func limitMemory(bytes int64) {
	base := mappedBytes()
	if base <= 0 {
		return
	}
	lim := uint64(base + bytes)
	_ = syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: lim, Max: lim})
}

// mappedBytes is the process's virtual size (VmSize), 0 if unknown.
func mappedBytes() int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(status, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("VmSize:"))
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte(" kB"))), 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}

// bindToParent makes the kernel kill the worker when the server dies,
// even by kill -9, while it is busy (stdin's end only reaches it between
// tasks).
func bindToParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// selfExe is the running binary, even once an upgrade has replaced or
// removed its file.
func selfExe() string { return "/proc/self/exe" }
