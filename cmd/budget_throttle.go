package cmd

import (
	"time"

	"github.com/spf13/cobra"
)

func newBudgetThrottleCmd(f *Factory) *cobra.Command {
	var retryAfter time.Duration
	c := &cobra.Command{
		Use:   "throttle KEY [--retry-after D]",
		Short: "Report that a budget's upstream refused: it backs off",
		Long: `Report that the upstream a budget stands for refused (an HTTP 429 or 503),
without a job: an adaptive budget multiplies its effective rate by its
decrease, then climbs back. --retry-after, the upstream's Retry-After,
makes the budget pay nothing for that long (at most a day), adaptive or
not. Refusals within one such window (at least a second) count once. It
prints the budget with its live figures: the effective rate and when the
retry-after ends (BACK-OFF); -o json has them in "state"
(effective_allocation, throttled_until, throttles).`,
		Example: `  zizq budget throttle upstream-api
  zizq budget throttle upstream-api --retry-after 30s`,
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
			b, err := cl.Throttle(c.Context(), args[0], retryAfter)
			if err != nil {
				return err
			}
			return printBudget(f, b)
		},
	}
	durationFlag(c.Flags(), &retryAfter, "retry-after", 0, "pay nothing for this long, e.g. 30s or 1500 (the upstream's Retry-After)")
	return c
}
