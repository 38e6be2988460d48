package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/zizq/zizq/api"
)

// Report is the outcome of a run, printed by `zizq bench -o json` as one
// JSON object. Scenarios that did not run are absent.
type Report struct {
	Version    string         `json:"version"`
	Cores      int            `json:"cores"`
	GOMAXPROCS int            `json:"gomaxprocs"`
	OS         string         `json:"os"`
	Server     ServerInfo     `json:"server"`
	Settings   Settings       `json:"settings"`
	Enqueue    *EnqueueReport `json:"enqueue,omitempty"`
	E2E        *E2EReport     `json:"e2e,omitempty"`
	Drain      *DrainReport   `json:"drain,omitempty"`
	Budgets    *BudgetsReport `json:"budgets,omitempty"`
	Scale      *ScaleReport   `json:"scale,omitempty"`
	ElapsedS   float64        `json:"elapsed_s"`
}

// ServerInfo says which server the scenarios loaded.
type ServerInfo struct {
	// Mode is "child" (a temporary server per scenario) or "url".
	Mode string `json:"mode"`
	URL  string `json:"url,omitempty"`
	// Version is what the server answers on /version.
	Version string `json:"version"`
	// Binary is the executable of the child server.
	Binary     string `json:"binary,omitempty"`
	CommitMode string `json:"commit_mode,omitempty"`
}

// Settings are the options of the run, as the flags name them.
type Settings struct {
	Scenario    string  `json:"scenario"`
	Jobs        int     `json:"jobs"`
	Workers     int     `json:"workers"`
	Prefetch    int     `json:"prefetch"`
	Producers   int     `json:"producers"`
	PayloadSize int     `json:"payload_size"`
	Bulk        int     `json:"bulk"`
	Concurrency int     `json:"concurrency"`
	WorkTimeMs  float64 `json:"work_time_ms"`
	Rates       []int   `json:"rates"`
	DurationS   float64 `json:"duration_s"`
	Budgets     int     `json:"budgets"`
	Parked      int     `json:"parked"`
	Unserved    int     `json:"unserved"`
	ScaleJobs   int     `json:"scale_jobs"`
	ScaleParked bool    `json:"scale_parked"`
}

// Rate is a measured enqueue rate.
type Rate struct {
	Jobs       int     `json:"jobs"`
	PerRequest int     `json:"per_request"`
	Seconds    float64 `json:"seconds"`
	JobsPerS   float64 `json:"jobs_per_s"`
}

// Memory is the server's resident set size, and what it grew by per
// job left queued (null when none is).
type Memory struct {
	RSSBytes             int64    `json:"rss_bytes"`
	QueuedJobs           int      `json:"queued_jobs"`
	RSSPerQueuedJobBytes *float64 `json:"rss_per_queued_job_bytes"`
}

// EnqueueReport is the enqueue scenario: single and bulk enqueue rates.
type EnqueueReport struct {
	Single Rate   `json:"single"`
	Bulk   Rate   `json:"bulk"`
	Memory Memory `json:"memory"`
}

// E2EReport is the e2e scenario: producers and workers together.
type E2EReport struct {
	Jobs      int     `json:"jobs"`
	Warmup    int     `json:"warmup"`
	Seconds   float64 `json:"seconds"`
	JobsPerS  float64 `json:"jobs_per_s"`
	LatencyMs Latency `json:"latency_ms"`
	Memory    Memory  `json:"memory"`
	// EventSubscribers read the event stream in detail mode meanwhile, and
	// received EventFrames frames in all.
	EventSubscribers int   `json:"event_subscribers,omitempty"`
	EventFrames      int64 `json:"event_frames,omitempty"`
}

// DrainReport is the drain scenario: a backlog enqueued up front, then
// drained by take streams that acknowledge in batches.
type DrainReport struct {
	Jobs int `json:"jobs"`
	// Enqueue is the rate of the enqueue alone.
	Enqueue Rate `json:"enqueue"`
	// Drain is the rate of the drain alone, from the first take stream
	// opened to the last acknowledgement.
	Drain Throughput `json:"drain"`
	// Streams is how many jobs each take stream had acknowledged: how
	// evenly the server spread the backlog over streams that all had room.
	Streams []int64 `json:"streams"`
	// Memory is the server's with the whole backlog queued.
	Memory Memory `json:"memory"`
}

// Throughput is how fast jobs went through.
type Throughput struct {
	Seconds  float64 `json:"seconds"`
	JobsPerS float64 `json:"jobs_per_s"`
}

// ScaleReport is the scale scenario: a child server filled with jobs, its
// memory at rest, and its restart after kill -9.
type ScaleReport struct {
	Jobs int `json:"jobs"`
	// Parked says the jobs are parked on exhausted budgets, with a worker
	// of their queue connected; otherwise they are queued, ready.
	Parked bool `json:"parked"`
	// Budgets is how many exhausted budgets the parked jobs share.
	Budgets int `json:"budgets,omitempty"`
	// Enqueue is the rate of the fill.
	Enqueue Rate `json:"enqueue"`
	// Memory is read 3 s after the last enqueue.
	Memory ScaleMemory `json:"memory"`
	// JobsAfterFill counts the live jobs by state, from /stats.
	JobsAfterFill api.JobCounts `json:"jobs_after_fill"`
	// ParkedDelivered counts parked jobs that reached the connected worker:
	// always 0 on a correct server.
	ParkedDelivered int64         `json:"parked_delivered"`
	Restart         RestartReport `json:"restart"`
}

// ScaleMemory is the child server's resident set size (VmRSS, from /proc).
// Where there is no /proc its figures are null and Unsupported says so.
type ScaleMemory struct {
	RSSBytes *int64 `json:"rss_bytes"`
	// IdleRSSBytes is read before the fill.
	IdleRSSBytes *int64 `json:"idle_rss_bytes"`
	// RSSPerJobBytes is RSSBytes over the jobs; GrowthPerJobBytes, what
	// the fill added over the jobs.
	RSSPerJobBytes    *float64 `json:"rss_per_job_bytes"`
	GrowthPerJobBytes *float64 `json:"growth_per_job_bytes"`
	Unsupported       string   `json:"unsupported,omitempty"`
}

// RestartReport times a restart after kill -9 on the same root, from just
// before the process starts.
type RestartReport struct {
	// HealthMs is when the first byte of an answer on /health came.
	HealthMs float64 `json:"health_ms"`
	// ReadyMs is when /ready first answered 200.
	ReadyMs float64 `json:"ready_ms"`
	// FirstJobMs is when the first job frame reached a take stream opened
	// as soon as the server accepted one; TakeAttempts, how many tries
	// that took.
	FirstJobMs   float64 `json:"first_job_ms"`
	TakeAttempts int     `json:"take_attempts"`
	// JobsAfterRestart counts the live jobs by state once the first job
	// came (it is in flight).
	JobsAfterRestart api.JobCounts `json:"jobs_after_restart"`
}

// BudgetsReport is the budgets scenario, parts (a) to (d).
type BudgetsReport struct {
	WhileInFlight WhileInFlightReport `json:"while_in_flight"`
	TimeBased     []TimeBasedReport   `json:"time_based"`
	Many          ManyBudgetsReport   `json:"many_budgets"`
	Unserved      UnservedReport      `json:"unserved"`
	Memory        Memory              `json:"memory"`
}

// UnservedReport is part (d): a served queue on a budget shared with jobs
// of a queue no worker serves.
type UnservedReport struct {
	Unserved        int     `json:"unserved"`
	Jobs            int     `json:"jobs"`
	AloneJobsPerS   float64 `json:"alone_jobs_per_s"`
	BesideJobsPerS  float64 `json:"beside_unserved_jobs_per_s"`
	BesideRatio     float64 `json:"beside_unserved_ratio"`
	ExaminedAlone   float64 `json:"examined_per_decision_alone"`
	ExaminedBeside  float64 `json:"examined_per_decision_beside_unserved"`
	UnservedDeliver int64   `json:"unserved_delivered"`
}

// WhileInFlightReport is part (a): a while_in_flight budget under a backlog.
type WhileInFlightReport struct {
	Allocation     int     `json:"allocation"`
	WorkerSlots    int     `json:"worker_slots"`
	WorkTimeMs     float64 `json:"work_time_ms"`
	Jobs           int     `json:"jobs"`
	MaxConcurrency int     `json:"max_concurrency"`
	Utilisation    float64 `json:"utilisation"`
	JobsPerS       float64 `json:"jobs_per_s"`
	IdealJobsPerS  float64 `json:"ideal_jobs_per_s"`
}

// TimeBasedReport is part (b): a time_based budget at one rate.
type TimeBasedReport struct {
	RatePerS      int      `json:"rate_per_s"`
	Burst         int      `json:"burst"`
	Jobs          int      `json:"jobs"`
	Seconds       float64  `json:"seconds"`
	AchievedPerS  float64  `json:"achieved_per_s"`
	AchievedRatio float64  `json:"achieved_ratio"`
	Windows       []Window `json:"windows"`
	LatenessMs    Latency  `json:"lateness_ms"`
}

// Window is the most jobs dispatched in any window of WindowMs, against
// the budget's bound.
type Window struct {
	WindowMs      int64 `json:"window_ms"`
	MaxDispatched int   `json:"max_dispatched"`
	Bound         int   `json:"bound"`
}

// ManyBudgetsReport is part (c): many budgets, generous and exhausted.
type ManyBudgetsReport struct {
	Budgets            int     `json:"budgets"`
	Parked             int     `json:"parked"`
	Jobs               int     `json:"jobs"`
	UnbudgetedJobsPerS float64 `json:"unbudgeted_jobs_per_s"`
	GenerousJobsPerS   float64 `json:"generous_jobs_per_s"`
	GenerousRatio      float64 `json:"generous_ratio"`
	WithParkedJobsPerS float64 `json:"with_parked_jobs_per_s"`
	WithParkedRatio    float64 `json:"with_parked_ratio"`
	// ParkedDelivered counts parked jobs that reached a worker although
	// their budgets were exhausted: always 0 on a correct server.
	ParkedDelivered int64 `json:"parked_delivered"`
}

// WriteJSON prints the report as one indented JSON object.
func (rep *Report) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteTable prints the report as a table of figures.
func (rep *Report) WriteTable(w io.Writer) error {
	server := "temporary " + rep.Server.Binary + " serve per scenario (" + rep.Server.CommitMode + " durability)"
	if rep.Server.Mode == "url" {
		server = rep.Server.URL
	}
	s := rep.Settings
	fmt.Fprintf(w, "zizq bench %s: %d cores (GOMAXPROCS %d, %s), server %s %s\n", rep.Version, rep.Cores, rep.GOMAXPROCS, rep.OS, rep.Server.Version, server)
	fmt.Fprintf(w, "jobs %d, workers %d, prefetch %d, producers %d, payload %d B, bulk %d; the load generator runs on the same machine\n\n",
		s.Jobs, s.Workers, s.Prefetch, s.Producers, s.PayloadSize, s.Bulk)
	t := newTable(w, "SCENARIO", "FIGURE", "VALUE")
	if e := rep.Enqueue; e != nil {
		t.row("enqueue", "single (POST /jobs)", jobsPerS(e.Single.JobsPerS))
		t.row("enqueue", fmt.Sprintf("bulk (%d a request)", e.Bulk.PerRequest), jobsPerS(e.Bulk.JobsPerS))
		t.row("enqueue", "server memory", memoryCell(e.Memory))
	}
	if e := rep.E2E; e != nil {
		t.row("e2e", "throughput", jobsPerS(e.JobsPerS))
		t.row("e2e", "enqueue to delivery p50/p95/p99", fmt.Sprintf("%.2f / %.2f / %.2f ms", e.LatencyMs.P50, e.LatencyMs.P95, e.LatencyMs.P99))
		t.row("e2e", "server memory", memoryCell(e.Memory))
		if e.EventSubscribers > 0 {
			t.row("e2e", "event subscribers (detail mode)", fmt.Sprintf("%d, %d frames read", e.EventSubscribers, e.EventFrames))
		}
	}
	if d := rep.Drain; d != nil {
		t.row("drain", fmt.Sprintf("enqueue up front (%d a request)", d.Enqueue.PerRequest), jobsPerS(d.Enqueue.JobsPerS))
		t.row("drain", fmt.Sprintf("drain (%d take streams, batched acks)", s.Workers), jobsPerS(d.Drain.JobsPerS))
		if lo, hi, ok := spread(d.Streams); ok {
			t.row("drain", "jobs a take stream, fewest / most", fmt.Sprintf("%s / %s (%.2f)", group3(lo), group3(hi), float64(lo)/float64(max(hi, 1))))
		}
		t.row("drain", "server memory", memoryCell(d.Memory))
	}
	if bu := rep.Budgets; bu != nil {
		a := bu.WhileInFlight
		t.row("budgets", fmt.Sprintf("while_in_flight %d: most running at once", a.Allocation),
			fmt.Sprintf("%d (allocation %d, %d worker slots)", a.MaxConcurrency, a.Allocation, a.WorkerSlots))
		t.row("budgets", fmt.Sprintf("while_in_flight %d: utilisation while parked", a.Allocation),
			fmt.Sprintf("%.1f%% (%s of %s, jobs of %s ms)", 100*a.Utilisation, jobsPerS(a.JobsPerS), jobsPerS(a.IdealJobsPerS), num(a.WorkTimeMs)))
		for _, tb := range bu.TimeBased {
			name := fmt.Sprintf("time_based %d/s burst %d", tb.RatePerS, tb.Burst)
			t.row("budgets", name+": achieved rate", fmt.Sprintf("%s/s (%.2f%%)", num(tb.AchievedPerS), 100*tb.AchievedRatio))
			for _, win := range tb.Windows {
				t.row("budgets", fmt.Sprintf("%s: most dispatched in %d ms", name, win.WindowMs), fmt.Sprintf("%d (bound %d)", win.MaxDispatched, win.Bound))
			}
			t.row("budgets", name+": token-to-dispatch p50/p99", fmt.Sprintf("%.2f / %.2f ms", tb.LatenessMs.P50, tb.LatenessMs.P99))
		}
		m := bu.Many
		t.row("budgets", "unbudgeted throughput", jobsPerS(m.UnbudgetedJobsPerS))
		t.row("budgets", fmt.Sprintf("each job bound to 1 of %d generous budgets", m.Budgets),
			fmt.Sprintf("%s (%.1f%% of unbudgeted)", jobsPerS(m.GenerousJobsPerS), 100*m.GenerousRatio))
		t.row("budgets", fmt.Sprintf("unbudgeted, %d parked on %d budgets", m.Parked, m.Budgets),
			fmt.Sprintf("%s (%.1f%% of unbudgeted, %d parked delivered)", jobsPerS(m.WithParkedJobsPerS), 100*m.WithParkedRatio, m.ParkedDelivered))
		u := bu.Unserved
		t.row("budgets", "served queue on a shared budget", fmt.Sprintf("%s (%.1f entries examined a decision)", jobsPerS(u.AloneJobsPerS), u.ExaminedAlone))
		t.row("budgets", fmt.Sprintf("the same beside %d jobs of an unserved queue", u.Unserved),
			fmt.Sprintf("%s (%.1f%%, %.1f entries examined a decision)", jobsPerS(u.BesideJobsPerS), 100*u.BesideRatio, u.ExaminedBeside))
		t.row("budgets", "server memory", memoryCell(bu.Memory))
	}
	if sc := rep.Scale; sc != nil {
		what := "queued"
		if sc.Parked {
			what = fmt.Sprintf("parked on %d budgets", sc.Budgets)
		}
		t.row("scale", fmt.Sprintf("fill %s jobs %s (%d a request)", group3(int64(sc.Jobs)), what, sc.Enqueue.PerRequest), jobsPerS(sc.Enqueue.JobsPerS))
		t.row("scale", "server RSS 3 s after the last enqueue", scaleMemoryCell(sc.Memory))
		c := sc.JobsAfterFill
		t.row("scale", "jobs after the fill", fmt.Sprintf("%d ready, %d parked, %d scheduled", c.Ready, c.Parked, c.Scheduled))
		if sc.Parked {
			t.row("scale", "parked jobs delivered", strconv.FormatInt(sc.ParkedDelivered, 10))
		}
		r := sc.Restart
		t.row("scale", "after kill -9: first answer on /health", fmt.Sprintf("%.1f ms", r.HealthMs))
		t.row("scale", "after kill -9: /ready 200", fmt.Sprintf("%.1f ms", r.ReadyMs))
		t.row("scale", "after kill -9: first job delivered", fmt.Sprintf("%.1f ms (take stream accepted on try %d)", r.FirstJobMs, r.TakeAttempts))
	}
	if err := t.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nfinished in %.1f s\n", rep.ElapsedS)
	return err
}

func jobsPerS(v float64) string { return group3(int64(v+0.5)) + " jobs/s" }

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func memoryCell(m Memory) string {
	s := fmt.Sprintf("RSS %.1f MiB", float64(m.RSSBytes)/(1<<20))
	if m.RSSPerQueuedJobBytes != nil {
		s += fmt.Sprintf(", %d queued: %s B a job", m.QueuedJobs, group3(int64(*m.RSSPerQueuedJobBytes)))
	}
	return s
}

func scaleMemoryCell(m ScaleMemory) string {
	if m.RSSBytes == nil {
		return m.Unsupported
	}
	return fmt.Sprintf("%.1f MiB: %s B a job (%s B a job over the idle %.1f MiB)", float64(*m.RSSBytes)/(1<<20),
		group3(int64(*m.RSSPerJobBytes)), group3(int64(*m.GrowthPerJobBytes)), float64(*m.IdleRSSBytes)/(1<<20))
}

// table writes aligned columns.
type table struct{ *tabwriter.Writer }

func newTable(w io.Writer, header ...string) *table {
	t := &table{tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) { fmt.Fprintln(t, strings.Join(cells, "\t")) }

// group3 writes an integer with thousands separators.
func group3(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// spread returns the least and the most of counts; false when empty.
func spread(counts []int64) (lo, hi int64, ok bool) {
	if len(counts) == 0 {
		return 0, 0, false
	}
	return slices.Min(counts), slices.Max(counts), true
}
