package cmd

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/api"
)

func newCronListCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List cron groups with their next run",
		Long: `List every cron group, sorted by name: paused or not, its entries (how many
are paused), and its next run: the earliest occurrence that will enqueue a
job, and of which entry.

-o json prints the server's {"crons":[…]} object: the group names.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cl, err := f.Client()
			if err != nil {
				return err
			}
			if f.JSON() {
				names, err := cl.ListCronGroups(c.Context())
				if err != nil {
					return err
				}
				if names == nil {
					names = []string{}
				}
				return writeJSON(f.IO.Out, api.CronList{Crons: names})
			}
			// One call gives every group at a glance, however many entries.
			st, err := cl.Stats(c.Context())
			if err != nil {
				return err
			}
			if len(st.Crons) == 0 {
				_, err := fmt.Fprintln(f.IO.Err, "No cron groups found.")
				return err
			}
			return cronListTable(f, st.Crons)
		},
	}
}

func cronListTable(f *Factory, crons []api.CronStats) error {
	now := time.Now()
	t := newTable(f.IO.Out, "GROUP", "STATE", "ENTRIES", "PAUSED", "NEXT RUN", "NEXT ENTRY", "LAST RUN")
	for _, g := range crons {
		next, entry := "-", "-"
		if g.NextEnqueueAt != 0 {
			next, entry = formatCronTime(g.NextEnqueueAt, time.Local)+" ("+formatUntil(int64(g.NextEnqueueAt), now)+")", g.NextEntry
		}
		t.row(g.Name, pausedWord(g.Paused), strconv.Itoa(g.Entries), strconv.Itoa(g.PausedEntries), next, entry, formatCronTime(g.LastEnqueueAt, time.Local))
	}
	return t.flush()
}
