package cmd_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/cmd"
	"github.com/zizq/zizq/server"
	"github.com/zizq/zizq/server/api"
)

func TestHealthAndVersion(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	require.Equal(t, "ok\n", c.ok("health"))
	var h api.Health
	c.json(&h, "health")
	require.Equal(t, "ok", h.Status)

	// One version per build: the client and the server say the same.
	out := c.ok("version")
	require.Equal(t, "Client: "+server.Version+"\nServer: "+server.Version+"\n", out)
	var v struct{ Client, Server api.Version }
	c.json(&v, "version")
	require.Equal(t, server.Version, v.Server.Version)
	require.Equal(t, server.Version, v.Client.Version)
	require.Equal(t, "Client: "+server.Version+"\nServer: "+server.Version+"\n", c.ok("version", "--server"))

	// --client answers without a server.
	down := freeURL(t)
	r := runZizq(t, "", "version", "--client", "--url", down)
	require.Equal(t, cmd.ExitOK, r.code, r.err)
	require.Equal(t, "Client: "+server.Version+"\n", r.out)
	require.Empty(t, r.err)

	// A server that is down: the client's version still, the reason on
	// standard error, exit 0; --server makes it a failure.
	r = runZizq(t, "", "version", "--url", down)
	require.Equal(t, cmd.ExitOK, r.code, r.err)
	require.Equal(t, "Client: "+server.Version+"\n", r.out)
	require.Equal(t, "zizq: no server version: cannot reach zizq server at "+down, strings.SplitN(r.err, ": dial", 2)[0])
	r = runZizq(t, "", "version", "--url", down, "-o", "json")
	require.Equal(t, cmd.ExitOK, r.code, r.err)
	require.JSONEq(t, `{"client":{"version":"`+server.Version+`"}}`, r.out)
	requireFails(t, runZizq(t, "", "version", "--server", "--url", down), cmd.ExitUnreachable, "cannot reach zizq server at "+down)
	requireFails(t, runZizq(t, "", "version", "--server", "--client"), cmd.ExitUsage, "--client and --server cannot be used together")

	// --version and -v print the client's version alone.
	for _, flag := range []string{"--version", "-v"} {
		r = runZizq(t, "", flag)
		require.Equal(t, cmd.ExitOK, r.code, r.err)
		require.Equal(t, "zizq version "+server.Version+"\n", r.out)
	}
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	url := freeURL(t)
	for _, args := range [][]string{
		{"health"}, {"version", "--server"}, {"budget", "list"}, {"budget", "get", "k"}, {"budget", "delete", "k"},
		{"budget", "put", "k", "--allocation", "1", "--strategy", "while_in_flight"},
		{"job", "enqueue", "-q", "q", "-t", "t"}, {"job", "list", "--all"}, {"job", "count"},
		{"job", "why", "0000000000000000000000000"},
	} {
		r := runZizq(t, "", append(args, "--url", url)...)
		requireFails(t, r, cmd.ExitUnreachable, "cannot reach zizq server at "+url+": ")
	}
	requireFails(t, runZizq(t, "", "health", "--url", "localhost:7890"), cmd.ExitUsage, "--url: invalid server URL")
}

func TestGlobalFlags(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.fails(cmd.ExitUsage, `invalid --output "yaml"`, "health", "-o", "yaml")
	c.fails(cmd.ExitUsage, `invalid argument "later" for "--timeout"`, "health", "--timeout", "later")
	c.fails(cmd.ExitUsage, "unknown flag: --nope", "health", "--nope")
	c.fails(cmd.ExitUsage, `unknown command "nope" for "zizq"`, "nope")
	c.fails(cmd.ExitUsage, `unknown command "nope" for "zizq job"`, "job", "nope")
	require.Equal(t, "ok\n", c.ok("health", "--timeout", "0"), "0: no limit")
	require.Equal(t, "ok\n", c.ok("health", "--timeout", "1500"), "a bare number is milliseconds")

	// Bare zizq (and a bare group) prints help, documenting the exit codes.
	r := runZizq(t, "")
	require.Equal(t, cmd.ExitOK, r.code)
	require.Contains(t, r.out, "Exit codes:\n  0  success\n")
	require.Contains(t, r.out, "4  server unreachable")
	r = runZizq(t, "", "job")
	require.Equal(t, cmd.ExitOK, r.code)
	require.Contains(t, r.out, "enqueue")
}

// TestEnvFallback sets the environment, so it does not run in parallel.
func TestEnvFallback(t *testing.T) {
	url := serveInProcess(t)
	t.Setenv("ZIZQ_URL", url)
	r := runZizq(t, "", "health")
	require.Equal(t, cmd.ExitOK, r.code, r.err)
	require.Equal(t, "ok\n", r.out)

	// The flag wins over the environment.
	bad := freeURL(t)
	requireFails(t, runZizq(t, "", "health", "--url", bad), cmd.ExitUnreachable, bad)
	t.Setenv("ZIZQ_URL", bad)
	requireFails(t, runZizq(t, "", "job", "count"), cmd.ExitUnreachable, "cannot reach zizq server at "+bad)
	r = runZizq(t, "", "health", "--url", url)
	require.Equal(t, cmd.ExitOK, r.code, r.err)

	t.Setenv("ZIZQ_URL", url)
	t.Setenv("ZIZQ_TIMEOUT", "soon")
	requireFails(t, runZizq(t, "", "health"), cmd.ExitUsage, `invalid value "soon" for ZIZQ_TIMEOUT`)
	t.Setenv("ZIZQ_TIMEOUT", "")
	r = runZizq(t, "", "health")
	require.Equal(t, cmd.ExitOK, r.code, "an empty variable counts as unset: %s", r.err)
}

func TestCompletion(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("budget", "put", "alpha", "--allocation", "1", "--strategy", "while_in_flight")
	c.ok("budget", "put", "beta:1", "--allocation", "1", "--strategy", "while_in_flight")
	c.ok("job", "enqueue", "-q", "emails", "-t", "t")

	complete := func(args ...string) []string {
		t.Helper()
		out := c.ok(append([]string{"__complete"}, args...)...)
		ls := lines(out)
		require.True(t, strings.HasPrefix(ls[len(ls)-1], ":"), "directive line: %q", out)
		return ls[:len(ls)-1]
	}
	require.Equal(t, []string{"alpha", "beta:1"}, complete("budget", "get", ""))
	require.Equal(t, []string{"alpha", "beta:1"}, complete("budget", "delete", ""))
	require.Empty(t, complete("budget", "delete", "alpha", ""), "one key only")
	require.Equal(t, []string{"alpha", "beta:1"}, complete("job", "enqueue", "--budget", ""))
	require.Equal(t, []string{"emails"}, complete("job", "list", "--queue", ""))
	require.Equal(t, []string{"while_in_flight", "time_based"}, complete("budget", "put", "k", "--strategy", ""))
	require.Equal(t, []string{"table", "json"}, complete("health", "-o", ""))
	require.Contains(t, complete(""), "budget\tManage budgets: concurrency limits and rate limits")
	require.Contains(t, strings.Join(complete("job", "enqueue", "--"), "\n"), "--payload-file\t")

	// A server that is down completes nothing, quickly.
	r := runZizq(t, "", "__complete", "--url", freeURL(t), "budget", "get", "")
	require.Equal(t, cmd.ExitOK, r.code)
	require.Equal(t, ":4\n", r.out)

	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		r := runZizq(t, "", "completion", shell)
		require.Equal(t, cmd.ExitOK, r.code, r.err)
		require.Contains(t, r.out, "zizq")
	}
	requireFails(t, runZizq(t, "", "completion", "bash", "extra"), cmd.ExitUsage, "unknown command")
}

// TestBinary_ExitCodes checks the exit codes of the built binary.
func TestBinary_ExitCodes(t *testing.T) {
	t.Parallel()
	url := serveInProcess(t)
	down := freeURL(t)
	for _, tc := range []struct {
		code int
		env  string
		msg  string
		args []string
	}{
		{cmd.ExitOK, url, "", []string{"health"}},
		{cmd.ExitFailure, url, "already exists", []string{"budget", "create", "k", "--allocation", "1", "--strategy", "while_in_flight"}},
		{cmd.ExitUsage, url, "unknown flag", []string{"health", "--bogus"}},
		{cmd.ExitNotFound, url, "job not found", []string{"job", "get", "0000000000000000000000000"}},
		{cmd.ExitUnreachable, down, "cannot reach zizq server at " + down, []string{"health"}},
	} {
		if tc.code == cmd.ExitFailure {
			require.Equal(t, cmd.ExitOK, runZizq(t, "", append(tc.args, "--url", url)...).code)
		}
		c := exec.Command(zizqBin, tc.args...)
		c.Env = append(os.Environ(), "ZIZQ_URL="+tc.env)
		var stderr strings.Builder
		c.Stderr = &stderr
		out, err := c.Output()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		require.Equal(t, tc.code, code, "%v: %s", tc.args, stderr.String())
		require.Contains(t, stderr.String(), tc.msg)
		if code != 0 {
			require.Empty(t, out)
		}
	}
}
