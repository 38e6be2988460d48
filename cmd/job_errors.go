package cmd

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/api"
)

// JobErrorsOptions are the flags of `job errors`.
type JobErrorsOptions struct {
	Attempt uint32
}

func newJobErrorsCmd(f *Factory) *cobra.Command {
	o := &JobErrorsOptions{}
	c := &cobra.Command{
		Use:   "errors ID [--attempt N]",
		Short: "Show the failures recorded for a job",
		Long: `Show every failure recorded for a job, one a row, oldest attempt first (the
message cut to one line). --attempt N shows one failure whole, with its
backtrace. -o json prints {"errors":[…]}, or the one record.`,
		Example: `  zizq job errors 03hbspbx73m827tya0zdbnrrh
  zizq job errors 03hbspbx73m827tya0zdbnrrh --attempt 3`,
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
			if c.Flags().Changed("attempt") {
				rec, err := cl.GetError(c.Context(), args[0], o.Attempt)
				if err != nil {
					return err
				}
				if f.JSON() {
					return writeJSON(f.IO.Out, rec)
				}
				return printErrorDetail(f, rec)
			}
			recs := []api.ErrorRecord{}
			for rec, err := range cl.AllErrors(c.Context(), args[0], api.ErrorsQuery{Limit: api.MaxLimit}) {
				if err != nil {
					return err
				}
				recs = append(recs, rec)
			}
			if f.JSON() {
				return writeJSON(f.IO.Out, struct {
					Errors []api.ErrorRecord `json:"errors"`
				}{recs})
			}
			if len(recs) == 0 {
				_, err := fmt.Fprintf(f.IO.Out, "Job %s has no recorded failures.\n", args[0])
				return err
			}
			t := newTable(f.IO.Out, "ATTEMPT", "FAILED AT", "TYPE", "MESSAGE")
			for _, r := range recs {
				t.row(strconv.FormatUint(uint64(r.Attempt), 10), formatTime(r.FailedAt), orDash(r.ErrorType), firstLine(r.Message))
			}
			return t.flush()
		},
	}
	intRangeFlag(c.Flags(), &o.Attempt, "attempt", 1, math.MaxUint32, 0, "show this attempt's failure whole, with its backtrace")
	return c
}

func printErrorDetail(f *Factory, r *api.ErrorRecord) error {
	t := newTable(f.IO.Out, "Attempt:", strconv.FormatUint(uint64(r.Attempt), 10))
	t.row("Dequeued at:", formatTime(r.DequeuedAt))
	t.row("Failed at:", formatTime(r.FailedAt))
	t.row("Type:", orDash(r.ErrorType))
	t.row("Message:", firstLine(r.Message))
	if err := t.flush(); err != nil {
		return err
	}
	out := f.IO.Out
	if strings.Contains(r.Message, "\n") {
		fmt.Fprintf(out, "\n%s\n", strings.TrimRight(r.Message, "\n"))
	}
	if r.Backtrace != "" {
		fmt.Fprintf(out, "\nBacktrace:\n%s\n", strings.TrimRight(r.Backtrace, "\n"))
	}
	return nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
