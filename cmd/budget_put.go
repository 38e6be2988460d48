package cmd

import (
	"github.com/spf13/cobra"
	"github.com/zizq/zizq/client"
)

func newBudgetPutCmd(f *Factory) *cobra.Command {
	b := &BudgetFlags{}
	c := &cobra.Command{
		Use:   "put KEY --allocation N --strategy while_in_flight|time_based|calendar [--duration D] [--burst N] [--reset CRON] [--timezone TZ] [--adaptive-…]",
		Short: "Create a budget or replace its settings",
		Long: `Create a budget, or replace every setting of an existing one (its
creation time is kept). Jobs bound to it keep their place; the new limits
apply at once. A family's --key-weight and --key-allocation settings are
replaced too: those not given are gone, and without --adaptive… flags it
no longer backs off.`,
		Example:           `  zizq budget put image-service --allocation 10000 --strategy time_based --duration 1h`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: f.completeBudgetArg,
		RunE:              writeBudget(f, b, (*client.Client).PutBudget),
	}
	b.register(c.Flags(), c)
	return c
}
