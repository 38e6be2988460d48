package cmd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
)

// BulkFlags guard a change to every job a filter selects: the command
// counts them first and acts only with --yes.
type BulkFlags struct {
	JobFilterFlags
	Yes bool
	All bool
}

func (o *BulkFlags) register(c *cobra.Command, f *Factory, verb string) {
	fs := c.Flags()
	o.JobFilterFlags.register(fs, f, c)
	fs.BoolVarP(&o.Yes, "yes", "y", false, verb+" the jobs counted (without it, only count them)")
	fs.BoolVar(&o.All, "all", false, "select every job (needed when no filter is given)")
}

// filtered reports whether a filter flag was given.
func (o *BulkFlags) filtered(c *cobra.Command) bool {
	return anyChanged(c, jobFilterFlags...)
}

// bulkCount is the answer of a bulk command run without --yes.
type bulkCount struct {
	Count int64 `json:"count"`
}

// guard counts the jobs a bulk change would touch. It returns the filter to
// act with and true once --yes is given; without it, it prints the count
// (and how to go on) and returns false. countStatuses, when the filter
// names no status, narrows the count to the statuses the change touches.
func (o *BulkFlags) guard(c *cobra.Command, f *Factory, verb string, countStatuses []string) (api.JobQuery, bool, error) {
	if !o.filtered(c) && !o.All {
		return api.JobQuery{}, false, usageError{fmt.Errorf("give a filter (--status, --queue, --type, --budget, --filter) or --all")}
	}
	if o.filtered(c) && o.All {
		return api.JobQuery{}, false, usageError{fmt.Errorf("--all and filters cannot be used together")}
	}
	q, err := o.query()
	if err != nil {
		return q, false, err
	}
	if o.Yes {
		return q, true, nil
	}
	cl, err := f.Client()
	if err != nil {
		return q, false, err
	}
	counted := q
	if len(counted.Statuses) == 0 {
		counted.Statuses = countStatuses
	}
	n, err := cl.CountJobs(c.Context(), counted)
	if err != nil {
		return q, false, err
	}
	if f.JSON() {
		return q, false, writeJSON(f.IO.Out, bulkCount{Count: n})
	}
	_, err = fmt.Fprintf(f.IO.Out, "%s would be %s. Nothing was changed: run again with --yes to go ahead.\n",
		countOf(n, "job", "jobs"), verb)
	return q, false, err
}

// JobBulkOptions are the flags of `job bulk`.
type JobBulkOptions struct {
	File     string
	Queue    string
	Type     string
	Chunk    int
	Deadline deadlineFlags
}

// maxBulkLine is the longest line `job bulk` reads: the server's default
// body limit.
const maxBulkLine = 16 << 20

func newJobBulkCmd(f *Factory) *cobra.Command {
	o := &JobBulkOptions{}
	c := &cobra.Command{
		Use:   "bulk [--file F|-] [--queue Q] [--type T] [--start-by TIME | --start-within DURATION] [--chunk N]",
		Short: "Enqueue many jobs, one JSON object a line",
		Long: `Enqueue the jobs read from standard input (or --file), one JSON object a
line, and print their IDs in input order (-o json: the server's {"jobs":[…]}).

Each line is a job as POST /jobs takes it: "type", "queue", "payload" ({}
when absent), "priority", "ready_at", "budgets" ([{"key","cost"}]),
"unique_key" and "unique_while", "batch" ({"key","when","fold"}),
"retry_limit", "backoff", "retention", "start_by" or "start_within_ms".
--queue and --type fill in lines without them, and --start-by or
--start-within (as job enqueue takes them) lines without a deadline. An
unknown field is a mistake. Empty lines are skipped.

Every line is read and checked before anything is sent; then the jobs go in
POST /jobs/bulk requests of --chunk jobs, each all or nothing. A duplicate
of a unique job, or a job folded into a batch, prints the ID of the job
that stands for it.`,
		Example: `  seq 20 | jq -c '{queue: "demo", type: "sleep", payload: {n: .}}' | zizq job bulk
  zizq job bulk --queue emails --type send --file jobs.ndjson`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.Deadline.check(c); err != nil {
				return err
			}
			reqs, err := o.read(c)
			if err != nil {
				return err
			}
			cl, err := f.Client()
			if err != nil {
				return err
			}
			return o.send(c, f, cl, reqs)
		},
	}
	fs := c.Flags()
	fs.StringVar(&o.File, "file", "-", "read the jobs from this file, or - for standard input")
	fs.StringVarP(&o.Queue, "queue", "q", "", "queue of the lines that name none")
	fs.StringVarP(&o.Type, "type", "t", "", "type of the lines that name none")
	intRangeFlag(fs, &o.Chunk, "chunk", 1, 100000, 1000, "jobs per request")
	o.Deadline.register(fs, ", for the lines without one")
	_ = c.RegisterFlagCompletionFunc("queue", f.completeQueues)
	return c
}

// read reads and checks every line; a mistake is a usage error naming the
// line.
func (o *JobBulkOptions) read(c *cobra.Command) ([]api.EnqueueRequest, error) {
	in := c.InOrStdin()
	if o.File != "-" {
		file, err := os.Open(o.File)
		if err != nil {
			return nil, usageError{fmt.Errorf("read --file: %w", err)}
		}
		defer file.Close()
		in = file
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxBulkLine)
	var reqs []api.EnqueueRequest
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		r, err := o.request(line)
		if err != nil {
			return nil, usageError{fmt.Errorf("line %d: %w", n, err)}
		}
		if err := o.Deadline.apply(c, &r, true); err != nil {
			return nil, err
		}
		reqs = append(reqs, r)
	}
	if err := sc.Err(); err != nil {
		return nil, usageError{fmt.Errorf("read jobs: %w", err)}
	}
	return reqs, nil
}

func (o *JobBulkOptions) request(line []byte) (api.EnqueueRequest, error) {
	var r api.EnqueueRequest
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("not a job: %w", err)
	}
	if r.Queue == nil && o.Queue != "" {
		r.Queue = &o.Queue
	}
	if r.Type == nil && o.Type != "" {
		r.Type = &o.Type
	}
	switch {
	case r.Queue == nil:
		return r, errors.New(`no "queue" (or give --queue)`)
	case r.Type == nil:
		return r, errors.New(`no "type" (or give --type)`)
	case r.Payload == nil:
		r.Payload = api.Payload("{}")
	}
	return r, nil
}

// send enqueues the jobs chunk by chunk and prints them.
func (o *JobBulkOptions) send(c *cobra.Command, f *Factory, cl *client.Client, reqs []api.EnqueueRequest) error {
	all := make([]api.Job, 0, len(reqs))
	for start := 0; start < len(reqs); start += o.Chunk {
		end := min(start+o.Chunk, len(reqs))
		jobs, err := cl.EnqueueBulk(c.Context(), reqs[start:end])
		if err != nil {
			if start > 0 {
				fmt.Fprintf(f.IO.Err, "The first %d %s enqueued; from job %d on (non-empty lines, counted from 1), none was.\n",
					start, plural(start, "job was", "jobs were"), start+1)
			}
			return err
		}
		all = append(all, jobs...)
	}
	if f.JSON() {
		return writeJSON(f.IO.Out, api.BulkJobs{Jobs: all})
	}
	for _, j := range all {
		if _, err := fmt.Fprintln(f.IO.Out, j.ID); err != nil {
			return err
		}
	}
	return nil
}
