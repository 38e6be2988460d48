package cmd

import "github.com/spf13/cobra"

func newCronResumeCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "resume TARGET",
		Short: "Resume a cron group (GROUP) or one entry (GROUP/ENTRY)",
		Long: `Resume a paused cron group, TARGET = GROUP, or one of its entries, TARGET =
GROUP/ENTRY (split at the last '/'). It enqueues again from its next
occurrence on: the ones that passed while it was paused do not run. A
paused entry of a resumed group stays paused. It prints the group or the
entry.`,
		Example:           "  zizq cron resume nightly\n  zizq cron resume nightly/report",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: f.completeCronGroupArg,
		RunE:              setCronPaused(f, false),
	}
}
