package cmd_test

import (
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/cmd"
	"github.com/zizq/zizq/devcert"
	"github.com/zizq/zizq/server"
	"github.com/zizq/zizq/server/servertest"
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

// startTLSServer serves a fresh data directory over TLS, with a
// development certificate, and returns its https:// URL.
func startTLSServer(t *testing.T) string {
	t.Helper()
	spec := devcert.Spec{CommonName: "localhost", Hosts: []string{"127.0.0.1"}, Validity: time.Hour}
	ca, err := devcert.NewAuthority(spec)
	require.NoError(t, err)
	pair, err := ca.Server(spec)
	require.NoError(t, err)
	cert, err := pair.TLS()
	require.NoError(t, err)
	s := servertest.Start(t, func(o *server.Options) {
		o.HTTP.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	})
	return strings.Replace(s.URL, "http://", "https://", 1)
}

// TestClient_URLHints checks that the usual mistakes in --url get a hint that
// says what to type.
func TestClient_URLHints(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"127.0.0.1:18201", "localhost:18201"} {
		requireFails(t, runZizq(t, "", "health", "--url", u), cmd.ExitUsage, "needs a scheme: try http://"+u)
	}
	// http:// to a TLS port (Go says itself when https:// meets a plain
	// port: "server gave HTTP response to HTTPS client").
	tlsURL := startTLSServer(t)
	plain := strings.Replace(tlsURL, "https://", "http://", 1)
	for _, args := range [][]string{{"health"}, {"job", "count"}, {"budget", "put", "k", "--allocation", "1", "--strategy", "while_in_flight"}} {
		requireFails(t, runZizq(t, "", append(args, "--url", plain)...), cmd.ExitUnreachable, plain+" is a TLS port: use "+tlsURL+"\n")
	}
}

func TestGlobalFlags(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.fails(cmd.ExitUsage, `invalid --output "yaml"`, "health", "-o", "yaml")
	c.fails(cmd.ExitUsage, `invalid argument "later" for "--timeout"`, "health", "--timeout", "later")
	c.fails(cmd.ExitUsage, "unknown flag: --nope", "health", "--nope")
	c.fails(cmd.ExitUsage, `unknown command "nope" for "zizq"`, "nope")
	c.fails(cmd.ExitUsage, `unknown command "nope" for "zizq job"`, "job", "nope")
	c.fails(cmd.ExitUsage, "unknown command \"budgte\" for \"zizq\"\n\nDid you mean this?\n\tbudget\n", "budgte")
	c.fails(cmd.ExitUsage, "unknown command \"lsit\" for \"zizq budget\"\n\nDid you mean this?\n\tlist\n", "budget", "lsit")
	c.fails(cmd.ExitUsage, "budget list takes no arguments, got \"extra-arg\"", "budget", "list", "extra-arg")
	c.fails(cmd.ExitUsage, "job get needs ID", "job", "get")
	c.fails(cmd.ExitUsage, "job delete takes only ID, got 2 arguments", "job", "delete", "a", "b")
	requireFails(t, runZizq(t, "", "restore"), cmd.ExitUsage, "restore needs FILE")
	c.fails(cmd.ExitUsage, "backup needs FILE", "backup")

	// help of a command that does not exist is a usage error too.
	requireFails(t, runZizq(t, "", "help", "nosuch"), cmd.ExitUsage, `unknown command "nosuch" for "zizq"`)
	requireFails(t, runZizq(t, "", "help", "budget", "lsit"), cmd.ExitUsage, "Did you mean this?\n\tlist")
	r := runZizq(t, "", "help", "budget", "get")
	require.Equal(t, cmd.ExitOK, r.code, r.err)
	require.Contains(t, r.out, "Show a budget with its live state")
	require.Equal(t, "ok\n", c.ok("health", "--timeout", "0"), "0: no limit")
	require.Equal(t, "ok\n", c.ok("health", "--timeout", "1500"), "a bare number is milliseconds")

	// Bare zizq (and a bare group) prints help, documenting the exit codes.
	r = runZizq(t, "")
	require.Equal(t, cmd.ExitOK, r.code)
	require.Contains(t, r.out, "Exit codes:\n  0  success\n  1  any other failure")
	require.Contains(t, r.out, "\n  4  no zizq server at --url")
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
	require.Equal(t, []string{"while_in_flight", "time_based", "calendar"}, complete("budget", "put", "k", "--strategy", ""))
	require.Empty(t, complete("budget", "put", "k", "--reset", ""), "a cron expression: nothing to offer")
	require.Equal(t, []string{"table", "json"}, complete("health", "-o", ""))
	require.Contains(t, complete(""), "budget\tManage budgets: concurrency limits and rate limits")
	require.Contains(t, strings.Join(complete("job", "enqueue", "--"), "\n"), "--payload-file\t")

	require.Contains(t, complete("--url", c.url, ""), "budget\tManage budgets: concurrency limits and rate limits",
		"command names after a client flag given before them")

	// Job IDs, newest first, described; only the statuses a command takes.
	id := strings.TrimSpace(c.ok("job", "enqueue", "-q", "emails", "-t", "send", "--in", "1h"))
	var page api.JobList
	c.json(&page, "job", "list", "--status", "ready", "--limit", "1")
	ready := page.Jobs[0].ID
	for _, sub := range []string{"get", "delete", "why", "errors"} {
		require.Equal(t, []string{id + "\temails send scheduled", ready + "\temails t ready"}, complete("job", sub, ""), sub)
	}
	require.Equal(t, []string{id + "\temails send scheduled", ready + "\temails t ready"}, complete("job", "patch", ""))
	require.Empty(t, complete("job", "retry", ""), "only dead jobs can be retried")
	require.Equal(t, []string{id + "\temails send scheduled"}, complete("job", "get", id[:24]), "by prefix")
	require.Empty(t, complete("job", "get", id, ""), "one ID only")

	// The fixed values of serve's flags (serve takes no --url).
	for flag, want := range map[string]string{
		"--log-level":           "debug\ninfo\nwarn\nerror\n:4\n",
		"--log-format":          "text\njson\n:4\n",
		"--default-commit-mode": "buffered\nfsync\n:4\n",
		"--enqueue-commit-mode": "buffered\nfsync\n:4\n",
	} {
		r := runZizq(t, "", "__complete", "serve", flag, "")
		require.Equal(t, cmd.ExitOK, r.code, r.err)
		require.Equal(t, want, r.out, flag)
	}

	// A server that is down completes nothing, quickly.
	for _, args := range [][]string{{"budget", "get", ""}, {"job", "get", ""}, {"job", "retry", ""}} {
		r := runZizq(t, "", append([]string{"__complete", "--url", freeURL(t)}, args...)...)
		require.Equal(t, cmd.ExitOK, r.code)
		require.Equal(t, ":4\n", r.out)
	}

	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		r := runZizq(t, "", "completion", shell)
		require.Equal(t, cmd.ExitOK, r.code, r.err)
		require.Contains(t, r.out, "zizq")
	}
	requireFails(t, runZizq(t, "", "completion", "bash", "extra"), cmd.ExitUsage, `completion bash takes no arguments, got "extra"`)
	requireFails(t, runZizq(t, "", "completion", "tcsh"), cmd.ExitUsage, `no completion script for "tcsh": the shells are bash, fish, powershell, zsh`)
}

// TestExitCodes_NotZizqServer points the client at a web server: one line naming
// the URL and what answered, never the page, and exit 4 as when no server
// answers at all.
func TestExitCodes_NotZizqServer(t *testing.T) {
	t.Parallel()
	page := "<!DOCTYPE html>\n<html>\n<head><title>Welcome</title></head>\n<body>\n<h1>It works</h1>\n</body>\n</html>\n"
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.URL.Path != "/health" {
			w.WriteHeader(http.StatusNotFound)
		}
		_, _ = io.WriteString(w, page)
	}))
	t.Cleanup(web.Close)
	for _, tc := range []struct {
		args []string
		got  string
	}{
		{[]string{"health"}, "200 text/html"},
		{[]string{"version", "--server"}, "404 text/html"},
		{[]string{"job", "get", "0000000000000000000000000"}, "404 text/html"},
		{[]string{"budget", "delete", "k"}, "404 text/html"},
	} {
		r := runZizq(t, "", append(tc.args, "--url", web.URL)...)
		requireFails(t, r, cmd.ExitUnreachable, "")
		require.Equal(t, "zizq: "+web.URL+": not a zizq server (got "+tc.got+")\n", r.err, "%v", tc.args)
	}
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
		{cmd.ExitNotFound, url, "job 0000000000000000000000000 not found", []string{"job", "get", "0000000000000000000000000"}},
		{cmd.ExitUnreachable, down, "cannot reach zizq server at " + down, []string{"health"}},
		{cmd.ExitUsage, url, "Did you mean this?\n\tbudget", []string{"budgte"}},
		{cmd.ExitUsage, url, `unknown command "nosuch" for "zizq"`, []string{"help", "nosuch"}},
		{cmd.ExitUsage, url, `no completion script for "tcsh"`, []string{"completion", "tcsh"}},
		{cmd.ExitUsage, url, "--limit must be 1..2000", []string{"job", "list", "--limit", "5000"}},
		{cmd.ExitNotFound, url, "budget 'nosuch' does not exist", []string{"job", "enqueue", "-q", "q", "-t", "t", "--budget", "nosuch"}},
		{cmd.ExitOK, down, "no server version: cannot reach zizq server at " + down, []string{"version"}},
		{cmd.ExitUnreachable, down, "cannot reach zizq server at " + down, []string{"version", "--server"}},
		{cmd.ExitOK, url, "", []string{"--version"}},
		{cmd.ExitOK, url, "", []string{"-v"}},
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
