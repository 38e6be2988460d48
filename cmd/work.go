package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
	"github.com/zizq/zizq/internal/worker"
)

// WorkOptions are the flags of `zizq work`.
type WorkOptions struct {
	Queues      []string
	Concurrency int
	Timeout     time.Duration
	Grace       time.Duration
	MaxJobs     int
	Drain       bool
}

// outputText is the default output of `zizq work`: one line an event
// (the other commands call it table).
const outputText = "text"

// maxConcurrency bounds --concurrency: the server holds at most 1,024
// jobs in flight by default anyway.
const maxConcurrency = 10000

const workLong = `Run CMD once for each job of the queues (every queue when no --queue is
given): any program is a worker, with no client library.

Each job's command runs in a process group of its own, with the job's payload
as JSON on standard input and the job in the environment: ZIZQ_JOB_ID,
ZIZQ_JOB_TYPE, ZIZQ_JOB_QUEUE, ZIZQ_JOB_PRIORITY, ZIZQ_JOB_ATTEMPTS,
ZIZQ_URL (the server) and ZIZQ_RESULT (see below). Its standard output and
error go to zizq's standard error, each line prefixed with the job's ID.

Exit status 0 completes the job. Any other status fails it with the message
"exit status N" and the last 4 KiB of its standard error as the backtrace,
and the server's retries and backoff apply; a command killed by a signal
fails with "killed by SIGNAME", one that cannot start with exec's error
(e.g. exec: "nosuch": executable file not found in $PATH), and the worker
goes on. Past --timeout the process group gets SIGTERM, then SIGKILL after
--grace, and the job fails with "timed out after D".

ZIZQ_RESULT is the path of a fresh empty file, made for this run alone (in
$TMPDIR) and removed once it is over. A command that knows what its job
really cost writes there, before it exits:
  {"budgets":[{"key":"openai-tpm","cost":1834}]}
and the costs go with the job's success or failure. The cost the job was
bound with is an estimate: the server gives a time_based or calendar budget
back what the estimate took beyond the real cost, or takes what the real
cost is above it, which may put the budget in debt. An empty file sends no
costs: every estimate was right. Members the worker does not know are
ignored. A file it cannot read as that (not JSON, a cost that is not a
whole number of tokens, 0 or more) is ignored with a warning on standard
error, and the job is completed or failed all the same, without costs; so
it is when the server refuses the costs.

A command whose upstream refused (an HTTP 429 or 503) says so by writing
  {"throttle":{"budget":"openai-tpm","retry_after_ms":30000}}
there (beside any "budgets") and exiting with status 75 (EX_TEMPFAIL): the
job's failure carries the throttle, so the budget, one the job is bound
to, counts a refusal: an adaptive budget backs off, and any budget pays
nothing for retry_after_ms (optional, the upstream's Retry-After, at most
a day). The job is retried without counting toward its retry limit,
unless the throttle says "count":true. Status 75 without a throttle is an
ordinary failure; a throttle with any other ending (a success, another
status, a signal, a timeout) is ignored with a warning. If the server
refuses the throttle (a budget the job is not bound to, say), the failure
is sent again without it, so the outcome is never lost.

At most --concurrency commands run at once; the take stream holds as many
jobs (its prefetch), so budgets are paid by running jobs only.

Standard output gets one line an event:
  2026-08-31T19:16:28+10:00: Job 03gs5tvn78uny555dm88vjsoj running in process 3098324
  2026-08-31T19:16:30+10:00: Job 03gs5tvn78uny555dm88vjsoj exited with status 0
With -o json, one JSON object a line instead, with the fields:
  time         RFC 3339 with nanoseconds and the local offset
  event        started, succeeded, failed, timed_out (each job that starts
               ends with exactly one of the last three), or stopping
  id, type, queue   the job (not on stopping)
  attempts     the job's failures before this run (started)
  pid          the command's process ID (absent when it did not start)
  status       its exit status (absent when a signal ended it)
  signal       the signal that ended it (SIGKILL); on stopping, the signal
               that stops the worker
  message      the failure recorded on the server (failed, timed_out)
  duration_ms  how long it ran (succeeded, failed, timed_out)
  budgets      the costs read from ZIZQ_RESULT, [{"key","cost"}] (absent
               when there were none)
  throttle     the throttle read from ZIZQ_RESULT and sent with the failure,
               {"budget","retry_after_ms","count"} (failed, exit status 75)
  warning      why the ZIZQ_RESULT file, or its throttle, was ignored (absent
               when it was not)
  running      commands still running (stopping)
Fields may be added; none is removed or changes meaning.

When it exits:
  --max-jobs N  once N jobs have finished (no more than N start), exit 0.
  --drain       once the worker holds nothing (no command running, no result
                on its way) and no job of its queues can still reach it
                without waiting for the calendar: none is ready (parked jobs
                count: budgets pay them in time, unless a budget holding them
                is paused without an end) and none is in flight anywhere (a
                job on its way to this worker is in flight; one on another
                worker may come back). Scheduled jobs (a future ready_at, a
                retry's backoff) do not keep it running. It exits 0 at once
                when the queues are empty. For a CI step.
  SIGINT or SIGTERM: nothing new starts; running commands have --grace to
                finish, then are killed (SIGKILL) and their jobs fail with
                "worker stopped". The take stream stays open until every
                running job's result is in, so jobs delivered meanwhile are
                never started and go back to ready when it closes. Exit 0.
                A second signal kills the commands at once; their jobs go
                back to ready (no failure recorded) and it exits 1.
  Exit 1 when the server never took a job's result (each is named), and 4
  when the server cannot be reached at start.

The server going away (a restart, a broken connection) is said once on
standard error and the stream is opened again with backoff. The server puts
back in the queue every job the lost stream held: those not started yet never
start here; running commands finish and their results are sent until the
server takes them. A job handed back to this worker while it runs, or after
it finished, is not run again: its result answers the new delivery. A job
that went to another worker meanwhile may run twice (delivery is at least
once), and the result this worker could not deliver is reported.`

func newWorkCmd(shared *Factory) *cobra.Command {
	// Options of its own: its client flags differ (--timeout, -o text).
	f := &Factory{IO: shared.IO, Opts: &ClientOptions{}}
	o := &WorkOptions{}
	c := &cobra.Command{
		Use:   "work [--queue Q]... [--concurrency N] [--timeout D] [--grace D] [--max-jobs N] [--drain] -- CMD [ARGS]...",
		Short: "Run a command for each job: a worker in one line",
		Long:  workLong,
		Example: `  zizq work --queue images --concurrency 10 -- ./resize.sh
  zizq work --drain -o json -- python3 job.py > events.ndjson
  zizq work -q emails --timeout 1m --max-jobs 100 -- sh -c 'jq -r .to | xargs ./send'
  zizq work -q llm -- python3 ask.py   # writes the tokens it used to $ZIZQ_RESULT
  zizq work -q llm -- ./call.sh        # on a 429: a throttle in $ZIZQ_RESULT, exit 75`,
		PreRunE: func(c *cobra.Command, args []string) error {
			if err := checkWorkCommand(c, args); err != nil {
				return err
			}
			for _, q := range o.Queues {
				if err := api.ValidateName("queue", q); err != nil {
					return usageError{fmt.Errorf("invalid --queue %q: %w", q, err)}
				}
			}
			return checkWorkOutput(c, f.Opts)
		},
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := f.newClient(client.Options{UserAgent: "zizq-work/" + version})
			if err != nil {
				return err
			}
			return workRun(c.Context(), f, o, cl, args)
		},
	}
	fs := c.Flags()
	fs.StringSliceVarP(&o.Queues, "queue", "q", nil, "take jobs of this queue (repeat or comma-separate; default every queue)")
	intRangeFlag(fs, &o.Concurrency, "concurrency", 1, maxConcurrency, 1, "commands running at once (the take stream's prefetch)")
	durationFlag(fs, &o.Timeout, "timeout", 0, "end a command that runs longer: SIGTERM, then SIGKILL after --grace (0: never)")
	durationFlag(fs, &o.Grace, "grace", worker.DefaultGrace, "time between SIGTERM and SIGKILL, and for running commands to finish once stopping")
	intRangeFlag(fs, &o.MaxJobs, "max-jobs", 0, 1<<31-1, 0, "exit 0 once this many jobs have finished (0: no limit)")
	fs.BoolVar(&o.Drain, "drain", false, "exit 0 once no job of the queues can reach the worker without waiting (see above)")
	declareWorkClientFlags(fs, f.Opts)
	_ = c.RegisterFlagCompletionFunc("queue", f.completeQueues)
	_ = c.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{outputText, outputJSON}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

// declareWorkClientFlags declares the client flags of `work`: those of
// every client command but --timeout, which here is the job's.
func declareWorkClientFlags(fs *pflag.FlagSet, o *ClientOptions) {
	fs.StringVar(&o.URL, "url", client.DefaultURL, "URL of the zizq server")
	withEnv(fs, "url", "ZIZQ_URL")
	fs.StringVarP(&o.Output, "output", "o", outputText, "output format: text or json")
	addClientTLSFlags(fs, o)
}

// checkWorkCommand wants the command after "--" and nothing before it.
// It is not the command's Args check, whose errors speak of positional
// arguments.
func checkWorkCommand(c *cobra.Command, args []string) error {
	dash := c.ArgsLenAtDash()
	var err error
	switch {
	case dash < 0 && len(args) > 0:
		err = fmt.Errorf("work takes the command after --, got %q without it", args[0])
	case dash < 0:
		err = errors.New("work needs -- CMD [ARGS]...: the command to run for each job")
	case dash > 0:
		err = fmt.Errorf("work takes the command after --, got %q before it", args[0])
	case len(args) == 0:
		err = errors.New("work needs a command after --")
	default:
		return nil
	}
	return usageError{fmt.Errorf("%w\nUsage: %s", err, c.UseLine())}
}

func checkWorkOutput(c *cobra.Command, o *ClientOptions) error {
	if err := applyEnv(c); err != nil {
		return err
	}
	switch o.Output {
	case outputText, outputTable:
		o.Output = outputText
	case outputJSON:
	default:
		return usageError{fmt.Errorf("invalid --output %q: use text or json", o.Output)}
	}
	return nil
}

// workRun runs the worker until it stops: a first SIGINT or SIGTERM stops
// it cleanly, a second kills the commands at once.
func workRun(ctx context.Context, f *Factory, o *WorkOptions, cl *client.Client, argv []string) error {
	events := worker.TextEvents(f.IO.Out, o.Grace)
	if f.Opts.Output == outputJSON {
		events = worker.JSONEvents(f.IO.Out)
	}
	host, _ := os.Hostname()
	w := worker.New(worker.Config{
		Client: cl, Queues: o.Queues, Concurrency: o.Concurrency,
		Timeout: o.Timeout, Grace: o.Grace, MaxJobs: o.MaxJobs, Drain: o.Drain,
		Command: argv, Env: os.Environ(), Events: events, Output: f.IO.Err,
		WorkerID: fmt.Sprintf("zizq-work-%s-%d", host, os.Getpid()),
	})
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(signals)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case s := <-signals:
				w.Stop(signalName(s))
			case <-done:
				return
			}
		}
	}()
	return w.Run(ctx)
}

// signalName is how the stopping event names a signal.
func signalName(s os.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}
