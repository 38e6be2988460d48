package worker

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// stderrTail is how much of the end of a command's standard error a
// failure report carries as its backtrace.
const stderrTail = 4 << 10

// waitDelay bounds how long a finished command's output is still read:
// a background process it left behind may hold its pipes open for ever.
const waitDelay = 2 * time.Second

// spec is one run of the command for one job.
type spec struct {
	argv  []string
	env   []string
	stdin []byte
	// out receives the command's standard output and error, each line
	// prefixed with prefix.
	out    *lineSink
	prefix string
	// timeout ends the run (0: never): SIGTERM to its process group, then
	// SIGKILL after grace.
	timeout, grace time.Duration
}

// outcome is how a run ended.
type outcome struct {
	pid int
	// startErr is why the command did not start at all.
	startErr error
	// exitCode is the exit status, or -1 when a signal ended the process.
	exitCode int
	// signal names the signal that ended it (SIGKILL), if one did.
	signal   string
	timedOut bool
	// stopped: the worker killed it because it was stopping.
	stopped  bool
	tail     []byte
	duration time.Duration
}

// process is a running command.
type process struct {
	cmd  *exec.Cmd
	done chan outcome

	mu      sync.Mutex
	stopped bool
	exited  bool
}

// start starts the command in a process group of its own, so that a
// signal reaches whatever it started, and so that a Ctrl-C in the
// worker's terminal does not reach it (the worker decides when it ends).
// It returns the outcome at once when the command could not start.
func start(s spec) (*process, *outcome) {
	cmd := exec.Command(s.argv[0], s.argv[1:]...)
	cmd.Env = s.env
	cmd.Stdin = bytes.NewReader(s.stdin)
	tail := &tailBuffer{max: stderrTail}
	stdout := s.out.writer(s.prefix)
	stderr := s.out.writer(s.prefix)
	cmd.Stdout = stdout
	cmd.Stderr = io.MultiWriter(stderr, tail)
	cmd.WaitDelay = waitDelay
	ownProcessGroup(cmd)
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, &outcome{startErr: startError(err), exitCode: -1}
	}
	p := &process{cmd: cmd, done: make(chan outcome, 1)}
	go p.wait(s, began, tail, stdout, stderr)
	return p, nil
}

// startError keeps exec's own words ("exec: \"nosuch\": executable file
// not found in $PATH") and drops the os.PathError's "fork/exec" prefix.
func startError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("exec: %q: %w", pe.Path, pe.Err)
	}
	return err
}

// pid is the command's process ID (and its process group's).
func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) wait(s spec, began time.Time, tail *tailBuffer, stdout, stderr *prefixWriter) {
	timedOut := make(chan struct{})
	if s.timeout > 0 {
		t := time.AfterFunc(s.timeout, func() {
			close(timedOut)
			p.terminate(s.grace)
		})
		defer t.Stop()
	}
	err := p.cmd.Wait()
	p.mu.Lock()
	p.exited = true
	stopped := p.stopped
	p.mu.Unlock()
	stdout.flush()
	stderr.flush()
	o := outcome{pid: p.pid(), exitCode: -1, stopped: stopped, tail: tail.bytes(), duration: time.Since(began)}
	select {
	case <-timedOut:
		o.timedOut = true
	default:
	}
	if st := p.cmd.ProcessState; st != nil {
		o.exitCode, o.signal = exitStatus(st)
	} else if err != nil {
		o.startErr = err
	}
	p.done <- o
}

// terminate asks the process group to end (SIGTERM), and kills it
// (SIGKILL) once grace has passed.
func (p *process) terminate(grace time.Duration) {
	p.signalGroup(false)
	time.AfterFunc(grace, func() { p.signalGroup(true) })
}

// kill kills the process group at once, because the worker is stopping.
func (p *process) kill() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.signalGroup(true)
}

// signalGroup signals the process group, unless the command has been
// waited for (its process group ID may belong to another one by now).
func (p *process) signalGroup(kill bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.exited {
		signalGroup(p.cmd.Process, kill)
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

// bytes returns the tail, starting at a whole UTF-8 character.
func (t *tailBuffer) bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	for i := 0; i < len(b) && i < 4 && b[i]&0xC0 == 0x80; i++ {
		b = b[1:]
	}
	return bytes.Clone(b)
}
