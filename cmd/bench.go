package cmd

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/internal/bench"
)

const benchLong = `Load a zizq server and print what users care about: enqueue rates, end-to-end
throughput and latency, how exactly budgets hold their limits, and memory.

Without --url, bench starts 'zizq serve' as a child process on a temporary
root directory (real storage, default durability unless --commit-mode), a
fresh one for each scenario, and removes it afterwards. The child is this
binary, or the one --server-binary names: two builds measured by the same
load generator, their /version and path in the report. ZIZQ_URL is not
consulted, so bench never loads a production server by accident: name one
with --url and its own jobs and budgets are left alone (bench works in
queues and budgets of its own, prefixed zizq-bench-, and deletes them
afterwards); its memory is read from /stats.

Scenarios (--scenario, default all: every scenario but scale):
  enqueue  single (POST /jobs from --producers concurrent clients) and bulk
           (POST /jobs/bulk of --bulk jobs) enqueue rates, --jobs each.
  e2e      producers enqueue in bulks while --workers take streams with
           --prefetch acknowledge in batches (POST /jobs/success): jobs/s
           from the first enqueue to the last acknowledgement, and
           enqueue-to-delivery latency p50/p95/p99 (the enqueue time travels
           in the payload). Producers stay at most 2 x workers x prefetch +
           bulk jobs ahead of the acknowledgements, so the latency is that
           of a saturated queue, not of an ever-growing one.
  drain    --jobs jobs enqueued up front in bulks of --bulk, then drained by
           --workers take streams that acknowledge in batches: the rate of
           the enqueue alone and of the drain alone, and how many jobs the
           stream that had fewest and the one that had most acknowledged.
  budgets  (a) a while_in_flight budget of --concurrency: each worker runs up
           to --prefetch jobs at once for --work-time each and counts down
           before it acknowledges; the most jobs seen running at once, and
           the utilisation of the budget's slots while jobs are parked.
           (b) a time_based budget at each --rate per second (burst rate/10)
           under a standing backlog: achieved rate (least-squares slope of
           the deliveries), most jobs dispatched in any window against
           capacity + rate x window (by the server's dispatch stamps), and
           lateness against the ideal token schedule (aligned to the least
           late delivery) p50/p99.
           (c) --budgets budgets: unbudgeted throughput, then every job bound
           to one of the generous budgets, then unbudgeted jobs passing
           --parked jobs parked on exhausted budgets in the same queue.
           (d) a served queue on a budget it shares with --unserved jobs of a
           queue no worker serves, against the same queue alone: throughput,
           and the entries the server examines per decision (/metrics).
  scale    (temporary server only; run only when named) --scale-jobs jobs
           enqueued in bulks of 1,000 (or --bulk, if more) as fast as the
           server takes them
           (queued, or with --scale-parked parked on time_based budgets of
           one token a day, one budget per 10,000 jobs, with a worker
           connected); the server's VmRSS 3 s after the last enqueue (from
           /proc, Linux only), in all and per job; then kill -9 and a
           restart on the same root with the same binary and flags, timed
           from the process start to the first byte answered on /health, to
           /ready 200, and to the first job delivered to a take stream
           opened as soon as the server accepts one.
  Memory (of the other scenarios): the server's resident set size at the
  end of each scenario, and what it grew by per job left queued.

Figures are measured from the client side over real HTTP, warm-up excluded,
and printed with the machine's core count; the load generator shares the
machine with the server. A progress line is shown on a terminal.`

func newBenchCmd(f *Factory) *cobra.Command {
	o := bench.Defaults()
	c := &cobra.Command{
		Use:   "bench",
		Short: "Measure a zizq server: throughput, latency, budgets, memory",
		Long:  benchLong,
		Example: `  zizq bench                              # every scenario on a temporary server
  zizq bench --scenario e2e --jobs 100000 -o json
  zizq bench --url http://10.0.0.5:7890 --scenario enqueue
  zizq bench --scenario scale --scale-jobs 1000000
  zizq bench --scenario drain --server-binary /tmp/zizq-round1   # another build, same load`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return usageError{err}
			}
			ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return benchRun(ctx, &o, f)
		},
	}
	fs := c.Flags()
	// This --url shadows the global one, and so reads no ZIZQ_URL.
	fs.StringVar(&o.URL, "url", "", "URL of a server to load (default: start a temporary one; ZIZQ_URL is not consulted)")
	fs.IntVar(&o.Jobs, "jobs", o.Jobs, "jobs of each measured enqueue, end-to-end and drain run")
	fs.IntVar(&o.Workers, "workers", o.Workers, "take streams (workers)")
	fs.IntVar(&o.Prefetch, "prefetch", o.Prefetch, "jobs each take stream may hold at once")
	fs.IntVar(&o.Producers, "producers", o.Producers, "concurrent enqueue requests")
	fs.IntVar(&o.PayloadSize, "payload-size", o.PayloadSize, "bytes of each job's JSON payload")
	fs.IntVar(&o.Bulk, "bulk", o.Bulk, "jobs per bulk enqueue")
	fs.StringVar(&o.ServerBinary, "server-binary", "", "zizq executable of the temporary server (default: this one), to measure another build with the same load")
	fs.StringVar(&o.CommitMode, "commit-mode", "", "durability of the temporary server: buffered or fsync (default: the server's default)")
	fs.StringVar(&o.Scenario, "scenario", o.Scenario, "enqueue, e2e, drain, budgets, scale or all (all but scale)")
	fs.IntVar(&o.EventSubscribers, "event-subscribers", 0, "dashboards reading the admin port's event stream in detail mode during e2e, to measure what they cost dispatch")
	fs.StringVar(&o.AdminURL, "admin-url", "", "admin port of the --url server, for --event-subscribers")
	fs.IntVar(&o.Concurrency, "concurrency", o.Concurrency, "allocation of the while_in_flight budget")
	durationFlag(fs, &o.WorkTime, "work-time", o.WorkTime, "how long a worker runs each job of the while_in_flight budget")
	fs.IntSliceVar(&o.Rates, "rate", o.Rates, "rates per second of the time_based budget (repeatable)")
	durationFlag(fs, &o.Duration, "duration", o.Duration, "length of each timed budget run")
	fs.IntVar(&o.Budgets, "budgets", o.Budgets, "budgets of the many-budgets run")
	fs.IntVar(&o.Parked, "parked", o.Parked, "jobs parked on exhausted budgets in the many-budgets run")
	fs.IntVar(&o.Unserved, "unserved", o.Unserved, "jobs of a queue no worker serves beside the served queue in the unserved run")
	fs.IntVar(&o.ScaleJobs, "scale-jobs", o.ScaleJobs, "jobs the scale scenario fills the server with")
	fs.BoolVar(&o.ScaleParked, "scale-parked", false, "the scale scenario's jobs are parked on exhausted budgets (1 a day per 10,000 jobs), a worker connected")
	_ = c.RegisterFlagCompletionFunc("scenario", cobra.FixedCompletions(bench.Scenarios, cobra.ShellCompDirectiveNoFileComp))
	_ = c.RegisterFlagCompletionFunc("commit-mode", cobra.FixedCompletions(bench.CommitModes, cobra.ShellCompDirectiveNoFileComp))
	return c
}

// benchRun runs the load generator with the client settings of the global
// flags and prints its report.
func benchRun(ctx context.Context, o *bench.Options, f *Factory) error {
	// The TLS flags apply to --url, not to the global one.
	copts := *f.Opts
	copts.URL = o.URL
	tlsCfg, err := copts.tlsConfig()
	if err != nil {
		return err
	}
	o.TLS = tlsCfg
	o.Timeout = f.Opts.Timeout
	if isTerminal(f.IO.Err) {
		o.Progress = f.IO.Err
	}
	rep, err := bench.Run(ctx, *o)
	if err != nil {
		return err
	}
	if f.JSON() {
		return rep.WriteJSON(f.IO.Out)
	}
	return rep.WriteTable(f.IO.Out)
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
