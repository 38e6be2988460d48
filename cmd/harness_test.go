package cmd_test

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
	"github.com/zizq/zizq/cmd"
	"github.com/zizq/zizq/server/servertest"
)

// worker connects a worker of queue that takes n jobs and holds them,
// never acking, until the test ends: its queue is served, so jobs its
// budgets cannot pay are parked.
func (c *cli) worker(queue string, prefetch, n int) []api.Job {
	c.t.Helper()
	cl, err := client.New(c.url, client.Options{})
	require.NoError(c.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	c.t.Cleanup(cancel)
	stream, err := cl.Take(ctx, client.TakeOptions{Queues: []string{queue}, Prefetch: prefetch})
	require.NoError(c.t, err)
	c.t.Cleanup(func() { _ = stream.Close() })
	var held []api.Job
	for range n {
		j, err := stream.Next()
		require.NoError(c.t, err)
		held = append(held, j)
	}
	return held
}

// serveInProcess runs a real server on 127.0.0.1:0 over a fresh data
// directory until the test ends, and returns its URL.
func serveInProcess(t *testing.T) string {
	t.Helper()
	return servertest.Start(t).URL
}

// result is what one command run returned and printed.
type result struct {
	code     int
	out, err string
}

// cli runs commands against one server.
type cli struct {
	t     *testing.T
	url   string
	admin string // its admin port's URL
}

func newCLI(t *testing.T) *cli {
	ts := servertest.Start(t)
	return &cli{t: t, url: ts.URL, admin: ts.AdminURL}
}

// run runs zizq with --url set to the test server.
func (c *cli) run(args ...string) result {
	return c.runIn("", args...)
}

func (c *cli) runIn(stdin string, args ...string) result {
	c.t.Helper()
	return runZizq(c.t, stdin, append([]string{"--url", c.url}, args...)...)
}

// ok runs a command that must succeed and returns its standard output.
func (c *cli) ok(args ...string) string {
	c.t.Helper()
	r := c.run(args...)
	require.Equal(c.t, cmd.ExitOK, r.code, "zizq %s: %s", strings.Join(args, " "), r.err)
	return r.out
}

// json runs a command with -o json and decodes its output into v.
func (c *cli) json(v any, args ...string) {
	c.t.Helper()
	out := c.ok(append(args, "-o", "json")...)
	require.NoError(c.t, json.Unmarshal([]byte(out), v), "output: %s", out)
}

// fails runs a command that must fail with code, print nothing on standard
// output and a message containing msg on standard error.
func (c *cli) fails(code int, msg string, args ...string) {
	c.t.Helper()
	requireFails(c.t, c.run(args...), code, msg)
}

func requireFails(t *testing.T, r result, code int, msg string) {
	t.Helper()
	require.Equal(t, code, r.code, "stderr: %s", r.err)
	require.Empty(t, r.out, "nothing on standard output on failure")
	require.Contains(t, r.err, msg)
	require.True(t, strings.HasPrefix(r.err, "zizq: "), "stderr: %q", r.err)
}

func runZizq(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errb strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := cmd.Run(ctx, args, cmd.IO{In: strings.NewReader(stdin), Out: &out, Err: &errb})
	return result{code: code, out: out.String(), err: errb.String()}
}

// freeURL is the URL of a port nothing listens on.
func freeURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + l.Addr().String()
	require.NoError(t, l.Close())
	return url
}

// lines splits output into its lines, without the final newline.
func lines(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }
