package cmd_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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
		{"PprofWithoutAdmin", []string{"--pprof", "--no-admin"}, "--pprof serves on the admin port: drop --no-admin"},
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

// TestServe_ZizqSettings: each of Zizq's serve settings that ours took on
// for the drop-in is read, from its flag and from its variable: a bad value
// is refused naming it, before anything starts (or, for the admin address
// and the log directory, before the store opens).
func TestServe_ZizqSettings(t *testing.T) {
	notAFile := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(notAFile, nil, 0o600))
	for _, tc := range []struct {
		flag, env, value string
		code             int
		msg              string
	}{
		{"--admin-port", "ZIZQ_ADMIN_PORT", "99999", cmd.ExitUsage, "invalid --admin-port 99999: use 0 to 65535"},
		{"--admin-host", "ZIZQ_ADMIN_HOST", "256.0.0.1", cmd.ExitFailure, "listen on 256.0.0.1:0"},
		{"--no-admin", "ZIZQ_NO_ADMIN", "maybe", cmd.ExitUsage, `"maybe"`},
		{"--admin-tls-cert", "ZIZQ_ADMIN_TLS_CERT", "cert.pem", cmd.ExitUsage, "--admin-tls-cert and --admin-tls-key go together: give both or neither"},
		{"--admin-tls-key", "ZIZQ_ADMIN_TLS_KEY", "key.pem", cmd.ExitUsage, "--admin-tls-cert and --admin-tls-key go together: give both or neither"},
		{"--admin-tls-client-ca", "ZIZQ_ADMIN_TLS_CLIENT_CA", "ca.pem", cmd.ExitUsage, "--admin-tls-client-ca requires --admin-tls-cert and --admin-tls-key"},
		{"--license-key-check-interval", "ZIZQ_LICENSE_KEY_CHECK_INTERVAL", "soon", cmd.ExitUsage, `invalid duration "soon"`},
		{"--log-to-disk", "ZIZQ_LOG_TO_DISK", "perhaps", cmd.ExitUsage, `"perhaps"`},
		{"--log-dir", "ZIZQ_LOG_DIR", filepath.Join(notAFile, "log"), cmd.ExitFailure, "log directory: "},
		{"--log-rotation", "ZIZQ_LOG_ROTATION", "weekly", cmd.ExitUsage, `invalid --log-rotation "weekly": use daily, hourly or never`},
		{"--log-max-size", "ZIZQ_LOG_MAX_SIZE", "0", cmd.ExitUsage, "invalid --log-max-size 0: use at least 1MiB"},
		{"--log-max-files", "ZIZQ_LOG_MAX_FILES", "0", cmd.ExitUsage, "invalid --log-max-files 0: use 1 or more"},
		{"--log-level", "ZIZQ_LOG_LEVEL", "loud", cmd.ExitUsage, `invalid --log-level "loud"`},
		{"--log-format", "ZIZQ_LOG_FORMAT", "xml", cmd.ExitUsage, `invalid --log-format "xml"`},
	} {
		for _, viaEnv := range []bool{false, true} {
			name := tc.flag
			if viaEnv {
				name = tc.env
			}
			t.Run(name, func(t *testing.T) {
				root := filepath.Join(t.TempDir(), "root")
				args := []string{"serve", "--root-dir", root, "--host", "127.0.0.1", "--port", "0", "--admin-port", "0"}
				if viaEnv {
					t.Setenv(tc.env, tc.value)
				} else {
					args = append(args, tc.flag+"="+tc.value)
				}
				if tc.flag == "--admin-port" && viaEnv {
					args = args[:len(args)-2] // the flag would win over the variable
				}
				r := runZizq(t, "", args...)
				require.Equal(t, tc.code, r.code, "stderr: %s", r.err)
				require.Contains(t, r.err, tc.msg)
				require.Empty(t, r.out, "the server must not start")
				require.NoDirExists(t, filepath.Join(root, "data"))
			})
		}
	}
	t.Run("Accepted", func(t *testing.T) {
		// Zizq's values of each, as a unit file would give them.
		for _, args := range [][]string{
			{"--log-level", "trace"}, {"--log-format", "pretty"}, {"--log-format", "compact"},
			{"--log-rotation", "hourly"}, {"--log-rotation", "never"}, {"--log-max-size", "1GiB"},
			{"--license-key-check-interval", "60s"}, {"--no-admin"},
		} {
			r := runZizq(t, "", append([]string{"serve", "--port", "99999"}, args...)...)
			require.Equal(t, "zizq: invalid --port 99999: use 0 to 65535\n", r.err, "%v is read, then the port refused", args)
		}
	})
}

// startupLines starts the binary as the official clients' integration
// harness does (serve --port 0 --log-format json) and returns the JSON log
// lines, decoded, as they come.
func startupLines(t *testing.T, args ...string) (*proc, <-chan map[string]any) {
	t.Helper()
	c := exec.Command(zizqBin, append([]string{"serve", "--port", "0", "--log-format", "json", "--log-level", "info", "--root-dir", t.TempDir()}, args...)...)
	stderr, err := c.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, c.Start())
	p := &proc{cmd: c}
	t.Cleanup(p.kill)
	lines := make(chan map[string]any, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
			}
		}
	}()
	return p, lines
}

// listeningURLs waits for the "listening" lines and returns the URL of each
// listener by its "api".
func listeningURLs(t *testing.T, lines <-chan map[string]any, want int) map[string]string {
	t.Helper()
	urls := map[string]string{}
	deadline := time.After(20 * time.Second)
	for len(urls) < want {
		select {
		case m, ok := <-lines:
			require.True(t, ok, "the server exited")
			f, _ := m["fields"].(map[string]any)
			if api, _ := f["api"].(string); m["msg"] == "listening" && api != "" {
				urls[api] = f["scheme"].(string) + "://" + f["addr"].(string)
			}
		case <-deadline:
			t.Fatalf("no listening lines; got %v", urls)
		}
	}
	return urls
}

// TestServe_StartupLines: with --log-format json each listener logs Zizq's
// line once it serves ({"fields":{"api":"primary"|"admin","addr","scheme"}}),
// and requests to the logged addresses work at once, as the clients'
// run.sh makes them.
func TestServe_StartupLines(t *testing.T) {
	t.Parallel()
	t.Run("BothListeners", func(t *testing.T) {
		t.Parallel()
		_, lines := startupLines(t, "--admin-port", "0")
		urls := listeningURLs(t, lines, 2)
		require.Len(t, urls, 2)
		status, _ := do(t, "GET", urls["primary"]+"/ready", nil)
		require.Equal(t, http.StatusOK, status)
		status, _ = do(t, "POST", urls["admin"]+"/compact", nil)
		require.Equal(t, http.StatusNoContent, status)
		status, _ = do(t, "POST", urls["primary"]+"/backup", nil)
		require.Equal(t, http.StatusNotFound, status, "backup is on the admin port only")
		status, _ = do(t, "GET", urls["admin"]+"/debug/pprof/", nil)
		require.Equal(t, http.StatusNotFound, status, "no profiles without --pprof")
	})
	t.Run("Pprof", func(t *testing.T) {
		t.Parallel()
		_, lines := startupLines(t, "--admin-port", "0", "--pprof")
		urls := listeningURLs(t, lines, 2)
		status, body := do(t, "GET", urls["admin"]+"/debug/pprof/heap?debug=1", nil)
		require.Equal(t, http.StatusOK, status)
		require.Contains(t, string(body), "heap profile:")
	})
	t.Run("NoAdmin", func(t *testing.T) {
		t.Parallel()
		p, lines := startupLines(t, "--no-admin")
		urls := listeningURLs(t, lines, 1)
		require.Contains(t, urls, "primary")
		status, _ := do(t, "GET", urls["primary"]+"/ready", nil)
		require.Equal(t, http.StatusOK, status)
		// Stop it: every line is out, and none was the admin's.
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		for m := range lines {
			f, _ := m["fields"].(map[string]any)
			require.NotEqual(t, "admin", f["api"], "no admin port with --no-admin")
		}
	})
	t.Run("LogToDisk", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "logs")
		p := startServer(t, "--root-dir", t.TempDir(), "--admin-port", "0", "--log-format", "json", "--log-level", "info", "--log-dir", dir, "--log-max-size", "1MiB", "--log-max-files", "3", "--log-rotation", "hourly")
		status, _ := do(t, "GET", p.url+"/ready", nil)
		require.Equal(t, http.StatusOK, status)
		require.Eventually(t, func() bool {
			b, err := os.ReadFile(filepath.Join(dir, "zizq.log"))
			return err == nil && strings.Contains(string(b), `"api":"admin"`) && strings.Contains(string(b), `"api":"primary"`)
		}, 10*time.Second, 20*time.Millisecond, "the log goes to the file")
	})
}
