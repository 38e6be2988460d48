package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/api"
)

// ResetOptions are the flags of `reset`.
type ResetOptions struct {
	Yes bool
}

// resetCount is what `reset` without --yes prints with -o json.
type resetCount struct {
	Jobs    int64 `json:"jobs"`
	Budgets int64 `json:"budgets"`
}

func newResetCmd(f *Factory) *cobra.Command {
	o := &ResetOptions{}
	c := &cobra.Command{
		Use:   "reset --yes",
		Short: "Delete every job and every budget",
		Long: `Delete every job, in flight included (their workers' acks will fail), and
every budget (POST /reset). Without --yes it only prints how many jobs and
budgets there are, and deletes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cl, err := f.Client()
			if err != nil {
				return err
			}
			if !o.Yes {
				jobs, err := cl.CountJobs(c.Context(), api.JobQuery{})
				if err != nil {
					return err
				}
				budgets, err := cl.ListBudgets(c.Context(), false)
				if err != nil {
					return err
				}
				if f.JSON() {
					return writeJSON(f.IO.Out, resetCount{Jobs: jobs, Budgets: int64(len(budgets))})
				}
				_, err = fmt.Fprintf(f.IO.Out, "%d %s and %d %s would be deleted. Nothing was changed: run again with --yes to go ahead.\n",
					jobs, plural(int(jobs), "job", "jobs"), len(budgets), plural(len(budgets), "budget", "budgets"))
				return err
			}
			if err := cl.Reset(c.Context()); err != nil {
				return err
			}
			if f.JSON() {
				return writeJSON(f.IO.Out, struct {
					Reset bool `json:"reset"`
				}{true})
			}
			_, err = fmt.Fprintln(f.IO.Out, "Every job and budget was deleted.")
			return err
		},
	}
	c.Flags().BoolVarP(&o.Yes, "yes", "y", false, "delete them (without it, only count them)")
	return c
}
