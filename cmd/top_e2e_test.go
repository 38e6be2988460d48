package cmd_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/cmd"
)

// tmux drives a terminal on its own server socket (-L), so the test never
// touches a user's sessions.
type tmux struct {
	t      *testing.T
	socket string
}

func newTmux(t *testing.T) *tmux {
	t.Helper()
	_, err := exec.LookPath("tmux")
	require.NoError(t, err, "tmux is required for the terminal test (.ci/run installs it)")
	tm := &tmux{t: t, socket: fmt.Sprintf("zizq-e2e-%d", os.Getpid())}
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", tm.socket, "kill-server").Run() })
	return tm
}

func (tm *tmux) run(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", tm.socket}, args...)...).CombinedOutput()
	require.NoError(tm.t, err, "tmux %v: %s", args, out)
	return string(out)
}

// start runs `zizq top --url url args...` in a 100×30 terminal.
func (tm *tmux) start(url string, args ...string) {
	tm.t.Helper()
	cmdline := fmt.Sprintf("env NO_COLOR=1 LANG=C.UTF-8 TERM=xterm-256color %s top --url %s %s", zizqBin, url, strings.Join(args, " "))
	tm.run("new-session", "-d", "-s", "top", "-x", "100", "-y", "30", cmdline)
}

// quit presses q and waits for the dashboard to end.
func (tm *tmux) quit() {
	tm.t.Helper()
	tm.run("send-keys", "-t", "top", "q")
	deadline := time.Now().Add(10 * time.Second)
	for exec.Command("tmux", "-L", tm.socket, "has-session", "-t", "top").Run() == nil {
		require.True(tm.t, time.Now().Before(deadline), "zizq top did not quit on q")
		time.Sleep(100 * time.Millisecond)
	}
}

func (tm *tmux) screen() string { return tm.run("capture-pane", "-p", "-t", "top") }

// waitFor polls the screen until ok accepts it, failing with the last
// screen after the deadline.
func (tm *tmux) waitFor(what string, d time.Duration, ok func(screen string) bool) {
	tm.t.Helper()
	deadline := time.Now().Add(d)
	var last string
	for time.Now().Before(deadline) {
		last = tm.screen()
		if ok(last) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	tm.t.Fatalf("screen never showed %s; last screen:\n%s", what, last)
}

var totalParked = regexp.MustCompile(`parked (\d+)`)

// budgetParked reads the PARKED column of a budget's row: the number that
// ends where the header's PARKED ends (columns are right-aligned).
func budgetParked(screen, key string) (string, bool) {
	lines := strings.Split(screen, "\n")
	end := -1
	for _, l := range lines {
		if i := strings.Index(l, "PARKED"); i >= 0 {
			end = len([]rune(l[:i])) + len("PARKED")
			continue
		}
		r := []rune(l)
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "> "))
		if end < 0 || len(fields) == 0 || fields[0] != key || len(r) < end {
			continue
		}
		cell := strings.Fields(string(r[:end]))
		return cell[len(cell)-1], true
	}
	return "", false
}

func showsParked(key, n string) func(string) bool {
	return func(screen string) bool {
		got, ok := budgetParked(screen, key)
		m := totalParked.FindStringSubmatch(screen)
		return ok && got == n && m != nil && m[1] == n
	}
}

var (
	headerWaiting = regexp.MustCompile(`ready (\d+)  parked (\d+)`)
	tabWaiting    = regexp.MustCompile(`Ready (\d+) · parked (\d+)`)
	parkedRow     = regexp.MustCompile(`(?m)^[> ] [0-9a-z]{25} .* parked `)
)

// waiting reports whether the header and the Ready tab's label both say
// "ready N" and "parked M": the same words, the same numbers.
func waiting(ready, parked string) func(string) bool {
	return func(screen string) bool {
		h, l := headerWaiting.FindStringSubmatch(screen), tabWaiting.FindStringSubmatch(screen)
		return h != nil && l != nil && h[1] == ready && h[2] == parked && l[1] == ready && l[2] == parked
	}
}

func both(a, b func(string) bool) func(string) bool {
	return func(s string) bool { return a(s) && b(s) }
}

// TestTop_EndToEnd runs `zizq top` in a real terminal against a real server
// with parked jobs: a while_in_flight budget of 2 and 7 bound jobs, and no
// worker: nothing is parked (the jobs wait for a worker); a worker takes 2
// without acking (5 parked); two acks let 2 more go (3 parked). The header
// and the Ready tab agree throughout, and that tab marks the parked rows.
func TestTop_EndToEnd(t *testing.T) {
	tm := newTmux(t)
	p := startServer(t, "--root-dir", t.TempDir())
	status, body := do(t, "PUT", p.url+"/budgets/slow", map[string]any{"allocation": 2, "strategy": map[string]any{"type": "while_in_flight"}})
	require.Equal(t, http.StatusOK, status, "%s", body)
	for i := 0; i < 7; i++ {
		status, body = do(t, "POST", p.url+"/jobs", map[string]any{"type": "t", "queue": "work", "payload": i, "budgets": []map[string]any{{"key": "slow"}}})
		require.Equal(t, http.StatusCreated, status, "%s", body)
	}

	tm.start(p.url, "--admin-url", p.admin, "--refresh", "200ms")
	tm.waitFor("nothing parked with no worker", 15*time.Second, func(s string) bool {
		return showsParked("slow", "0")(s) && waiting("7", "0")(s)
	})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", p.url+"/jobs/take?prefetch=0&queue=work", nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	frames := api.NewFrameReader(resp.Body, api.NDJSON)
	next := func() api.Job {
		j, err := frames.Job()
		require.NoError(t, err, "take stream ended")
		return j
	}
	held := []api.Job{next(), next()}
	tm.waitFor("5 parked while 2 run", 15*time.Second, func(s string) bool {
		return showsParked("slow", "5")(s) && strings.Contains(s, "in flight 2") && waiting("0", "5")(s)
	})

	for _, j := range held {
		status, _ := do(t, "POST", p.url+"/jobs/"+j.ID+"/success", nil)
		require.Equal(t, http.StatusNoContent, status)
	}
	next()
	next()
	tm.waitFor("3 parked after two acks", 15*time.Second, both(showsParked("slow", "3"), waiting("0", "3")))

	tm.run("send-keys", "-t", "top", "Tab", "Tab", "Tab")
	tm.waitFor("the Ready tab with 3 parked rows", 15*time.Second, func(s string) bool {
		return strings.Contains(s, "[Ready 0 · parked 3]") && len(parkedRow.FindAllString(s, -1)) == 3
	})

	tm.quit()
}

// TestTop_NeedsTerminal runs `zizq top` where its standard input or output
// is not a terminal: it refuses at once with a usage error, before it asks
// the server anything.
func TestTop_NeedsTerminal(t *testing.T) {
	t.Parallel()
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	const msg = "zizq top needs a terminal"

	t.Run("InProcess", func(t *testing.T) {
		requireFails(t, runZizq(t, "", "top", "--url", srv.URL), cmd.ExitUsage, msg)
	})
	binary := func(t *testing.T, stdin *os.File) {
		t.Helper()
		// A dashboard that did start would wait for keys: kill it.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c := exec.CommandContext(ctx, zizqBin, "top", "--url", srv.URL)
		var stdout, stderr strings.Builder
		c.Stdin, c.Stdout, c.Stderr = stdin, &stdout, &stderr // nil stdin: /dev/null
		err := c.Run()
		var ee *exec.ExitError
		require.True(t, errors.As(err, &ee), "zizq top ran: %v; stderr: %s", err, stderr.String())
		requireFails(t, result{code: ee.ExitCode(), out: stdout.String(), err: stderr.String()}, cmd.ExitUsage, msg)
	}
	t.Run("BinaryNoTerminal", func(t *testing.T) { binary(t, nil) })
	t.Run("BinaryOutputPiped", func(t *testing.T) {
		ptm, pts, err := pty.Open()
		require.NoError(t, err)
		t.Cleanup(func() { _ = ptm.Close(); _ = pts.Close() })
		binary(t, pts)
	})
	require.Zero(t, requests.Load(), "zizq top asked the server before checking for a terminal")
}
