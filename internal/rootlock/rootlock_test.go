package rootlock_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/internal/rootlock"
)

func TestAcquire_RefusesASecondHolder(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "root")
	first, err := rootlock.Acquire(dir)
	require.NoError(t, err)
	pid, err := os.ReadFile(filepath.Join(dir, rootlock.FileName))
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(os.Getpid())+"\n", string(pid))

	// flock locks belong to the open file: a second open in this process
	// is refused as another process would be.
	_, err = rootlock.Acquire(dir)
	require.ErrorIs(t, err, rootlock.ErrInUse)
	var inUse *rootlock.InUseError
	require.True(t, errors.As(err, &inUse))
	require.Equal(t, os.Getpid(), inUse.PID)
	require.EqualError(t, err, "root dir "+dir+" is in use by pid "+strconv.Itoa(os.Getpid()))

	require.NoError(t, first.Release())
	again, err := rootlock.Acquire(dir)
	require.NoError(t, err, "a released root can be taken again")
	require.NoError(t, again.Release())
}

func TestInUseError_WithoutPID(t *testing.T) {
	t.Parallel()
	err := &rootlock.InUseError{Dir: "/r"}
	require.EqualError(t, err, "root dir /r is in use by another process")
}
