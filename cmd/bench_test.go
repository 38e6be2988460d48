package cmd_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/cmd"
	"github.com/zizq/zizq/internal/bench"
)

// tinyBench are sizes that run a scenario in seconds; internal/bench tests
// what the scenarios measure.
var tinyBench = []string{"--workers", "2", "--prefetch", "8", "--producers", "2", "--bulk", "20"}

// runBench runs the real binary (bench starts the server as its own child
// process) with env added, and decodes its JSON output.
func runBench(t *testing.T, env []string, args ...string) (bench.Report, map[string]any) {
	t.Helper()
	c := exec.Command(zizqBin, append(append([]string{"bench", "-o", "json", "--jobs", "300"}, tinyBench...), args...)...)
	c.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	require.NoError(t, c.Run(), "stderr: %s", stderr.String())
	require.Empty(t, stderr.String(), "no progress line off a terminal")
	var rep bench.Report
	dec := json.NewDecoder(bytes.NewReader(stdout.Bytes()))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&rep), "output: %s", stdout.String())
	require.False(t, dec.More(), "one JSON object")
	var raw map[string]any
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &raw))
	return rep, raw
}

func keys(m any) []string {
	var out []string
	for k := range m.(map[string]any) {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestBench_Binary runs a scenario through the command line, with ZIZQ_URL
// and server settings in the environment that bench must ignore: the child
// server is this very binary, with its own defaults.
func TestBench_Binary(t *testing.T) {
	t.Parallel()
	env := []string{"ZIZQ_URL=http://127.0.0.1:1", "ZIZQ_DEFAULT_COMMIT_MODE=bogus"}
	rep, raw := runBench(t, env, "--scenario", "e2e")
	require.Equal(t, []string{"cores", "e2e", "elapsed_s", "gomaxprocs", "os", "server", "settings", "version"}, keys(raw))
	require.Equal(t, "child", rep.Server.Mode)
	require.Equal(t, "default", rep.Server.CommitMode)
	require.Equal(t, zizqBin, rep.Server.Binary)
	require.Equal(t, 300, rep.E2E.Jobs)
	require.Positive(t, rep.E2E.JobsPerS)
}

// TestBench_Scenarios runs drain and scale through the command line at
// tiny sizes: their flags reach the load generator and their figures the
// JSON output.
func TestBench_Scenarios(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		args  []string
		check func(*testing.T, bench.Report)
	}{
		{"Drain", []string{"--scenario", "drain", "--jobs", "3000"}, func(t *testing.T, rep bench.Report) {
			require.Equal(t, 3000, rep.Drain.Jobs)
			require.Positive(t, rep.Drain.Enqueue.JobsPerS)
			require.Positive(t, rep.Drain.Drain.JobsPerS)
		}},
		{"Scale", []string{"--scenario", "scale", "--scale-jobs", "3000"}, func(t *testing.T, rep bench.Report) {
			require.Equal(t, 3000, rep.Scale.Jobs)
			require.False(t, rep.Scale.Parked)
			require.Positive(t, rep.Scale.Restart.FirstJobMs)
		}},
		{"ScaleParked", []string{"--scenario", "scale", "--scale-jobs", "3000", "--scale-parked"}, func(t *testing.T, rep bench.Report) {
			require.True(t, rep.Scale.Parked)
			require.EqualValues(t, 3000, rep.Scale.JobsAfterFill.Parked)
			require.Positive(t, rep.Scale.Restart.FirstJobMs)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rep, raw := runBench(t, nil, tt.args...)
			require.Contains(t, raw, tt.args[1])
			require.Len(t, raw, 8, "one scenario: %v", keys(raw))
			tt.check(t, rep)
		})
	}
}

// TestBench_ServerBinary starts the binary --server-binary names as the
// child server.
func TestBench_ServerBinary(t *testing.T) {
	t.Parallel()
	other := filepath.Join(t.TempDir(), "zizq-other")
	require.NoError(t, os.Symlink(zizqBin, other))
	rep, _ := runBench(t, nil, "--scenario", "e2e", "--server-binary", other)
	require.Equal(t, other, rep.Server.Binary)
	require.NotEmpty(t, rep.Server.Version)
}

func TestBench_Usage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"CommitModeWithURL", []string{"--url", "http://127.0.0.1:1", "--commit-mode", "fsync"}, "cannot be used with --url"},
		{"ServerBinaryWithURL", []string{"--url", "http://127.0.0.1:1", "--server-binary", "zizq"}, "--server-binary sets up the temporary server"},
		{"MissingServerBinary", []string{"--server-binary", "/nonexistent/zizq"}, "--server-binary: "},
		{"UnknownScenario", []string{"--scenario", "nope"}, `invalid --scenario "nope"`},
		{"ScaleWithURL", []string{"--scenario", "scale", "--url", "http://127.0.0.1:1"}, "--scenario scale kills and restarts its own temporary server"},
		{"ScaleParkedWithoutScale", []string{"--scale-parked"}, "--scale-parked applies to --scenario scale"},
		{"UnknownCommitMode", []string{"--commit-mode", "never"}, `invalid --commit-mode "never"`},
		{"ZeroWorkers", []string{"--workers", "0"}, "--workers must be at least 1"},
		{"BadRate", []string{"--rate", "0"}, "--rate must be at least 1"},
		{"BadURL", []string{"--url", "ftp://x"}, "--url: invalid server URL"},
		{"Args", []string{"extra"}, `bench takes no arguments, got "extra"`},
		{"TLSWithoutHTTPS", []string{"--ca-cert", "ca.pem"}, "need an https:// --url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			requireFails(t, runZizq(t, "", append([]string{"bench"}, tt.args...)...), cmd.ExitUsage, tt.msg)
		})
	}
}
