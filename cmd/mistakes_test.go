package cmd_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
	"github.com/zizq/zizq/cmd"
)

// TestFlags_QueueAndTypeShorthands checks that -q and -t, the shorthands
// of `job enqueue`, mean --queue and --type on every command that takes
// them.
func TestFlags_QueueAndTypeShorthands(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	id := strings.TrimSpace(c.ok("job", "enqueue", "-q", "emails", "-t", "send"))
	c.ok("job", "enqueue", "-q", "images", "-t", "resize")

	rows := lines(c.ok("job", "list", "-q", "emails", "-t", "send"))
	require.Len(t, rows, 2)
	require.Equal(t, id, strings.Fields(rows[1])[0])
	require.Equal(t, "1\n", c.ok("job", "count", "-q", "images"))
	require.Equal(t, "Patched 1 job.\n", c.ok("job", "patch", "-q", "images", "-t", "resize", "--priority", "1", "--yes"))
	require.Equal(t, "Deleted 1 job.\n", c.ok("job", "delete", "-q", "emails", "-y"))
	require.Equal(t, "1\n", c.ok("job", "count"))
	for _, args := range [][]string{{"job", "list", "--help"}, {"job", "count", "--help"}, {"job", "delete", "--help"}, {"job", "patch", "--help"}} {
		out := c.ok(args...)
		require.Contains(t, out, "-q, --queue", args)
		require.Contains(t, out, "-t, --type", args)
	}
}

// TestFlags_DidYouMean checks that an unknown flag or command anywhere in
// the tree is a usage error that suggests what was meant.
func TestFlags_DidYouMean(t *testing.T) {
	t.Parallel()
	down := freeURL(t)
	for _, tc := range []struct {
		args    []string
		msg     string
		suggest string
	}{
		{[]string{"job", "list", "--queu", "x"}, "unknown flag: --queu", "--queue"},
		{[]string{"job", "enqueue", "--priorty", "1"}, "unknown flag: --priorty", "--priority"},
		{[]string{"budget", "create", "k", "--alocation", "1"}, "unknown flag: --alocation", "--allocation"},
		{[]string{"job", "list", "--limt", "5"}, "unknown flag: --limt", "--limit"},
		{[]string{"budget", "list", "--ur", down}, "unknown flag: --ur", "--url"},
		{[]string{"serve", "--prot", "1"}, "unknown flag: --prot", "--port"},
		{[]string{"budget", "list", "-url", down}, "unknown shorthand flag: 'u' in -url", "--url"},
		{[]string{"jobs", "list"}, `unknown command "jobs" for "zizq"`, "job"},
		{[]string{"budget", "ls"}, `unknown command "ls" for "zizq budget"`, "list"},
		{[]string{"job", "rm", "x"}, `unknown command "rm" for "zizq job"`, "delete"},
		{[]string{"cron", "show", "g"}, `unknown command "show" for "zizq cron"`, "get"},
	} {
		r := runZizq(t, "", tc.args...)
		requireFails(t, r, cmd.ExitUsage, tc.msg)
		require.Contains(t, r.err, "Did you mean this?\n\t", tc.args)
		require.Contains(t, lines(r.err[strings.Index(r.err, "Did you mean"):]), "\t"+tc.suggest, tc.args)
	}
	r := runZizq(t, "", "budget", "ls")
	require.Equal(t, 1, strings.Count(r.err, "\tlist"), "each suggestion once: %s", r.err)
	r = runZizq(t, "", "job", "list", "--zzzzzz")
	requireFails(t, r, cmd.ExitUsage, "unknown flag: --zzzzzz")
	require.NotContains(t, r.err, "Did you mean", "nothing near")
}

// TestFlags_CheckedBeforeAnyRequest runs against a port nothing listens
// on: every value the server would refuse is a usage error (2) naming the
// flag, not "unreachable" (4), so no request was sent.
func TestFlags_CheckedBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	down := freeURL(t)
	const id = "0000000000000000000000000"
	for _, tc := range []struct {
		name, msg string
		args      []string
	}{
		{"EmptyQueue", "queue must not be empty", []string{"job", "enqueue", "-q", "", "-t", "t"}},
		{"EmptyType", "type must not be empty", []string{"job", "enqueue", "-q", "q", "-t", ""}},
		{"ReservedQueue", "queue must not contain '*' (reserved)", []string{"job", "enqueue", "-q", "a*", "-t", "t"}},
		{"ZeroCost", `invalid cost in --budget "k:0": a cost is a whole number, at least 1`, []string{"job", "enqueue", "-q", "q", "-t", "t", "--budget", "k:0"}},
		{"NegativeCost", `invalid cost in --budget "k:-1"`, []string{"job", "enqueue", "-q", "q", "-t", "t", "--budget", "k:-1"}},
		{"HugeCost", `invalid cost in --budget "k:99999999999999999999"`, []string{"job", "enqueue", "-q", "q", "-t", "t", "--budget", "k:99999999999999999999"}},
		{"BudgetTwice", `--budget "k" is given more than once`, []string{"job", "enqueue", "-q", "q", "-t", "t", "--budget", "k:1", "--budget", "k:2"}},
		{"AtPastLatest", "invalid --at: ", []string{"job", "enqueue", "-q", "q", "-t", "t", "--at", "99999999999999"}},
		{"InPastLatest", "invalid --in: ", []string{"job", "enqueue", "-q", "q", "-t", "t", "--in", "100000d"}},
		{"PatchAtPastLatest", "invalid --at: ", []string{"job", "patch", id, "--at", "99999999999999"}},
		{"PatchNegativeExponent", "--backoff-exponent must be a finite number, at least 0", []string{"job", "patch", id, "--backoff-exponent", "-1", "--backoff-base", "1s", "--backoff-jitter", "1s"}},
		{"PatchNaNExponent", "--backoff-exponent must be a finite number, at least 0", []string{"job", "patch", id, "--backoff-exponent", "NaN", "--backoff-base", "1s", "--backoff-jitter", "1s"}},
		{"PatchEmptyToQueue", "queue must not be empty", []string{"job", "patch", id, "--to-queue", ""}},
		{"ListEmptyQueue", "queue must not be empty", []string{"job", "list", "--queue", ""}},
		{"ListQueueInList", "queue must not be empty", []string{"job", "list", "--queue", "a,,b"}},
		{"CountReservedType", "type must not contain '?' (reserved)", []string{"job", "count", "--type", "a?"}},
		{"DeleteReservedBudget", "budget key must not contain '*' (reserved)", []string{"job", "delete", "--budget", "a*", "--yes"}},
		{"ListFromNotAnID", `invalid --from "nope"`, []string{"job", "list", "--from", "nope"}},
		{"PauseUntilPastLatest", "invalid --until: ", []string{"budget", "pause", "k", "--until", "99999999999999"}},
		{"TopJSON", "zizq top has no -o json", []string{"top", "-o", "json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runZizq(t, "", append(tc.args, "--url", down)...)
			requireFails(t, r, cmd.ExitUsage, tc.msg)
		})
	}
}

// TestNotFound_NamesTheJob checks that every command that takes a job ID
// names it when there is no such job, with exit code 3.
func TestNotFound_NamesTheJob(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	const id = "0000000000000000000000000"
	for _, args := range [][]string{
		{"get", id}, {"delete", id}, {"why", id}, {"errors", id}, {"errors", id, "--attempt", "1"},
		{"retry", id}, {"patch", id, "--now"},
	} {
		c.fails(cmd.ExitNotFound, "job "+id+" not found", append([]string{"job"}, args...)...)
	}
	live := strings.TrimSpace(c.ok("job", "enqueue", "-q", "q", "-t", "t"))
	c.fails(cmd.ExitNotFound, "job "+live+": error record not found", "job", "errors", live, "--attempt", "3")
	c.fails(cmd.ExitNotFound, "budget 'nope' not found", "budget", "get", "nope")
}

// TestJobGet_ShowsUniqueKeyAndBatch checks that the detail of a job shows
// every setting it was enqueued with.
func TestJobGet_ShowsUniqueKeyAndBatch(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	id := strings.TrimSpace(c.ok("job", "enqueue", "-q", "q", "-t", "t", "--unique-key", "report:1", "--unique-while", "active"))
	require.Contains(t, c.ok("job", "get", id), "Unique key:  report:1 (while active)\n")

	cl, err := client.New(c.url, client.Options{})
	require.NoError(t, err)
	j, err := cl.Enqueue(context.Background(), api.EnqueueRequest{
		Queue: api.Ptr("q"), Type: api.Ptr("t"), Payload: api.Payload(`{"n":1}`),
		Batch:     &api.BatchRequest{Key: api.Ptr("ticks"), When: api.Ptr("true"), Fold: api.Ptr("$existing | .n += $new.n")},
		Retention: &api.Retention{CompletedMs: api.Ptr[uint64](3_600_000)},
	})
	require.NoError(t, err)
	out := c.ok("job", "get", j.ID)
	require.Contains(t, out, "Batch:       ticks\n")
	require.Contains(t, out, "Batch when:  true\n")
	require.Contains(t, out, "Batch fold:  $existing | .n += $new.n\n")
	require.Contains(t, out, "Retention:   completed 1h, dead default\n")
}

// TestServe_SizesAndDatabaseURL checks that byte sizes show in units in
// the help, and that a database URL of another database is a usage error
// saying what it must be, without echoing the URL (it may hold a
// password).
func TestServe_SizesAndDatabaseURL(t *testing.T) {
	t.Parallel()
	help := runZizq(t, "", "serve", "--help").out
	require.Contains(t, help, "(default 100MB)", "--log-max-size")
	require.NotRegexp(t, `(?m) size .*\(default [0-9]+\)$`, help, "no size in bare bytes")
	for _, u := range []string{"mysql://u:secret@x/db", "host=x dbname=y"} {
		r := runZizq(t, "", "serve", "--root-dir", t.TempDir(), "--database-url", u)
		requireFails(t, r, cmd.ExitUsage, "invalid --database-url: it must be a postgres:// URL")
		require.NotContains(t, r.err, "secret")
		r = runZizq(t, "", "restore", "--database-url", u, "backup.tar.gz")
		requireFails(t, r, cmd.ExitUsage, "invalid --database-url: it must be a postgres:// URL")
	}
}

// TestRestore_FailureLeavesNothing checks that a restore that fails
// removes the root, data directory and lock file it made, and leaves a
// root that was there as it was; and that a relative --root-dir works.
func TestRestore_FailureLeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.tar.gz")
	require.NoError(t, os.WriteFile(bad, []byte("not a backup"), 0o600))

	root := filepath.Join(dir, "new-root")
	requireFails(t, runZizq(t, "", "restore", "--root-dir", root, bad), cmd.ExitFailure, "not a zizq backup")
	require.NoDirExists(t, root, "the root it made is gone")

	kept := filepath.Join(dir, "kept")
	require.NoError(t, os.MkdirAll(kept, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(kept, "notes"), []byte("mine"), 0o600))
	requireFails(t, runZizq(t, "", "restore", "--root-dir", kept, bad), cmd.ExitFailure, "not a zizq backup")
	entries, err := os.ReadDir(kept)
	require.NoError(t, err)
	require.Len(t, entries, 1, "only what was there: %v", entries)
}

// TestBackup_FailureNamesTheFile checks that a backup that cannot write
// its file names that file, not the hidden file it writes first.
func TestBackup_FailureNamesTheFile(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	file := filepath.Join(t.TempDir(), "missing-dir", "zizq.tar.gz")
	r := c.run("backup", "--admin-url", c.admin, file)
	requireFails(t, r, cmd.ExitFailure, "backup: cannot write "+file+": no such file or directory")
	require.NotContains(t, r.err, ".part")
}
