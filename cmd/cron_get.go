package cmd

import "github.com/spf13/cobra"

func newCronGetCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "get GROUP",
		Short: "Show a cron group and its entries",
		Long: `Show a cron group and each of its entries: expression, timezone, pause
state, next and last run, and the queue and type of the job it enqueues.

-o json prints the server's group object, job templates included.`,
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
			g, err := cl.GetCronGroup(c.Context(), args[0])
			if err != nil {
				return err
			}
			return printCronGroup(f, g)
		},
	}
}
