package cmd_test

import (
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/cmd"
)

// TestArgs_NamedFromUse checks every command of the tree: a wrong number
// of arguments says what the command takes, in its own words ("budget get
// needs KEY"), never cobra's "accepts 1 arg(s)" or "unknown command".
func TestArgs_NamedFromUse(t *testing.T) {
	t.Parallel()
	root := cmd.NewRoot(cmd.IO{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard})
	var walk func(c *cobra.Command)
	checked := 0
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.HasSubCommands() || c.Args == nil {
			return
		}
		name := strings.TrimPrefix(c.CommandPath(), "zizq ")
		for _, args := range [][]string{nil, {"a", "b", "c", "d"}} {
			err := c.Args(c, args)
			if err == nil {
				continue
			}
			checked++
			msg := err.Error()
			require.True(t, strings.HasPrefix(msg, name+" "), "%s %v: %q", name, args, msg)
			require.NotContains(t, msg, "arg(s)", name)
			require.NotContains(t, msg, "unknown command", name)
		}
	}
	walk(root)
	require.Greater(t, checked, 30)
}
