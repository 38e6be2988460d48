package bench_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
	"github.com/zizq/zizq/internal/bench"
)

// zizqBin is the zizq binary the child servers run: the test binary is not
// one.
var zizqBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "zizq-bench-bin")
	if err != nil {
		panic(err)
	}
	zizqBin = filepath.Join(dir, "zizq")
	if err := buildZizq(zizqBin); err != nil {
		panic("build zizq: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildZizq builds the zizq binary into out, with extra go build flags.
func buildZizq(out string, flags ...string) error {
	args := append(append([]string{"build", "-o", out}, flags...), "github.com/zizq/zizq/cmd/zizq")
	build := exec.Command("go", args...)
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	return build.Run()
}

// tiny returns sizes that run each scenario in seconds. Workers × prefetch
// (16) exceeds the while_in_flight allocation (3).
func tiny() bench.Options {
	o := bench.Defaults()
	o.ServerBinary = zizqBin
	o.Jobs, o.Workers, o.Prefetch, o.Producers, o.Bulk = 300, 2, 8, 2, 20
	o.Concurrency, o.WorkTime, o.Rates, o.Duration = 3, 5*time.Millisecond, []int{200}, time.Second
	o.Budgets, o.Parked, o.Unserved = 20, 500, 2000
	o.Timeout = 30 * time.Second
	return o
}

// run runs the load generator and reads its report back from its JSON, as
// `zizq bench -o json` prints it.
func run(t *testing.T, o bench.Options) (bench.Report, map[string]any) {
	t.Helper()
	got, err := bench.Run(context.Background(), o)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, got.WriteJSON(&out))
	var rep bench.Report
	dec := json.NewDecoder(bytes.NewReader(out.Bytes()))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&rep), "output: %s", out.String())
	require.False(t, dec.More(), "one JSON object")
	var raw map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &raw))
	require.Positive(t, rep.Cores)
	require.NotEmpty(t, rep.Server.Version)
	require.Equal(t, o.Jobs, rep.Settings.Jobs)
	require.Positive(t, rep.ElapsedS)
	var table bytes.Buffer
	require.NoError(t, got.WriteTable(&table))
	require.Contains(t, table.String(), "SCENARIO")
	if rep.Drain != nil {
		require.Contains(t, table.String(), "jobs a take stream, fewest / most")
	}
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

// requireDrain checks the drain scenario of rep.Settings.Jobs jobs.
func requireDrain(t *testing.T, rep bench.Report, raw map[string]any) {
	t.Helper()
	require.Equal(t, []string{"drain", "enqueue", "jobs", "memory", "streams"}, keys(raw["drain"]))
	d, n := rep.Drain, rep.Settings.Jobs
	require.Equal(t, n, d.Jobs)
	require.Equal(t, n, d.Enqueue.Jobs)
	require.Equal(t, rep.Settings.Bulk, d.Enqueue.PerRequest)
	require.Positive(t, d.Enqueue.JobsPerS)
	require.Positive(t, d.Drain.JobsPerS)
	require.Positive(t, d.Drain.Seconds)
	require.Len(t, d.Streams, rep.Settings.Workers, "a count for each take stream")
	var total int64
	for _, c := range d.Streams {
		total += c
	}
	require.EqualValues(t, n, total, "every job acknowledged by exactly one stream")
	require.Equal(t, n, d.Memory.QueuedJobs, "measured with the backlog queued")
	require.NotNil(t, d.Memory.RSSPerQueuedJobBytes)
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

// TestRun_Scenarios runs each scenario on its own temporary server.
func TestRun_Scenarios(t *testing.T) {
	t.Parallel()
	tests := []struct {
		scenario string
		jobs     int
		check    func(*testing.T, bench.Report, map[string]any)
	}{
		{bench.ScenarioEnqueue, 300, requireEnqueue},
		{bench.ScenarioE2E, 300, requireE2E},
		{bench.ScenarioDrain, 3000, requireDrain},
		{bench.ScenarioBudgets, 300, requireBudgets},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			t.Parallel()
			o := tiny()
			o.Scenario, o.Jobs = tt.scenario, tt.jobs
			rep, raw := run(t, o)
			want := []string{"cores", "elapsed_s", "gomaxprocs", "os", "server", "settings", "version", tt.scenario}
			slices.Sort(want)
			require.Equal(t, want, keys(raw), "only the scenario that ran")
			require.Equal(t, "child", rep.Server.Mode)
			require.Equal(t, "default", rep.Server.CommitMode)
			require.Equal(t, zizqBin, rep.Server.Binary)
			require.Empty(t, rep.Server.URL)
			tt.check(t, rep, raw)
		})
	}
}

// TestRun_ServerBinary measures another build: the child server is that
// binary, as its /version shows.
func TestRun_ServerBinary(t *testing.T) {
	t.Parallel()
	other := filepath.Join(t.TempDir(), "zizq-other")
	require.NoError(t, buildZizq(other, "-ldflags", "-X github.com/zizq/zizq/internal/buildinfo.Version=9.9.9-other"))
	o := tiny()
	o.ServerBinary, o.Scenario = other, bench.ScenarioE2E
	rep, _ := run(t, o)
	require.Equal(t, "9.9.9-other", rep.Server.Version, "the child's /version")
	require.NotEqual(t, rep.Server.Version, rep.Version, "the load generator is this build")
	require.Equal(t, other, rep.Server.Binary)
}

// TestRun_EventSubscribers: the e2e scenario with dashboards on the
// temporary server's admin port, which read frames all along.
func TestRun_EventSubscribers(t *testing.T) {
	t.Parallel()
	o := tiny()
	o.Scenario, o.Jobs, o.EventSubscribers = bench.ScenarioE2E, 300, 3
	rep, _ := run(t, o)
	require.Equal(t, 3, rep.E2E.EventSubscribers)
	require.GreaterOrEqual(t, rep.E2E.EventFrames, int64(3), "a snapshot each at least")
}

// TestRun_Scale fills a child server, reads its memory, kills it with
// SIGKILL and times its restart on the same root: every job survives it.
func TestRun_Scale(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		jobs    int
		parked  bool
		budgets int
	}{
		{"Queued", 3000, false, 0},
		{"Parked", 12000, true, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := tiny()
			o.Scenario, o.ScaleJobs, o.ScaleParked = bench.ScenarioScale, tt.jobs, tt.parked
			rep, raw := run(t, o)
			want := []string{"enqueue", "jobs", "jobs_after_fill", "memory", "parked", "parked_delivered", "restart"}
			if tt.parked {
				want = append([]string{"budgets"}, want...)
			}
			require.Equal(t, want, keys(raw["scale"]))
			sc := rep.Scale
			require.Equal(t, tt.jobs, sc.Jobs)
			require.Equal(t, tt.parked, sc.Parked)
			require.Equal(t, tt.budgets, sc.Budgets, "one budget per 10,000 jobs")
			require.Equal(t, tt.jobs, sc.Enqueue.Jobs)
			require.Equal(t, 1000, sc.Enqueue.PerRequest)
			require.Positive(t, sc.Enqueue.JobsPerS)

			m := sc.Memory
			if runtime.GOOS == "linux" {
				require.Empty(t, m.Unsupported)
				require.Positive(t, *m.RSSBytes)
				require.Positive(t, *m.IdleRSSBytes)
				require.Positive(t, *m.RSSPerJobBytes)
				require.NotNil(t, m.GrowthPerJobBytes)
			} else {
				require.Contains(t, m.Unsupported, "unsupported")
				require.Nil(t, m.RSSBytes)
			}

			live := int64(tt.jobs)
			if tt.parked {
				live++ // the probe, in a queue of its own
				require.EqualValues(t, tt.jobs, sc.JobsAfterFill.Parked, "every job parked on its budget")
				require.EqualValues(t, 1, sc.JobsAfterFill.Ready)
			} else {
				require.EqualValues(t, tt.jobs, sc.JobsAfterFill.Ready)
			}
			require.Zero(t, sc.ParkedDelivered)

			r := sc.Restart
			require.Positive(t, r.HealthMs)
			require.Positive(t, r.ReadyMs)
			require.Positive(t, r.FirstJobMs)
			require.GreaterOrEqual(t, r.TakeAttempts, 1)
			c := r.JobsAfterRestart
			require.Equal(t, live, c.Scheduled+c.Ready+c.Parked+c.InFlight, "kill -9 loses no job: %+v", c)
		})
	}
}

// startServer runs `zizq serve` on a temporary root and returns its URL.
func startServer(t *testing.T) string {
	t.Helper()
	c := exec.Command(zizqBin, "serve", "--host", "127.0.0.1", "--port", "0", "--admin-port", "0", "--log-level", "warn", "--root-dir", t.TempDir())
	stdout, err := c.StdoutPipe()
	require.NoError(t, err)
	c.Stderr = os.Stderr
	require.NoError(t, c.Start())
	t.Cleanup(func() {
		_ = c.Process.Kill()
		_ = c.Wait()
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "Listening on "); ok {
				found <- strings.Fields(rest)[0]
			}
		}
	}()
	select {
	case url := <-found:
		return url
	case <-time.After(20 * time.Second):
		t.Fatal("server did not start")
		return ""
	}
}

// TestRun_URL loads a server named by URL with every scenario: its own
// jobs and budgets survive, and the bench's are gone afterwards.
func TestRun_URL(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	ctx := context.Background()
	cl, err := client.New(url, client.Options{})
	require.NoError(t, err)
	_, err = cl.PutBudget(ctx, "mine", api.BudgetInput{Allocation: api.Ptr(int64(2)), Strategy: &api.StrategyInput{Type: api.Ptr(api.StrategyWhileInFlight)}})
	require.NoError(t, err)
	_, err = cl.Enqueue(ctx, api.EnqueueRequest{Type: api.Ptr("t"), Queue: api.Ptr("mine"), Payload: api.Payload("1"), Budgets: []api.BindingRequest{{Key: api.Ptr("mine")}}})
	require.NoError(t, err)

	o := tiny()
	o.URL, o.ServerBinary = url, ""
	rep, raw := run(t, o)
	require.Equal(t, "url", rep.Server.Mode)
	require.Equal(t, url, rep.Server.URL)
	require.Empty(t, rep.Server.CommitMode)
	require.Empty(t, rep.Server.Binary)
	requireEnqueue(t, rep, raw)
	requireE2E(t, rep, raw)
	requireDrain(t, rep, raw)
	requireBudgets(t, rep, raw)

	queues, err := cl.Queues(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"mine"}, queues)
	budgets, err := cl.ListBudgets(ctx, false)
	require.NoError(t, err)
	require.Len(t, budgets, 1)
	require.Equal(t, "mine", budgets[0].Key)
	n, err := cl.CountJobs(ctx, api.JobQuery{})
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
}

func TestOptions_Validate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		edit func(*bench.Options)
		msg  string
	}{
		{"CommitModeWithURL", func(o *bench.Options) { o.URL, o.CommitMode = "http://127.0.0.1:1", "fsync" }, "cannot be used with --url"},
		{"ServerBinaryWithURL", func(o *bench.Options) { o.URL, o.ServerBinary = "http://127.0.0.1:1", zizqBin }, "--server-binary sets up the temporary server"},
		{"MissingServerBinary", func(o *bench.Options) { o.ServerBinary = "/nonexistent/zizq" }, "--server-binary: "},
		{"UnknownScenario", func(o *bench.Options) { o.Scenario = "nope" }, `invalid --scenario "nope"`},
		{"ScaleWithURL", func(o *bench.Options) { o.URL, o.Scenario = "http://127.0.0.1:1", bench.ScenarioScale }, "--scenario scale kills and restarts its own temporary server"},
		{"ScaleParkedWithoutScale", func(o *bench.Options) { o.ScaleParked = true }, "--scale-parked applies to --scenario scale"},
		{"ZeroScaleJobs", func(o *bench.Options) { o.ScaleJobs = 0 }, "--scale-jobs must be at least 1"},
		{"UnknownCommitMode", func(o *bench.Options) { o.CommitMode = "never" }, `invalid --commit-mode "never"`},
		{"ZeroWorkers", func(o *bench.Options) { o.Workers = 0 }, "--workers must be at least 1"},
		{"BadRate", func(o *bench.Options) { o.Rates = []int{0} }, "--rate must be at least 1"},
		{"BadURL", func(o *bench.Options) { o.URL = "ftp://x" }, "--url: invalid server URL"},
		{"NegativeSubscribers", func(o *bench.Options) { o.EventSubscribers = -1 }, "--event-subscribers must not be negative"},
		{"SubscribersWithoutAdminURL", func(o *bench.Options) { o.URL, o.EventSubscribers = "http://127.0.0.1:1", 2 }, "--event-subscribers with --url needs --admin-url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := bench.Defaults()
			tt.edit(&o)
			require.ErrorContains(t, o.Validate(), tt.msg)
			_, err := bench.Run(context.Background(), o)
			require.ErrorContains(t, err, tt.msg, "Run validates too")
		})
	}
	d := bench.Defaults()
	require.NoError(t, d.Validate())
}
