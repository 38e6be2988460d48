// Package cmd is zizq's command tree: the server (`zizq serve`) and the
// client commands. Main maps errors to exit codes in one place.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/internal/buildinfo"
)

// Exit codes, documented in `zizq --help`.
const (
	ExitOK          = 0
	ExitFailure     = 1
	ExitUsage       = 2
	ExitNotFound    = 3
	ExitUnreachable = 4
)

// version is the version of this build. It is declared, and stamped, in
// internal/buildinfo: this name only reads it.
var version = buildinfo.Version

// IO holds the streams a command writes to, so tests can swap them.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
}

// usageError marks flag and argument mistakes (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

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

func exitCode(err error) int {
	var ue usageError
	if errors.As(err, &ue) {
		return ExitUsage
	}
	if code, ok := clientExitCode(err); ok {
		return code
	}
	return ExitFailure
}

const rootLong = `zizq is a job-queue server with server-side budgets (concurrency and rate
limits), and the command-line client for it.

Start a server with 'zizq serve'. The other commands talk to a running server
(--url, env ZIZQ_URL, default http://127.0.0.1:7890) and print tables, or the
server's JSON objects with -o json. Durations read Go syntax plus days (7d);
a bare number means milliseconds.

Exit codes:
  0  success
  1  any other failure (conflict, validation, server error, ...)
  2  usage error (unknown command, bad flag or argument)
  3  not found
  4  server unreachable (the message names the URL tried)`

// NewRoot builds the command tree.
func NewRoot(streams IO) *cobra.Command {
	root := &cobra.Command{
		Use:           "zizq",
		Short:         "Job-queue server with budgets, and its client",
		Long:          rootLong,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return c.Help()
		},
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.Err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newServeCmd(streams))
	root.AddCommand(newRestoreCmd(streams))
	root.AddCommand(newTLSCmd(streams))
	addClientCommands(root, streams)
	root.AddCommand(newGendocsCmd())
	// Added now rather than by Execute, so the man pages cover it and its
	// argument errors are usage errors too.
	root.InitDefaultCompletionCmd()
	wrapArgs(root)
	return root
}

// wrapArgs marks argument-count errors as usage errors throughout the tree.
func wrapArgs(c *cobra.Command) {
	if c.Args != nil {
		check := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return usageError{err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		wrapArgs(sub)
	}
}
