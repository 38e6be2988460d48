package cmd_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/cmd"
)

// nightly is a group file as `cron put -f` reads it; its entries run
// once a year, so no run comes during the test.
const nightly = `{"timezone":"Europe/Paris","entries":[
  {"name":"report","expression":"0 3 1 1 *","job":{"type":"report","queue":"ops","payload":{"full":true}}},
  {"name":"cleanup","expression":"0 0 1 1 *","timezone":"UTC","job":{"type":"cleanup","queue":"ops","payload":{}}}]}`

func TestCronCommands(t *testing.T) {
	t.Parallel()
	c := newCLI(t)

	r := c.run("cron", "list")
	require.Equal(t, cmd.ExitOK, r.code, r.err)
	require.Empty(t, r.out)
	require.Equal(t, "No cron groups found.\n", r.err)
	var names api.CronList
	c.json(&names, "cron", "list")
	require.Equal(t, []string{}, names.Crons)

	file := filepath.Join(t.TempDir(), "nightly.json")
	require.NoError(t, os.WriteFile(file, []byte(nightly), 0o600))
	out := c.ok("cron", "put", "nightly", "-f", file)
	rows := lines(out)
	require.Equal(t, "GROUP nightly  active  timezone Europe/Paris  2 entries", rows[0])
	require.Equal(t, []string{"ENTRY", "EXPRESSION", "TIMEZONE", "STATE", "NEXT", "RUN", "LAST", "RUN", "QUEUE", "TYPE"}, strings.Fields(rows[2]))
	require.Equal(t, []string{"cleanup", "0", "0", "1", "1", "*", "UTC", "active"}, strings.Fields(rows[3])[:8])
	require.Contains(t, rows[3], "2027-01-01 00:00:00 UTC (in ", "next run, in the entry's zone, which it names")
	require.Contains(t, rows[4], "2027-01-01 03:00:00 CET (in ", "the group's zone")
	require.Equal(t, []string{"-", "ops", "cleanup"}, last(strings.Fields(rows[3]), 3), "never ran yet")
	require.Equal(t, "report", strings.Fields(rows[4])[0])

	// -f - reads standard input; -o json prints the server's group.
	var g api.CronGroup
	r = c.runIn(`{"paused":true,"entries":[]}`, "cron", "put", "idle", "-f", "-", "-o", "json")
	require.Equal(t, cmd.ExitOK, r.code, r.err)
	require.NoError(t, api.Unmarshal(api.JSON, []byte(r.out), &g))
	require.True(t, g.Paused)
	require.Empty(t, g.Entries)

	c.json(&g, "cron", "get", "nightly")
	require.Equal(t, "Europe/Paris", g.Timezone)
	require.Equal(t, []string{"cleanup", "report"}, []string{g.Entries[0].Name, g.Entries[1].Name})
	require.Equal(t, `{"full":true}`, string(g.Entries[1].Job.Payload))

	out = c.ok("cron", "list")
	rows = lines(out)
	require.Equal(t, []string{"GROUP", "STATE", "ENTRIES", "PAUSED", "NEXT", "RUN", "NEXT", "ENTRY", "LAST", "RUN"}, strings.Fields(rows[0]))
	require.Equal(t, []string{"idle", "paused", "0", "0", "-", "-", "-"}, strings.Fields(rows[1]))
	f := strings.Fields(rows[2])
	require.Equal(t, []string{"nightly", "active", "2", "0"}, f[:4])
	require.Equal(t, []string{"cleanup", "-"}, last(f, 2), "the earliest run: 0:00 UTC, before 3:00 in Paris (2:00 UTC)")

	// Pause and resume a group, then one entry.
	out = c.ok("cron", "pause", "nightly")
	require.Contains(t, lines(out)[0], "GROUP nightly  paused")
	require.Contains(t, lines(out)[3], " paused ", "the group's entries do not run")
	var e api.CronEntry
	c.json(&e, "cron", "pause", "nightly/report")
	require.True(t, e.Paused)
	require.NotZero(t, e.PausedAt)
	c.json(&g, "cron", "resume", "nightly")
	require.False(t, g.Paused)
	require.True(t, g.Entries[1].Paused, "a paused entry stays paused")
	out = c.ok("cron", "resume", "nightly/report")
	require.Equal(t, "report", strings.Fields(lines(out)[1])[0])
	require.Contains(t, lines(out)[1], " active ")

	// Failures: usage (2), not found (3), refused (1).
	c.fails(cmd.ExitUsage, "required flag --file not set", "cron", "put", "x")
	c.fails(cmd.ExitUsage, "read -f /nonexistent.json", "cron", "put", "x", "-f", "/nonexistent.json")
	requireFails(t, c.runIn(`{"entries":`, "cron", "put", "x", "-f", "-"), cmd.ExitUsage, "-f -: invalid JSON")
	requireFails(t, c.runIn(`{}`, "cron", "put", "x", "-f", "-"), cmd.ExitUsage, `it needs "entries"`)
	c.fails(cmd.ExitUsage, `invalid GROUP "a,b"`, "cron", "get", "a,b")
	c.fails(cmd.ExitUsage, `invalid ENTRY "e*"`, "cron", "pause", "g/e*")
	c.fails(cmd.ExitUsage, "cron pause needs TARGET", "cron", "pause")
	c.fails(cmd.ExitNotFound, "cron group 'nope' not found", "cron", "get", "nope")
	c.fails(cmd.ExitNotFound, "cron entry 'x' not found in group 'nightly'", "cron", "resume", "nightly/x")
	c.fails(cmd.ExitNotFound, "cron group 'nope' not found", "cron", "pause", "nope")
	requireFails(t, c.runIn(`{"entries":[{"name":"e","expression":"soon","job":{"type":"t","queue":"q","payload":{}}}]}`, "cron", "put", "x", "-f", "-"),
		cmd.ExitFailure, "invalid cron expression")

	// The file's mistakes name their entry; a typo in a field name is one.
	requireFails(t, c.runIn(`{"entries":[{"name":"a","expression":"0 0 1 1 *","job":{"type":"t","queue":"q"}},
		{"name":"nightly","expresion":"0 3 * * *","job":{"type":"t","queue":"q"}}]}`, "cron", "put", "x", "-f", "-"),
		cmd.ExitUsage, `-f -: entries[1] "nightly": unknown field "expresion"`)
	requireFails(t, c.runIn(`{"entries":[{"name":"a","expression":"0 0 1 1 *","job":{"type":"t","queue":"q","budgets":[{"key":"k","cots":2}]}}]}`,
		"cron", "put", "x", "-f", "-"), cmd.ExitUsage, `-f -: entries[0] "a": unknown field "job.budgets[0].cots"`)
	requireFails(t, c.runIn(`{"timezon":"UTC","entries":[]}`, "cron", "put", "x", "-f", "-"), cmd.ExitUsage, `-f -: unknown field "timezon"`)
	requireFails(t, c.runIn(`{"entries":[{"name":"a","expression":"0 0 1 1 *","job":{"type":"t","queue":"q"}},{"name":"b","job":{"type":"t","queue":"q"}}]}`,
		"cron", "put", "x", "-f", "-"), cmd.ExitFailure, "entries[1] \"b\": invalid JSON: missing field `expression`")
	// A budget that does not exist is not found, as with job enqueue,
	// unless the binding creates it.
	requireFails(t, c.runIn(`{"entries":[{"name":"nightly","expression":"0 3 * * *","job":{"type":"t","queue":"q","budgets":[{"key":"nitely"}]}}]}`,
		"cron", "put", "x", "-f", "-"), cmd.ExitNotFound, `entries[0] "nightly": budget 'nitely' does not exist`)
	requireFails(t, c.runIn(`{"entries":[{"name":"fast","expression":"@every 0s","job":{"type":"t","queue":"q","budgets":[{"key":"k","create_with":{"allocation":1,"strategy":{"type":"while_in_flight"}}}]}}]}`,
		"cron", "put", "x", "-f", "-"), cmd.ExitFailure, `entries[0] "fast": invalid cron expression "@every 0s": the interval must be at least 1s`)
	c.fails(cmd.ExitNotFound, "cron group 'x' not found", "cron", "get", "x")
	// A template without a payload gets {}, as job enqueue sends.
	r = c.runIn(`{"entries":[{"name":"e","expression":"0 0 1 1 *","job":{"type":"t","queue":"q"}}]}`, "cron", "put", "bare", "-f", "-", "-o", "json")
	require.Equal(t, cmd.ExitOK, r.code, r.err)
	require.NoError(t, api.Unmarshal(api.JSON, []byte(r.out), &g))
	require.Equal(t, `{}`, string(g.Entries[0].Job.Payload))

	r = c.run("cron", "delete", "idle")
	require.Equal(t, cmd.ExitOK, r.code, r.err)
	require.Equal(t, "Deleted cron group 'idle'.\n", r.out)
	c.json(&struct{ Deleted int }{}, "cron", "delete", "nightly")
	c.fails(cmd.ExitNotFound, "cron group 'nightly' not found", "cron", "delete", "nightly")
}

// TestCronTarget: GROUP/ENTRY splits at the last '/', and a trailing '/'
// names a group whose own name holds one.
func TestCronCommands_SlashInGroup(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("cron", "put", "ops/eu", "-f", writeTemp(t, `{"entries":[{"name":"e","expression":"0 0 1 1 *","job":{"type":"t","queue":"q","payload":{}}}]}`))
	var e api.CronEntry
	c.json(&e, "cron", "pause", "ops/eu/e")
	require.True(t, e.Paused)
	var g api.CronGroup
	c.json(&g, "cron", "pause", "ops/eu/")
	require.Equal(t, "ops/eu", g.Name)
	require.True(t, g.Paused)
}

func writeTemp(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f.json")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

func last(s []string, n int) []string { return s[len(s)-n:] }
