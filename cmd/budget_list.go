package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/api"
)

func newBudgetListCmd(f *Factory) *cobra.Command {
	var parent string
	c := &cobra.Command{
		Use:   "list [--parent FAMILY]",
		Short: "List budgets with their live state",
		Long: `List every budget, sorted by key, with its live figures: tokens available
now, jobs in flight, jobs parked in its line, and when the next token is due
(time_based budgets whose line waits for tokens). Families show their
template (PER KEY) and how many sub-budgets are live; --parent FAMILY lists
the family's live sub-budgets instead. Calendar budgets show what they used
of their allocation this period and when it resets (PERIOD); a budget whose
jobs cost more than their estimates shows what it owes and when it will have
repaid it (DEBT). An adaptive budget shows how it backs off and, after a
refusal, its effective rate and when its retry-after ends (BACK-OFF).

-o json prints the server's {"budgets":[…]} object, live "state" included.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cl, err := f.Client()
			if err != nil {
				return err
			}
			var budgets []api.Budget
			if c.Flags().Changed("parent") {
				if err := checkBudgetKey(parent); err != nil {
					return usageError{fmt.Errorf("--parent: %w", err)}
				}
				budgets, err = cl.SubBudgets(c.Context(), parent, true)
			} else {
				budgets, err = cl.ListBudgets(c.Context(), true)
			}
			if err != nil {
				return err
			}
			if f.JSON() {
				if budgets == nil {
					budgets = []api.Budget{}
				}
				return writeJSON(f.IO.Out, api.BudgetList{Budgets: budgets})
			}
			if len(budgets) == 0 {
				// As kubectl does: standard output stays empty.
				_, err := fmt.Fprintln(f.IO.Err, "No budgets found.")
				return err
			}
			return budgetTable(f, budgets)
		},
	}
	c.Flags().StringVar(&parent, "parent", "", "list the live sub-budgets of this family")
	_ = c.RegisterFlagCompletionFunc("parent", f.completeBudgetArg)
	return c
}
