package cmd

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/zizq/zizq/api"
)

func newCronCmd(f *Factory) *cobra.Command {
	c := parentCmd("cron", "Manage cron groups: jobs enqueued on a schedule",
		newCronListCmd(f),
		newCronGetCmd(f),
		newCronPutCmd(f),
		newCronDeleteCmd(f),
		newCronPauseCmd(f),
		newCronResumeCmd(f),
	)
	c.Long = `Manage cron groups: named sets of entries, each enqueuing its job on the
occurrences of a cron expression (5 fields, or 6 with seconds first) in its
timezone. A paused group or entry keeps its schedule moving and enqueues
nothing; occurrences missed while the server was down run once at start.`
	return c
}

// checkCronName refuses, before any request, a group or entry name that
// the server's rules refuse.
func checkCronName(what, name string) error {
	if err := api.ValidateName("cron "+what+" name", name); err != nil {
		return usageError{fmt.Errorf("invalid %s %q: %w", strings.ToUpper(what), name, err)}
	}
	if !utf8.ValidString(name) {
		return usageError{fmt.Errorf("invalid %s %q: it must be valid UTF-8", strings.ToUpper(what), name)}
	}
	return nil
}

// cronTarget splits GROUP or GROUP/ENTRY at the last '/'; a trailing '/'
// names a group whose own name holds one ("ops/eu/").
func cronTarget(arg string) (group, entry string, err error) {
	group = arg
	if i := strings.LastIndexByte(arg, '/'); i >= 0 {
		group, entry = arg[:i], arg[i+1:]
	}
	if err := checkCronName("group", group); err != nil {
		return "", "", err
	}
	if entry != "" {
		if err := checkCronName("entry", entry); err != nil {
			return "", "", err
		}
	}
	return group, entry, nil
}

// readCronFile reads a PUT /crons/{g} body from path ("-": standard input).
func readCronFile(path string, stdin io.Reader) (api.CronGroupRequest, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return api.CronGroupRequest{}, usageError{fmt.Errorf("read -f %s: %w", path, err)}
	}
	var req api.CronGroupRequest
	if err := api.Unmarshal(api.JSON, data, &req); err != nil {
		return api.CronGroupRequest{}, usageError{fmt.Errorf("-f %s: %w", path, err)}
	}
	if req.Entries == nil {
		return api.CronGroupRequest{}, usageError{fmt.Errorf(`-f %s: it needs "entries": the group's entries (an empty list for none)`, path)}
	}
	return req, nil
}

// pausedWord says whether a group or entry is paused.
func pausedWord(paused bool) string {
	if paused {
		return "paused"
	}
	return "active"
}

// printCronGroup prints a group: a line about it, then its entries.
func printCronGroup(f *Factory, g *api.CronGroup) error {
	if f.JSON() {
		return writeJSON(f.IO.Out, g)
	}
	tz := or(g.Timezone, "-")
	if _, err := fmt.Fprintf(f.IO.Out, "GROUP %s  %s  timezone %s  %d %s\n\n", g.Name, pausedWord(g.Paused), tz,
		len(g.Entries), plural(len(g.Entries), "entry", "entries")); err != nil {
		return err
	}
	return cronEntryTable(f, g.Paused, g.Entries)
}

// printCronEntry prints one entry as a one-row table.
func printCronEntry(f *Factory, e *api.CronEntry) error {
	if f.JSON() {
		return writeJSON(f.IO.Out, e)
	}
	return cronEntryTable(f, false, []api.CronEntry{*e})
}

// cronEntryTable prints entries; NEXT RUN says when each enqueues next,
// "paused" when it (or its group) will not.
func cronEntryTable(f *Factory, groupPaused bool, entries []api.CronEntry) error {
	now := time.Now()
	t := newTable(f.IO.Out, "ENTRY", "EXPRESSION", "TIMEZONE", "STATE", "NEXT RUN", "LAST RUN", "QUEUE", "TYPE")
	for _, e := range entries {
		t.row(e.Name, e.Expression, or(e.Timezone, "-"), pausedWord(e.Paused), nextRun(groupPaused || e.Paused, e.NextEnqueueAt, now),
			formatTime(e.LastEnqueueAt), deref(e.Job.Queue), deref(e.Job.Type))
	}
	return t.flush()
}

// nextRun says when an entry enqueues next: "paused", "never" (no future
// occurrence), or the time and how far off it is.
func nextRun(paused bool, next uint64, now time.Time) string {
	switch {
	case paused:
		return "paused"
	case next == 0:
		return "never"
	}
	return formatTime(next) + " (" + formatUntil(int64(next), now) + ")"
}

func deref(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

// completeCronGroupArg completes the first argument with a group name.
func (f *Factory) completeCronGroupArg(c *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	cl, ctx, cancel, ok := f.completionClient(c)
	if !ok {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer cancel()
	names, err := cl.ListCronGroups(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}
