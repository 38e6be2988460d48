package cmd

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
)

// CronPutOptions are the settings of `cron put`.
type CronPutOptions struct {
	File string
}

func newCronPutCmd(f *Factory) *cobra.Command {
	o := &CronPutOptions{}
	c := &cobra.Command{
		Use:   "put GROUP -f FILE",
		Short: "Create a cron group or replace it whole",
		Long: `Create a cron group, or replace it whole, from a JSON file (-f -: standard
input) holding the body of PUT /crons/GROUP:

  {"timezone": "Europe/Paris", "paused": false, "entries": [
    {"name": "nightly", "expression": "0 3 * * *",
     "job": {"type": "report", "queue": "ops", "payload": {}}}]}

Entries the file does not name are deleted; an entry whose expression and
timezone are unchanged keeps its next and last run. "timezone" applies to
the entries without their own; "paused" absent keeps the group's state.
A job without "payload" enqueues {}, as job enqueue does; a field name the
file misspells is refused, naming its entry. A template that binds a budget
that does not exist (without create_with) is refused: exit code 3.`,
		Example:           `  zizq cron put nightly -f nightly.json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: f.completeCronGroupArg,
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkCronName("group", args[0]); err != nil {
				return err
			}
			if err := requireFlags(c, "file"); err != nil {
				return err
			}
			req, err := readCronFile(o.File, f.IO.In)
			if err != nil {
				return err
			}
			cl, err := f.Client()
			if err != nil {
				return err
			}
			g, err := cl.PutCronGroup(c.Context(), args[0], req)
			if err != nil {
				return missingTemplateBudget(c.Context(), cl, req, err)
			}
			return printCronGroup(f, g)
		},
	}
	c.Flags().StringVarP(&o.File, "file", "f", "", "JSON file of the group (- reads standard input)")
	return c
}

// missingTemplateBudget makes a refusal of a template that binds a budget
// that does not exist a not-found, as job enqueue does for --budget. A
// binding with create_with makes its budget, so it is not looked up.
func missingTemplateBudget(ctx context.Context, cl *client.Client, req api.CronGroupRequest, err error) error {
	var bound api.EnqueueRequest
	for _, e := range req.Entries {
		if e.Job == nil {
			continue
		}
		for _, b := range e.Job.Budgets {
			if b.Key != nil && b.CreateWith == nil {
				bound.Budgets = append(bound.Budgets, b)
			}
		}
	}
	return missingBudget(ctx, cl, bound, err)
}
