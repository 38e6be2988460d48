package cmd

import "github.com/spf13/cobra"

func newBudgetGetCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:               "get KEY",
		Short:             "Show a budget with its live state",
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
			b, err := cl.GetBudget(c.Context(), args[0], true)
			if err != nil {
				return err
			}
			return printBudget(f, b)
		},
	}
}
