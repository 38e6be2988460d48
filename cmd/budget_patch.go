package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/api"
)

// budgetPatchFlags are the flags of `budget patch` that change something.
var budgetPatchFlags = []string{"allocation", "strategy", "duration", "burst", "no-burst"}

func newBudgetPatchCmd(f *Factory) *cobra.Command {
	b := &BudgetFlags{}
	c := &cobra.Command{
		Use:   "patch KEY [--allocation N] [--strategy S] [--duration D] [--burst N | --no-burst]",
		Short: "Change some settings of a budget",
		Long: `Change only the settings given as flags; the others are kept. --no-burst
removes the burst, so the budget holds at most --allocation tokens. A
--strategy other than the budget's replaces its strategy whole, so give
--duration with time_based.`,
		Example:           `  zizq budget patch image-service --allocation 20000 --no-burst`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: f.completeBudgetArg,
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkBudgetKey(args[0]); err != nil {
				return err
			}
			if !anyChanged(c, budgetPatchFlags...) {
				return usageError{fmt.Errorf("nothing to change: give at least one of --%s", joinFlags(budgetPatchFlags))}
			}
			if err := exclusiveFlags(c, "burst", "no-burst"); err != nil {
				return err
			}
			if err := b.checkDuration(c); err != nil {
				return err
			}
			var p api.BudgetPatch
			var st api.StrategyPatch
			fl := c.Flags()
			if fl.Changed("allocation") {
				p.Allocation = &b.Allocation
			}
			if fl.Changed("strategy") {
				if err := b.checkStrategy(); err != nil {
					return err
				}
				st.Type = &b.Strategy
			}
			if fl.Changed("duration") {
				st.DurationMs = api.Ptr(b.Duration.Milliseconds())
			}
			switch {
			case b.NoBurst:
				st.Burst = api.Null[int64]()
			case fl.Changed("burst"):
				st.Burst = api.Set(b.Burst)
			}
			if st != (api.StrategyPatch{}) {
				p.Strategy = &st
			}
			cl, err := f.Client()
			if err != nil {
				return err
			}
			out, err := cl.PatchBudget(c.Context(), args[0], p)
			if err != nil {
				return err
			}
			return printBudget(f, out)
		},
	}
	b.register(c.Flags(), c)
	c.Flags().BoolVar(&b.NoBurst, "no-burst", false, "remove the burst: capacity falls back to the allocation")
	return c
}
