// Package bench is the load generator behind `zizq bench`: it loads a zizq
// server over real HTTP (a child `zizq serve` of its own, or a server named
// by URL) and reports what users care about: enqueue rates, end-to-end
// throughput and latency, how exactly budgets hold their limits, and memory.
//
// The command line only turns flags into Options, calls Run and prints the
// Report.
package bench

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/zizq/zizq/client"
	"github.com/zizq/zizq/internal/buildinfo"
)

// Scenarios of Options.Scenario.
const (
	ScenarioEnqueue = "enqueue"
	ScenarioE2E     = "e2e"
	ScenarioDrain   = "drain"
	ScenarioBudgets = "budgets"
	ScenarioScale   = "scale"
	ScenarioAll     = "all"
)

// Scenarios lists the values of Options.Scenario. ScenarioAll runs every
// scenario but ScenarioScale, which fills a server with a million jobs and
// kills it: it runs only when named.
var Scenarios = []string{ScenarioEnqueue, ScenarioE2E, ScenarioDrain, ScenarioBudgets, ScenarioScale, ScenarioAll}

// Commit modes of Options.CommitMode ("" leaves the server's default).
var CommitModes = []string{"buffered", "fsync"}

// Options are the settings of one run.
type Options struct {
	// URL is the server to load; empty starts a child `zizq serve`.
	URL         string
	Jobs        int
	Workers     int
	Prefetch    int
	Producers   int
	PayloadSize int
	Bulk        int
	// ServerBinary is the zizq executable of the child server ("": this
	// one), so that two builds can be measured by the same load generator.
	ServerBinary string
	// CommitMode is the durability of the child server ("": its default).
	CommitMode string
	Scenario   string
	// EventSubscribers dashboards read the admin port's event stream in
	// detail mode during the e2e scenario; AdminURL is that port's with
	// --url (the temporary server opens one of its own).
	EventSubscribers int
	AdminURL         string

	// Budget scenario sizes.
	Concurrency int
	WorkTime    time.Duration
	Rates       []int
	Duration    time.Duration
	Budgets     int
	Parked      int
	Unserved    int

	// Scale scenario: how many jobs, and whether they are parked on
	// budgets rather than queued.
	ScaleJobs   int
	ScaleParked bool

	// What the caller provides, not settings of the load.

	// TLS configures the client of an https:// URL (nil: the system's CAs).
	TLS *tls.Config
	// Timeout bounds each answer of the server; 0 means no limit.
	Timeout time.Duration
	// Progress receives a progress line, redrawn in place: give it a
	// terminal, or nil for none.
	Progress io.Writer
}

// Defaults returns the default settings, the ones `zizq bench` declares its
// flags with.
func Defaults() Options {
	return Options{
		Jobs: 100000, Workers: 4, Prefetch: 64, Producers: 8, PayloadSize: 128, Bulk: 100,
		Scenario: ScenarioAll, Concurrency: 10, WorkTime: 10 * time.Millisecond, Rates: []int{100, 1000},
		Duration: 5 * time.Second, Budgets: 1000, Parked: 100000, Unserved: 100000,
		ScaleJobs: 1000000,
	}
}

// Validate checks the settings before anything runs. Its errors name the
// flag of `zizq bench` that is wrong.
func (o *Options) Validate() error {
	switch o.Scenario {
	case ScenarioEnqueue, ScenarioE2E, ScenarioDrain, ScenarioBudgets, ScenarioScale, ScenarioAll:
	default:
		return fmt.Errorf("invalid --scenario %q: use enqueue, e2e, drain, budgets, scale or all", o.Scenario)
	}
	if o.Scenario == ScenarioScale && o.URL != "" {
		return errors.New("--scenario scale kills and restarts its own temporary server; it cannot be used with --url")
	}
	if o.ScaleParked && o.Scenario != ScenarioScale {
		return errors.New("--scale-parked applies to --scenario scale")
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"jobs", o.Jobs}, {"workers", o.Workers}, {"prefetch", o.Prefetch}, {"producers", o.Producers},
		{"bulk", o.Bulk}, {"concurrency", o.Concurrency}, {"budgets", o.Budgets}, {"scale-jobs", o.ScaleJobs}} {
		if f.v < 1 {
			return fmt.Errorf("--%s must be at least 1", f.name)
		}
	}
	if o.PayloadSize < 0 || o.Parked < 0 {
		return errors.New("--payload-size and --parked must not be negative")
	}
	if o.WorkTime <= 0 || o.Duration <= 0 {
		return errors.New("--work-time and --duration must be positive")
	}
	if len(o.Rates) == 0 {
		return errors.New("--rate needs at least one rate")
	}
	for _, r := range o.Rates {
		if r < 1 {
			return errors.New("--rate must be at least 1")
		}
	}
	if o.EventSubscribers < 0 {
		return errors.New("--event-subscribers must not be negative")
	}
	if o.EventSubscribers > 0 && o.URL != "" && o.AdminURL == "" {
		return errors.New("--event-subscribers with --url needs --admin-url")
	}
	if o.URL != "" && o.CommitMode != "" {
		return errors.New("--commit-mode sets up the temporary server; it cannot be used with --url")
	}
	if o.URL != "" && o.ServerBinary != "" {
		return errors.New("--server-binary sets up the temporary server; it cannot be used with --url")
	}
	if o.ServerBinary != "" {
		if _, err := serverBinary(o.ServerBinary); err != nil {
			return fmt.Errorf("--server-binary: %w", err)
		}
	}
	switch o.CommitMode {
	case "", "buffered", "fsync":
	default:
		return fmt.Errorf("invalid --commit-mode %q: use buffered or fsync", o.CommitMode)
	}
	if o.URL != "" {
		if _, err := client.New(o.URL, client.Options{}); err != nil {
			return fmt.Errorf("--url: %w", err)
		}
	}
	return nil
}

// runner is one run: its options, where it reports, and the clock every
// figure is read from.
type runner struct {
	o      *Options
	epoch  time.Time // monotonic origin of the times carried in payloads
	prefix string    // names of the run's queues and budgets
	prog   *progress
	hc     *http.Client

	padOnce sync.Once
	pad     string // PayloadSize bytes of x; see padding
}

// Run validates o, runs the scenarios it names and returns their report.
func Run(ctx context.Context, o Options) (*Report, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	var rnd [3]byte
	_, _ = rand.Read(rnd[:])
	b := &runner{
		o:      &o,
		epoch:  time.Now(),
		prefix: "zizq-bench-" + hex.EncodeToString(rnd[:]),
		prog:   newProgress(o.Progress),
		// Many concurrent requests: keep their connections open.
		hc: &http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			TLSClientConfig:     o.TLS,
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: 1024,
			IdleConnTimeout:     90 * time.Second,
		}},
	}
	defer b.hc.CloseIdleConnections()
	defer b.prog.stop()
	rep := &Report{
		Version:    buildinfo.Version,
		Cores:      runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		OS:         runtime.GOOS + "/" + runtime.GOARCH,
		Settings:   o.settings(),
	}
	if o.URL == "" {
		rep.Server = ServerInfo{Mode: "child", CommitMode: o.CommitMode}
		if rep.Server.CommitMode == "" {
			rep.Server.CommitMode = "default"
		}
	} else {
		rep.Server = ServerInfo{Mode: "url", URL: o.URL}
	}
	start := time.Now()
	run := func(name string, fn func(context.Context, *target) error) error {
		if o.Scenario != name && (o.Scenario != ScenarioAll || name == ScenarioScale) {
			return nil
		}
		return b.withTarget(ctx, name, rep, fn)
	}
	err := run(ScenarioEnqueue, func(ctx context.Context, t *target) (err error) {
		rep.Enqueue, err = b.enqueueScenario(ctx, t)
		return err
	})
	if err == nil {
		err = run(ScenarioE2E, func(ctx context.Context, t *target) (err error) {
			rep.E2E, err = b.e2eScenario(ctx, t)
			return err
		})
	}
	if err == nil {
		err = run(ScenarioDrain, func(ctx context.Context, t *target) (err error) {
			rep.Drain, err = b.drainScenario(ctx, t)
			return err
		})
	}
	if err == nil {
		err = run(ScenarioBudgets, func(ctx context.Context, t *target) (err error) {
			rep.Budgets, err = b.budgetsScenario(ctx, t)
			return err
		})
	}
	if err == nil {
		err = run(ScenarioScale, func(ctx context.Context, t *target) (err error) {
			rep.Scale, err = b.scaleScenario(ctx, t)
			return err
		})
	}
	b.prog.stop()
	if err != nil {
		return nil, err
	}
	rep.ElapsedS = round3(time.Since(start).Seconds())
	return rep, nil
}

func (o *Options) settings() Settings {
	return Settings{
		Scenario: o.Scenario, Jobs: o.Jobs, Workers: o.Workers, Prefetch: o.Prefetch, Producers: o.Producers,
		PayloadSize: o.PayloadSize, Bulk: o.Bulk, Concurrency: o.Concurrency, WorkTimeMs: ms(o.WorkTime),
		Rates: o.Rates, DurationS: o.Duration.Seconds(), Budgets: o.Budgets, Parked: o.Parked, Unserved: o.Unserved,
		ScaleJobs: o.ScaleJobs, ScaleParked: o.ScaleParked,
	}
}

// since returns the time since the run's epoch on the monotonic clock.
func (b *runner) since() time.Duration { return time.Since(b.epoch) }
