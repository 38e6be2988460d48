package bench

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReadRSS(t *testing.T) {
	t.Parallel()
	rss, err := readRSS(os.Getpid())
	require.NoError(t, err)
	// A Go test binary holds a few MiB at least, and not terabytes.
	require.Greater(t, rss, int64(1<<20))
	require.Less(t, rss, int64(1<<40))
	_, err = readRSS(1 << 30)
	require.Error(t, err, "no such process")
}
