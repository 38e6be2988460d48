package cmd_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/cmd"
	"github.com/zizq/zizq/internal/bench"
)

// tinyBench are sizes that run each scenario in seconds. Workers × prefetch
// (16) exceeds the while_in_flight allocation (3).
var tinyBench = []string{
	"--jobs", "300", "--workers", "2", "--prefetch", "8", "--producers", "2", "--bulk", "20",
	"--concurrency", "3", "--work-time", "5ms", "--rate", "200", "--duration", "1s",
	"--budgets", "20", "--parked", "500", "--unserved", "2000",
}

// runBench runs the real binary (bench starts the server as its own child
// process) with env added, and decodes its JSON output.
func runBench(t *testing.T, env []string, args ...string) (bench.Report, map[string]any) {
	t.Helper()
	c := exec.Command(zizqBin, append(append([]string{"bench", "-o", "json"}, tinyBench...), args...)...)
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
	require.Positive(t, rep.Cores)
	require.NotEmpty(t, rep.Server.Version)
	require.Equal(t, 300, rep.Settings.Jobs)
	require.Positive(t, rep.ElapsedS)
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

func requireEnqueue(t *testing.T, rep bench.Report, raw map[string]any) {
	t.Helper()
	require.Equal(t, []string{"bulk", "memory", "single"}, keys(raw["enqueue"]))
	e := rep.Enqueue
	require.Equal(t, 300, e.Single.Jobs)
	require.Equal(t, 1, e.Single.PerRequest)
	require.Positive(t, e.Single.JobsPerS)
	require.Equal(t, 20, e.Bulk.PerRequest)
	require.Positive(t, e.Bulk.JobsPerS)
	// 300 measured and 30 warm-up jobs of each kind stay queued.
	require.Equal(t, 660, e.Memory.QueuedJobs)
	require.Positive(t, e.Memory.RSSBytes)
	require.NotNil(t, e.Memory.RSSPerQueuedJobBytes)
}

func requireE2E(t *testing.T, rep bench.Report, raw map[string]any) {
	t.Helper()
	require.Equal(t, []string{"jobs", "jobs_per_s", "latency_ms", "memory", "seconds", "warmup"}, keys(raw["e2e"]))
	require.Equal(t, []string{"max", "p50", "p95", "p99"}, keys(raw["e2e"].(map[string]any)["latency_ms"]))
	e := rep.E2E
	require.Equal(t, 300, e.Jobs)
	require.Equal(t, 30, e.Warmup)
	require.Positive(t, e.JobsPerS)
	l := e.LatencyMs
	require.Positive(t, l.P50)
	require.True(t, l.P50 <= l.P95 && l.P95 <= l.P99 && l.P99 <= l.Max, "%+v", l)
	require.Zero(t, e.Memory.QueuedJobs)
	require.Nil(t, e.Memory.RSSPerQueuedJobBytes)
	require.Nil(t, raw["e2e"].(map[string]any)["memory"].(map[string]any)["rss_per_queued_job_bytes"], "null, not absent")
}

func requireBudgets(t *testing.T, rep bench.Report, raw map[string]any) {
	t.Helper()
	require.Equal(t, []string{"many_budgets", "memory", "time_based", "unserved", "while_in_flight"}, keys(raw["budgets"]))
	bu := rep.Budgets

	a := bu.WhileInFlight
	require.Equal(t, 3, a.Allocation)
	require.Equal(t, 16, a.WorkerSlots)
	require.Equal(t, 600, a.Jobs, "allocation × duration / work time")
	require.Equal(t, 3, a.MaxConcurrency, "exactly the allocation runs at once: never more, and the slots allow it")
	require.True(t, a.Utilisation > 0 && a.Utilisation <= 1, "utilisation %v", a.Utilisation)

	require.Len(t, bu.TimeBased, 1)
	tb := bu.TimeBased[0]
	require.Equal(t, 200, tb.RatePerS)
	require.Equal(t, 20, tb.Burst)
	require.Equal(t, 220, tb.Jobs)
	require.Positive(t, tb.AchievedPerS)
	require.Len(t, tb.Windows, 3)
	for _, w := range tb.Windows {
		require.Equal(t, tb.Burst+int(int64(tb.RatePerS)*w.WindowMs/1000), w.Bound)
		require.LessOrEqual(t, w.MaxDispatched, w.Bound, "window of %d ms", w.WindowMs)
		require.Positive(t, w.MaxDispatched)
	}
	require.Equal(t, tb.Burst+2, tb.Windows[0].Bound)
	require.LessOrEqual(t, tb.LatenessMs.P50, tb.LatenessMs.P99)
	require.Zero(t, tb.LatenessMs.P95, "lateness has no p95")

	m := bu.Many
	require.Equal(t, 20, m.Budgets)
	require.Equal(t, 500, m.Parked)
	require.Positive(t, m.UnbudgetedJobsPerS)
	require.Positive(t, m.GenerousJobsPerS)
	require.Positive(t, m.WithParkedJobsPerS)
	require.Positive(t, m.WithParkedRatio)
	require.Zero(t, m.ParkedDelivered, "no job of an exhausted budget reaches a worker")
	require.Equal(t, 500, bu.Memory.QueuedJobs)
	require.NotNil(t, bu.Memory.RSSPerQueuedJobBytes)
	require.Positive(t, bu.Memory.RSSBytes)

	u := bu.Unserved
	require.Equal(t, 2000, u.Unserved)
	require.Positive(t, u.AloneJobsPerS)
	require.Positive(t, u.BesideJobsPerS)
	require.Positive(t, u.ExaminedAlone)
	// How decisions batch varies with timing; stepping over 2,000 unserved
	// jobs would make it thousands.
	require.Less(t, u.ExaminedBeside, 2*u.ExaminedAlone, "jobs of an unserved queue cost decisions nothing")
	require.Zero(t, u.UnservedDeliver, "no worker of the served queue receives an unserved job")
}

// TestBench_Scenarios runs each scenario on its own temporary server, with
// ZIZQ_URL and server settings in the environment that bench must ignore.
func TestBench_Scenarios(t *testing.T) {
	t.Parallel()
	env := []string{"ZIZQ_URL=http://127.0.0.1:1", "ZIZQ_DEFAULT_COMMIT_MODE=bogus"}
	tests := []struct {
		scenario string
		check    func(*testing.T, bench.Report, map[string]any)
	}{
		{"enqueue", requireEnqueue},
		{"e2e", requireE2E},
		{"budgets", requireBudgets},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			t.Parallel()
			rep, raw := runBench(t, env, "--scenario", tt.scenario)
			want := []string{"cores", "elapsed_s", "gomaxprocs", "os", "server", "settings", "version", tt.scenario}
			slices.Sort(want)
			require.Equal(t, want, keys(raw), "only the scenario that ran")
			require.Equal(t, "child", rep.Server.Mode)
			require.Equal(t, "default", rep.Server.CommitMode)
			require.Empty(t, rep.Server.URL)
			tt.check(t, rep, raw)
		})
	}
}

// TestBench_URL loads a server named by --url with every scenario: its own
// jobs and budgets survive, and the bench's are gone afterwards.
func TestBench_URL(t *testing.T) {
	t.Parallel()
	p := startServer(t, "--root-dir", t.TempDir())
	status, body := do(t, "PUT", p.url+"/budgets/mine", map[string]any{"allocation": 2, "strategy": map[string]any{"type": "while_in_flight"}})
	require.Equal(t, http.StatusOK, status, "%s", body)
	status, body = do(t, "POST", p.url+"/jobs", map[string]any{"type": "t", "queue": "mine", "payload": 1, "budgets": []map[string]any{{"key": "mine"}}})
	require.Equal(t, http.StatusCreated, status, "%s", body)

	rep, raw := runBench(t, []string{"ZIZQ_URL=http://127.0.0.1:1"}, "--url", p.url)
	require.Equal(t, "url", rep.Server.Mode)
	require.Equal(t, p.url, rep.Server.URL)
	require.Empty(t, rep.Server.CommitMode)
	requireEnqueue(t, rep, raw)
	requireE2E(t, rep, raw)
	requireBudgets(t, rep, raw)

	_, body = do(t, "GET", p.url+"/queues", nil)
	require.JSONEq(t, `{"queues":["mine"]}`, string(body))
	_, body = do(t, "GET", p.url+"/budgets", nil)
	var budgets api.BudgetList
	require.NoError(t, json.Unmarshal(body, &budgets))
	require.Len(t, budgets.Budgets, 1)
	require.Equal(t, "mine", budgets.Budgets[0].Key)
	_, body = do(t, "GET", p.url+"/jobs/count", nil)
	require.JSONEq(t, `{"count":1}`, string(body))
}

func TestBench_Usage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"CommitModeWithURL", []string{"--url", "http://127.0.0.1:1", "--commit-mode", "fsync"}, "cannot be used with --url"},
		{"UnknownScenario", []string{"--scenario", "nope"}, `invalid --scenario "nope"`},
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
