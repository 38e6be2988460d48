package cmd

import "github.com/spf13/cobra"

func newBudgetPutCmd(f *Factory) *cobra.Command {
	b := &BudgetFlags{}
	c := &cobra.Command{
		Use:   "put KEY --allocation N --strategy while_in_flight|time_based [--duration D] [--burst N]",
		Short: "Create a budget or replace its settings",
		Long: `Create a budget, or replace every setting of an existing one (its
creation time is kept). Jobs bound to it keep their place; the new limits
apply at once.`,
		Example:           `  zizq budget put image-service --allocation 10000 --strategy time_based --duration 1h`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: f.completeBudgetArg,
		RunE: func(c *cobra.Command, args []string) error {
			in, err := b.input(c)
			if err != nil {
				return err
			}
			cl, err := f.Client()
			if err != nil {
				return err
			}
			out, err := cl.PutBudget(c.Context(), args[0], in)
			if err != nil {
				return err
			}
			return printBudget(f, out)
		},
	}
	b.register(c.Flags(), c)
	return c
}
