// Package cmd is zizq's command tree: the server (`zizq serve`) and the
// client commands. Errors map to exit codes in one place (exit.go).
package cmd

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/internal/buildinfo"
)

// version is the version of this build. It is declared, and stamped, in
// internal/buildinfo: this name only reads it.
var version = buildinfo.Version

// IO holds the streams a command writes to, so tests can swap them.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
}

// Main runs the command line and returns the process exit code.
func Main() int {
	return Run(context.Background(), os.Args[1:], IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
}

// Run executes args against a fresh command tree.
func Run(ctx context.Context, args []string, streams IO) int {
	root := NewRoot(streams)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(streams.Err, "zizq:", err)
	return exitCode(err)
}

const rootIntro = `zizq is a job-queue server with server-side budgets (concurrency and rate
limits), and the command-line client for it.

Start a server with 'zizq serve'. The other commands talk to a running server
(--url, env ZIZQ_URL, default http://127.0.0.1:7890) and print tables, or the
server's JSON objects with -o json. Durations read Go syntax plus days (7d);
a bare number means milliseconds.`

// NewRoot builds the command tree.
func NewRoot(streams IO) *cobra.Command {
	root := &cobra.Command{
		Use:           "zizq",
		Short:         "Job-queue server with budgets, and its client",
		Long:          rootIntro + "\n\n" + exitCodesText(),
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(c *cobra.Command, _ []string) error {
			return c.Help()
		},
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.Err)
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(newServeCmd(streams))
	root.AddCommand(newRestoreCmd(streams))
	root.AddCommand(newTLSCmd(streams))
	addClientCommands(root, streams)
	root.AddCommand(newGendocsCmd())
	root.SetHelpCommand(newHelpCmd())
	// Added now rather than by Execute, so the man pages cover it and its
	// argument errors are usage errors too.
	root.InitDefaultCompletionCmd()
	checkArgs(root)
	nameMissingJobs(root)
	checkShellArg(root)
	return root
}
