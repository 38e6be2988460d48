package cmd

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
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

// TestPayloadCache_ShareOfMemoryLimit: unset, --payload-cache-size is an
// eighth of --memory-limit (the core's default when the limit is the
// runtime's) and shares two thirds of the limit with the engine's jobs; a
// value given, by the flag or its variable, is a fixed bound, 0 turning
// the cache off.
func TestPayloadCache_ShareOfMemoryLimit(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		args  []string
		env   string
		limit int64
		want  int64
		heap  int64
	}{
		"Unset":            {nil, "", 1 << 30, 128 << 20, 1 << 30 * 2 / 3},
		"UnsetSmallLimit":  {nil, "", 144 << 20, 18 << 20, 96 << 20},
		"UnsetNoLimit":     {nil, "", 0, 0, 0}, // the core's default, fixed
		"Given":            {[]string{"--payload-cache-size", "4MiB"}, "", 1 << 30, 4 << 20, 0},
		"GivenByVariable":  {nil, "4MiB", 1 << 30, 4 << 20, 0},
		"GivenZero":        {[]string{"--payload-cache-size", "0"}, "", 1 << 30, -1, 0},
		"GivenZeroNoLimit": {[]string{"--payload-cache-size", "0"}, "", 0, -1, 0},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var size optionalSize
			fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
			fs.Var(&size, "payload-cache-size", "")
			require.NoError(t, fs.Parse(tc.args))
			if tc.env != "" {
				require.NoError(t, fs.Lookup("payload-cache-size").Value.Set(tc.env)) // as applyEnv sets it
			}
			require.Equal(t, tc.want, payloadCache(size, tc.limit))
			require.Equal(t, tc.heap, payloadCacheHeap(size, tc.limit), "the heap it shares with the engine's jobs")
		})
	}
	var unset optionalSize
	require.Equal(t, "auto", unset.String(), "the default as the help shows it")
}
