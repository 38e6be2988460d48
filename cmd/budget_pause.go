package cmd

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

func newBudgetPauseCmd(f *Factory) *cobra.Command {
	var forD time.Duration
	var until string
	c := &cobra.Command{
		Use:   "pause KEY [--for D | --until TIME]",
		Short: "Pause a budget: it pays for nothing until resumed",
		Long: `Pause a budget: it pays for nothing, so its jobs wait (parked, holding
nothing) while other jobs keep flowing. Without --for or --until it stays
paused until 'zizq budget resume'; with them it resumes by itself then, to
the millisecond. A later pause replaces the end of an earlier one. TIME is
RFC 3339 or Unix milliseconds. It prints the budget.`,
		Example: `  zizq budget pause upstream-api --for 30s
  zizq budget pause upstream-api --until 2026-05-01T12:00:00Z
  zizq budget pause tenants`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: f.completeBudgetArg,
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkBudgetKey(args[0]); err != nil {
				return err
			}
			if err := exclusiveFlags(c, "for", "until"); err != nil {
				return err
			}
			end, err := pauseEnd(c, forD, until, time.Now())
			if err != nil {
				return err
			}
			cl, err := f.Client()
			if err != nil {
				return err
			}
			b, err := cl.PauseBudget(c.Context(), args[0], end)
			if err != nil {
				return err
			}
			return printBudget(f, b)
		},
	}
	durationFlag(c.Flags(), &forD, "for", 0, "resume by itself after this long, e.g. 30s or 1500")
	c.Flags().StringVar(&until, "until", "", "resume by itself at this time: RFC 3339 or Unix milliseconds")
	return c
}

// pauseEnd is the end of a pause as the flags give it: the zero time for
// none.
func pauseEnd(c *cobra.Command, forD time.Duration, until string, now time.Time) (time.Time, error) {
	switch {
	case c.Flags().Changed("for"):
		if forD < time.Millisecond {
			return time.Time{}, usageError{fmt.Errorf("--for must be at least 1ms")}
		}
		return now.Add(forD), nil
	case c.Flags().Changed("until"):
		ms, err := parseTimestamp("until", until)
		if err != nil {
			return time.Time{}, usageError{err}
		}
		if ms == 0 {
			return time.Time{}, usageError{fmt.Errorf("invalid --until %q: must be after 1970", until)}
		}
		return time.UnixMilli(int64(ms)), nil
	}
	return time.Time{}, nil
}
