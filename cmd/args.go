package cmd

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// checkArgs gives every command of the tree argument errors that are
// usage errors and say what the command wants: a group suggests the
// subcommand meant, a command names its arguments from its Use line.
func checkArgs(c *cobra.Command) {
	c.SuggestFor = append(c.SuggestFor, synonyms[c.Name()]...)
	switch {
	case c.HasSubCommands():
		c.Args = subcommandArgs
	case c.Args != nil:
		check := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return usageError{argCountError(cmd, args, err)}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		checkArgs(sub)
	}
}

// synonyms are the words of other tools for some of our commands: typed
// in place of the command's name they suggest it.
var synonyms = map[string][]string{
	"list":   {"ls"},
	"get":    {"show", "describe", "info"},
	"delete": {"rm", "remove", "del"},
	"create": {"add", "new"},
}

// subcommandArgs is the argument check of a group: an argument can only be
// a subcommand that does not exist.
func subcommandArgs(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	return unknownCommand(c, args[0])
}

// unknownCommand is the usage error of a word that is not a subcommand of
// c, with cobra's suggestions of what was meant.
func unknownCommand(c *cobra.Command, word string) error {
	msg := fmt.Sprintf("unknown command %q for %q", word, c.CommandPath())
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2 // cobra's own default
	}
	return usageError{errors.New(didYouMean(msg, c.SuggestionsFor(word)))}
}

// didYouMean appends to the message of an unknown word (a command, a
// flag) what it may have meant, the same way for both.
func didYouMean(msg string, suggestions []string) string {
	var unique []string // cobra may find a command by its name and by SuggestFor
	for _, s := range suggestions {
		if !slices.Contains(unique, s) {
			unique = append(unique, s)
		}
	}
	if len(unique) == 0 {
		return msg
	}
	return msg + "\n\nDid you mean this?\n\t" + strings.Join(unique, "\n\t")
}

// argCountError rewrites the error of a wrong number of arguments with the
// names of the command's Use line: "budget get needs KEY". Any other error
// of the check is kept.
func argCountError(c *cobra.Command, args []string, err error) error {
	required, optional := positionals(c.Use)
	all := append(append([]string(nil), required...), optional...)
	name := strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")
	switch {
	case len(args) < len(required):
		return fmt.Errorf("%s needs %s", name, strings.Join(required[len(args):], " "))
	case len(all) == 0 && len(args) > 0:
		return fmt.Errorf("%s takes no arguments, got %q", name, args[0])
	case len(args) > len(all):
		return fmt.Errorf("%s takes only %s, got %d arguments", name, strings.Join(all, " "), len(args))
	}
	return err
}

// positionals reads the positional arguments from a Use line such as
// "create KEY --allocation N [--burst N]" or "delete [ID] [--all]": the
// upper-case words that are not the value of a flag, optional when in
// brackets.
func positionals(use string) (required, optional []string) {
	words := strings.Fields(use)
	afterFlag := false
	for _, w := range words[min(1, len(words)):] {
		bare := strings.TrimSuffix(strings.Trim(w, "[]"), "...")
		switch {
		case w == "|":
			continue
		case strings.HasPrefix(bare, "-"):
			afterFlag = true
			continue
		case afterFlag || !isArgName(bare):
		case strings.HasPrefix(w, "["):
			optional = append(optional, bare)
		default:
			required = append(required, bare)
		}
		afterFlag = false
	}
	return required, optional
}

func isArgName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < 'A' || r > 'Z') && r != '_' {
			return false
		}
	}
	return true
}

// newHelpCmd replaces cobra's help command, which prints the root's help
// and succeeds when asked about a command that does not exist.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND]...",
		Short: "Help about any command",
		Long:  "Print the help of a command: zizq help job enqueue.",
		Args:  cobra.ArbitraryArgs,
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			target, _, err := c.Root().Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return subcommandNames(target, toComplete), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := c.Root().Find(args)
			if err != nil {
				return usageError{err}
			}
			if len(rest) > 0 {
				return unknownCommand(target, rest[0])
			}
			return target.Help()
		},
	}
}

// subcommandNames completes the names of c's subcommands, each with its
// summary.
func subcommandNames(c *cobra.Command, toComplete string) []string {
	var names []string
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
			names = append(names, sub.Name()+"\t"+sub.Short)
		}
	}
	return names
}

// checkShellArg makes `zizq completion SHELL` refuse a shell it has no
// script for (cobra's command prints its help and succeeds).
func checkShellArg(root *cobra.Command) {
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		var shells []string
		for _, sub := range c.Commands() {
			shells = append(shells, sub.Name())
		}
		c.Args = func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			return usageError{fmt.Errorf("no completion script for %q: the shells are %s", args[0], strings.Join(shells, ", "))}
		}
		c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	}
}
