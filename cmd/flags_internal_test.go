package cmd

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFormatSizeAndDuration_RoundTrip(t *testing.T) {
	t.Parallel()
	for _, n := range []int64{0, 1, 1000, 1 << 10, 1536, 16 << 20, 144 << 20, 3 << 30} {
		got, err := ParseSize(formatSize(n))
		require.NoError(t, err, formatSize(n))
		require.Equal(t, n, got, formatSize(n))
	}
	require.Equal(t, "16MiB", formatSize(16<<20))
	for _, d := range []time.Duration{0, time.Millisecond, 15 * time.Second, 7 * 24 * time.Hour, 36 * time.Hour} {
		got, err := ParseDuration(formatDuration(d))
		require.NoError(t, err, formatDuration(d))
		require.Equal(t, d, got, formatDuration(d))
	}
	require.Equal(t, "7d", formatDuration(7*24*time.Hour))
}
