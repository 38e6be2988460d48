package cmd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/client"
)

// BenchOptions are the settings of `zizq bench`.
type BenchOptions struct {
	// URL is the server to load; empty starts a child `zizq serve`.
	URL         string
	Jobs        int
	Workers     int
	Prefetch    int
	Producers   int
	PayloadSize int
	Bulk        int
	CommitMode  string
	Scenario    string

	// Budget scenario sizes.
	Concurrency int
	WorkTime    time.Duration
	Rates       []int
	Duration    time.Duration
	Budgets     int
	Parked      int
	Unserved    int
}

// Scenarios of --scenario.
const (
	scenarioEnqueue = "enqueue"
	scenarioE2E     = "e2e"
	scenarioBudgets = "budgets"
	scenarioAll     = "all"
)

const benchLong = `Load a zizq server and print what users care about: enqueue rates, end-to-end
throughput and latency, how exactly budgets hold their limits, and memory.

Without --url, bench starts 'zizq serve' as a child process on a temporary
root directory (real storage, default durability unless --commit-mode), a
fresh one for each scenario, and removes it afterwards. ZIZQ_URL is not
consulted, so bench never loads a production server by accident: name one
with --url and its own jobs and budgets are left alone (bench works in
queues and budgets of its own, prefixed zizq-bench-, and deletes them
afterwards); its memory is read from /stats.

Scenarios (--scenario, default all):
  enqueue  single (POST /jobs from --producers concurrent clients) and bulk
           (POST /jobs/bulk of --bulk jobs) enqueue rates, --jobs each.
  e2e      producers enqueue in bulks while --workers take streams with
           --prefetch acknowledge in batches (POST /jobs/success): jobs/s
           from the first enqueue to the last acknowledgement, and
           enqueue-to-delivery latency p50/p95/p99 (the enqueue time travels
           in the payload). Producers stay at most 2 x workers x prefetch +
           bulk jobs ahead of the acknowledgements, so the latency is that
           of a saturated queue, not of an ever-growing one.
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
  Memory: the server's resident set size at the end of each scenario, and
  what it grew by per job left queued.

Figures are measured from the client side over real HTTP, warm-up excluded,
and printed with the machine's core count; the load generator shares the
machine with the server. A progress line is shown on a terminal.`

func newBenchCmd(f *Factory) *cobra.Command {
	o := &BenchOptions{}
	c := &cobra.Command{
		Use:   "bench",
		Short: "Measure a zizq server: throughput, latency, budgets, memory",
		Long:  benchLong,
		Example: `  zizq bench                              # every scenario on a temporary server
  zizq bench --scenario e2e --jobs 100000 -o json
  zizq bench --url http://10.0.0.5:7890 --scenario enqueue`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.validate(c); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return benchRun(ctx, o, f)
		},
	}
	fs := c.Flags()
	// This --url shadows the global one, and so reads no ZIZQ_URL.
	fs.StringVar(&o.URL, "url", "", "URL of a server to load (default: start a temporary one; ZIZQ_URL is not consulted)")
	fs.IntVar(&o.Jobs, "jobs", 100000, "jobs of each measured enqueue and end-to-end run")
	fs.IntVar(&o.Workers, "workers", 4, "take streams (workers)")
	fs.IntVar(&o.Prefetch, "prefetch", 64, "jobs each take stream may hold at once")
	fs.IntVar(&o.Producers, "producers", 8, "concurrent enqueue requests")
	fs.IntVar(&o.PayloadSize, "payload-size", 128, "bytes of each job's JSON payload")
	fs.IntVar(&o.Bulk, "bulk", 100, "jobs per bulk enqueue")
	fs.StringVar(&o.CommitMode, "commit-mode", "", "durability of the temporary server: buffered or fsync (default: the server's default)")
	fs.StringVar(&o.Scenario, "scenario", scenarioAll, "enqueue, e2e, budgets or all")
	fs.IntVar(&o.Concurrency, "concurrency", 10, "allocation of the while_in_flight budget")
	durationFlag(fs, &o.WorkTime, "work-time", 10*time.Millisecond, "how long a worker runs each job of the while_in_flight budget")
	fs.IntSliceVar(&o.Rates, "rate", []int{100, 1000}, "rates per second of the time_based budget (repeatable)")
	durationFlag(fs, &o.Duration, "duration", 5*time.Second, "length of each timed budget run")
	fs.IntVar(&o.Budgets, "budgets", 1000, "budgets of the many-budgets run")
	fs.IntVar(&o.Parked, "parked", 100000, "jobs parked on exhausted budgets in the many-budgets run")
	fs.IntVar(&o.Unserved, "unserved", 100000, "jobs of a queue no worker serves beside the served queue in the unserved run")
	_ = c.RegisterFlagCompletionFunc("scenario", cobra.FixedCompletions([]string{scenarioEnqueue, scenarioE2E, scenarioBudgets, scenarioAll}, cobra.ShellCompDirectiveNoFileComp))
	_ = c.RegisterFlagCompletionFunc("commit-mode", cobra.FixedCompletions([]string{"buffered", "fsync"}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

func (o *BenchOptions) validate(c *cobra.Command) error {
	bad := func(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }
	switch o.Scenario {
	case scenarioEnqueue, scenarioE2E, scenarioBudgets, scenarioAll:
	default:
		return bad("invalid --scenario %q: use enqueue, e2e, budgets or all", o.Scenario)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"jobs", o.Jobs}, {"workers", o.Workers}, {"prefetch", o.Prefetch}, {"producers", o.Producers},
		{"bulk", o.Bulk}, {"concurrency", o.Concurrency}, {"budgets", o.Budgets}} {
		if f.v < 1 {
			return bad("--%s must be at least 1", f.name)
		}
	}
	if o.PayloadSize < 0 || o.Parked < 0 {
		return bad("--payload-size and --parked must not be negative")
	}
	if o.WorkTime <= 0 || o.Duration <= 0 {
		return bad("--work-time and --duration must be positive")
	}
	if len(o.Rates) == 0 {
		return bad("--rate needs at least one rate")
	}
	for _, r := range o.Rates {
		if r < 1 {
			return bad("--rate must be at least 1")
		}
	}
	if o.URL != "" && c.Flags().Changed("commit-mode") {
		return bad("--commit-mode sets up the temporary server; it cannot be used with --url")
	}
	switch o.CommitMode {
	case "", "buffered", "fsync":
	default:
		return bad("invalid --commit-mode %q: use buffered or fsync", o.CommitMode)
	}
	if o.URL != "" {
		if _, err := client.New(o.URL, client.Options{}); err != nil {
			return bad("--url: %w", err)
		}
	}
	return nil
}

// bench is one `zizq bench` run: its options, where it reports, and the
// clock every figure is read from.
type bench struct {
	o      *BenchOptions
	f      *Factory
	epoch  time.Time // monotonic origin of the times carried in payloads
	prefix string    // names of the run's queues and budgets
	prog   *progress
	hc     *http.Client
}

func benchRun(ctx context.Context, o *BenchOptions, f *Factory) error {
	// The TLS flags apply to --url, not to the global one.
	copts := *f.Opts
	copts.URL = o.URL
	tlsCfg, err := copts.tlsConfig()
	if err != nil {
		return err
	}
	var rnd [3]byte
	_, _ = rand.Read(rnd[:])
	b := &bench{
		o:      o,
		f:      f,
		epoch:  time.Now(),
		prefix: "zizq-bench-" + hex.EncodeToString(rnd[:]),
		prog:   newProgress(f.IO.Err),
		// Many concurrent requests: keep their connections open.
		hc: &http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			TLSClientConfig:     tlsCfg,
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: 1024,
			IdleConnTimeout:     90 * time.Second,
		}},
	}
	defer b.hc.CloseIdleConnections()
	defer b.prog.stop()
	rep := &BenchReport{
		Version:    version,
		Cores:      runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		OS:         runtime.GOOS + "/" + runtime.GOARCH,
		Settings:   o.settings(),
	}
	if o.URL == "" {
		rep.Server = benchServerInfo{Mode: "child", CommitMode: o.CommitMode}
		if rep.Server.CommitMode == "" {
			rep.Server.CommitMode = "default"
		}
	} else {
		rep.Server = benchServerInfo{Mode: "url", URL: o.URL}
	}
	start := time.Now()
	run := func(name string, fn func(context.Context, *benchTarget) error) error {
		if o.Scenario != name && o.Scenario != scenarioAll {
			return nil
		}
		return b.withTarget(ctx, name, rep, fn)
	}
	err = run(scenarioEnqueue, func(ctx context.Context, t *benchTarget) (err error) {
		rep.Enqueue, err = b.enqueueScenario(ctx, t)
		return err
	})
	if err == nil {
		err = run(scenarioE2E, func(ctx context.Context, t *benchTarget) (err error) {
			rep.E2E, err = b.e2eScenario(ctx, t)
			return err
		})
	}
	if err == nil {
		err = run(scenarioBudgets, func(ctx context.Context, t *benchTarget) (err error) {
			rep.Budgets, err = b.budgetsScenario(ctx, t)
			return err
		})
	}
	b.prog.stop()
	if err != nil {
		return err
	}
	rep.ElapsedS = round3(time.Since(start).Seconds())
	if f.JSON() {
		return writeBenchJSON(f.IO.Out, rep)
	}
	return writeBenchTable(f.IO.Out, rep)
}

func (o *BenchOptions) settings() benchSettings {
	return benchSettings{
		Scenario: o.Scenario, Jobs: o.Jobs, Workers: o.Workers, Prefetch: o.Prefetch, Producers: o.Producers,
		PayloadSize: o.PayloadSize, Bulk: o.Bulk, Concurrency: o.Concurrency, WorkTimeMs: ms(o.WorkTime),
		Rates: o.Rates, DurationS: o.Duration.Seconds(), Budgets: o.Budgets, Parked: o.Parked, Unserved: o.Unserved,
	}
}

// since returns the time since the run's epoch on the monotonic clock.
func (b *bench) since() time.Duration { return time.Since(b.epoch) }

// progress is the progress line, drawn on a terminal only.
type progress struct {
	w    io.Writer
	on   bool
	done chan struct{}
	once sync.Once

	mu  sync.Mutex // guards msg and the writes to w
	msg func() string
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w, on: isTerminal(w), done: make(chan struct{})}
	if p.on {
		go p.loop()
	}
	return p
}

// set shows msg (read on every redraw) from now on.
func (p *progress) set(msg func() string) {
	p.mu.Lock()
	p.msg = msg
	p.mu.Unlock()
}

// setf shows a fixed message.
func (p *progress) setf(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	p.set(func() string { return s })
}

// stop ends the redraws and clears the line.
func (p *progress) stop() {
	p.once.Do(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		close(p.done)
		if p.on {
			fmt.Fprint(p.w, "\r\033[K")
		}
	})
}

func (p *progress) loop() {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
			p.mu.Lock()
			select {
			case <-p.done:
			default:
				if p.msg != nil {
					fmt.Fprintf(p.w, "\r\033[Kzizq bench: %s", p.msg())
				}
			}
			p.mu.Unlock()
		}
	}
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
