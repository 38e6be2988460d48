package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/server/api"
)

func newJobDeleteCmd(f *Factory) *cobra.Command {
	o := &BulkFlags{}
	c := &cobra.Command{
		Use:   "delete [ID] [--status S] [--queue Q] [--type T] [--budget KEY] [--all] [--yes]",
		Short: "Delete a job, or every job a filter selects",
		Long: `Delete a job, whatever its status. A job in flight is dropped: its worker's ack will fail.

Without an ID it deletes every job that the filters select (--status,
--queue, --type, --budget, or --all for every job): it first prints how many
that is and deletes nothing; run it again with --yes to delete them.`,
		Example: `  zizq job delete 03hbspbwnw9m04mdludj16jsc
  zizq job delete --status dead --queue emails
  zizq job delete --status dead --queue emails --yes`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: f.completeJobIDs(),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				if o.filtered(c) || o.All || o.Yes {
					return usageError{fmt.Errorf("an ID and filters (--status, --queue, --type, --budget, --all, --yes) cannot be used together")}
				}
				if err := checkJobID(args[0]); err != nil {
					return err
				}
				cl, err := f.Client()
				if err != nil {
					return err
				}
				return cl.DeleteJob(c.Context(), args[0])
			}
			q, ok, err := o.guard(c, f, "deleted", nil)
			if !ok || err != nil {
				return err
			}
			cl, err := f.Client()
			if err != nil {
				return err
			}
			n, err := cl.DeleteJobs(c.Context(), q)
			if err != nil {
				return err
			}
			if f.JSON() {
				return writeJSON(f.IO.Out, api.Deleted{Deleted: n})
			}
			_, err = fmt.Fprintf(f.IO.Out, "Deleted %d %s.\n", n, plural(int(n), "job", "jobs"))
			return err
		},
	}
	o.register(c, f, "delete")
	return c
}
