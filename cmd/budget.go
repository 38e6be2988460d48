package cmd

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
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
		newBudgetPauseCmd(f),
		newBudgetResumeCmd(f),
		newBudgetForecastCmd(f),
		newBudgetThrottleCmd(f),
	)
	c.Long = `Manage budgets: named pools of tokens that jobs bind to with a cost. A job
is dispatched only when every budget it is bound to can pay; otherwise it
waits (parked) while other jobs keep flowing.

  while_in_flight  at most --allocation tokens are held by running jobs
  time_based       --allocation tokens per --duration, up to --burst at once
  calendar         --allocation tokens a period, all back at each --reset (a
                   cron expression such as '0 0 * * *', read in --timezone)

A job's cost is an estimate: a worker that knows what the job really cost
sends it with the job's result (zizq work: the file $ZIZQ_RESULT), and the
difference comes back to a time_based or calendar budget, or is taken from
it. A budget may so go below zero: it is in debt until its tokens have
repaid it, and "budget get" says when.

A family (--per-key-… flags) also limits each sub-key: a job bound to
"<KEY>/<sub>" is charged on the family and on the sub-budget <KEY>/<sub>,
made from the family's template at first use; the family serves its
sub-keys in fair turns. The template is while_in_flight or time_based:
the server has no calendar sub-budgets. --key-weight SUB=N gives a
sub-key N turns to another's 1 (weights 1 to 1000), --key-allocation
SUB=N its own allocation in place of the template's.

An adaptive budget (--adaptive… flags) backs off when a worker reports
that the upstream refused (an HTTP 429 or 503): each refusal multiplies
its effective rate by --adaptive-decrease, never below --adaptive-floor of
the configured one, and without refusals it climbs back over
--adaptive-recover. A worker reports a refusal with the job's failure
(zizq work: exit 75 with a throttle in $ZIZQ_RESULT), or alone with
"budget throttle", whose --retry-after makes any budget pay nothing for
that long.`
	return c
}

// BudgetFlags are the settings of `budget create`, `put` and `patch`: the
// budget's own, its family template's (the --per-key-… flags), its
// sub-keys' weights and allocations (--key-…) and its back-off (the
// --adaptive… flags).
type BudgetFlags struct {
	Own      PoolFlags
	PerKey   PoolFlags
	Keys     KeyFlags // budget_keys.go
	Adaptive AdaptiveFlags
}

// PoolFlags are the allocation and strategy of a budget or of a family
// template; prefix ("" or "per-key-") names its flags.
type PoolFlags struct {
	prefix string
	// template is set for a family's template, which the server refuses
	// as a calendar strategy: it has no --per-key-reset or -timezone, so
	// that the mistake is named before any request.
	template   bool
	Allocation int64
	Strategy   string
	Duration   time.Duration
	Burst      int64
	NoBurst    bool
	Reset      string
	Timezone   string
}

func (b *BudgetFlags) register(fs *pflag.FlagSet, c *cobra.Command) {
	b.Own.prefix, b.PerKey.prefix = "", "per-key-"
	b.PerKey.template = true
	b.Own.register(fs, c, "")
	b.PerKey.register(fs, c, "each sub-budget <KEY>/<sub> of the family: ")
	b.Adaptive.register(fs)
	b.Keys.register(fs, c, c.Name() == "patch")
}

func (p *PoolFlags) register(fs *pflag.FlagSet, c *cobra.Command, of string) {
	allocation := of + "tokens: jobs in flight at once (while_in_flight) or per --" + p.flag("duration") + " (time_based)"
	if !p.template {
		allocation = of + "tokens: jobs in flight at once (while_in_flight), per --" + p.flag("duration") + " (time_based) or from one --" + p.flag("reset") + " to the next (calendar)"
	}
	intRangeFlag(fs, &p.Allocation, p.flag("allocation"), 1, budget.MaxAllocation, 0, allocation)
	fs.StringVar(&p.Strategy, p.flag("strategy"), "", of+"how tokens come back: "+orList(p.strategies()))
	durationFlag(fs, &p.Duration, p.flag("duration"), 0, of+"period over which --"+p.flag("allocation")+" tokens come back (time_based), e.g. 1h or 3600000")
	intRangeFlag(fs, &p.Burst, p.flag("burst"), 1, budget.MaxAllocation, 0, of+"most tokens a time_based budget holds at once (default: --"+p.flag("allocation")+")")
	_ = c.RegisterFlagCompletionFunc(p.flag("strategy"), cobra.FixedCompletions(p.strategies(), cobra.ShellCompDirectiveNoFileComp))
	if p.template {
		return
	}
	fs.StringVar(&p.Reset, p.flag("reset"), "", of+"cron expression of the instants a calendar budget's --"+p.flag("allocation")+" comes back whole, e.g. '0 0 * * *' (daily)")
	fs.StringVar(&p.Timezone, p.flag("timezone"), "", of+"IANA timezone --"+p.flag("reset")+" is read in, e.g. Europe/Paris (default UTC)")
	_ = c.RegisterFlagCompletionFunc(p.flag("reset"), cobra.NoFileCompletions)
	_ = c.RegisterFlagCompletionFunc(p.flag("timezone"), cobra.NoFileCompletions)
}

// flag is the name of one of the pool's flags.
func (p *PoolFlags) flag(name string) string { return p.prefix + name }

// names are the pool's flags that set something, in order.
func (p *PoolFlags) names() []string {
	names := []string{p.flag("allocation"), p.flag("strategy"), p.flag("duration"), p.flag("burst")}
	if !p.template {
		names = append(names, p.flag("reset"), p.flag("timezone"))
	}
	return names
}

// strategies are the strategy types the pool may take.
func (p *PoolFlags) strategies() []string {
	if p.template {
		return []string{api.StrategyWhileInFlight, api.StrategyTimeBased}
	}
	return []string{api.StrategyWhileInFlight, api.StrategyTimeBased, api.StrategyCalendar}
}

func (p *PoolFlags) checkStrategy() error {
	if slices.Contains(p.strategies(), p.Strategy) {
		return nil
	}
	if p.template && p.Strategy == api.StrategyCalendar {
		return usageError{fmt.Errorf("--%s calendar is not supported: a family's sub-budgets are while_in_flight or time_based", p.flag("strategy"))}
	}
	return usageError{fmt.Errorf("invalid --%s %q: use %s", p.flag("strategy"), p.Strategy, orList(p.strategies()))}
}

// orList writes words as "a, b or c".
func orList(words []string) string {
	if len(words) == 1 {
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// checkDuration refuses a duration the server would: it counts whole
// milliseconds, at least one.
func (p *PoolFlags) checkDuration(c *cobra.Command) error {
	if c.Flags().Changed(p.flag("duration")) && p.Duration < time.Millisecond {
		return usageError{fmt.Errorf("--%s must be at least 1ms", p.flag("duration"))}
	}
	return nil
}

// input builds the body of POST and PUT from the flags given, refusing
// what the server would refuse of them.
func (b *BudgetFlags) input(c *cobra.Command) (api.BudgetInput, error) {
	alloc, strategy, err := b.Own.input(c)
	if err != nil {
		return api.BudgetInput{}, err
	}
	in := api.BudgetInput{Allocation: alloc, Strategy: strategy}
	if in.Adaptive, err = b.Adaptive.input(c); err != nil {
		return api.BudgetInput{}, err
	}
	if anyChanged(c, b.PerKey.names()...) {
		alloc, strategy, err := b.PerKey.input(c)
		if err != nil {
			return api.BudgetInput{}, err
		}
		in.PerKey = &api.BudgetTemplateInput{Allocation: alloc, Strategy: strategy}
	}
	in.Keys, err = b.Keys.input(in.PerKey != nil)
	return in, err
}

// input builds a complete allocation and strategy from the pool's flags.
func (p *PoolFlags) input(c *cobra.Command) (*int64, *api.StrategyInput, error) {
	if err := requireFlags(c, p.flag("allocation"), p.flag("strategy")); err != nil {
		return nil, nil, err
	}
	if err := p.checkStrategy(); err != nil {
		return nil, nil, err
	}
	if err := p.checkDuration(c); err != nil {
		return nil, nil, err
	}
	fl := c.Flags()
	hasDuration, hasBurst := fl.Changed(p.flag("duration")), fl.Changed(p.flag("burst"))
	hasReset, hasTimezone := fl.Changed(p.flag("reset")), fl.Changed(p.flag("timezone"))
	switch {
	case p.Strategy == api.StrategyTimeBased && !hasDuration:
		return nil, nil, usageError{fmt.Errorf("--%s time_based needs --%s: the period over which --%s tokens come back",
			p.flag("strategy"), p.flag("duration"), p.flag("allocation"))}
	case p.Strategy == api.StrategyCalendar && !hasReset:
		return nil, nil, usageError{fmt.Errorf("--%s calendar needs --%s: the cron expression of the instants --%s tokens come back, e.g. '0 0 * * *'",
			p.flag("strategy"), p.flag("reset"), p.flag("allocation"))}
	case p.Strategy != api.StrategyTimeBased && (hasDuration || hasBurst):
		return nil, nil, usageError{fmt.Errorf("--%s and --%s are only for --%s time_based", p.flag("duration"), p.flag("burst"), p.flag("strategy"))}
	case p.Strategy != api.StrategyCalendar && (hasReset || hasTimezone):
		return nil, nil, usageError{fmt.Errorf("--%s and --%s are only for --%s calendar", p.flag("reset"), p.flag("timezone"), p.flag("strategy"))}
	}
	st := &api.StrategyInput{Type: &p.Strategy}
	if hasDuration {
		st.DurationMs = api.Ptr(p.Duration.Milliseconds())
	}
	if hasBurst {
		st.Burst = &p.Burst
	}
	if hasReset {
		st.Reset = &p.Reset
	}
	if hasTimezone {
		st.Timezone = &p.Timezone
	}
	return &p.Allocation, st, nil
}

// poolPatch is what the pool's flags change in a PATCH: nil where no flag
// was given.
type poolPatch struct {
	allocation *int64
	strategy   *api.StrategyPatch
}

// patch builds the allocation and strategy members of a PATCH from the
// pool's flags given.
func (p *PoolFlags) patch(c *cobra.Command) (poolPatch, error) {
	if err := exclusiveFlags(c, p.flag("burst"), "no-"+p.flag("burst")); err != nil {
		return poolPatch{}, err
	}
	if err := p.checkDuration(c); err != nil {
		return poolPatch{}, err
	}
	var out poolPatch
	var st api.StrategyPatch
	fl := c.Flags()
	if fl.Changed(p.flag("allocation")) {
		out.allocation = &p.Allocation
	}
	if fl.Changed(p.flag("strategy")) {
		if err := p.checkStrategy(); err != nil {
			return poolPatch{}, err
		}
		st.Type = &p.Strategy
	}
	if fl.Changed(p.flag("reset")) {
		st.Reset = &p.Reset
	}
	if fl.Changed(p.flag("timezone")) {
		st.Timezone = &p.Timezone
	}
	if fl.Changed(p.flag("duration")) {
		st.DurationMs = api.Ptr(p.Duration.Milliseconds())
	}
	switch {
	case p.NoBurst:
		st.Burst = api.Null[int64]()
	case fl.Changed(p.flag("burst")):
		st.Burst = api.Set(p.Burst)
	}
	if st != (api.StrategyPatch{}) {
		out.strategy = &st
	}
	return out, nil
}

// budgetTable prints budgets with their live figures, "-" where a figure
// does not apply or was not asked for. PER KEY and SUB-BUDGETS come when
// a budget is a family, PAUSED when one is paused, PERIOD when one is a
// calendar budget, DEBT when one is in debt, BACK-OFF when one is
// adaptive or backs off: a table of budgets without them keeps its
// columns.
func budgetTable(f *Factory, budgets []api.Budget) error {
	return budgetTableAt(f.IO.Out, budgets, time.Now())
}

func budgetTableAt(w io.Writer, budgets []api.Budget, now time.Time) error {
	families := slices.ContainsFunc(budgets, func(b api.Budget) bool { return b.PerKey != nil })
	pauses := slices.ContainsFunc(budgets, func(b api.Budget) bool { return b.Paused || b.PausedUntil > 0 })
	periods := slices.ContainsFunc(budgets, func(b api.Budget) bool { return b.Strategy.Type == api.StrategyCalendar })
	debts := slices.ContainsFunc(budgets, inDebt)
	backoffs := slices.ContainsFunc(budgets, func(b api.Budget) bool { return b.Adaptive != nil || backingOff(b, now) })
	weights, keys := anyWeighted(budgets), anyKeys(budgets)
	cols := []string{"KEY", "STRATEGY", "ALLOCATION", "RATE", "BURST", "AVAILABLE", "IN FLIGHT", "PARKED", "NEXT TOKEN"}
	if families {
		cols = append(cols, "PER KEY", "SUB-BUDGETS")
	}
	if keys {
		cols = append(cols, "KEYS")
	}
	if weights {
		cols = append(cols, "WEIGHT")
	}
	if pauses {
		cols = append(cols, "PAUSED")
	}
	if periods {
		cols = append(cols, "PERIOD")
	}
	if debts {
		cols = append(cols, "DEBT")
	}
	if backoffs {
		cols = append(cols, "BACK-OFF")
	}
	t := newTable(w, cols...)
	for _, b := range budgets {
		avail, inFlight, parked, next := "-", "-", "-", "-"
		if s := b.State; s != nil {
			avail = formatTokens(s.Available)
			inFlight = strconv.FormatInt(s.InFlight, 10)
			parked = strconv.FormatInt(s.Parked, 10)
			if s.NextTokenAt != nil {
				next = formatUntil(*s.NextTokenAt, now)
			}
		}
		rate, burst := formatRate(b.Allocation, b.Strategy)
		row := []string{b.Key, b.Strategy.Type, strconv.FormatInt(b.Allocation, 10), rate, burst, avail, inFlight, parked, next}
		if families {
			row = append(row, formatPerKey(b.PerKey), formatSubBudgets(b))
		}
		if keys {
			row = append(row, formatKeys(b))
		}
		if weights {
			row = append(row, formatWeight(b))
		}
		if pauses {
			row = append(row, formatPause(b, now))
		}
		if periods {
			row = append(row, formatPeriod(b, now))
		}
		if debts {
			row = append(row, formatDebt(b, now))
		}
		if backoffs {
			row = append(row, formatBackoff(b, now))
		}
		t.row(row...)
	}
	return t.flush()
}

// formatRate writes a strategy's rate ("10/1h", "100 at 0 0 * * *
// (Europe/Paris)") and burst, "-" where they do not apply.
func formatRate(allocation int64, s api.Strategy) (rate, burst string) {
	rate, burst = "-", "-"
	switch s.Type {
	case api.StrategyTimeBased:
		rate = strconv.FormatInt(allocation, 10) + "/" + formatMs(s.DurationMs)
	case api.StrategyCalendar:
		rate = strconv.FormatInt(allocation, 10) + " at " + s.Reset + " (" + cmp.Or(s.Timezone, "UTC") + ")"
	}
	if s.Burst > 0 {
		burst = strconv.FormatInt(s.Burst, 10)
	}
	return rate, burst
}

// formatPerKey writes a family's template: "2 in flight", "10/1m" or
// "10/1m burst 5"; "-" for a plain budget.
func formatPerKey(t *api.BudgetTemplate) string {
	if t == nil {
		return "-"
	}
	rate, burst := formatRate(t.Allocation, t.Strategy)
	switch {
	case t.Strategy.Type == api.StrategyCalendar:
		return rate
	case t.Strategy.Type != api.StrategyTimeBased:
		return strconv.FormatInt(t.Allocation, 10) + " in flight"
	case burst != "-":
		return rate + " burst " + burst
	}
	return rate
}

// formatSubBudgets writes how many live sub-budgets a family has.
func formatSubBudgets(b api.Budget) string {
	if b.State == nil || b.State.SubBudgets == nil {
		return "-"
	}
	return strconv.FormatInt(*b.State.SubBudgets, 10)
}

// formatPeriod writes what a calendar budget spent of its allocation this
// period and when the period ends: "used 1834 of 100000 this period,
// resets at 2026-09-01 00:00:00 (in 3h)"; "-" for other budgets, or
// without live figures.
func formatPeriod(b api.Budget, now time.Time) string {
	s := b.State
	if b.Strategy.Type != api.StrategyCalendar || s == nil || s.Used == nil {
		return "-"
	}
	out := fmt.Sprintf("used %d of %d this period", *s.Used, b.Allocation)
	if s.NextResetAt != nil {
		out += ", resets at " + formatAt(*s.NextResetAt, now)
	}
	return out
}

// inDebt reports whether a budget's live figures say it owes tokens.
func inDebt(b api.Budget) bool {
	return b.State != nil && b.State.Debt != nil && *b.State.Debt > 0
}

// formatDebt writes what a budget owes and when it will have repaid it:
// "834, repaid at 2026-09-01 12:30:00 (in 25m)"; "-" when it owes nothing.
func formatDebt(b api.Budget, now time.Time) string {
	if !inDebt(b) {
		return "-"
	}
	out := formatTokens(*b.State.Debt)
	if b.State.RepaidAt != nil {
		out += ", repaid at " + formatAt(*b.State.RepaidAt, now)
	}
	return out
}

// formatAt writes an instant in milliseconds and how long until it comes.
func formatAt(ms int64, now time.Time) string {
	return formatTime(uint64(max(0, ms))) + " (" + formatUntil(ms, now) + ")"
}

// formatPause writes a budget's pause: "yes" until resumed, or its end.
func formatPause(b api.Budget, now time.Time) string {
	switch {
	case b.PausedUntil > 0:
		return "until " + formatTime(b.PausedUntil) + " (" + formatUntil(int64(b.PausedUntil), now) + ")"
	case b.Paused:
		return "yes"
	}
	return "-"
}

// printBudget prints one budget in the chosen output format.
func printBudget(f *Factory, b *api.Budget) error {
	if f.JSON() {
		return writeJSON(f.IO.Out, b)
	}
	if err := budgetTable(f, []api.Budget{*b}); err != nil {
		return err
	}
	return keysTable(f.IO.Out, *b)
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
