// Package rootlock holds a zizq root directory for one process at a time:
// two servers on one root would dispatch every job twice. The lock is an
// operating-system lock on <root>/zizq.lock (flock on Unix, LockFileEx on
// Windows), so the kernel releases it when its holder dies, however it
// dies; the file records the holder's PID for the error message only.
package rootlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// FileName is the lock file inside the root directory.
const FileName = "zizq.lock"

// ErrInUse is what an *InUseError matches with errors.Is.
var ErrInUse = errors.New("root dir is in use")

// InUseError says that another process holds the root.
type InUseError struct {
	Dir string
	PID int // 0 when the holder has not written it (yet)
}

func (e *InUseError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("root dir %s is in use by another process", e.Dir)
	}
	return fmt.Sprintf("root dir %s is in use by pid %d", e.Dir, e.PID)
}

// Is makes errors.Is(err, ErrInUse) hold.
func (e *InUseError) Is(target error) bool { return target == ErrInUse }

// Lock is the hold of one root directory.
type Lock struct{ f *os.File }

// Acquire creates dir if need be and locks it for this process, without
// waiting: if another process holds it, the error is an *InUseError naming
// that process.
func Acquire(dir string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("lock root dir: %w", err)
	}
	// Not O_TRUNC: the holder's PID must stay readable until we hold it.
	f, err := os.OpenFile(filepath.Join(dir, FileName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock root dir: %w", err)
	}
	if err := lockFile(f); err != nil {
		pid := readPID(f)
		_ = f.Close()
		if errors.Is(err, errLocked) {
			return nil, &InUseError{Dir: dir, PID: pid}
		}
		return nil, fmt.Errorf("lock root dir %s: %w", dir, err)
	}
	if err := writePID(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock root dir %s: %w", dir, err)
	}
	return &Lock{f: f}, nil
}

// Release gives the root up. The file stays: removing it would let a
// process that opened it before the removal lock a file nobody else sees.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = unlockFile(l.f)
	err := l.f.Close()
	l.f = nil
	return err
}

func writePID(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		return err
	}
	return nil
}

func readPID(f *os.File) int {
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
