//go:build unix && !aix

package rootlock

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// errLocked is the lock call's answer when another process holds the lock.
var errLocked = unix.EWOULDBLOCK

// lockFile takes an exclusive flock on the whole file without waiting.
// flock locks belong to the open file, so a second Acquire in the same
// process fails too, as a second process would.
func lockFile(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

func unlockFile(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_UN) }
