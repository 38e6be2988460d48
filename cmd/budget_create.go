package cmd

import "github.com/spf13/cobra"

func newBudgetCreateCmd(f *Factory) *cobra.Command {
	b := &BudgetFlags{}
	c := &cobra.Command{
		Use:   "create KEY --allocation N --strategy while_in_flight|time_based [--duration D] [--burst N]",
		Short: "Create a budget (fails if it exists)",
		Example: `  zizq budget create image-workers --allocation 5 --strategy while_in_flight
  zizq budget create image-service --allocation 10000 --strategy time_based --duration 1h --burst 500`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			in, err := b.input(c)
			if err != nil {
				return err
			}
			cl, err := f.Client()
			if err != nil {
				return err
			}
			out, err := cl.CreateBudget(c.Context(), args[0], in)
			if err != nil {
				return err
			}
			return printBudget(f, out)
		},
	}
	b.register(c.Flags(), c)
	return c
}
