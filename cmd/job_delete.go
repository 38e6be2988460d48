package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newJobDeleteCmd(f *Factory) *cobra.Command {
	o := &BulkFlags{}
	c := &cobra.Command{
		Use:   "delete [ID] [--status S] [--queue Q] [--type T] [--budget KEY] [--filter JQ] [--all] [--yes]",
		Short: "Delete a job, or every job a filter selects",
		Long: `Delete a job, whatever its status. A job in flight is dropped: its worker's ack will fail.

Without an ID it deletes every job that the filters select (--status,
--queue, --type, --budget, --filter, or --all for every job): it first
prints how many that is and deletes nothing; run it again with --yes to
delete them.

It prints what it deleted; -o json prints {"deleted":N}, the number of
jobs deleted (1 for an ID): the shape of every delete.`,
		Example: `  zizq job delete 03hbspbwnw9m04mdludj16jsc
  zizq job delete --status dead --queue emails
  zizq job delete --status dead --queue emails --yes`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: f.completeJobIDs(),
		RunE: func(c *cobra.Command, args []string) error {
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
				if err := cl.DeleteJob(c.Context(), args[0]); err != nil {
					return err
				}
				return printDeleted(f, 1, "job "+args[0])
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
			return printDeleted(f, n, countOf(n, "job", "jobs"))
		},
	}
	o.register(c, f, "delete")
	return c
}
