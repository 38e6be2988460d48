package cmd

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/api"
)

func newJobWhyCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "why ID",
		Short: "Explain what a job is waiting for",
		Long: `Explain what a job is waiting for: its schedule, a budget (which ones, how
many jobs are ahead of it in each budget's line, and when it becomes
affordable), a worker with room, or nothing.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: f.completeJobIDs(),
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkJobID(args[0]); err != nil {
				return err
			}
			cl, err := f.Client()
			if err != nil {
				return err
			}
			w, err := cl.Why(c.Context(), args[0])
			if err != nil {
				return err
			}
			if f.JSON() {
				return writeJSON(f.IO.Out, w)
			}
			return printWhy(f, w, time.Now())
		},
	}
}

func printWhy(f *Factory, w *api.Why, now time.Time) error {
	out := f.IO.Out
	switch w.WaitingFor {
	case api.WaitingSchedule:
		_, err := fmt.Fprintf(out, "Job %s is scheduled: it becomes ready at %s (%s).\n", w.ID, formatTime(w.ReadyAt), formatUntil(int64(w.ReadyAt), now))
		return err
	case api.WaitingWorker:
		reason := w.Reason
		if reason == "" {
			reason = "every worker of its queue is busy"
		}
		_, err := fmt.Fprintf(out, "Job %s is ready and its budgets can pay: it waits for a worker (%s).\n", w.ID, reason)
		return err
	case api.WaitingFinished:
		_, err := fmt.Fprintf(out, "Job %s is %s: it waits for nothing.\n", w.ID, w.Status)
		return err
	case api.WaitingBudget:
	default: // nothing
		if w.Status == api.StatusInFlight {
			_, err := fmt.Fprintf(out, "Job %s is in flight: it waits for its worker to finish.\n", w.ID)
			return err
		}
		_, err := fmt.Fprintf(out, "Job %s is %s and waits for nothing: it is about to be dispatched.\n", w.ID, w.Status)
		return err
	}
	fmt.Fprintf(out, "Job %s is ready but parked: %s cannot pay for it yet.\n", w.ID, plural(len(w.Budgets), "a budget", "its budgets"))
	if reason := pauseReason(w.Budgets, now); reason != "" {
		fmt.Fprintf(out, "Reason: %s.\n", reason)
	} else if w.Reason != "" {
		fmt.Fprintf(out, "Reason: %s.\n", w.Reason)
	}
	if w.ExpectedAt != nil {
		fmt.Fprintf(out, "Expected dispatch: %s.\n", formatWhen(*w.ExpectedAt, now))
	}
	fmt.Fprintln(out)
	reserved := false
	for _, b := range w.Budgets {
		reserved = reserved || b.ReservedBy != ""
	}
	cols := []string{"BUDGET", "COST", "AVAILABLE", "AHEAD", "AFFORDABLE"}
	if reserved {
		// A budget that could pay but holds its tokens for its line's head.
		cols = append(cols, "RESERVED BY")
	}
	t := newTable(out, cols...)
	for _, b := range w.Budgets {
		when := affordableWhen(b, now)
		row := []string{b.Key, strconv.FormatInt(b.Cost, 10), formatTokens(b.Available), strconv.FormatInt(b.Ahead, 10), when}
		if reserved {
			row = append(row, or(b.ReservedBy, "-"))
		}
		t.row(row...)
	}
	return t.flush()
}

// formatWhen writes a time as every line of why does: the local time and
// how long until it.
func formatWhen(ms int64, now time.Time) string {
	return formatTime(uint64(max(ms, 0))) + " (" + formatUntil(ms, now) + ")"
}

// affordableWhen says when a budget will pay for the job: at a time, when
// resumed (a pause without an end), not before a pause's end, or when the
// running jobs finish (while_in_flight).
func affordableWhen(b api.WhyBudget, now time.Time) string {
	switch {
	case b.AffordableAt != nil:
		return formatWhen(*b.AffordableAt, now)
	case b.Paused && b.PausedUntil == nil:
		return "when resumed"
	case b.Paused:
		return "not before " + formatWhen(*b.PausedUntil, now)
	}
	return "when running jobs finish"
}

// pauseReason names the paused budgets a job waits for, with the times in
// the format of the other lines (the server's reason has its own).
func pauseReason(bs []api.WhyBudget, now time.Time) string {
	var parts []string
	for _, b := range bs {
		switch {
		case b.Paused && b.PausedUntil != nil:
			parts = append(parts, fmt.Sprintf("budget '%s' is paused until %s", b.Key, formatWhen(*b.PausedUntil, now)))
		case b.Paused:
			parts = append(parts, fmt.Sprintf("budget '%s' is paused", b.Key))
		}
	}
	return strings.Join(parts, "; ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// or returns s, or def when s is empty.
func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
