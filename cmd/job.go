package cmd

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/itchyny/gojq"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
)

func newJobCmd(f *Factory) *cobra.Command {
	return parentCmd("job", "Enqueue, inspect, change and delete jobs",
		newJobEnqueueCmd(f),
		newJobBulkCmd(f),
		newJobGetCmd(f),
		newJobListCmd(f),
		newJobCountCmd(f),
		newJobDeleteCmd(f),
		newJobWhyCmd(f),
		newJobErrorsCmd(f),
		newJobRetryCmd(f),
		newJobPatchCmd(f),
	)
}

// JobFilterFlags are the filters of `job list`, `job count` and the bulk
// forms of `job delete` and `job patch`.
type JobFilterFlags struct {
	Statuses []string
	Queues   []string
	Types    []string
	Budgets  []string
	// Filter is a jq expression over the payload (the server's filter).
	Filter string
}

// jobFilterFlags are the names of the filter flags.
var jobFilterFlags = []string{"status", "queue", "type", "budget", "filter"}

func (o *JobFilterFlags) register(fs *pflag.FlagSet, f *Factory, c *cobra.Command) {
	fs.StringSliceVar(&o.Statuses, "status", nil, "only jobs in these statuses: scheduled, ready, in_flight, completed, dead (repeat or comma-separate)")
	// -q and -t as on `job enqueue`.
	nameListFlag(fs, &o.Queues, "queue", "q", "queue", "only jobs of these queues")
	nameListFlag(fs, &o.Types, "type", "t", "type", "only jobs of these types")
	nameListFlag(fs, &o.Budgets, "budget", "", "budget key", "only jobs bound to these budgets")
	fs.StringVar(&o.Filter, "filter", "", `only jobs whose payload the jq expression holds true for, e.g. '.user == "ann"'`)
	_ = c.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(
		[]string{api.StatusScheduled, api.StatusReady, api.StatusInFlight, api.StatusCompleted, api.StatusDead}, cobra.ShellCompDirectiveNoFileComp))
	_ = c.RegisterFlagCompletionFunc("queue", f.completeQueues)
	_ = c.RegisterFlagCompletionFunc("budget", f.completeBudgetKeys)
}

// registerParked adds --parked, the filter by the server's live state that
// `job list` and `job count` offer. The bulk forms leave it out: the parked
// set changes between their count and their change.
func registerParked(fs *pflag.FlagSet, parked *bool) {
	fs.BoolVar(parked, "parked", false, "only jobs parked now: ready, in a queue a worker serves, but a budget cannot pay them yet (their status stays ready)")
}

// query builds the job filter; unknown statuses are a usage error rather
// than a round trip.
func (o *JobFilterFlags) query() (api.JobQuery, error) {
	for _, s := range o.Statuses {
		switch s {
		case api.StatusScheduled, api.StatusReady, api.StatusInFlight, api.StatusCompleted, api.StatusDead:
		default:
			return api.JobQuery{}, usageError{fmt.Errorf("invalid --status %q: use scheduled, ready, in_flight, completed or dead", s)}
		}
	}
	if o.Filter != "" {
		if err := checkJQ(o.Filter); err != nil {
			return api.JobQuery{}, usageError{fmt.Errorf("invalid --filter: %w", err)}
		}
	}
	return api.JobQuery{Statuses: o.Statuses, Queues: o.Queues, Types: o.Types, BudgetKeys: o.Budgets, Filter: o.Filter}, nil
}

// checkJQ compiles a jq expression as the server does (gojq), so that a
// mistake is a usage error rather than the server's 400.
func checkJQ(src string) error {
	q, err := gojq.Parse(src)
	if err != nil {
		return err
	}
	_, err = gojq.Compile(q)
	return err
}

// checkJobID refuses, before any request, an ID argument that does not
// have the shape of a job ID: an empty one would even name /jobs itself,
// and `job delete ""` would delete every job.
func checkJobID(id string) error {
	if !api.ValidJobID(id) {
		return usageError{fmt.Errorf("invalid ID %q: a job ID is %d characters of 0-9 and a-z", id, api.JobIDLen)}
	}
	return nil
}

// nameMissingJobs makes every command of the tree that takes a job ID
// name it when the server answers 404: the server says only "job not
// found" (the wire API's text), and the user may have given several.
func nameMissingJobs(c *cobra.Command) {
	for _, sub := range c.Commands() {
		nameMissingJobs(sub)
	}
	required, optional := positionals(c.Use)
	if c.RunE == nil || len(required)+len(optional) == 0 || append(required, optional...)[0] != "ID" {
		return
	}
	run := c.RunE
	c.RunE = func(c *cobra.Command, args []string) error {
		err := run(c, args)
		if len(args) == 0 || !client.IsNotFound(err) {
			return err
		}
		if err.Error() == "job not found" {
			return notFoundError{fmt.Errorf("job %s not found", args[0])}
		}
		return notFoundError{fmt.Errorf("job %s: %w", args[0], err)} // "error record not found"
	}
}

// parseBinding reads KEY[:COST]. Keys may contain ':', so the text is
// split on the last ':' only when an integer follows it, signed or not: a
// cost, which must be at least 1 ("k:-1" is a bad cost, not a key).
func parseBinding(s string) (api.BindingRequest, error) {
	key := s
	var cost *int64
	if i := strings.LastIndexByte(s, ':'); i >= 0 && isInteger(s[i+1:]) {
		n, err := strconv.ParseInt(s[i+1:], 10, 64)
		if err != nil || n < 1 {
			return api.BindingRequest{}, fmt.Errorf("invalid cost in --budget %q: a cost is a whole number, at least 1", s)
		}
		key, cost = s[:i], &n
	}
	if err := api.ValidateBudgetKey(key); err != nil {
		return api.BindingRequest{}, fmt.Errorf("invalid --budget %q: %w", s, err)
	}
	return api.BindingRequest{Key: &key, Cost: cost}, nil
}

// parseBindings reads the --budget flags of a job: each KEY[:COST], and
// no key twice (the server refuses that too).
func parseBindings(flags []string) ([]api.BindingRequest, error) {
	var out []api.BindingRequest
	for _, s := range flags {
		b, err := parseBinding(s)
		if err != nil {
			return nil, usageError{err}
		}
		if slices.ContainsFunc(out, func(o api.BindingRequest) bool { return *o.Key == *b.Key }) {
			return nil, usageError{fmt.Errorf("--budget %q is given more than once", *b.Key)}
		}
		out = append(out, b)
	}
	return out, nil
}

// isInteger reports whether s is a decimal integer with an optional sign.
func isInteger(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// printJobDetail prints one job as aligned "Field: value" lines.
func printJobDetail(f *Factory, j *api.Job) error {
	t := newTable(f.IO.Out, "ID:", j.ID)
	t.row("Queue:", j.Queue)
	t.row("Type:", j.Type)
	t.row("Status:", j.Status)
	t.row("Priority:", strconv.FormatUint(uint64(j.Priority), 10))
	t.row("Ready at:", formatTime(j.ReadyAt))
	t.row("Attempts:", strconv.FormatUint(uint64(j.Attempts), 10))
	t.row("Budgets:", formatBindings(j.Budgets))
	if j.UniqueKey != "" {
		t.row("Unique key:", j.UniqueKey+" (while "+j.UniqueWhile+")")
	}
	if b := j.Batch; b != nil {
		t.row("Batch:", b.Key)
		t.row("Batch when:", b.When)
		t.row("Batch fold:", b.Fold)
	}
	if j.RetryLimit != nil {
		t.row("Retry limit:", strconv.FormatUint(uint64(*j.RetryLimit), 10))
	}
	if b := j.Backoff; b != nil {
		t.row("Backoff:", fmt.Sprintf("exponent %g, base %s, jitter %s", b.Exponent, formatMs(int64(b.BaseMs)), formatMs(int64(b.JitterMs))))
	}
	if r := j.Retention; r != nil {
		t.row("Retention:", formatRetention(r))
	}
	for _, ts := range []struct {
		name string
		ms   uint64
	}{{"Dequeued at:", j.DequeuedAt}, {"Failed at:", j.FailedAt}, {"Completed at:", j.CompletedAt}, {"Purge at:", j.PurgeAt}} {
		if ts.ms != 0 {
			t.row(ts.name, formatTime(ts.ms))
		}
	}
	if len(j.Payload) > 0 {
		t.row("Payload:", string(j.Payload))
	}
	return t.flush()
}

// formatRetention writes a job's own retention: "completed 1h, dead 7d",
// the server's default where one is not set.
func formatRetention(r *api.Retention) string {
	part := func(name string, ms *uint64) string {
		if ms == nil {
			return name + " default"
		}
		return name + " " + formatMs(int64(*ms))
	}
	return part("completed", r.CompletedMs) + ", " + part("dead", r.DeadMs)
}

// jobTable prints jobs one a row.
func jobTable(f *Factory, jobs []api.Job) error {
	t := newTable(f.IO.Out, "ID", "QUEUE", "TYPE", "STATUS", "PRIORITY", "ATTEMPTS", "READY AT", "BUDGETS")
	for _, j := range jobs {
		t.row(j.ID, j.Queue, j.Type, j.Status, strconv.FormatUint(uint64(j.Priority), 10),
			strconv.FormatUint(uint64(j.Attempts), 10), formatTime(j.ReadyAt), formatBindings(j.Budgets))
	}
	return t.flush()
}
