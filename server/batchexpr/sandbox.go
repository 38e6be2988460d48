package batchexpr

import (
	"bufio"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"
)

// SandboxOptions configure a Sandbox; zero fields take the defaults.
type SandboxOptions struct {
	// Workers bounds the evaluations running at once (one worker process
	// each); 0: half the CPUs, between 1 and 4.
	Workers int
	// Limits bound each task: Timeout (0: DefaultTimeout) and
	// MaxPayloadBytes (0: 16 MiB).
	Limits Limits
	// MemoryBytes bounds a worker's memory beyond what it maps at start
	// (0: 32 × MaxPayloadBytes, at least 256 MiB).
	MemoryBytes int64
	// Command returns the command that starts a worker (nil: this
	// executable again; see ServeIfWorker). The sandbox sets its
	// environment, pipes and parent binding.
	Command func() *exec.Cmd
	Logger  *slog.Logger // nil: slog.Default()
}

// DefaultTimeout bounds a task by default: ample for folds of payloads of
// megabytes, short enough that a program that loops costs little.
const DefaultTimeout = time.Second

// killGrace is how long past its own deadline a worker may take to answer
// before it is killed: a single jq step (one huge allocation) is not
// interrupted by the deadline.
const killGrace = time.Second

// startTimeout bounds a worker's start (exec and hello).
const startTimeout = 15 * time.Second

// Sandbox runs tasks in worker processes, at most Workers at once. It is
// safe for concurrent use; workers start on first need and are replaced
// when they die or overrun.
type Sandbox struct {
	opts SandboxOptions
	log  *slog.Logger
	busy chan struct{} // one token a running task, Workers at most

	mu     sync.Mutex
	idle   []*worker // started and free, the most recently used last
	live   map[*worker]struct{}
	closed bool
}

// NewSandbox returns a sandbox; no worker starts before the first task.
func NewSandbox(o SandboxOptions) *Sandbox {
	if o.Workers <= 0 {
		o.Workers = min(max(runtime.GOMAXPROCS(0)/2, 1), 4)
	}
	if o.Limits.Timeout <= 0 {
		o.Limits.Timeout = DefaultTimeout
	}
	if o.Limits.MaxPayloadBytes <= 0 {
		o.Limits.MaxPayloadBytes = 16 << 20
	}
	if o.MemoryBytes <= 0 {
		o.MemoryBytes = max(32*int64(o.Limits.MaxPayloadBytes), 256<<20)
	}
	if o.Command == nil {
		o.Command = selfCommand
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Sandbox{opts: o, log: o.Logger, busy: make(chan struct{}, o.Workers), live: map[*worker]struct{}{}}
}

// selfCommand starts this executable again. The argument makes a test
// binary that lacks the TestMain hook run no test (and fail the hello)
// instead of running its whole suite; zizq ignores it in worker mode.
func selfCommand() *exec.Cmd { return exec.Command(selfExe(), "-test.run=^$") }

// Limits returns the limits each task runs under.
func (s *Sandbox) Limits() Limits { return s.opts.Limits }

// Run evaluates a task. A refusal (the programs or payloads are at fault,
// or overran a limit) is an *Error; any other error is the sandbox's.
// ctx bounds the wait for a free worker, not the evaluation, which its
// own limits bound.
func (s *Sandbox) Run(ctx context.Context, t Task) (Answer, error) {
	if err := s.checkInputs(t); err != nil {
		return Answer{}, err
	}
	select {
	case s.busy <- struct{}{}:
	case <-ctx.Done():
		return Answer{}, ctx.Err()
	}
	defer func() { <-s.busy }()
	a, w, err := s.runOn(s.takeIdle(), t)
	if w != nil {
		s.putIdle(w)
	}
	return a, err
}

// takeIdle returns the most recently used free worker (so that a light
// load keeps one process warm), or nil to start one.
func (s *Sandbox) takeIdle() *worker {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.idle)
	if n == 0 {
		return nil
	}
	w := s.idle[n-1]
	s.idle = s.idle[:n-1]
	return w
}

func (s *Sandbox) putIdle(w *worker) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return // Close killed it
	}
	s.idle = append(s.idle, w)
}

func (s *Sandbox) checkInputs(t Task) error {
	stage := StageDryRun
	if t.Into != nil {
		stage = StageFold
	}
	for _, p := range [][]byte{t.New, t.Existing} {
		if len(p) > s.opts.Limits.MaxPayloadBytes {
			return refuse(stage, "payload of %d bytes exceeds the %d-byte limit", len(p), s.opts.Limits.MaxPayloadBytes)
		}
	}
	return nil
}

// runOn runs t on w (starting a worker if w is nil) and returns the worker
// to put back: nil once it is dead.
func (s *Sandbox) runOn(w *worker, t Task) (Answer, *worker, error) {
	if w == nil {
		var err error
		if w, err = s.start(); err != nil {
			return Answer{}, nil, err
		}
	}
	a, err := w.do(t, s.opts.Limits.Timeout+killGrace)
	if err == nil {
		if a.Stage != 0 {
			return Answer{}, w, &Error{Stage: a.Stage, Msg: a.Msg}
		}
		return a.Answer, w, nil
	}
	why := s.bury(w)
	stage := StageDryRun
	if t.Into != nil {
		stage = StageFold
	}
	s.log.Warn("batch worker stopped", "reason", why, "err", err)
	return Answer{}, nil, refuse(stage, "evaluation %s", why)
}

// start starts a worker and waits for its hello.
func (s *Sandbox) start() (*worker, error) {
	if s.isClosed() {
		return nil, errors.New("batch sandbox is closed")
	}
	cmd := s.opts.Command()
	cmd.Env = append(os.Environ(), workerEnv+"="+workerValue, "GOMAXPROCS=1")
	bindToParent(cmd)
	w := &worker{cmd: cmd, stderr: &headWriter{max: 4096}}
	cmd.Stderr = w.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start batch worker: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start batch worker: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start batch worker: %w", err)
	}
	w.stdin, w.in = stdin, bufio.NewWriter(stdin)
	w.enc, w.dec = gob.NewEncoder(w.in), gob.NewDecoder(bufio.NewReader(stdout))
	if err := w.handshake(setup{Limits: s.opts.Limits, MemoryBytes: s.opts.MemoryBytes}); err != nil {
		w.kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("start batch worker %s: %w (stderr: %q)", cmd.Path, err, w.stderr.firstLine())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed { // closed while it started
		w.kill()
		_ = cmd.Wait()
		return nil, errors.New("batch sandbox is closed")
	}
	s.live[w] = struct{}{}
	return w, nil
}

func (s *Sandbox) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// bury kills a worker that failed or overran, waits for it and says what
// happened to it.
func (s *Sandbox) bury(w *worker) string {
	w.kill()
	_ = w.cmd.Wait()
	s.mu.Lock()
	delete(s.live, w)
	s.mu.Unlock()
	return w.fate()
}

// Close kills every worker; tasks running fail. Call it once nothing calls
// Run any more.
func (s *Sandbox) Close() {
	s.mu.Lock()
	s.closed = true
	live := make([]*worker, 0, len(s.live))
	for w := range s.live {
		live = append(live, w)
	}
	clear(s.live)
	s.idle = nil
	s.mu.Unlock()
	for _, w := range live {
		_ = w.stdin.Close() // an idle worker exits on its own
		w.kill()
		_ = w.cmd.Wait()
	}
}

// worker is one worker process.
type worker struct {
	cmd    *exec.Cmd
	stdin  io.Closer
	in     *bufio.Writer
	enc    *gob.Encoder
	dec    *gob.Decoder
	stderr *headWriter

	mu      sync.Mutex
	overran bool // killed by its deadline
}

func (w *worker) handshake(s setup) error {
	timer := time.AfterFunc(startTimeout, w.kill)
	defer timer.Stop()
	var h hello
	if err := w.dec.Decode(&h); err != nil {
		return fmt.Errorf("no hello: %w", err)
	}
	if h.Protocol != protocol {
		return fmt.Errorf("protocol %d, want %d", h.Protocol, protocol)
	}
	return w.send(s)
}

func (w *worker) send(v any) error {
	if err := w.enc.Encode(v); err != nil {
		return err
	}
	return w.in.Flush()
}

// do sends a task and reads its answer; the worker is killed if it takes
// longer than limit.
func (w *worker) do(t Task, limit time.Duration) (answer, error) {
	timer := time.AfterFunc(limit, func() {
		w.mu.Lock()
		w.overran = true
		w.mu.Unlock()
		w.kill()
	})
	defer timer.Stop()
	if err := w.send(t); err != nil {
		return answer{}, err
	}
	var a answer
	err := w.dec.Decode(&a)
	return a, err
}

func (w *worker) kill() {
	if w.cmd.Process != nil {
		_ = w.cmd.Process.Kill()
	}
}

// fate says why a dead worker died, from how it was stopped and what the
// Go runtime printed.
func (w *worker) fate() string {
	w.mu.Lock()
	overran := w.overran
	w.mu.Unlock()
	out := w.stderr.String()
	switch {
	case strings.Contains(out, "out of memory"):
		return "ran out of memory and was stopped"
	case strings.Contains(out, "stack overflow"), strings.Contains(out, "stack exceeds"):
		return "nested too deep (stack overflow) and was stopped"
	case overran:
		return "took too long and was stopped"
	}
	if line := w.stderr.firstLine(); line != "" {
		return "failed: " + line
	}
	return "failed: the worker exited"
}

// headWriter keeps the first max bytes written to it (the Go runtime's
// reason for a fatal error comes first, then the goroutine dumps).
type headWriter struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (h *headWriter) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if room := h.max - len(h.buf); room > 0 {
		h.buf = append(h.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (h *headWriter) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return string(h.buf)
}

func (h *headWriter) firstLine() string {
	line, _, _ := strings.Cut(strings.TrimSpace(h.String()), "\n")
	return line
}
