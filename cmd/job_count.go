package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/server/api"
)

func newJobCountCmd(f *Factory) *cobra.Command {
	o := &JobFilterFlags{}
	c := &cobra.Command{
		Use:   "count [--status S] [--queue Q] [--type T] [--budget KEY] [--filter JQ]",
		Short: "Count jobs",
		Example: `  zizq job count --status ready --queue emails
  zizq job count --filter '.user == "ann"'`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			q, err := o.query()
			if err != nil {
				return err
			}
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
	return c
}
