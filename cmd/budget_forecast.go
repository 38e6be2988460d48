package cmd

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server/budget"
)

func newBudgetForecastCmd(f *Factory) *cobra.Command {
	var w forecastFlags
	c := &cobra.Command{
		Use:   "forecast KEY [--allocation N] [--duration D] [--burst N]",
		Short: "Show when a budget's backlog will have been dispatched",
		Long: `Show when the budget's current backlog (every unfinished ready job bound
to it) will have been dispatched at its pace: exact for time_based, for
jobs bound to it alone and a worker with room; estimated from the observed
mean time in flight for while_in_flight, and unknown until a job of it has
finished. A paused budget's forecast starts at the pause's end.

With --allocation, --duration or --burst it answers for the budget so
changed, and changes nothing.`,
		Example: `  zizq budget forecast image-service
  zizq budget forecast image-service --allocation 20000`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: f.completeBudgetArg,
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkBudgetKey(args[0]); err != nil {
				return err
			}
			whatIf, err := w.whatIf(c)
			if err != nil {
				return err
			}
			cl, err := f.Client()
			if err != nil {
				return err
			}
			fc, err := cl.BudgetForecast(c.Context(), args[0], whatIf)
			if err != nil {
				return err
			}
			if f.JSON() {
				return writeJSON(f.IO.Out, fc)
			}
			return printForecast(f, fc, time.Now())
		},
	}
	fs := c.Flags()
	intRangeFlag(fs, &w.allocation, "allocation", 1, budget.MaxAllocation, 0, "what if the budget had this allocation")
	durationFlag(fs, &w.duration, "duration", 0, "what if a time_based budget had this period, e.g. 1h or 3600000")
	intRangeFlag(fs, &w.burst, "burst", 1, budget.MaxAllocation, 0, "what if a time_based budget had this burst")
	return c
}

// forecastFlags are the what-if of `budget forecast`.
type forecastFlags struct {
	allocation, burst int64
	duration          time.Duration
}

func (w *forecastFlags) whatIf(c *cobra.Command) (api.WhatIf, error) {
	var out api.WhatIf
	fl := c.Flags()
	if fl.Changed("allocation") {
		out.Allocation = &w.allocation
	}
	if fl.Changed("duration") {
		if w.duration < time.Millisecond {
			return out, usageError{fmt.Errorf("--duration must be at least 1ms")}
		}
		out.DurationMs = api.Ptr(w.duration.Milliseconds())
	}
	if fl.Changed("burst") {
		out.Burst = &w.burst
	}
	return out, nil
}

func printForecast(f *Factory, fc *api.Forecast, now time.Time) error {
	jobs := strconv.FormatInt(fc.Parked, 10) + plural(int(min(fc.Parked, 2)), " job", " jobs")
	var when string
	switch {
	case fc.Parked == 0:
		when = "nothing to dispatch"
	case fc.DrainsAt == nil:
		when = "unknown: " + or(fc.Unknown, "no forecast yet")
	default:
		when = "the last dispatched at " + formatTime(uint64(*fc.DrainsAt)) + " (" + formatUntil(*fc.DrainsAt, now) + ")"
		if fc.Estimated {
			when += ", estimated from the observed time in flight"
		}
	}
	if w := fc.WhatIf; w != nil {
		// Said first: this is not the budget as it is.
		var changes []string
		if w.Allocation != nil {
			changes = append(changes, "allocation "+strconv.FormatInt(*w.Allocation, 10))
		}
		if w.DurationMs != nil {
			changes = append(changes, "duration "+formatMs(*w.DurationMs))
		}
		if w.Burst != nil {
			changes = append(changes, "burst "+strconv.FormatInt(*w.Burst, 10))
		}
		fmt.Fprintf(f.IO.Out, "What if (nothing is changed): with %s,\n", strings.Join(changes, ", "))
	}
	_, err := fmt.Fprintf(f.IO.Out, "Budget '%s': %s waiting; %s.\n", fc.Key, jobs, when)
	return err
}
