package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/spf13/cobra"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server/core"
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
	// The server takes fields it does not know and drops them, as Zizq
	// does; in a file, one is a typo that would go unnoticed.
	if err := unknownCronField(data, &req); err != nil {
		return api.CronGroupRequest{}, usageError{fmt.Errorf("-f %s: %w", path, err)}
	}
	for _, e := range req.Entries {
		if e.Job != nil && e.Job.Payload == nil {
			e.Job.Payload = api.Payload("{}") // as job enqueue sends without --payload
		}
	}
	return req, nil
}

// unknownCronField names the first member of a group file that is no
// field of its object (payloads are free), with the entry it is in.
func unknownCronField(data []byte, req *api.CronGroupRequest) error {
	var probe api.CronGroupRequest
	err := jsonv2.Unmarshal(data, &probe, jsonv2.RejectUnknownMembers(true))
	var se *jsonv2.SemanticError
	if err == nil || !errors.As(err, &se) || se.JSONPointer == "" {
		return nil // decoded already: any other complaint is this probe's own
	}
	ptr := se.JSONPointer
	parts := strings.Split(strings.TrimPrefix(string(ptr), "/"), "/")
	if len(parts) < 3 || parts[0] != "entries" {
		return fmt.Errorf("unknown field %q", ptr.LastToken())
	}
	i, err := strconv.Atoi(parts[1])
	if err != nil || i >= len(req.Entries) {
		return fmt.Errorf("unknown field %q", ptr.LastToken())
	}
	name := ""
	if n := req.Entries[i].Name; n != nil {
		name = *n
	}
	return fmt.Errorf("%s: unknown field %q", core.CronEntryLabel(i, name), fieldPath(parts[2:]))
}

// fieldPath writes JSON pointer tokens as a field path: job.budgets[0].cots.
func fieldPath(tokens []string) string {
	var b strings.Builder
	for _, tok := range tokens {
		if _, err := strconv.Atoi(tok); err == nil {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
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
	return cronEntryTable(f, g.Paused, g.Timezone, g.Entries)
}

// printCronEntry prints one entry as a one-row table.
func printCronEntry(f *Factory, e *api.CronEntry) error {
	if f.JSON() {
		return writeJSON(f.IO.Out, e)
	}
	return cronEntryTable(f, false, "", []api.CronEntry{*e})
}

// cronEntryTable prints entries; NEXT RUN says when each enqueues next,
// "paused" when it (or its group) will not. Times are in the zone each
// entry is evaluated in (its own, else its group's, groupTZ), else this
// machine's, and say which.
func cronEntryTable(f *Factory, groupPaused bool, groupTZ string, entries []api.CronEntry) error {
	now := time.Now()
	t := newTable(f.IO.Out, "ENTRY", "EXPRESSION", "TIMEZONE", "STATE", "NEXT RUN", "LAST RUN", "QUEUE", "TYPE")
	for _, e := range entries {
		loc := cronZone(or(e.Timezone, groupTZ))
		t.row(e.Name, e.Expression, or(e.Timezone, "-"), pausedWord(e.Paused), nextRun(groupPaused || e.Paused, e.NextEnqueueAt, now, loc),
			formatCronTime(e.LastEnqueueAt, loc), deref(e.Job.Queue), deref(e.Job.Type))
	}
	return t.flush()
}

// nextRun says when an entry enqueues next: "paused", "never" (no future
// occurrence), or the time in loc and how far off it is.
func nextRun(paused bool, next uint64, now time.Time, loc *time.Location) string {
	switch {
	case paused:
		return "paused"
	case next == 0:
		return "never"
	}
	return formatCronTime(next, loc) + " (" + formatUntil(int64(next), now) + ")"
}

// cronZone resolves a cron timezone for display; this machine's zone when
// there is none (or this machine does not know it).
func cronZone(name string) *time.Location {
	if name == "" {
		return time.Local
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.Local
	}
	return loc
}

// formatCronTime writes a cron time in loc with its zone, "2026-03-29
// 03:00:00 CEST" (an offset where the zone has no abbreviation), or "-".
func formatCronTime(ms uint64, loc *time.Location) string {
	if ms == 0 {
		return "-"
	}
	return time.UnixMilli(int64(ms)).In(loc).Format("2006-01-02 15:04:05 MST")
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
