package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/api"
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
