package cmd

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/zizq/zizq/api"
)

// AdaptiveFlags are a budget's back-off (issue 26): --adaptive, or any of
// the --adaptive-… flags, makes the budget back off when a worker reports
// that the upstream refused; the server gives the back-off's other
// fields their defaults (on create and put) or keeps them (on patch).
type AdaptiveFlags struct {
	On       bool
	Decrease float64
	Recover  time.Duration
	Floor    float64
}

// adaptiveFlags are the flags that make a budget adaptive.
var adaptiveFlags = []string{"adaptive", "adaptive-decrease", "adaptive-recover", "adaptive-floor"}

func (a *AdaptiveFlags) register(fs *pflag.FlagSet) {
	// The defaults shown are the server's, for a budget that had no
	// back-off: a flag not given is not sent.
	fs.BoolVar(&a.On, "adaptive", false, "back off when a worker reports that the upstream refused (the defaults for the --adaptive-… flags not given)")
	floatRangeFlag(fs, &a.Decrease, "adaptive-decrease", openUnit, api.DefaultAdaptiveDecrease, "each refusal multiplies the effective rate by this")
	durationFlag(fs, &a.Recover, "adaptive-recover", api.DefaultAdaptiveRecoverMs*time.Millisecond, "how long the effective rate takes to climb back to the configured one without a refusal")
	floatRangeFlag(fs, &a.Floor, "adaptive-floor", halfOpenUnit, api.DefaultAdaptiveFloor, "the effective rate never goes below this share of the configured one")
}

// input builds a budget body's "adaptive" member from the flags given:
// nil when none was.
func (a *AdaptiveFlags) input(c *cobra.Command) (*api.AdaptiveInput, error) {
	fl := c.Flags()
	if !anyChanged(c, adaptiveFlags...) {
		return nil, nil
	}
	if fl.Changed("adaptive") && !a.On {
		return nil, usageError{fmt.Errorf("--adaptive=false is not a setting: leave the --adaptive… flags out for a budget that does not back off (patch: --no-adaptive removes the back-off)")}
	}
	in := &api.AdaptiveInput{}
	if fl.Changed("adaptive-decrease") {
		in.Decrease = &a.Decrease
	}
	if fl.Changed("adaptive-recover") {
		if a.Recover < time.Millisecond {
			return nil, usageError{fmt.Errorf("--adaptive-recover must be at least 1ms")}
		}
		in.RecoverMs = api.Ptr(a.Recover.Milliseconds())
	}
	if fl.Changed("adaptive-floor") {
		in.Floor = &a.Floor
	}
	return in, nil
}

// patch builds a PATCH's "adaptive" member: merged field by field by the
// server, null with noAdaptive, absent when no flag says anything.
func (a *AdaptiveFlags) patch(c *cobra.Command, noAdaptive bool) (api.Nullable[api.AdaptivePatch], error) {
	if noAdaptive {
		for _, n := range adaptiveFlags {
			if c.Flags().Changed(n) {
				return api.Nullable[api.AdaptivePatch]{}, usageError{fmt.Errorf("--no-adaptive cannot come with --%s: it removes the back-off", n)}
			}
		}
		return api.Null[api.AdaptivePatch](), nil
	}
	in, err := a.input(c)
	if err != nil || in == nil {
		return api.Nullable[api.AdaptivePatch]{}, err
	}
	return api.Set(*in), nil
}

// backingOff reports whether a budget's live figures say it pays less
// than configured: below its rate, or nothing until a retry_after ends.
func backingOff(b api.Budget, now time.Time) bool {
	s := b.State
	if s == nil {
		return false
	}
	below := s.EffectiveAllocation != nil && *s.EffectiveAllocation < float64(b.Allocation)
	throttled := s.ThrottledUntil != nil && *s.ThrottledUntil > now.UnixMilli()
	return below || throttled
}

// formatBackoff writes a budget's back-off and how it backs off now:
// "backs off ×0.5, floor 5%, recovers in 1m; effective 50/s of 100/s;
// throttled until 2026-09-01 12:00:00 (in 25s)"; "-" for a budget that
// neither is adaptive nor backs off.
func formatBackoff(b api.Budget, now time.Time) string {
	var parts []string
	if a := b.Adaptive; a != nil {
		parts = append(parts, fmt.Sprintf("backs off ×%s, floor %s%%, recovers in %s",
			strconv.FormatFloat(a.Decrease, 'g', -1, 64), formatTokens(a.Floor*100), formatMs(a.RecoverMs)))
	}
	if s := b.State; s != nil {
		if s.EffectiveAllocation != nil && *s.EffectiveAllocation < float64(b.Allocation) {
			parts = append(parts, "effective "+rateOf(*s.EffectiveAllocation, b.Strategy)+" of "+rateOf(float64(b.Allocation), b.Strategy))
		}
		if s.ThrottledUntil != nil && *s.ThrottledUntil > now.UnixMilli() {
			parts = append(parts, "throttled until "+formatAt(*s.ThrottledUntil, now))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

// rateOf writes an allocation as a time_based budget's rate ("50/s",
// "7/1m30s") or, for the others, as a number of tokens.
func rateOf(alloc float64, s api.Strategy) string {
	n := formatTokens(alloc)
	if s.Type != api.StrategyTimeBased {
		return n
	}
	switch s.DurationMs {
	case 1000:
		return n + "/s"
	case 60_000:
		return n + "/min"
	case 3_600_000:
		return n + "/h"
	case 86_400_000:
		return n + "/day"
	}
	return n + "/" + formatMs(s.DurationMs)
}
