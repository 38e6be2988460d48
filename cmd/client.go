package cmd

import "github.com/spf13/cobra"

// addClientCommands adds the commands that talk to a running server.
func addClientCommands(root *cobra.Command, streams IO) {}

// clientExitCode maps client errors to exit codes.
func clientExitCode(err error) (int, bool) { return 0, false }
