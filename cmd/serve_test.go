package cmd_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/cmd"
)

// TestServe_RefusesBadSettings: settings that cannot work are usage errors
// (exit 2) that name the flag, before anything starts: no "Listening" line,
// no log line and nothing written under the root.
func TestServe_RefusesBadSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"MaxBodySizeNaN", []string{"--max-body-size", "NaN"}, `invalid argument "NaN" for "--max-body-size" flag: invalid size "NaN" (use e.g. 16MiB, 256MB, 1048576)`},
		{"MaxBodySizeHuge", []string{"--max-body-size", "1e30"}, `invalid argument "1e30" for "--max-body-size" flag: size "1e30" is too large (at most 9223372036854775807 bytes)`},
		{"CacheSizeNegative", []string{"--cache-size", "-1"}, `invalid argument "-1" for "--cache-size" flag: invalid size "-1" (use e.g. 16MiB, 256MB, 1048576)`},
		{"RetentionNaNDays", []string{"--default-dead-job-retention", "NaNd"}, `invalid argument "NaNd" for "--default-dead-job-retention" flag: invalid duration "NaNd" (use e.g. 1500, 30s, 5m, 7d)`},
		{"RetentionOverflow", []string{"--default-dead-job-retention", "9223372036854775807"}, `invalid argument "9223372036854775807" for "--default-dead-job-retention" flag: duration "9223372036854775807" is too long (at most 106751d)`},
		{"BackoffPastUint32Ms", []string{"--default-backoff-base", "50d"}, "--default-backoff-base must be at most 4294967295ms"},
		{"JitterPastUint32Ms", []string{"--default-backoff-jitter", "50d"}, "--default-backoff-jitter must be at most 4294967295ms"},
		{"PortTooLarge", []string{"--port", "99999"}, "invalid --port 99999: use 0 to 65535"},
		{"PortNegative", []string{"--port", "-1"}, "invalid --port -1: use 0 to 65535"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := filepath.Join(t.TempDir(), "root")
			r := runZizq(t, "", append([]string{"serve", "--root-dir", root, "--host", "127.0.0.1", "--port", "0"}, tc.args...)...)
			require.Equal(t, cmd.ExitUsage, r.code, "stderr: %s", r.err)
			require.Empty(t, r.out, "the server must not start")
			require.Equal(t, "zizq: "+tc.msg+"\n", r.err)
			require.NoDirExists(t, root, "nothing is written before the settings are checked")
		})
	}
}

// TestServe_PortInUse: a port taken by another process is a plain failure
// (exit 1) naming the address, without the store's start-up in the way.
func TestServe_PortInUse(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	root := t.TempDir()
	code, stdout, stderr := runBinary(t, "serve", "--root-dir", root, "--host", "127.0.0.1", "--port", port, "--log-level", "debug")
	require.Equal(t, cmd.ExitFailure, code, "stderr: %s", stderr)
	require.Empty(t, stdout)
	require.Equal(t, "zizq: listen on 127.0.0.1:"+port+": address already in use\n", stderr)
	require.NoDirExists(t, filepath.Join(root, "data"), "the store is not opened when the port cannot be had")
}

// runBinary runs the built zizq to its end and returns its exit code and
// output.
func runBinary(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, zizqBin, args...)
	var out, errb strings.Builder
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String(), errb.String()
	}
	require.NoError(t, err)
	return 0, out.String(), errb.String()
}

// TestServe_RootLock: a second server on a root that a server holds exits
// 1 naming the holder's PID, before it opens a port (at debug level it
// would log "listening"); restore refuses the root too. Once the holder is
// killed with SIGKILL, the kernel has released the lock and a new server
// starts on the root.
func TestServe_RootLock(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	first := startServer(t, "--root-dir", root)
	pid := strconv.Itoa(first.cmd.Process.Pid)
	inUse := "zizq: root dir " + root + " is in use by pid " + pid + "\n"

	code, stdout, stderr := runBinary(t, "serve", "--root-dir", root, "--host", "127.0.0.1", "--port", "0", "--log-level", "debug")
	require.Equal(t, cmd.ExitFailure, code, "stderr: %s", stderr)
	require.Empty(t, stdout)
	require.Equal(t, inUse, stderr, "refused before it logs or listens")

	code, stdout, stderr = runBinary(t, "restore", "--root-dir", root, filepath.Join(t.TempDir(), "backup.tar.gz"))
	require.Equal(t, cmd.ExitFailure, code, "stderr: %s", stderr)
	require.Empty(t, stdout)
	require.Equal(t, inUse, stderr)

	status, _ := do(t, "GET", first.url+"/ready", nil)
	require.Equal(t, http.StatusOK, status, "the first server serves on")

	first.kill()
	again := startServer(t, "--root-dir", root)
	status, _ = do(t, "GET", again.url+"/ready", nil)
	require.Equal(t, http.StatusOK, status)
}
