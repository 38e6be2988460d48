package cmd

import (
	"fmt"
	"math"
	"time"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/api"
)

// JobPatchOptions are the flags of `job patch`: the changes, and the
// filter of the bulk form.
type JobPatchOptions struct {
	BulkFlags
	ToQueue            string
	Priority           uint16
	At                 string
	In                 time.Duration
	Now                bool
	RetryLimit         uint32
	DefaultRetryLimit  bool
	BackoffBase        time.Duration
	BackoffExponent    float32
	BackoffJitter      time.Duration
	DefaultBackoff     bool
	CompletedRetention time.Duration
	DeadRetention      time.Duration
	DefaultRetention   bool
}

// patchFlags are the flags that change something.
var patchFlags = []string{"to-queue", "priority", "at", "in", "now", "retry-limit", "default-retry-limit",
	"backoff-base", "backoff-exponent", "backoff-jitter", "default-backoff",
	"completed-retention", "dead-retention", "default-retention"}

func newJobPatchCmd(f *Factory) *cobra.Command {
	o := &JobPatchOptions{}
	c := &cobra.Command{
		Use:   "patch [ID] [--to-queue Q] [--priority N] [--at TIME | --in D | --now] [--retry-limit N] [--backoff-…] [--…-retention D] [--status S] [--queue Q] [--type T] [--budget KEY] [--filter JQ] [--all] [--yes]",
		Short: "Change a job, or every job a filter selects",
		Long: `Change the settings of a live job (scheduled, ready or in flight) given by
ID; only the settings given as flags change. Payload, type and budgets never
change; an in-flight job takes the new settings without being moved.

Without an ID it changes every live job that the filters select (--status,
--queue, --type, --budget, --filter, or --all for every job): it first
prints how many that is and changes nothing; run it again with --yes to
change them. Completed and dead jobs are skipped.

  --to-queue                         move the job to another queue
  --at, --in, --now                  when it becomes ready (--now: at once)
  --retry-limit, --default-retry-limit   failures allowed before it dies
  --backoff-base, --backoff-exponent, --backoff-jitter   its retry delay (all
                                     three together), or --default-backoff
  --completed-retention, --dead-retention   how long it is kept once
                                     finished, or --default-retention`,
		Example: `  zizq job patch 03hbspbwnw9m04mdludj16jsc --priority 1 --now
  zizq job patch --queue emails --status scheduled --to-queue emails-slow
  zizq job patch --queue emails --status scheduled --to-queue emails-slow --yes`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: f.completeJobIDs(api.StatusScheduled, api.StatusReady, api.StatusInFlight),
		RunE: func(c *cobra.Command, args []string) error {
			p, err := o.patch(c, time.Now())
			if err != nil {
				return err
			}
			if len(args) == 1 {
				if o.filtered(c) || o.All || o.Yes {
					return usageError{fmt.Errorf("an ID and filters (--status, --queue, --type, --budget, --filter, --all, --yes) cannot be used together")}
				}
				if err := checkJobID(args[0]); err != nil {
					return err
				}
				cl, err := f.Client()
				if err != nil {
					return err
				}
				j, err := cl.PatchJob(c.Context(), args[0], p)
				if err != nil {
					return err
				}
				if f.JSON() {
					return writeJSON(f.IO.Out, j)
				}
				return printJobDetail(f, j)
			}
			q, ok, err := o.guard(c, f, "patched", []string{api.StatusScheduled, api.StatusReady, api.StatusInFlight})
			if !ok || err != nil {
				return err
			}
			cl, err := f.Client()
			if err != nil {
				return err
			}
			n, err := cl.PatchJobs(c.Context(), q, p)
			if err != nil {
				return err
			}
			if f.JSON() {
				return writeJSON(f.IO.Out, api.Patched{Patched: n})
			}
			_, err = fmt.Fprintf(f.IO.Out, "Patched %s.\n", countOf(n, "job", "jobs"))
			return err
		},
	}
	o.BulkFlags.register(c, f, "patch")
	fs := c.Flags()
	nameFlag(fs, &o.ToQueue, "to-queue", "", "queue", "move the job to this queue")
	intRangeFlag(fs, &o.Priority, "priority", 0, math.MaxUint16, 0, "priority: lower runs first")
	fs.StringVar(&o.At, "at", "", "make the job ready at this time: RFC 3339 or Unix milliseconds")
	durationFlag(fs, &o.In, "in", 0, "make the job ready after this long")
	fs.BoolVar(&o.Now, "now", false, "make a scheduled job ready at once")
	intRangeFlag(fs, &o.RetryLimit, "retry-limit", 0, math.MaxUint32, 0, "failures the job may have before it dies")
	fs.BoolVar(&o.DefaultRetryLimit, "default-retry-limit", false, "drop the job's retry limit: the server's default applies")
	durationFlag(fs, &o.BackoffBase, "backoff-base", 0, "base delay of the job's retries")
	fs.Float32Var(&o.BackoffExponent, "backoff-exponent", 0, "exponent of the job's retry delay")
	durationFlag(fs, &o.BackoffJitter, "backoff-jitter", 0, "random jitter per attempt added to the job's retry delay")
	fs.BoolVar(&o.DefaultBackoff, "default-backoff", false, "drop the job's backoff: the server's default applies")
	durationFlag(fs, &o.CompletedRetention, "completed-retention", 0, "how long the job is kept once completed")
	durationFlag(fs, &o.DeadRetention, "dead-retention", 0, "how long the job is kept once dead")
	fs.BoolVar(&o.DefaultRetention, "default-retention", false, "drop the job's retention: the server's defaults apply")
	_ = c.RegisterFlagCompletionFunc("to-queue", f.completeQueues)
	return c
}

// patch builds the merge patch from the flags; every mistake is a usage
// error.
func (o *JobPatchOptions) patch(c *cobra.Command, now time.Time) (api.JobPatch, error) {
	var p api.JobPatch
	fl := c.Flags()
	if !anyChanged(c, patchFlags...) {
		return p, usageError{fmt.Errorf("nothing to change: give at least one of --%s", joinFlags(patchFlags))}
	}
	for _, group := range [][]string{{"at", "in", "now"}, {"retry-limit", "default-retry-limit"},
		{"backoff-base", "default-backoff"}, {"backoff-exponent", "default-backoff"}, {"backoff-jitter", "default-backoff"},
		{"completed-retention", "default-retention"}, {"dead-retention", "default-retention"}} {
		if err := exclusiveFlags(c, group...); err != nil {
			return p, err
		}
	}
	if fl.Changed("to-queue") {
		p.Queue = &o.ToQueue
	}
	if fl.Changed("priority") {
		p.Priority = &o.Priority
	}
	switch {
	case fl.Changed("at"):
		at, err := parseAt(o.At)
		if err != nil {
			return p, usageError{err}
		}
		p.ReadyAt = api.Set(at)
	case fl.Changed("in"):
		at, err := readyIn(now, o.In)
		if err != nil {
			return p, err
		}
		p.ReadyAt = api.Set(at)
	case o.Now:
		p.ReadyAt = api.Null[uint64]()
	}
	switch {
	case fl.Changed("retry-limit"):
		p.RetryLimit = api.Set(o.RetryLimit)
	case o.DefaultRetryLimit:
		p.RetryLimit = api.Null[uint32]()
	}
	backoff := 0
	for _, n := range []string{"backoff-base", "backoff-exponent", "backoff-jitter"} {
		if fl.Changed(n) {
			backoff++
		}
	}
	if e := float64(o.BackoffExponent); fl.Changed("backoff-exponent") && (math.IsNaN(e) || math.IsInf(e, 0) || e < 0) {
		return p, usageError{fmt.Errorf("--backoff-exponent must be a finite number, at least 0")}
	}
	switch {
	case backoff == 3:
		p.Backoff = api.Set(api.Backoff{Exponent: o.BackoffExponent, BaseMs: uint32(o.BackoffBase.Milliseconds()), JitterMs: uint32(o.BackoffJitter.Milliseconds())})
	case backoff > 0:
		return p, usageError{fmt.Errorf("--backoff-base, --backoff-exponent and --backoff-jitter go together")}
	case o.DefaultBackoff:
		p.Backoff = api.Null[api.Backoff]()
	}
	switch {
	case o.DefaultRetention:
		p.Retention = api.Null[api.RetentionPatch]()
	case fl.Changed("completed-retention") || fl.Changed("dead-retention"):
		var r api.RetentionPatch
		if fl.Changed("completed-retention") {
			r.CompletedMs = api.Set(uint64(o.CompletedRetention.Milliseconds()))
		}
		if fl.Changed("dead-retention") {
			r.DeadMs = api.Set(uint64(o.DeadRetention.Milliseconds()))
		}
		p.Retention = api.Set(r)
	}
	return p, nil
}

// anyChanged reports whether one of the flags is given.
func anyChanged(c *cobra.Command, names ...string) bool {
	for _, n := range names {
		if c.Flags().Changed(n) {
			return true
		}
	}
	return false
}

func joinFlags(names []string) string {
	out := names[0]
	for _, n := range names[1:] {
		out += ", --" + n
	}
	return out
}
