package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/api"
)

// budgetPatchFlags are the flags of `budget patch` that change something.
var budgetPatchFlags = []string{"allocation", "strategy", "duration", "burst", "no-burst", "reset", "timezone",
	"per-key-allocation", "per-key-strategy", "per-key-duration", "per-key-burst", "no-per-key-burst", "no-per-key",
	"adaptive", "adaptive-decrease", "adaptive-recover", "adaptive-floor", "no-adaptive",
	"key-weight", "key-allocation", "remove-key", "no-keys"}

func newBudgetPatchCmd(f *Factory) *cobra.Command {
	b := &BudgetFlags{}
	var noPerKey, noAdaptive bool
	c := &cobra.Command{
		Use:   "patch KEY [--allocation N] [--strategy S] [--duration D] [--burst N | --no-burst] [--reset CRON] [--timezone TZ] [--per-key-… | --no-per-key] [--key-weight SUB=N] [--key-allocation SUB=N] [--remove-key SUB | --no-keys] [--adaptive-… | --no-adaptive]",
		Short: "Change some settings of a budget",
		Long: `Change only the settings given as flags; the others are kept. --no-burst
removes the burst, so the budget holds at most --allocation tokens. A
--strategy other than the budget's replaces its strategy whole, so give
--duration with time_based and --reset with calendar. --reset and
--timezone move a calendar budget's resets; --timezone '' reads --reset in
UTC.

The --per-key-… flags change a family's template the same way (its
strategy is while_in_flight or time_based); on a plain budget they make it
a family, and must then include --per-key-allocation and
--per-key-strategy. --no-per-key makes a family a plain budget again.

--key-weight SUB=N and --key-allocation SUB=N set a sub-key's weight and
allocation, keeping its other setting and the other sub-keys'; SUB= (no
value) removes that one setting. --remove-key SUB removes both of SUB's,
--no-keys every sub-key's: back to weight 1 and the template's
allocation.

The --adaptive-… flags change the budget's back-off field by field; on a
budget that has none they make it adaptive, with the defaults for the
fields not given (--adaptive alone: all of them). --no-adaptive removes
the back-off: the budget pays its configured rate again at once.`,
		Example: `  zizq budget patch image-service --allocation 20000 --no-burst
  zizq budget patch tenants --per-key-allocation 5
  zizq budget patch tenants --key-weight acme=3 --key-allocation globex= --remove-key initech
  zizq budget patch openai-tpd --strategy calendar --reset '0 0 * * *' --timezone Europe/Paris
  zizq budget patch upstream-api --adaptive-floor 0.2
  zizq budget patch upstream-api --no-adaptive`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: f.completeBudgetArg,
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkBudgetKey(args[0]); err != nil {
				return err
			}
			if !anyChanged(c, budgetPatchFlags...) {
				return usageError{fmt.Errorf("nothing to change: give at least one of --%s", joinFlags(budgetPatchFlags))}
			}
			p, err := b.patch(c, noPerKey, noAdaptive)
			if err != nil {
				return err
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
	c.Flags().BoolVar(&b.Own.NoBurst, "no-burst", false, "remove the burst: capacity falls back to the allocation")
	c.Flags().BoolVar(&b.PerKey.NoBurst, "no-per-key-burst", false, "remove the family template's burst")
	c.Flags().BoolVar(&noPerKey, "no-per-key", false, "make a family a plain budget: no more sub-budgets")
	c.Flags().BoolVar(&noAdaptive, "no-adaptive", false, "remove the back-off: the budget pays its configured rate again at once")
	return c
}

// patch builds the PATCH body from the flags given.
func (b *BudgetFlags) patch(c *cobra.Command, noPerKey, noAdaptive bool) (api.BudgetPatch, error) {
	var p api.BudgetPatch
	own, err := b.Own.patch(c)
	if err != nil {
		return p, err
	}
	if p.Adaptive, err = b.Adaptive.patch(c, noAdaptive); err != nil {
		return p, err
	}
	p.Allocation, p.Strategy = own.allocation, own.strategy
	tmpl, err := b.PerKey.patch(c)
	if err != nil {
		return p, err
	}
	switch {
	case noPerKey:
		if anyChanged(c, b.PerKey.names()...) || b.PerKey.NoBurst {
			return p, usageError{fmt.Errorf("--no-per-key cannot come with other --per-key-… flags")}
		}
		p.PerKey = api.Null[api.TemplatePatch]()
	case tmpl.allocation != nil || tmpl.strategy != nil:
		p.PerKey = api.Set(api.TemplatePatch{Allocation: tmpl.allocation, Strategy: tmpl.strategy})
	}
	p.Keys, err = b.Keys.patch(c)
	return p, err
}
