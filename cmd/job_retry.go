package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/api"
)

func newJobRetryCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "retry ID",
		Short: "Run a dead job again",
		Long: `Run a dead job again: it becomes ready now, keeping its payload, budgets,
overrides and error history (POST /jobs/{id}/retry, a zizq extension).

Its attempts are kept too, so a job that died of its retry limit dies again
at its next failure; raise the limit first to give it more tries:

  zizq job retry ID && zizq job patch ID --retry-limit 30

Fails (exit 1) when the job is not dead, or a budget it is bound to was
deleted; exit 3 when there is no such job.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: f.completeJobIDs(api.StatusDead),
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkJobID(args[0]); err != nil {
				return err
			}
			cl, err := f.Client()
			if err != nil {
				return err
			}
			j, err := cl.RetryJob(c.Context(), args[0])
			if err != nil {
				return err
			}
			if f.JSON() {
				return writeJSON(f.IO.Out, j)
			}
			_, err = fmt.Fprintf(f.IO.Out, "Job %s is %s again (attempts so far: %d).\n", j.ID, j.Status, j.Attempts)
			return err
		},
	}
}
