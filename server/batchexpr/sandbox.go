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
	// Workers bounds the evaluations of any programs running at once (one
	// worker process each); 0: half the CPUs, between 1 and 4. One more
	// worker is kept for programs that have worked lately and not
	// misbehaved (see scheduler).
	Workers int
	// MaxQueued bounds the tasks waiting for a worker; one more is
	// refused with ErrBusy (0: DefaultQueuedPerWorker a worker).
	MaxQueued int
	// Limits bound each task: Timeout (0: DefaultTimeout), counted from
	// the task's queueing, and MaxPayloadBytes (0: 16 MiB).
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

// DefaultQueuedPerWorker is the default bound on the waiting tasks, for
// each of the general workers: past it a task would wait longer than its
// deadline anyway unless the tasks ahead take a few milliseconds each.
const DefaultQueuedPerWorker = 64

// killGrace is how long past its own deadline a worker may take to answer
// before it is killed: a single jq step (one huge allocation) is not
// interrupted by the deadline.
const killGrace = time.Second

// startTimeout bounds a worker's start (exec and hello).
const startTimeout = 15 * time.Second

// Sandbox runs tasks in worker processes, at most Workers (and the kept
// one) at once. It is safe for concurrent use; workers start on first need
// and are replaced when they die or overrun.
type Sandbox struct {
	opts  SandboxOptions
	log   *slog.Logger
	slots *scheduler

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
	if o.MaxQueued <= 0 {
		o.MaxQueued = DefaultQueuedPerWorker * o.Workers
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
	return &Sandbox{opts: o, log: o.Logger, slots: newScheduler(o.Workers, o.MaxQueued), live: map[*worker]struct{}{}}
}

// selfCommand starts this executable again. The argument makes a test
// binary that lacks the TestMain hook run no test (and fail the hello)
// instead of running its whole suite; zizq ignores it in worker mode.
func selfCommand() *exec.Cmd { return exec.Command(selfExe(), "-test.run=^$") }

// Limits returns the limits each task runs under.
func (s *Sandbox) Limits() Limits { return s.opts.Limits }

// Run evaluates a task. A refusal (the programs or payloads are at fault,
// or overran a limit) is an *Error; a task that found no worker in time is
// ErrBusy; any other error is the sandbox's. The task's deadline counts
// from this call: its wait for a worker and its run share it. ctx may end
// the wait sooner, not the evaluation, which its own limits bound.
func (s *Sandbox) Run(ctx context.Context, t Task) (Answer, error) {
	if err := s.checkInputs(t); err != nil {
		return Answer{}, err
	}
	slot, err := s.slots.acquire(ctx, sourcesOf(t), s.opts.Limits.Timeout)
	if err != nil {
		return Answer{}, err
	}
	r := s.runOn(s.takeIdle(), t, slot)
	if r.worker != nil {
		s.putIdle(r.worker)
	}
	s.slots.release(slot, r.err == nil, r.offenders)
	return r.answer, r.err
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

// outcome is what a task's run came to.
type outcome struct {
	answer    Answer
	err       error
	worker    *worker  // to put back; nil once it is dead
	offenders []source // the task's programs that misbehaved
}

// runOn runs t on w (starting a worker if w is nil) with what is left of
// the task's deadline once it waited for its slot. A worker's start (the
// first task's, or after a death) is the sandbox's own cost and does not
// count.
func (s *Sandbox) runOn(w *worker, t Task, slot *ticket) outcome {
	if w == nil {
		var err error
		if w, err = s.start(); err != nil {
			return outcome{err: err}
		}
	}
	left := s.opts.Limits.Timeout - slot.waited
	if left <= 0 {
		return outcome{worker: w, err: s.late(slot)}
	}
	started := time.Now()
	a, err := w.do(request{Task: t, Timeout: left}, left+killGrace)
	switch {
	case err != nil:
		return s.died(w, t, slot, started, err)
	case a.Stage == 0:
		return outcome{answer: a.Answer, worker: w}
	case a.Overran:
		return s.overran(slot, time.Since(started), &Error{Stage: a.Stage, Msg: a.Msg}, w, stageSources(t, a.Stage))
	}
	return outcome{worker: w, err: &Error{Stage: a.Stage, Msg: a.Msg}}
}

// died buries a worker that failed or was killed by its deadline.
func (s *Sandbox) died(w *worker, t Task, slot *ticket, started time.Time, err error) outcome {
	ran := time.Since(started)
	why, overran := s.bury(w)
	stage := StageDryRun
	if t.Into != nil {
		stage = StageFold
	}
	s.log.Warn("batch worker stopped", "reason", why, "err", err)
	// Which program it was running is unknown: both are suspect.
	refusal := refuse(stage, "evaluation %s", why)
	if overran {
		return s.overran(slot, ran, refusal, nil, sourcesOf(t))
	}
	return outcome{err: refusal, offenders: sourcesOf(t)}
}

// overran answers a task that ran out of its deadline. The program is
// blamed, and remembered as an offender, unless the task spent more of its
// deadline waiting for a worker than running: then the sandbox was too
// busy to give it its time.
func (s *Sandbox) overran(slot *ticket, ran time.Duration, refusal *Error, w *worker, offenders []source) outcome {
	if slot.waited > ran {
		return outcome{worker: w, err: s.late(slot)}
	}
	return outcome{worker: w, err: refusal, offenders: offenders}
}

// late is the error of a task whose deadline its wait for a worker ate.
func (s *Sandbox) late(slot *ticket) error {
	return fmt.Errorf("%w: the task waited %s for a worker and ran out of its %s limit",
		ErrBusy, slot.waited.Round(time.Millisecond), s.opts.Limits.Timeout)
}

// stageSources returns the program of t that a refusal of stage comes
// from: the check's for a dry run, the pending job's for a fold.
func stageSources(t Task, stage Stage) []source {
	c := t.Into
	if stage == StageDryRun || c == nil {
		c = t.Check
	}
	if c == nil {
		return nil
	}
	return []source{sourceOf(*c)}
}

// errClosed refuses a task of a closed sandbox.
var errClosed = errors.New("batch sandbox is closed")

// start starts a worker and waits for its hello.
func (s *Sandbox) start() (*worker, error) {
	if s.isClosed() {
		return nil, errClosed
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
		return nil, errClosed
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
// happened to it, and whether its deadline killed it.
func (s *Sandbox) bury(w *worker) (string, bool) {
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
	s.slots.close()
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

// do sends a request and reads its answer; the worker is killed if it
// takes longer than limit.
func (w *worker) do(t request, limit time.Duration) (answer, error) {
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
// Go runtime printed, and whether its deadline is the reason.
func (w *worker) fate() (string, bool) {
	w.mu.Lock()
	overran := w.overran
	w.mu.Unlock()
	out := w.stderr.String()
	switch {
	case strings.Contains(out, "out of memory"):
		return "ran out of memory and was stopped", false
	case strings.Contains(out, "stack overflow"), strings.Contains(out, "stack exceeds"):
		return "nested too deep (stack overflow) and was stopped", false
	case overran:
		return "took too long and was stopped", true
	}
	if line := w.stderr.firstLine(); line != "" {
		return "failed: " + line, false
	}
	return "failed: the worker exited", false
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
