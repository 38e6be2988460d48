package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRotatingLog_Write: a log file is rotated at the first write of a new
// day (or hour), as well as by size, and at most --log-max-files rotated
// files are kept.
func TestRotatingLog_Write(t *testing.T) {
	t.Parallel()
	files := func(dir string) int {
		es, err := os.ReadDir(dir)
		require.NoError(t, err)
		return len(es)
	}
	for _, tc := range []struct {
		every string
		step  time.Duration
		files int // after a write, a step of time and a write
	}{
		{rotateDaily, 24 * time.Hour, 2},
		{rotateDaily, time.Minute, 1},
		{rotateHourly, time.Hour, 2},
		{rotateHourly, time.Minute, 1},
		{rotateNever, 48 * time.Hour, 1},
	} {
		t.Run(tc.every+"/"+tc.step.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			o := &ServeOptions{LogDir: dir, LogRotation: tc.every, LogMaxSize: 1 << 20, LogMaxFiles: 2}
			w, closeLog, err := o.logWriter(nil)
			require.NoError(t, err)
			defer closeLog()
			now := time.Date(2026, 5, 1, 10, 30, 0, 0, time.Local)
			w.(*rotatingLog).now = func() time.Time { return now }
			_, err = w.Write([]byte("one\n"))
			require.NoError(t, err)
			now = now.Add(tc.step)
			_, err = w.Write([]byte("two\n"))
			require.NoError(t, err)
			require.Equal(t, tc.files, files(dir))
			b, err := os.ReadFile(filepath.Join(dir, logFileName))
			require.NoError(t, err)
			require.Equal(t, "two\n", string(b)[len(b)-4:])
		})
	}
	t.Run("BySizeKeepingMaxFiles", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		o := &ServeOptions{LogDir: dir, LogRotation: rotateNever, LogMaxSize: 1, LogMaxFiles: 2}
		w, closeLog, err := o.logWriter(nil)
		require.NoError(t, err)
		defer closeLog()
		line := append(bytes.Repeat([]byte("x"), 64<<10-1), '\n')
		for range 5 * 16 { // 5 MiB: a new file each MiB
			_, err := w.Write(line)
			require.NoError(t, err)
		}
		// Old files are removed in the background.
		require.Eventually(t, func() bool { return files(dir) == 3 }, 10*time.Second, 10*time.Millisecond,
			"the current file and 2 rotated ones")
	})
}
