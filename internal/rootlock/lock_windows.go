//go:build windows

package rootlock

import (
	"math"
	"os"

	"golang.org/x/sys/windows"
)

// errLocked is the lock call's answer when another process holds the lock.
var errLocked = windows.ERROR_LOCK_VIOLATION

// lockedRange is the byte range that LockFileEx locks: far past the PID at
// the start of the file, because Windows locks are mandatory and the PID
// must stay readable by the process that is refused.
var lockedRange = windows.Overlapped{Offset: 0, OffsetHigh: math.MaxUint32 >> 1}

// lockFile takes an exclusive lock without waiting; Windows releases it
// when the handle closes or the process ends.
func lockFile(f *os.File) error {
	ol := lockedRange
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
}

func unlockFile(f *os.File) error {
	ol := lockedRange
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}
