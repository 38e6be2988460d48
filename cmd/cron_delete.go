package cmd

import "github.com/spf13/cobra"

func newCronDeleteCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "delete GROUP",
		Short: "Delete a cron group and its entries",
		Long: `Delete a cron group and every entry of it; jobs it enqueued stay.

It prints the group deleted; -o json prints {"deleted":1}, the shape of
every delete.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: f.completeCronGroupArg,
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkCronName("group", args[0]); err != nil {
				return err
			}
			cl, err := f.Client()
			if err != nil {
				return err
			}
			if err := cl.DeleteCronGroup(c.Context(), args[0]); err != nil {
				return err
			}
			return printDeleted(f, 1, "cron group "+quoteName(args[0]))
		},
	}
}
