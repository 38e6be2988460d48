package cmd

import (
	"github.com/spf13/cobra"
	"github.com/zizq/zizq/store"
)

// completeServeFlags offers the values of the `zizq serve` flags that take
// a word from a fixed set.
func completeServeFlags(c *cobra.Command) {
	modes := []string{store.Buffered.String(), store.Fsync.String()}
	for flag, values := range map[string][]string{
		"log-level":           {"debug", "info", "warn", "error"},
		"log-format":          {"text", "json"},
		"log-rotation":        {rotateDaily, rotateHourly, rotateNever},
		"default-commit-mode": modes,
		"enqueue-commit-mode": modes,
	} {
		_ = c.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
	}
}
