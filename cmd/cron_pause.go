package cmd

import "github.com/spf13/cobra"

func newCronPauseCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "pause TARGET",
		Short: "Pause a cron group (GROUP) or one entry (GROUP/ENTRY)",
		Long: `Pause a cron group, TARGET = GROUP, or one of its entries, TARGET =
GROUP/ENTRY (split at the last '/'; end with '/' to name a group whose own
name holds one). Its schedule keeps moving on; nothing is enqueued until it
is resumed. It prints the group or the entry.`,
		Example:           "  zizq cron pause nightly\n  zizq cron pause nightly/report",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: f.completeCronGroupArg,
		RunE:              setCronPaused(f, true),
	}
}

// setCronPaused runs `cron pause` and `cron resume`.
func setCronPaused(f *Factory, paused bool) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, args []string) error {
		group, entry, err := cronTarget(args[0])
		if err != nil {
			return err
		}
		cl, err := f.Client()
		if err != nil {
			return err
		}
		if entry == "" {
			g, err := cl.PauseCronGroup(c.Context(), group, paused)
			if err != nil {
				return err
			}
			return printCronGroup(f, g)
		}
		e, err := cl.PauseCronEntry(c.Context(), group, entry, paused)
		if err != nil {
			return err
		}
		return printCronEntry(f, e)
	}
}
