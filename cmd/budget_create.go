package cmd

import (
	"github.com/spf13/cobra"
	"github.com/zizq/zizq/client"
)

func newBudgetCreateCmd(f *Factory) *cobra.Command {
	b := &BudgetFlags{}
	c := &cobra.Command{
		Use:   "create KEY --allocation N --strategy while_in_flight|time_based|calendar [--duration D] [--burst N] [--reset CRON] [--timezone TZ] [--adaptive-…]",
		Short: "Create a budget (fails if it exists)",
		Example: `  zizq budget create image-workers --allocation 5 --strategy while_in_flight
  zizq budget create image-service --allocation 10000 --strategy time_based --duration 1h --burst 500
  zizq budget create openai-tpd --allocation 1000000 --strategy calendar --reset '0 0 * * *' --timezone Europe/Paris
  zizq budget create upstream-api --allocation 100 --strategy time_based --duration 1s --adaptive-decrease 0.5 --adaptive-recover 1m
  zizq budget create tenants --allocation 10 --strategy while_in_flight --per-key-allocation 2 --per-key-strategy while_in_flight \
      --key-weight acme=3 --key-allocation acme=5`,
		Args: cobra.ExactArgs(1),
		RunE: writeBudget(f, b, (*client.Client).CreateBudget),
	}
	b.register(c.Flags(), c)
	return c
}
