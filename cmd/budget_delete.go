package cmd

import "github.com/spf13/cobra"

func newBudgetDeleteCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "delete KEY",
		Short: "Delete a budget",
		Long: `Delete a budget. A budget that unfinished jobs are bound to cannot be
deleted (exit code 1): delete those jobs or wait for them to finish.

It prints the budget deleted; -o json prints {"deleted":1}, the shape of
every delete.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: f.completeBudgetArg,
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkBudgetKey(args[0]); err != nil {
				return err
			}
			cl, err := f.Client()
			if err != nil {
				return err
			}
			if err := cl.DeleteBudget(c.Context(), args[0]); err != nil {
				return err
			}
			return printDeleted(f, 1, "budget "+quoteName(args[0]))
		},
	}
}
