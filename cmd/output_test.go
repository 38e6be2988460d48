package cmd_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
	"github.com/zizq/zizq/cmd"
)

// TestOutput_Deleted checks that every delete prints one JSON shape with
// -o json, {"deleted":n}, and as a table a line naming what it deleted.
func TestOutput_Deleted(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("budget", "put", "k", "--allocation", "1", "--strategy", "while_in_flight")
	id := strings.TrimSpace(c.ok("job", "enqueue", "-q", "q", "-t", "t"))
	c.ok("job", "enqueue", "-q", "q", "-t", "t")
	c.ok("job", "enqueue", "-q", "q", "-t", "t")

	for _, args := range [][]string{{"budget", "delete", "k"}, {"job", "delete", id}} {
		r := c.run(append(args, "-o", "json")...)
		require.Equal(t, cmd.ExitOK, r.code, r.err)
		require.JSONEq(t, `{"deleted":1}`, r.out, "%v", args)
	}
	var d api.Deleted
	c.json(&d, "job", "delete", "--all", "--yes")
	require.Equal(t, int64(2), d.Deleted, "the bulk form has the same shape")

	c.ok("budget", "put", "k", "--allocation", "1", "--strategy", "while_in_flight")
	require.Equal(t, "Deleted budget 'k'.\n", c.ok("budget", "delete", "k"))
	id = strings.TrimSpace(c.ok("job", "enqueue", "-q", "q", "-t", "t"))
	require.Equal(t, "Deleted job "+id+".\n", c.ok("job", "delete", id))
	require.Equal(t, "Deleted 0 jobs.\n", c.ok("job", "delete", "--all", "--yes"))
	cl, err := client.New(c.url, client.Options{})
	require.NoError(t, err)
	_, err = cl.PutCronGroup(context.Background(), "nightly", api.CronGroupRequest{})
	require.NoError(t, err)
	require.Equal(t, "Deleted cron group 'nightly'.\n", c.ok("cron", "delete", "nightly"))
}

// TestOutput_EmptyLists checks that an empty listing keeps standard output
// empty and says so on standard error, as kubectl does.
func TestOutput_EmptyLists(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	for _, tc := range []struct {
		args []string
		note string
	}{
		{[]string{"job", "list"}, "No jobs found.\n"},
		{[]string{"job", "list", "--all"}, "No jobs found.\n"},
		{[]string{"job", "list", "--status", "dead"}, "No jobs found.\n"},
		{[]string{"budget", "list"}, "No budgets found.\n"},
	} {
		r := c.run(tc.args...)
		require.Equal(t, cmd.ExitOK, r.code, r.err)
		require.Empty(t, r.out, "%v", tc.args)
		require.Equal(t, tc.note, r.err, "%v", tc.args)
	}
	// -o json prints the empty objects.
	require.JSONEq(t, `{"budgets":[]}`, c.ok("budget", "list", "-o", "json"))
	require.JSONEq(t, `{"jobs":[]}`, c.ok("job", "list", "--all", "-o", "json"))
}

// TestClientFlags_OnlyOnClientCommands checks that the commands that talk
// to no server neither list nor take the client flags.
func TestClientFlags_OnlyOnClientCommands(t *testing.T) {
	t.Parallel()
	clientFlags := []string{"--url", "--output", "--timeout", "--ca-cert", "--client-cert", "--client-key"}
	for _, args := range [][]string{{}, {"serve"}, {"restore"}, {"tls"}, {"tls", "init"}, {"gendocs"}, {"completion", "bash"}} {
		r := runZizq(t, "", append(args, "--help")...)
		require.Equal(t, cmd.ExitOK, r.code, r.err)
		for _, f := range clientFlags {
			require.NotContains(t, r.out, f+" ", "%v --help lists %s", args, f)
		}
	}
	requireFails(t, runZizq(t, "", "serve", "--url", "http://127.0.0.1:1"), cmd.ExitUsage, "unknown flag: --url")
	requireFails(t, runZizq(t, "", "tls", "init", "-o", "json"), cmd.ExitUsage, "unknown shorthand flag: 'o'")
	for _, args := range [][]string{{"health"}, {"job", "list"}, {"budget", "get"}, {"version"}, {"top"}, {"backup"}, {"reset"}, {"bench"}} {
		r := runZizq(t, "", append(args, "--help")...)
		require.Equal(t, cmd.ExitOK, r.code, r.err)
		for _, f := range clientFlags {
			require.Contains(t, r.out, f+" ", "%v --help", args)
		}
	}
}

// TestJobFilter_Payload checks --filter, the server's jq filter over
// payloads, on every command that selects jobs.
func TestJobFilter_Payload(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	ann := strings.TrimSpace(c.ok("job", "enqueue", "-q", "q", "-t", "t", "--payload", `{"user":"ann","n":1}`))
	c.ok("job", "enqueue", "-q", "q", "-t", "t", "--payload", `{"user":"bob","n":2}`)
	c.ok("job", "enqueue", "-q", "q", "-t", "t", "--payload", `{"user":"ann","n":3}`)
	const isAnn = `.user == "ann"`

	var page api.JobList
	c.json(&page, "job", "list", "--filter", isAnn)
	require.Len(t, page.Jobs, 2)
	require.Equal(t, ann, page.Jobs[0].ID)
	require.Len(t, lines(c.ok("job", "list", "--all", "--filter", ".n > 1")), 3)
	require.Equal(t, "2\n", c.ok("job", "count", "--filter", isAnn))

	require.Equal(t, "2 jobs would be patched. Nothing was changed: run again with --yes to go ahead.\n",
		c.ok("job", "patch", "--filter", isAnn, "--priority", "3"))
	require.Equal(t, "Patched 2 jobs.\n", c.ok("job", "patch", "--filter", isAnn, "--priority", "3", "--yes"))
	require.Equal(t, "2\n", c.ok("job", "count", "--filter", isAnn))
	page = api.JobList{}
	c.json(&page, "job", "list", "--filter", ".n == 3")
	require.Equal(t, uint16(3), page.Jobs[0].Priority)

	require.Equal(t, "Deleted 1 job.\n", c.ok("job", "delete", "--filter", `.user == "bob"`, "--yes"))
	require.Equal(t, "2\n", c.ok("job", "count"))

	// A filter that does not compile is a usage error, before any request.
	down := freeURL(t)
	for _, args := range [][]string{{"list"}, {"count"}, {"delete", "--yes"}, {"patch", "--now", "--yes"}} {
		r := runZizq(t, "", append(append([]string{"job"}, args...), "--filter", ".user ==", "--url", down)...)
		requireFails(t, r, cmd.ExitUsage, "invalid --filter: ")
	}
	requireFails(t, runZizq(t, "", "job", "count", "--filter", "nosuchfn(1)", "--url", down), cmd.ExitUsage, "invalid --filter: function not defined: nosuchfn/1")
	c.fails(cmd.ExitUsage, "an ID and filters", "job", "delete", ann, "--filter", isAnn)
}
