package cmd_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/require"
)

// Terminal queries that a command must not send on its own: the background
// colour (OSC 11) and the cursor position (DSR 6), which termenv sends to
// learn whether OSC 11 was answered.
const (
	queryBackground = "\x1b]11;?"
	queryCursor     = "\x1b[6n"
)

// stallLimit is far above what a command needs (tens of milliseconds) and
// far below the 5 s a terminal query waits for an answer that never comes.
const stallLimit = 3 * time.Second

// silentPty is a command running with a pseudo-terminal as its controlling
// terminal and its stdin, stdout and stderr. The terminal never answers a
// query: everything the command writes is only recorded.
type silentPty struct {
	t     *testing.T
	cmd   *exec.Cmd
	tty   *os.File // the master side
	start time.Time
	done  chan struct{} // closed when the output has ended

	mu  sync.Mutex
	out bytes.Buffer
}

func startSilentPty(t *testing.T, args ...string) *silentPty {
	t.Helper()
	c := exec.Command(zizqBin, args...)
	c.Env = append(withoutEnv(os.Environ(), "NO_COLOR", "COLORTERM"), "TERM=xterm-256color")
	p := &silentPty{t: t, cmd: c, start: time.Now(), done: make(chan struct{})}
	tty, err := pty.StartWithSize(c, &pty.Winsize{Cols: 100, Rows: 30})
	require.NoError(t, err)
	p.tty = tty
	t.Cleanup(func() {
		if c.ProcessState == nil {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
		_ = tty.Close()
	})
	go p.record()
	return p
}

// record copies the command's output until the terminal closes (EIO on
// Linux once the command and its children are gone).
func (p *silentPty) record() {
	defer close(p.done)
	buf := make([]byte, 4096)
	for {
		n, err := p.tty.Read(buf)
		p.mu.Lock()
		p.out.Write(buf[:n])
		p.mu.Unlock()
		if err != nil {
			return
		}
	}
}

func (p *silentPty) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// wait waits for the command to end, at most limit after it started, and
// returns how long it ran. A command still running then is killed.
func (p *silentPty) wait(limit time.Duration) (time.Duration, int) {
	p.t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	var err error
	select {
	case err = <-exited:
	case <-time.After(time.Until(p.start.Add(limit))):
		_ = p.cmd.Process.Kill()
		<-exited
		p.t.Fatalf("zizq %s still running after %v; output so far: %q",
			strings.Join(p.cmd.Args[1:], " "), limit, p.output())
	}
	elapsed := time.Since(p.start)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		// A grandchild holding the terminal open would keep it from
		// closing; the output read so far is all there is.
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(p.t, err)
	}
	return elapsed, code
}

// waitOutput waits until the output holds want, at most limit after the
// command started.
func (p *silentPty) waitOutput(want string, limit time.Duration) {
	p.t.Helper()
	deadline := p.start.Add(limit)
	for time.Now().Before(deadline) {
		if strings.Contains(p.output(), want) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.t.Fatalf("output never showed %q within %v; output: %q", want, limit, p.output())
}

func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		keep := true
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				keep = false
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}

// TestBinary_NoTerminalQueries runs commands on a terminal that never
// answers (CI logs under script, some IDE terminals, serial consoles): no
// command may ask it anything, nor wait for an answer.
func TestBinary_NoTerminalQueries(t *testing.T) {
	t.Parallel()
	url := serveInProcess(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "VersionJSON", args: []string{"version", "-o", "json", "--url", url}, want: `"server"`},
		{name: "Help", args: []string{"--help"}, want: "Exit codes:"},
		{name: "Health", args: []string{"health", "--url", url}, want: "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := startSilentPty(t, tc.args...)
			elapsed, code := p.wait(20 * time.Second)
			out := p.output()
			require.Zero(t, code, "output: %q", out)
			require.Contains(t, out, tc.want)
			require.NotContains(t, out, queryBackground, "the command asked the terminal for its background colour")
			require.NotContains(t, out, queryCursor, "the command asked the terminal for the cursor position")
			require.Less(t, elapsed, stallLimit, "the command stalled")
		})
	}
}

// TestTop_SilentTerminal runs `zizq top` on a terminal that never answers:
// it asks for the background colour once, draws without waiting for the
// answer, and quits on q.
func TestTop_SilentTerminal(t *testing.T) {
	t.Parallel()
	url := serveInProcess(t)
	p := startSilentPty(t, "top", "--url", url)
	p.waitOutput("connected", stallLimit)
	_, err := io.WriteString(p.tty, "q")
	require.NoError(t, err)
	elapsed, code := p.wait(20 * time.Second)
	out := p.output()
	require.Zero(t, code, "output: %q", out)
	require.Equal(t, 1, strings.Count(out, queryBackground), "asks for the background colour once")
	require.NotContains(t, out, queryCursor, "asked for the cursor position")
	require.Less(t, elapsed, 2*stallLimit, "zizq top stalled on quitting")
}
