package cmd

import "github.com/spf13/cobra"

func newBudgetResumeCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "resume KEY",
		Short: "Resume a paused budget at once",
		Long: `Resume a paused budget at once, whether or not its pause had an end; its
parked jobs are dispatched as it can pay for them. It prints the budget.`,
		Example:           "  zizq budget resume upstream-api",
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
			b, err := cl.ResumeBudget(c.Context(), args[0])
			if err != nil {
				return err
			}
			return printBudget(f, b)
		},
	}
}
