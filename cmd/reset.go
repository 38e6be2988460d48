package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
)

// ResetOptions are the flags of `reset`.
type ResetOptions struct {
	Yes bool
}

// resetCount is what `reset` without --yes prints with -o json: what
// POST /reset would delete.
type resetCount struct {
	Jobs       int64 `json:"jobs"`
	Budgets    int64 `json:"budgets"`
	CronGroups int64 `json:"cron_groups"`
}

func newResetCmd(f *Factory) *cobra.Command {
	o := &ResetOptions{}
	c := &cobra.Command{
		Use:   "reset --yes",
		Short: "Delete every cron group, job and budget",
		Long: `Delete every cron group (first, so that none fires after), every job, in
flight included (their workers' acks will fail), and every budget (POST
/reset). Without --yes it only prints how many cron groups, jobs and
budgets there are, and deletes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cl, err := f.Client()
			if err != nil {
				return err
			}
			if !o.Yes {
				n, err := countReset(c.Context(), cl)
				if err != nil {
					return err
				}
				if f.JSON() {
					return writeJSON(f.IO.Out, n)
				}
				_, err = fmt.Fprintf(f.IO.Out, "%s, %s and %s would be deleted. Nothing was changed: run again with --yes to go ahead.\n",
					countOf(n.CronGroups, "cron group", "cron groups"), countOf(n.Jobs, "job", "jobs"), countOf(n.Budgets, "budget", "budgets"))
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
			_, err = fmt.Fprintln(f.IO.Out, "Every cron group, job and budget was deleted.")
			return err
		},
	}
	c.Flags().BoolVarP(&o.Yes, "yes", "y", false, "delete them (without it, only count them)")
	return c
}

// countReset counts what POST /reset deletes.
func countReset(ctx context.Context, cl *client.Client) (resetCount, error) {
	jobs, err := cl.CountJobs(ctx, api.JobQuery{})
	if err != nil {
		return resetCount{}, err
	}
	budgets, err := cl.ListBudgets(ctx, false)
	if err != nil {
		return resetCount{}, err
	}
	groups, err := cl.ListCronGroups(ctx)
	if err != nil {
		return resetCount{}, err
	}
	return resetCount{Jobs: jobs, Budgets: int64(len(budgets)), CronGroups: int64(len(groups))}, nil
}
