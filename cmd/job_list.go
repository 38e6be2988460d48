package cmd

import (
	"fmt"
	"math"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
)

// JobListOptions are the flags of `job list`.
type JobListOptions struct {
	JobFilterFlags
	Parked bool
	Limit  int
	All    bool
	Order  string
	From   string
}

func newJobListCmd(f *Factory) *cobra.Command {
	o := &JobListOptions{}
	c := &cobra.Command{
		Use:   "list [--status S] [--queue Q] [--type T] [--budget KEY] [--filter JQ] [--parked] [--limit N] [--all]",
		Short: "List jobs",
		Long: `List jobs in ID order (oldest first), one page at a time: --limit jobs, 50
by default, at most 2000. -o json prints the server's page object, whose
"pages.next" links the next page (or pass its last ID to --from).

--all follows the pages and prints every job (-o json: one {"jobs":[…]});
--limit then caps the total.

--parked lists only the jobs parked now: ready, in a queue some worker
serves, but held back because a budget cannot pay them yet. Their status
stays ready; zizq job why ID says which budget holds one back.`,
		Example: `  zizq job list --status ready --budget image-service
  zizq job list --parked --budget image-workers
  zizq job list --all -o json | jq '.jobs | length'`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			q, err := o.query()
			if err != nil {
				return err
			}
			if o.Order != "" && o.Order != api.OrderAsc && o.Order != api.OrderDesc {
				return usageError{fmt.Errorf("invalid --order %q: use asc or desc", o.Order)}
			}
			if o.From != "" && !api.ValidJobID(o.From) {
				return usageError{fmt.Errorf("invalid --from %q: a job ID is %d characters of 0-9 and a-z", o.From, api.JobIDLen)}
			}
			if !o.All && o.Limit > api.MaxLimit {
				return usageError{fmt.Errorf("--limit must be 1..%d, got %d (--all lists more)", api.MaxLimit, o.Limit)}
			}
			q.Parked, q.Order, q.From, q.Limit = o.Parked, o.Order, o.From, o.Limit
			cl, err := f.Client()
			if err != nil {
				return err
			}
			if o.All {
				return listAll(c, f, cl, q)
			}
			page, err := cl.ListJobs(c.Context(), q)
			if err != nil {
				return err
			}
			if f.JSON() {
				return writeJSON(f.IO.Out, page)
			}
			if err := jobRows(f, page.Jobs); err != nil {
				return err
			}
			if page.Pages.Next != nil && len(page.Jobs) > 0 {
				fmt.Fprintf(f.IO.Err, "More jobs: use --all, or --from %s for the next page.\n", page.Jobs[len(page.Jobs)-1].ID)
			}
			return nil
		},
	}
	fs := c.Flags()
	o.register(fs, f, c)
	registerParked(fs, &o.Parked)
	intRangeFlag(fs, &o.Limit, "limit", 1, math.MaxInt, 0, "jobs per page (default 50, at most 2000); with --all, most jobs in total")
	fs.BoolVar(&o.All, "all", false, "follow the pages and print every job")
	fs.StringVar(&o.Order, "order", "", "asc (oldest first, the default) or desc")
	fs.StringVar(&o.From, "from", "", "start after this job ID")
	_ = c.RegisterFlagCompletionFunc("order", cobra.FixedCompletions([]string{api.OrderAsc, api.OrderDesc}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

// listAll follows the pages; --limit caps the total, so pages are never
// larger than what is still wanted.
func listAll(c *cobra.Command, f *Factory, cl *client.Client, q api.JobQuery) error {
	total := q.Limit
	q.Limit = api.MaxLimit
	if total > 0 && total < q.Limit {
		q.Limit = total
	}
	jobs := []api.Job{}
	for j, err := range cl.AllJobs(c.Context(), q) {
		if err != nil {
			return err
		}
		jobs = append(jobs, j)
		if total > 0 && len(jobs) == total {
			break
		}
	}
	if f.JSON() {
		return writeJSON(f.IO.Out, struct {
			Jobs []api.Job `json:"jobs"`
		}{jobs})
	}
	return jobRows(f, jobs)
}

// jobRows prints the jobs of a listing; none prints a note on standard
// error instead of a bare header, as kubectl does, so standard output
// stays empty.
func jobRows(f *Factory, jobs []api.Job) error {
	if len(jobs) == 0 {
		_, err := fmt.Fprintln(f.IO.Err, "No jobs found.")
		return err
	}
	return jobTable(f, jobs)
}
