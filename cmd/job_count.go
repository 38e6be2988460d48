package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/api"
)

// JobCountOptions are the flags of `job count`.
type JobCountOptions struct {
	JobFilterFlags
	Parked bool
}

func newJobCountCmd(f *Factory) *cobra.Command {
	o := &JobCountOptions{}
	c := &cobra.Command{
		Use:   "count [--status S] [--queue Q] [--type T] [--budget KEY] [--filter JQ] [--parked]",
		Short: "Count jobs",
		Long: `Count the jobs the filters select. --parked counts only the jobs parked now:
ready, in a queue some worker serves, but held back because a budget cannot
pay them yet.`,
		Example: `  zizq job count --status ready --queue emails
  zizq job count --parked --queue images
  zizq job count --filter '.user == "ann"'`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			q, err := o.query()
			if err != nil {
				return err
			}
			q.Parked = o.Parked
			cl, err := f.Client()
			if err != nil {
				return err
			}
			n, err := cl.CountJobs(c.Context(), q)
			if err != nil {
				return err
			}
			if f.JSON() {
				return writeJSON(f.IO.Out, api.Count{Count: n})
			}
			_, err = fmt.Fprintln(f.IO.Out, n)
			return err
		},
	}
	o.register(c.Flags(), f, c)
	registerParked(c.Flags(), &o.Parked)
	return c
}
