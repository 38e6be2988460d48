package cmd_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/cmd"
)

func TestJobEnqueue(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("budget", "put", "svc:eu", "--allocation", "5", "--strategy", "while_in_flight")
	c.ok("budget", "put", "plain", "--allocation", "5", "--strategy", "while_in_flight")

	// Table output is the ID alone, ready for $(…).
	id := strings.TrimSpace(c.ok("job", "enqueue", "--queue", "q", "--type", "t", "--payload", `{"b":1,"a":[true]}`,
		"--priority", "7", "--budget", "svc:eu:2", "--budget", "plain"))
	require.True(t, api.ValidJobID(id), "%q", id)
	var j api.Job
	c.json(&j, "job", "get", id)
	require.Equal(t, `{"a":[true],"b":1}`, string(j.Payload))
	require.Equal(t, uint16(7), j.Priority)
	require.Equal(t, []api.Binding{{Key: "svc:eu", Cost: 2}, {Key: "plain", Cost: 1}}, j.Budgets,
		"KEY:COST splits on the last ':' followed by digits")

	j = api.Job{}
	c.json(&j, "job", "enqueue", "-q", "q", "-t", "t", "--budget", "svc:eu")
	require.Equal(t, []api.Binding{{Key: "svc:eu", Cost: 1}}, j.Budgets)
	require.Equal(t, api.StatusReady, j.Status)
	require.Empty(t, j.Payload, "-o json prints the server's answer, which has no payload")

	// The payload from standard input or a file; {} by default.
	j = api.Job{}
	c.json(&j, "job", "get", strings.TrimSpace(c.runIn(`[1, 2]`, "job", "enqueue", "-q", "q", "-t", "t", "--payload-file", "-").out))
	require.Equal(t, `[1,2]`, string(j.Payload))
	file := filepath.Join(t.TempDir(), "p.json")
	require.NoError(t, os.WriteFile(file, []byte(`"text"`), 0o644))
	j = api.Job{}
	c.json(&j, "job", "get", strings.TrimSpace(c.ok("job", "enqueue", "-q", "q", "-t", "t", "--payload-file", file)))
	require.Equal(t, `"text"`, string(j.Payload))
	j = api.Job{}
	c.json(&j, "job", "get", strings.TrimSpace(c.ok("job", "enqueue", "-q", "q", "-t", "t")))
	require.Equal(t, `{}`, string(j.Payload))

	// --at and --in.
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	j = api.Job{}
	c.json(&j, "job", "enqueue", "-q", "q", "-t", "t", "--at", at.Format(time.RFC3339))
	require.Equal(t, api.StatusScheduled, j.Status)
	require.Equal(t, uint64(at.UnixMilli()), j.ReadyAt)
	j = api.Job{}
	c.json(&j, "job", "enqueue", "-q", "q", "-t", "t", "--at", strconv.FormatInt(at.UnixMilli()+1, 10))
	require.Equal(t, uint64(at.UnixMilli()+1), j.ReadyAt)
	before := time.Now()
	j = api.Job{}
	c.json(&j, "job", "enqueue", "-q", "q", "-t", "t", "--in", "2h")
	require.Equal(t, api.StatusScheduled, j.Status)
	require.InDelta(t, before.Add(2*time.Hour).UnixMilli(), int64(j.ReadyAt), 5000)
	j = api.Job{}
	c.json(&j, "job", "enqueue", "-q", "q", "-t", "t", "--in", "1d")
	require.InDelta(t, before.Add(24*time.Hour).UnixMilli(), int64(j.ReadyAt), 5000)

	// Usage errors never reach the server.
	for _, tc := range []struct {
		msg  string
		args []string
	}{
		{"required flag --queue not set", []string{"-t", "t"}},
		{"required flag --type not set", []string{"-q", "q"}},
		{"--at and --in cannot be used together", []string{"-q", "q", "-t", "t", "--at", "1", "--in", "1s"}},
		{"--payload and --payload-file cannot be used together", []string{"-q", "q", "-t", "t", "--payload", "1", "--payload-file", "-"}},
		{`invalid --at "tomorrow"`, []string{"-q", "q", "-t", "t", "--at", "tomorrow"}},
		{`invalid duration "soon"`, []string{"-q", "q", "-t", "t", "--in", "soon"}},
		{"payload is not valid JSON", []string{"-q", "q", "-t", "t", "--payload", "{nope"}},
		{"read --payload-file", []string{"-q", "q", "-t", "t", "--payload-file", filepath.Join(t.TempDir(), "missing")}},
		{`invalid --budget ":3": budget key must not be empty`, []string{"-q", "q", "-t", "t", "--budget", ":3"}},
		{`--priority must be 0..65535, got "70000"`, []string{"-q", "q", "-t", "t", "--priority", "70000"}},
		{`--priority must be 0..65535, got "-5"`, []string{"-q", "q", "-t", "t", "--priority", "-5"}},
		{"unknown flag: --colour", []string{"-q", "q", "-t", "t", "--colour"}},
		{`job enqueue takes no arguments, got "extra"`, []string{"-q", "q", "-t", "t", "extra"}},
	} {
		c.fails(cmd.ExitUsage, tc.msg, append([]string{"job", "enqueue"}, tc.args...)...)
	}
	// The server's refusals.
	// A --budget KEY that does not exist is a not-found, as for budget get.
	c.fails(cmd.ExitNotFound, "budget 'nope' does not exist", "job", "enqueue", "-q", "q", "-t", "t", "--budget", "nope")
	c.fails(cmd.ExitNotFound, "budget 'nope' does not exist", "job", "enqueue", "-q", "q", "-t", "t", "--budget", "plain", "--budget", "nope:2")
	c.fails(cmd.ExitFailure, "job cost 9 exceeds budget 'plain' allocation 5", "job", "enqueue", "-q", "q", "-t", "t", "--budget", "plain:9")
	c.fails(cmd.ExitUsage, `invalid cost in --budget "plain:0"`, "job", "enqueue", "-q", "q", "-t", "t", "--budget", "plain:0")
	c.fails(cmd.ExitUsage, "queue must not contain '*'", "job", "enqueue", "-q", "q*", "-t", "t")
	// A key ending in ':' keeps it when no digits follow.
	c.fails(cmd.ExitNotFound, "budget 'plain:' does not exist", "job", "enqueue", "-q", "q", "-t", "t", "--budget", "plain:")
}

func TestJobEnqueue_Unique(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	first := c.run("job", "enqueue", "-q", "q", "-t", "t", "--unique-key", "report:1")
	require.Equal(t, cmd.ExitOK, first.code, first.err)
	require.Empty(t, first.err)
	id := strings.TrimSpace(first.out)
	var j api.Job
	c.json(&j, "job", "get", id)
	require.Equal(t, "report:1", j.UniqueKey)
	require.Equal(t, api.UniqueWhileQueued, j.UniqueWhile)

	// A duplicate prints the existing job's ID, and says so on stderr.
	dup := c.run("job", "enqueue", "-q", "other", "-t", "t", "--unique-key", "report:1", "--unique-while", "exists")
	require.Equal(t, cmd.ExitOK, dup.code, dup.err)
	require.Equal(t, id+"\n", dup.out)
	require.Equal(t, fmt.Sprintf("Not enqueued: job %s (ready) holds unique key \"report:1\".\n", id), dup.err)
	j = api.Job{}
	c.json(&j, "job", "enqueue", "-q", "q", "-t", "t", "--unique-key", "report:1")
	require.Equal(t, id, j.ID)
	require.True(t, *j.Duplicate)

	for _, scope := range []string{"active", "exists"} {
		j = api.Job{}
		c.json(&j, "job", "enqueue", "-q", "q", "-t", "t", "--unique-key", "k-"+scope, "--unique-while", scope)
		require.False(t, *j.Duplicate)
		require.Equal(t, scope, j.UniqueWhile)
	}

	for _, tc := range []struct {
		msg  string
		args []string
	}{
		{"--unique-while requires --unique-key", []string{"--unique-while", "queued"}},
		{`invalid --unique-while "always": use queued, active or exists`, []string{"--unique-key", "k", "--unique-while", "always"}},
		{"--unique-key must not be empty", []string{"--unique-key", ""}},
	} {
		c.fails(cmd.ExitUsage, tc.msg, append([]string{"job", "enqueue", "-q", "q", "-t", "t"}, tc.args...)...)
	}
}

func TestJobQueries(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("budget", "put", "one", "--allocation", "1", "--strategy", "while_in_flight")
	var ids []string
	for i := range 5 {
		args := []string{"job", "enqueue", "-q", "q", "-t", "t", "--payload", `{"n":` + strconv.Itoa(i) + `}`}
		if i >= 3 {
			args = []string{"job", "enqueue", "-q", "other", "-t", "u", "--budget", "one"}
		}
		ids = append(ids, strings.TrimSpace(c.ok(args...)))
	}
	scheduled := strings.TrimSpace(c.ok("job", "enqueue", "-q", "q", "-t", "t", "--in", "1h"))

	// get
	out := c.ok("job", "get", ids[0])
	require.Contains(t, out, "ID:        "+ids[0]+"\n")
	require.Contains(t, out, "Status:    ready\n")
	require.Contains(t, out, "Payload:   {\"n\":0}\n")
	c.fails(cmd.ExitNotFound, "job 0000000000000000000000000 not found", "job", "get", "0000000000000000000000000")

	// list
	out = c.ok("job", "list")
	rows := lines(out)
	require.Len(t, rows, 7)
	require.Equal(t, []string{"ID", "QUEUE", "TYPE", "STATUS", "PRIORITY", "ATTEMPTS", "READY", "AT", "BUDGETS"}, strings.Fields(rows[0]))
	require.Equal(t, ids[3], strings.Fields(rows[4])[0])
	require.Equal(t, "one:1", strings.Fields(rows[4])[8])

	out = c.ok("job", "list", "--queue", "other")
	require.Len(t, lines(out), 3)
	out = c.ok("job", "list", "--type", "t", "--status", "scheduled")
	require.Len(t, lines(out), 2)
	require.Contains(t, out, scheduled)
	out = c.ok("job", "list", "--budget", "one", "--status", "ready,scheduled")
	require.Len(t, lines(out), 3)

	var page api.JobList
	c.json(&page, "job", "list", "--limit", "2")
	require.Len(t, page.Jobs, 2)
	require.NotNil(t, page.Pages.Next, "-o json prints the server's page object")
	require.Equal(t, `{"n":0}`, string(page.Jobs[0].Payload))

	r := c.run("job", "list", "--limit", "2")
	require.Equal(t, cmd.ExitOK, r.code)
	require.Len(t, lines(r.out), 3)
	require.Contains(t, r.err, "--from "+ids[1])
	page = api.JobList{}
	c.json(&page, "job", "list", "--from", ids[1], "--limit", "1", "--order", "asc")
	require.Equal(t, ids[2], page.Jobs[0].ID)

	// --all follows pages; --limit caps the total.
	out = c.ok("job", "list", "--all", "-o", "json")
	var all map[string][]api.Job
	require.NoError(t, json.Unmarshal([]byte(out), &all))
	require.Len(t, all, 1, "one {\"jobs\":[…]} object")
	require.Len(t, all["jobs"], 6)
	all = nil
	c.json(&all, "job", "list", "--all", "--limit", "4", "--order", "desc")
	require.Len(t, all["jobs"], 4)
	require.Equal(t, scheduled, all["jobs"][0].ID)
	out = c.ok("job", "list", "--all", "--limit", "3")
	require.Len(t, lines(out), 4)
	all = nil
	c.json(&all, "job", "list", "--all", "--queue", "none")
	require.Equal(t, map[string][]api.Job{"jobs": {}}, all)

	c.fails(cmd.ExitUsage, `invalid --status "done"`, "job", "list", "--status", "done")
	c.fails(cmd.ExitUsage, `invalid --order "up"`, "job", "list", "--order", "up")
	// Flag ranges are checked before any request.
	c.fails(cmd.ExitUsage, "--limit must be 1..2000, got 5000", "job", "list", "--limit", "5000")
	c.fails(cmd.ExitUsage, `--limit must be at least 1, got "0"`, "job", "list", "--limit", "0")
	c.fails(cmd.ExitUsage, `--limit must be at least 1, got "many"`, "job", "list", "--limit", "many")
	require.Len(t, lines(c.ok("job", "list", "--all", "--limit", "5000")), 7, "with --all, --limit caps the total")

	// count
	require.Equal(t, "6\n", c.ok("job", "count"))
	require.Equal(t, "2\n", c.ok("job", "count", "--queue", "other"))
	require.Equal(t, "1\n", c.ok("job", "count", "--status", "scheduled"))
	var n api.Count
	c.json(&n, "job", "count", "--budget", "one", "--type", "u")
	require.Equal(t, int64(2), n.Count)
	c.fails(cmd.ExitUsage, `invalid --status "x"`, "job", "count", "--status", "x")

	// why
	out = c.ok("job", "why", scheduled)
	require.Contains(t, out, "Job "+scheduled+" is scheduled: it becomes ready at ")
	require.Regexp(t, `\(in (59m\d+s|1h)\)\.\n$`, out)
	out = c.ok("job", "why", ids[4])
	require.Equal(t, "Job "+ids[4]+" is ready and its budgets can pay: it waits for a worker (no worker serves queue other).\n", out)
	// A worker of "other" holds ids[3]: "one" is spent and ids[4] parks.
	require.Equal(t, ids[3], c.worker("other", 1, 1)[0].ID)
	out = c.ok("job", "why", ids[4])
	require.Equal(t, []string{
		"Job " + ids[4] + " is ready but parked: a budget cannot pay for it yet.",
		"",
		"BUDGET  COST  AVAILABLE  AHEAD  AFFORDABLE",
		"one     1     0          0      when running jobs finish",
	}, lines(out))
	var why api.Why
	c.json(&why, "job", "why", ids[4])
	require.Equal(t, api.WaitingBudget, why.WaitingFor)
	require.Equal(t, "one", why.Budgets[0].Key)
	c.fails(cmd.ExitNotFound, "job 0000000000000000000000000 not found", "job", "why", "0000000000000000000000000")

	// delete: it says what it deleted.
	r = c.run("job", "delete", ids[0])
	require.Equal(t, cmd.ExitOK, r.code, r.err)
	require.Equal(t, "Deleted job "+ids[0]+".\n", r.out)
	c.fails(cmd.ExitNotFound, "job "+ids[0]+" not found", "job", "delete", ids[0])
	c.fails(cmd.ExitUsage, "give a filter (--status, --queue, --type, --budget, --filter) or --all", "job", "delete")
	require.Equal(t, "5\n", c.ok("job", "count"))
}

// TestJobQueries_Parked: a busy worker holds the only token of a
// while_in_flight budget, three more jobs on it are parked and two
// unbudgeted ones are ready; --parked counts and lists exactly the three,
// and none before a worker connects (they wait for a worker).
func TestJobQueries_Parked(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("budget", "put", "one", "--allocation", "1", "--strategy", "while_in_flight")
	enqueue := func(args ...string) string {
		return strings.TrimSpace(c.ok(append([]string{"job", "enqueue", "-q", "w", "-t", "t"}, args...)...))
	}
	held := enqueue("--budget", "one")
	var parked []string
	for range 3 {
		parked = append(parked, enqueue("--budget", "one"))
	}
	enqueue()
	enqueue()

	require.Equal(t, "0\n", c.ok("job", "count", "--parked"), "no worker: nothing is parked")
	r := c.run("job", "list", "--parked")
	require.Equal(t, cmd.ExitOK, r.code, r.err)
	require.Empty(t, r.out)
	require.Equal(t, "No jobs found.\n", r.err)

	require.Equal(t, held, c.worker("w", 1, 1)[0].ID)
	require.Equal(t, "3\n", c.ok("job", "count", "--parked"))
	var n api.Count
	c.json(&n, "job", "count", "--parked", "--budget", "one")
	require.Equal(t, int64(3), n.Count)
	require.Equal(t, "5\n", c.ok("job", "count", "--status", "ready"), "parked jobs stay ready")

	var page api.JobList
	c.json(&page, "job", "list", "--parked")
	require.Len(t, page.Jobs, 3)
	for i, j := range page.Jobs {
		require.Equal(t, parked[i], j.ID)
		require.Equal(t, api.StatusReady, j.Status)
	}
	var all map[string][]api.Job
	c.json(&all, "job", "list", "--parked", "--all", "--limit", "2")
	require.Len(t, all["jobs"], 2, "--limit caps the total")

	rows := lines(c.ok("job", "list", "--parked", "--order", "desc"))
	require.Len(t, rows, 4)
	require.Equal(t, "ID", strings.Fields(rows[0])[0], "the table is unchanged")
	require.Equal(t, []string{parked[2], "w", "t", "ready"}, strings.Fields(rows[1])[:4])
	require.Equal(t, "0\n", c.ok("job", "count", "--parked", "--queue", "other"))

	// The bulk forms have no --parked: the set moves between their count
	// and their change.
	c.fails(cmd.ExitUsage, "unknown flag: --parked", "job", "delete", "--parked")
	require.Equal(t, "6\n", c.ok("job", "count"))
}

// TestJobCommands_IDCheckedBeforeAnyRequest runs against a port nothing
// listens on: an ID that cannot be a job's is a usage error (2), not
// "unreachable" (4), so no request was sent; `job delete ""` once deleted
// every job.
func TestJobCommands_IDCheckedBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	down := freeURL(t)
	for _, args := range [][]string{
		{"get", ""}, {"delete", ""}, {"why", "nope"}, {"errors", "../budgets"}, {"retry", "0000000000000000000000000x"},
		{"patch", "", "--now"}, {"get", "ABCDEFGHIJKLMNOPQRSTUVWXY"},
	} {
		r := runZizq(t, "", append(append([]string{"job"}, args...), "--url", down)...)
		requireFails(t, r, cmd.ExitUsage, fmt.Sprintf("invalid ID %q: a job ID is 25 characters of 0-9 and a-z", args[1]))
	}

	c := newCLI(t)
	id := strings.TrimSpace(c.ok("job", "enqueue", "-q", "q", "-t", "t"))
	c.fails(cmd.ExitUsage, `invalid ID ""`, "job", "delete", "")
	require.Equal(t, "1\n", c.ok("job", "count"), "nothing was deleted")
	c.ok("job", "get", id)
}
