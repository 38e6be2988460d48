package cmd_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
	"github.com/zizq/zizq/cmd"
	"github.com/zizq/zizq/server"
	"github.com/zizq/zizq/server/servertest"
	"github.com/zizq/zizq/store/postgres/pgtest"
)

// kill makes a job dead through a worker: taken, then failed twice (the
// first failure retried at once), with a backtrace.
func kill(t *testing.T, url, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := client.New(url, client.Options{})
	require.NoError(t, err)
	s, err := cl.Take(ctx, client.TakeOptions{})
	require.NoError(t, err)
	defer s.Close()
	for i, req := range []api.FailureRequest{
		{Message: api.Ptr("timeout\nafter 30s"), ErrorType: api.Ptr("Timeout"), RetryAt: api.Ptr(uint64(1))},
		{Message: api.Ptr("refused"), ErrorType: api.Ptr("SMTPError"), Backtrace: api.Ptr("main.go:12\nsmtp.go:40"), Kill: api.Ptr(true)},
	} {
		j, err := s.Next()
		require.NoError(t, err)
		require.Equal(t, id, j.ID, "attempt %d", i+1)
		_, err = cl.Fail(ctx, id, req)
		require.NoError(t, err)
	}
}

func TestJobErrorsAndRetry(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	id := strings.TrimSpace(c.ok("job", "enqueue", "-q", "q", "-t", "t", "--payload", `{"a":1}`))
	require.Equal(t, "Job "+id+" has no recorded failures.\n", c.ok("job", "errors", id))
	kill(t, c.url, id)

	rows := lines(c.ok("job", "errors", id))
	require.Len(t, rows, 3)
	require.Equal(t, []string{"ATTEMPT", "FAILED", "AT", "TYPE", "MESSAGE"}, strings.Fields(rows[0]))
	require.Regexp(t, `^1 .* Timeout +timeout …$`, rows[1])
	require.Regexp(t, `^2 .* SMTPError +refused$`, rows[2])
	var list struct{ Errors []api.ErrorRecord }
	c.json(&list, "job", "errors", id)
	require.Len(t, list.Errors, 2)
	out := c.ok("job", "errors", id, "--attempt", "2")
	require.Contains(t, out, "Attempt:      2\n")
	require.Contains(t, out, "Type:         SMTPError\n")
	require.Contains(t, out, "\nBacktrace:\nmain.go:12\nsmtp.go:40\n")
	require.Contains(t, c.ok("job", "errors", id, "--attempt", "1"), "\ntimeout\nafter 30s\n", "a message of several lines is shown whole")
	c.fails(cmd.ExitNotFound, "error record not found", "job", "errors", id, "--attempt", "3")
	c.fails(cmd.ExitNotFound, "job 0000000000000000000000000 not found", "job", "errors", "0000000000000000000000000")

	// retry
	require.Equal(t, "Job "+id+" is ready again (attempts so far: 2).\n", c.ok("job", "retry", id))
	var j api.Job
	c.json(&j, "job", "get", id)
	require.Equal(t, api.StatusReady, j.Status)
	require.Equal(t, uint32(2), j.Attempts)
	require.Zero(t, j.PurgeAt)
	c.fails(cmd.ExitFailure, "job "+id+" is not dead: it is ready", "job", "retry", id)
	c.fails(cmd.ExitNotFound, "job 0000000000000000000000000 not found", "job", "retry", "0000000000000000000000000")
	c.fails(cmd.ExitUsage, "job retry needs ID", "job", "retry")
}

func TestJobPatch(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	id := strings.TrimSpace(c.ok("job", "enqueue", "-q", "q", "-t", "t", "--in", "1h"))

	out := c.ok("job", "patch", id, "--priority", "3", "--to-queue", "fast", "--now", "--retry-limit", "9",
		"--backoff-base", "1s", "--backoff-exponent", "2", "--backoff-jitter", "500ms", "--dead-retention", "1d")
	require.Contains(t, out, "Queue:        fast\n")
	require.Contains(t, out, "Status:       ready\n")
	require.Contains(t, out, "Priority:     3\n")
	require.Contains(t, out, "Retry limit:  9\n")
	require.Contains(t, out, "Backoff:      exponent 2, base 1s, jitter 500ms\n")
	var j api.Job
	c.json(&j, "job", "get", id)
	require.Equal(t, uint64(86_400_000), *j.Retention.DeadMs)

	j = api.Job{}
	c.json(&j, "job", "patch", id, "--default-retry-limit", "--default-backoff", "--default-retention", "--in", "2h")
	require.Nil(t, j.RetryLimit)
	require.Nil(t, j.Backoff)
	require.Nil(t, j.Retention)
	require.Equal(t, api.StatusScheduled, j.Status)

	for _, tc := range []struct {
		msg  string
		args []string
	}{
		{"nothing to change", []string{id}},
		{"--at and --now cannot be used together", []string{id, "--at", "1", "--now"}},
		{"--backoff-base, --backoff-exponent and --backoff-jitter go together", []string{id, "--backoff-base", "1s"}},
		{"--retry-limit and --default-retry-limit cannot be used together", []string{id, "--retry-limit", "1", "--default-retry-limit"}},
		{"an ID and filters", []string{id, "--priority", "1", "--queue", "q"}},
		{"give a filter", []string{"--priority", "1"}},
		{"--all and filters cannot be used together", []string{"--priority", "1", "--all", "--queue", "q"}},
	} {
		c.fails(cmd.ExitUsage, tc.msg, append([]string{"job", "patch"}, tc.args...)...)
	}
	c.fails(cmd.ExitNotFound, "job 0000000000000000000000000 not found", "job", "patch", "0000000000000000000000000", "--priority", "1")

	// Bulk: the count first, the change with --yes.
	for range 3 {
		c.ok("job", "enqueue", "-q", "bulk", "-t", "t")
	}
	require.Equal(t, "3 jobs would be patched. Nothing was changed: run again with --yes to go ahead.\n",
		c.ok("job", "patch", "--queue", "bulk", "--priority", "7"))
	var n struct{ Count int64 }
	c.json(&n, "job", "patch", "--queue", "bulk", "--priority", "7")
	require.Equal(t, int64(3), n.Count)
	require.Equal(t, "3\n", c.ok("job", "count", "--queue", "bulk"), "nothing moved without --yes")
	require.Equal(t, "Patched 3 jobs.\n", c.ok("job", "patch", "--queue", "bulk", "--to-queue", "moved", "--yes"))
	require.Equal(t, "3\n", c.ok("job", "count", "--queue", "moved"))
	require.Equal(t, "4 jobs would be patched. Nothing was changed: run again with --yes to go ahead.\n",
		c.ok("job", "patch", "--all", "--priority", "1"))
	var p api.Patched
	c.json(&p, "job", "patch", "--all", "--priority", "1", "--yes")
	require.Equal(t, int64(4), p.Patched)
}

func TestJobDeleteBulkAndReset(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("budget", "put", "b", "--allocation", "5", "--strategy", "while_in_flight")
	for range 3 {
		c.ok("job", "enqueue", "-q", "a", "-t", "t", "--budget", "b")
	}
	c.ok("job", "enqueue", "-q", "keep", "-t", "t")

	require.Equal(t, "3 jobs would be deleted. Nothing was changed: run again with --yes to go ahead.\n",
		c.ok("job", "delete", "--queue", "a"))
	require.Equal(t, "4\n", c.ok("job", "count"))
	require.Equal(t, "Deleted 3 jobs.\n", c.ok("job", "delete", "--queue", "a", "--budget", "b", "-y"))
	require.Equal(t, "1\n", c.ok("job", "count"))
	var d api.Deleted
	c.json(&d, "job", "delete", "--type", "none", "--yes")
	require.Zero(t, d.Deleted)
	c.fails(cmd.ExitUsage, "an ID and filters", "job", "delete", "x", "--yes")
	c.fails(cmd.ExitUsage, `invalid --status "gone"`, "job", "delete", "--status", "gone")

	// reset
	// reset counts everything POST /reset deletes: the cron groups too.
	cl, err := client.New(c.url, client.Options{})
	require.NoError(t, err)
	_, err = cl.PutCronGroup(context.Background(), "nightly", api.CronGroupRequest{Entries: []api.CronEntryRequest{{
		Name: api.Ptr("e"), Expression: api.Ptr("0 3 * * *"), Job: &api.EnqueueRequest{Queue: api.Ptr("a"), Type: api.Ptr("t"), Payload: api.Payload("{}")}}}})
	require.NoError(t, err)
	require.Equal(t, "1 cron group, 1 job and 1 budget would be deleted. Nothing was changed: run again with --yes to go ahead.\n", c.ok("reset"))
	var counts struct {
		Jobs, Budgets int64
		CronGroups    int64 `json:"cron_groups"`
	}
	c.json(&counts, "reset")
	require.Equal(t, int64(1), counts.CronGroups)
	require.Equal(t, "1\n", c.ok("job", "count"))
	require.Equal(t, "Every cron group, job and budget was deleted.\n", c.ok("reset", "--yes"))
	require.Equal(t, "0\n", c.ok("job", "count"))
	c.json(&counts, "reset")
	require.Zero(t, counts.Jobs+counts.Budgets+counts.CronGroups)
	require.Equal(t, "0 cron groups, 0 jobs and 0 budgets would be deleted. Nothing was changed: run again with --yes to go ahead.\n", c.ok("reset"))
}

func TestBackupAndRestore(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("budget", "put", "b", "--allocation", "5", "--strategy", "while_in_flight")
	var ids []string
	for range 5 {
		ids = append(ids, strings.TrimSpace(c.ok("job", "enqueue", "-q", "q", "-t", "t", "--budget", "b:2")))
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "zizq.tar.gz")
	// The API port has no backups: the message names the admin port's flag.
	c.fails(cmd.ExitUsage, "POST /backup at --admin-url "+c.url+": not found: that is not an admin port (the API port?). "+
		"POST /backup is served on the admin port only: point --admin-url (or ZIZQ_ADMIN_URL) at the server's --admin-host and --admin-port (default http://127.0.0.1:8901)",
		"backup", "--admin-url", c.url, file)
	c.fails(cmd.ExitUsage, "POST /compact at --admin-url "+c.url+": not found: that is not an admin port", "compact", "--admin-url", c.url)
	out := c.ok("backup", "--admin-url", c.admin, file)
	require.Regexp(t, `^Backed up to .*zizq\.tar\.gz \(\d+\.\d KiB; database \d+\.\d KiB\)\.\n$`, out)
	c.fails(cmd.ExitUsage, "exists: choose another name, or --force to replace it", "backup", "--admin-url", c.admin, file)
	var res struct {
		File          string
		Bytes         int64
		DatabaseBytes int64 `json:"database_bytes"`
	}
	c.json(&res, "backup", "--admin-url", c.admin, file, "--force")
	require.Equal(t, file, res.File)
	require.Positive(t, res.DatabaseBytes)
	parts, _ := filepath.Glob(filepath.Join(dir, ".*part"))
	require.Empty(t, parts, "no partial file is left")
	raw := c.run("backup", "--admin-url", c.admin, "-")
	require.Equal(t, cmd.ExitOK, raw.code, raw.err)
	require.Equal(t, "\x1f\x8b", raw.out[:2], "a gzip stream on standard output")

	// Restore offline into a new root, then serve it.
	root := filepath.Join(t.TempDir(), "root")
	r := runZizq(t, "", "restore", "--root-dir", root, file)
	require.Equal(t, cmd.ExitOK, r.code, r.err)
	require.Equal(t, "Restored "+file+" into "+filepath.Join(root, "data")+". Start the server with: zizq serve --root-dir "+root+"\n", r.out)
	requireFails(t, runZizq(t, "", "restore", "--root-dir", root, file), cmd.ExitFailure, "target data directory is not empty")
	bad := filepath.Join(dir, "bad")
	require.NoError(t, os.WriteFile(bad, []byte("not a backup"), 0o600))
	requireFails(t, runZizq(t, "", "restore", "--root-dir", t.TempDir(), bad), cmd.ExitFailure, "not a zizq backup")

	require.Equal(t, "Storage compacted.\n", c.ok("compact", "--admin-url", c.admin))
	var compacted struct{ Compacted bool }
	c.json(&compacted, "compact", "--admin-url", c.admin)
	require.True(t, compacted.Compacted)

	restored := &cli{t: t, url: serveDir(t, filepath.Join(root, "data"))}
	var got map[string][]api.Job
	restored.json(&got, "job", "list", "--all")
	require.Len(t, got["jobs"], 5)
	for i, j := range got["jobs"] {
		require.Equal(t, ids[i], j.ID)
		require.Equal(t, []api.Binding{{Key: "b", Cost: 2}}, j.Budgets)
	}
	require.Contains(t, restored.ok("budget", "get", "b"), "while_in_flight")

	// The same archive restores into an empty PostgreSQL database, once.
	if pgtest.URL() == "" {
		return
	}
	dsn := pgtest.Schema(t)
	r = runZizq(t, "", "restore", "--database-url", dsn, file, "--log-format", "json")
	require.Equal(t, cmd.ExitOK, r.code, r.err)
	require.Equal(t, "Restored "+file+" into the database. Start the servers with: zizq serve --database-url URL\n", r.out)
	// It logs as serve does: here its migration, in JSON.
	require.NotEmpty(t, r.err)
	for _, line := range lines(r.err) {
		require.True(t, json.Valid([]byte(line)), "a JSON log line: %q", line)
	}
	requireFails(t, runZizq(t, "", "restore", "--database-url", dsn, file), cmd.ExitFailure, "target database is not empty")
	p := startServer(t, "--database-url", dsn)
	onPG := &cli{t: t, url: p.url}
	onPG.json(&got, "job", "list", "--all")
	require.Len(t, got["jobs"], 5)
	require.Equal(t, ids[0], got["jobs"][0].ID)
	require.Equal(t, []api.Binding{{Key: "b", Cost: 2}}, got["jobs"][0].Budgets)
	require.Contains(t, onPG.ok("budget", "get", "b"), "while_in_flight")
}

// serveDir runs a real server on an existing data directory until the test
// ends, and returns its URL.
func serveDir(t *testing.T, dir string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.Open(ctx, servertest.Options(dir)) // SQLite in dir
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		require.NoError(t, srv.CloseStore())
	})
	return "http://" + l.Addr().String()
}
