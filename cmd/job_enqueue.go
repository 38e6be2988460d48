package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
	"github.com/zizq/zizq/server/batchexpr"
)

// JobEnqueueOptions are the flags of `job enqueue`.
type JobEnqueueOptions struct {
	Queue       string
	Type        string
	Payload     string
	PayloadFile string
	Priority    uint16
	At          string
	In          time.Duration
	Budgets     []string
	UniqueKey   string
	UniqueWhile string
	BatchKey    string
	BatchWhen   string
	BatchFold   string
	Deadline    deadlineFlags
}

// uniqueScopes are the values of --unique-while.
var uniqueScopes = []string{api.UniqueWhileQueued, api.UniqueWhileActive, api.UniqueWhileExists}

func newJobEnqueueCmd(f *Factory) *cobra.Command {
	o := &JobEnqueueOptions{}
	c := &cobra.Command{
		Use:   "enqueue --queue Q --type T [--payload JSON | --payload-file F|-] [--priority N] [--at TIME | --in DURATION] [--start-by TIME | --start-within DURATION] [--budget KEY[:COST]]... [--unique-key K [--unique-while SCOPE] | --batch-key K --batch-when EXPR --batch-fold EXPR]",
		Short: "Enqueue a job",
		Long: `Enqueue a job and print its ID (-o json: the job as the server answers).

The payload is any JSON value ({} when none is given); --payload-file -
reads it from standard input. --at takes RFC 3339 (2026-01-02T15:04:05Z) or
Unix milliseconds; --in a duration from now. Without either the job is ready
at once. --budget binds the job to a budget with a cost (default 1); repeat
it for several budgets. Keys may contain ':', so KEY:COST is split on the
last ':' only when digits follow it.

--start-by (a time, as --at takes it) or --start-within (a duration the
server counts from the enqueue) is a deadline for waiting: a job that has
not been dispatched by then, parked on a budget, waiting for a worker or
scheduled, dies, with an error record that says what it waited for.

--unique-key makes the job unique: while another job with the same key is
in the scope --unique-while names (queued, the default: scheduled or
ready; active: also in flight; exists: until it is deleted or purged), no
job is created and the existing job's ID is printed instead, with a note
on standard error (-o json: the existing job, "duplicate": true).

--batch-key makes the job batched, with --batch-when and --batch-fold (jq
programs over $existing and $new, the pending job's payload and this one's):
while the pending job of the key is ready and --batch-when holds, no job
is created: the payloads fold into the pending job with --batch-fold, and
its ID is printed, with a note on standard error (-o json: that job,
"folded": true). A job is unique or batched, not both.`,
		Example: `  zizq job enqueue --queue images --type resize --payload '{"url":"https://…"}' \
    --budget image-workers --budget image-service:5
  echo '{"to":"a@b.c"}' | zizq job enqueue --queue emails --type send --payload-file - --in 10m
  zizq job enqueue -q reports -t nightly --unique-key report:2026-01-02 --unique-while exists
  zizq job enqueue -q push -t send --payload '{"ids":["a"]}' --batch-key push:tenant-1 \
    --batch-when '($existing.ids + $new.ids) | length <= 100' --batch-fold '$existing | .ids += $new.ids'`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			req, err := o.request(c, time.Now())
			if err != nil {
				return err
			}
			cl, err := f.Client()
			if err != nil {
				return err
			}
			j, err := cl.Enqueue(c.Context(), req)
			if err != nil {
				return missingBudget(c.Context(), cl, req, err)
			}
			if f.JSON() {
				return writeJSON(f.IO.Out, j)
			}
			if j.Duplicate != nil && *j.Duplicate {
				fmt.Fprintf(f.IO.Err, "Not enqueued: job %s (%s) holds unique key %q.\n", j.ID, j.Status, j.UniqueKey)
			}
			if j.Folded != nil && *j.Folded {
				fmt.Fprintf(f.IO.Err, "Folded into job %s, the pending job of batch %q.\n", j.ID, o.BatchKey)
			}
			_, err = fmt.Fprintln(f.IO.Out, j.ID)
			return err
		},
	}
	fs := c.Flags()
	nameFlag(fs, &o.Queue, "queue", "q", "queue", "queue of the job (required)")
	nameFlag(fs, &o.Type, "type", "t", "type", "type of the job (required)")
	fs.StringVar(&o.Payload, "payload", "", "payload as JSON")
	fs.StringVar(&o.PayloadFile, "payload-file", "", "read the payload from a file, or - for standard input")
	intRangeFlag(fs, &o.Priority, "priority", 0, math.MaxUint16, api.DefaultPriority, "priority: lower runs first")
	fs.StringVar(&o.At, "at", "", "when the job becomes ready: RFC 3339 or Unix milliseconds")
	durationFlag(fs, &o.In, "in", 0, "make the job ready after this long, e.g. 30s, 5m, 1d")
	o.Deadline.register(fs, "")
	fs.StringArrayVar(&o.Budgets, "budget", nil, "bind to a budget, KEY or KEY:COST (repeatable)")
	fs.StringVar(&o.UniqueKey, "unique-key", "", "do not enqueue while a job with this key is in the --unique-while scope")
	fs.StringVar(&o.UniqueWhile, "unique-while", "", "scope of --unique-key: queued (default), active or exists")
	fs.StringVar(&o.BatchKey, "batch-key", "", "fold into the pending job of this batch key while --batch-when holds")
	fs.StringVar(&o.BatchWhen, "batch-when", "", "jq program over $existing and $new: fold while it is true")
	fs.StringVar(&o.BatchFold, "batch-fold", "", "jq program over $existing and $new: the folded payload")
	_ = c.RegisterFlagCompletionFunc("queue", f.completeQueues)
	_ = c.RegisterFlagCompletionFunc("budget", f.completeBudgetKeys)
	_ = c.RegisterFlagCompletionFunc("unique-while", cobra.FixedCompletions(uniqueScopes, cobra.ShellCompDirectiveNoFileComp))
	return c
}

// request builds the enqueue request from the flags; every mistake is a
// usage error.
func (o *JobEnqueueOptions) request(c *cobra.Command, now time.Time) (api.EnqueueRequest, error) {
	if err := requireFlags(c, "queue", "type"); err != nil {
		return api.EnqueueRequest{}, err
	}
	for _, pair := range [][2]string{{"payload", "payload-file"}, {"at", "in"}, {"start-by", "start-within"}} {
		if err := exclusiveFlags(c, pair[0], pair[1]); err != nil {
			return api.EnqueueRequest{}, err
		}
	}
	req := api.EnqueueRequest{Queue: &o.Queue, Type: &o.Type}
	payload, err := o.payload(c.InOrStdin())
	if err != nil {
		return req, usageError{err}
	}
	req.Payload = payload
	if c.Flags().Changed("priority") {
		req.Priority = &o.Priority
	}
	switch {
	case c.Flags().Changed("at"):
		at, err := parseAt(o.At)
		if err != nil {
			return req, usageError{err}
		}
		req.ReadyAt = &at
	case c.Flags().Changed("in"):
		at, err := readyIn(now, o.In)
		if err != nil {
			return req, err
		}
		req.ReadyAt = &at
	}
	if err := o.Deadline.apply(c, &req, false); err != nil {
		return req, err
	}
	req.Budgets, err = parseBindings(o.Budgets)
	if err != nil {
		return req, err
	}
	if err := o.unique(c, &req); err != nil {
		return req, err
	}
	if err := o.batch(c, &req); err != nil {
		return req, err
	}
	return req, nil
}

// batchFlags are the flags of a batched job, all three or none.
var batchFlags = []string{"batch-key", "batch-when", "batch-fold"}

// batch sets the request's batch from the flags; the programs are
// compiled here, so that a mistake is a usage error.
func (o *JobEnqueueOptions) batch(c *cobra.Command, req *api.EnqueueRequest) error {
	if !anyChanged(c, batchFlags...) {
		return nil
	}
	if err := requireFlags(c, batchFlags...); err != nil {
		return usageError{fmt.Errorf("--batch-key, --batch-when and --batch-fold go together: %w", err)}
	}
	if err := exclusiveFlags(c, "unique-key", "batch-key"); err != nil {
		return err
	}
	if o.BatchKey == "" {
		return usageError{fmt.Errorf("--batch-key must not be empty")}
	}
	// The server's own compile, with $existing and $new declared: "when:
	// …" or "fold: …" names the program at fault.
	var be *batchexpr.Error
	if _, err := batchexpr.Compile(batchexpr.Config{When: o.BatchWhen, Fold: o.BatchFold}); errors.As(err, &be) {
		return usageError{fmt.Errorf("invalid --batch-%s", be.Msg)}
	} else if err != nil {
		return usageError{fmt.Errorf("invalid batch programs: %w", err)}
	}
	req.Batch = &api.BatchRequest{Key: &o.BatchKey, When: &o.BatchWhen, Fold: &o.BatchFold}
	return nil
}

// unique sets the request's unique key and scope from the flags.
func (o *JobEnqueueOptions) unique(c *cobra.Command, req *api.EnqueueRequest) error {
	hasKey, hasWhile := c.Flags().Changed("unique-key"), c.Flags().Changed("unique-while")
	switch {
	case hasWhile && !hasKey:
		return usageError{fmt.Errorf("--unique-while requires --unique-key")}
	case hasKey && o.UniqueKey == "":
		return usageError{fmt.Errorf("--unique-key must not be empty")}
	case hasWhile && !slices.Contains(uniqueScopes, o.UniqueWhile):
		return usageError{fmt.Errorf("invalid --unique-while %q: use queued, active or exists", o.UniqueWhile)}
	}
	if hasKey {
		req.UniqueKey = &o.UniqueKey
	}
	if hasWhile {
		req.UniqueWhile = &o.UniqueWhile
	}
	return nil
}

// missingBudget tells a refused enqueue whose --budget KEY does not exist
// (the server's 422) as a not-found, as `budget get KEY` is: it asks for
// the budgets the job names, so the server's message is never parsed.
func missingBudget(ctx context.Context, cl *client.Client, req api.EnqueueRequest, err error) error {
	if client.StatusOf(err) != http.StatusUnprocessableEntity {
		return err
	}
	for _, b := range req.Budgets {
		if _, gerr := cl.GetBudget(ctx, *b.Key, false); client.IsNotFound(gerr) {
			return notFoundError{err}
		}
	}
	return err
}

func (o *JobEnqueueOptions) payload(stdin io.Reader) (api.Payload, error) {
	var data []byte
	switch {
	case o.PayloadFile == "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("read payload from standard input: %w", err)
		}
		data = b
	case o.PayloadFile != "":
		b, err := os.ReadFile(o.PayloadFile)
		if err != nil {
			return nil, fmt.Errorf("read --payload-file: %w", err)
		}
		data = b
	case o.Payload != "":
		data = []byte(o.Payload)
	default:
		return api.Payload("{}"), nil
	}
	p, err := api.CanonicalJSON(data)
	if err != nil {
		return nil, fmt.Errorf("payload is not valid JSON: %w", err)
	}
	return api.Payload(p), nil
}

// parseAt reads --at: RFC 3339 or Unix milliseconds.
func parseAt(s string) (uint64, error) { return parseTimestamp("at", s) }

// parseTimestamp reads the value of the time flag --name: RFC 3339 or Unix
// milliseconds.
func parseTimestamp(name, s string) (uint64, error) {
	s = strings.TrimSpace(s)
	if ms, err := strconv.ParseUint(s, 10, 64); err == nil {
		return checkTimestamp(name, ms)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("invalid --%s %q: use RFC 3339 (2026-01-02T15:04:05Z) or Unix milliseconds", name, s)
	}
	if t.UnixMilli() < 0 {
		return 0, fmt.Errorf("invalid --%s %q: before 1970", name, s)
	}
	return checkTimestamp(name, uint64(t.UnixMilli()))
}

// checkTimestamp refuses a time of the flag --name past the latest the
// server takes.
func checkTimestamp(name string, ms uint64) (uint64, error) {
	if ms > api.MaxTimestampMs {
		return 0, fmt.Errorf("invalid --%s: %s is past the latest time the server takes (%s)",
			name, formatTime(ms), formatTime(api.MaxTimestampMs))
	}
	return ms, nil
}

// readyIn is the ready time of --in d from now, a usage error past the
// latest time the server takes.
func readyIn(now time.Time, d time.Duration) (uint64, error) {
	at := now.UnixMilli() + d.Milliseconds() // no overflow: d is at most about 292 years
	ms, err := checkTimestamp("in", uint64(at))
	if err != nil {
		return 0, usageError{err}
	}
	return ms, nil
}
