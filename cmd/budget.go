package cmd

import (
	"context"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
	"github.com/zizq/zizq/server/budget"
)

func newBudgetCmd(f *Factory) *cobra.Command {
	c := parentCmd("budget", "Manage budgets: concurrency limits and rate limits",
		newBudgetListCmd(f),
		newBudgetGetCmd(f),
		newBudgetCreateCmd(f),
		newBudgetPutCmd(f),
		newBudgetPatchCmd(f),
		newBudgetDeleteCmd(f),
	)
	c.Long = `Manage budgets: named pools of tokens that jobs bind to with a cost. A job
is dispatched only when every budget it is bound to can pay; otherwise it
waits (parked) while other jobs keep flowing.

  while_in_flight  at most --allocation tokens are held by running jobs
  time_based       --allocation tokens per --duration, up to --burst at once`
	return c
}

// BudgetFlags are the settings of `budget create`, `put` and `patch`.
type BudgetFlags struct {
	Allocation int64
	Strategy   string
	Duration   time.Duration
	Burst      int64
	NoBurst    bool
}

func (b *BudgetFlags) register(fs *pflag.FlagSet, c *cobra.Command) {
	intRangeFlag(fs, &b.Allocation, "allocation", 1, budget.MaxAllocation, 0, "tokens: jobs in flight at once (while_in_flight) or per --duration (time_based)")
	fs.StringVar(&b.Strategy, "strategy", "", "how tokens come back: while_in_flight or time_based")
	durationFlag(fs, &b.Duration, "duration", 0, "period over which --allocation tokens come back (time_based), e.g. 1h or 3600000")
	intRangeFlag(fs, &b.Burst, "burst", 1, budget.MaxAllocation, 0, "most tokens a time_based budget holds at once (default: --allocation)")
	_ = c.RegisterFlagCompletionFunc("strategy", cobra.FixedCompletions(
		[]string{api.StrategyWhileInFlight, api.StrategyTimeBased}, cobra.ShellCompDirectiveNoFileComp))
}

func (b *BudgetFlags) checkStrategy() error {
	if b.Strategy != api.StrategyWhileInFlight && b.Strategy != api.StrategyTimeBased {
		return usageError{fmt.Errorf("invalid --strategy %q: use while_in_flight or time_based", b.Strategy)}
	}
	return nil
}

// checkDuration refuses a --duration the server would: it counts whole
// milliseconds, at least one.
func (b *BudgetFlags) checkDuration(c *cobra.Command) error {
	if c.Flags().Changed("duration") && b.Duration < time.Millisecond {
		return usageError{fmt.Errorf("--duration must be at least 1ms")}
	}
	return nil
}

// input builds the body of POST and PUT from the flags given, refusing
// what the server would refuse of them.
func (b *BudgetFlags) input(c *cobra.Command) (api.BudgetInput, error) {
	if err := requireFlags(c, "allocation", "strategy"); err != nil {
		return api.BudgetInput{}, err
	}
	if err := b.checkStrategy(); err != nil {
		return api.BudgetInput{}, err
	}
	if err := b.checkDuration(c); err != nil {
		return api.BudgetInput{}, err
	}
	fl := c.Flags()
	switch {
	case b.Strategy == api.StrategyTimeBased && !fl.Changed("duration"):
		return api.BudgetInput{}, usageError{fmt.Errorf("--strategy time_based needs --duration: the period over which --allocation tokens come back")}
	case b.Strategy == api.StrategyWhileInFlight && (fl.Changed("duration") || fl.Changed("burst")):
		return api.BudgetInput{}, usageError{fmt.Errorf("--duration and --burst are only for --strategy time_based")}
	}
	in := api.BudgetInput{Allocation: &b.Allocation, Strategy: &api.StrategyInput{Type: &b.Strategy}}
	if c.Flags().Changed("duration") {
		in.Strategy.DurationMs = api.Ptr(b.Duration.Milliseconds())
	}
	if c.Flags().Changed("burst") {
		in.Strategy.Burst = &b.Burst
	}
	return in, nil
}

// budgetTable prints budgets with their live figures, "-" where a figure
// does not apply or was not asked for.
func budgetTable(f *Factory, budgets []api.Budget) error {
	now := time.Now()
	t := newTable(f.IO.Out, "KEY", "STRATEGY", "ALLOCATION", "RATE", "BURST", "AVAILABLE", "IN FLIGHT", "PARKED", "NEXT TOKEN")
	for _, b := range budgets {
		rate, burst := "-", "-"
		if b.Strategy.Type == api.StrategyTimeBased {
			rate = strconv.FormatInt(b.Allocation, 10) + "/" + formatMs(b.Strategy.DurationMs)
		}
		if b.Strategy.Burst > 0 {
			burst = strconv.FormatInt(b.Strategy.Burst, 10)
		}
		avail, inFlight, parked, next := "-", "-", "-", "-"
		if s := b.State; s != nil {
			avail = formatTokens(s.Available)
			inFlight = strconv.FormatInt(s.InFlight, 10)
			parked = strconv.FormatInt(s.Parked, 10)
			if s.NextTokenAt != nil {
				next = formatUntil(*s.NextTokenAt, now)
			}
		}
		t.row(b.Key, b.Strategy.Type, strconv.FormatInt(b.Allocation, 10), rate, burst, avail, inFlight, parked, next)
	}
	return t.flush()
}

// printBudget prints one budget in the chosen output format.
func printBudget(f *Factory, b *api.Budget) error {
	if f.JSON() {
		return writeJSON(f.IO.Out, b)
	}
	return budgetTable(f, []api.Budget{*b})
}

// budgetSender is a client call that writes a whole budget (create or put).
type budgetSender func(c *client.Client, ctx context.Context, key string, in api.BudgetInput) (*api.Budget, error)

// checkBudgetKey refuses, before any request, a KEY argument that the
// server's rules refuse (an empty key would even name another endpoint).
func checkBudgetKey(key string) error {
	if err := api.ValidateBudgetKey(key); err != nil {
		return usageError{fmt.Errorf("invalid KEY %q: %w", key, err)}
	}
	if !utf8.ValidString(key) {
		return usageError{fmt.Errorf("invalid KEY %q: budget key must be valid UTF-8", key)}
	}
	return nil
}

// writeBudget runs `budget create` and `budget put`: read the flags, send
// the budget, print what the server answered.
func writeBudget(f *Factory, b *BudgetFlags, send budgetSender) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, args []string) error {
		if err := checkBudgetKey(args[0]); err != nil {
			return err
		}
		in, err := b.input(c)
		if err != nil {
			return err
		}
		cl, err := f.Client()
		if err != nil {
			return err
		}
		out, err := send(cl, c.Context(), args[0], in)
		if err != nil {
			return err
		}
		return printBudget(f, out)
	}
}
