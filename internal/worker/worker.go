// Package worker is `zizq work`: a take stream whose jobs each run a
// command, with the job's payload as JSON on its standard input and its
// metadata in the environment, acknowledged by the command's exit status.
//
// One goroutine (Run's loop) owns the worker's state; the take stream's
// reader, the commands and the acks report to it over channels.
//
// What it guarantees when the take stream drops (the server restarts, or
// the connection breaks): the server puts every job the stream held back
// in the queue, those still running here included. Jobs delivered but not
// started yet are never started. Running commands finish and their results
// are sent until the server takes them; a job the server hands back to
// this worker while it still runs, or after it finished, is not run again
// here: its result is sent for the new delivery. A job that went to
// another worker in the meantime can run twice (delivery is at least
// once); the result this worker could not deliver is then reported.
package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
)

// Failure messages of the runs the worker itself ended.
const msgStopped = "worker stopped"

// Defaults of Config.
const (
	DefaultGrace     = 30 * time.Second
	DefaultDrainPoll = time.Second
	reconnectFirst   = 100 * time.Millisecond
	reconnectMax     = 5 * time.Second
)

// Config is what a Worker runs.
type Config struct {
	Client *client.Client
	// Queues to take from; none means every queue.
	Queues []string
	// Concurrency is how many commands run at once (the stream's
	// prefetch); at least 1.
	Concurrency int
	// Timeout ends a command that runs longer (0: never).
	Timeout time.Duration
	// Grace is how long a timed-out command has between SIGTERM and
	// SIGKILL, and how long running commands may finish once the worker
	// stops.
	Grace time.Duration
	// MaxJobs stops the worker once that many jobs have finished (0: no
	// limit).
	MaxJobs int
	// Drain stops the worker once it holds nothing and no job of its
	// queues can still reach it without waiting for the calendar.
	Drain bool
	// Command is the program and its arguments.
	Command []string
	// Env is the environment the commands inherit; the job's variables
	// are added to it.
	Env []string
	// Events receives what happens to each job.
	Events EventSink
	// Output receives the commands' output, each line prefixed with its
	// job's ID, and the worker's own notes ("zizq: …").
	Output io.Writer
	// WorkerID labels the take stream in the server's logs.
	WorkerID string
	// DrainPoll is how often an idle draining worker asks the server
	// again; 0 means DefaultDrainPoll.
	DrainPoll time.Duration
	// Now is the clock of the events (time.Now when nil).
	Now func() time.Time
	// TempDir is where the worker makes its directory of result files
	// ($ZIZQ_RESULT); "" means os.TempDir().
	TempDir string
}

// UndeliveredError lists the jobs whose results the server never took.
type UndeliveredError struct{ Jobs []string }

func (e *UndeliveredError) Error() string {
	return fmt.Sprintf("%d %s not delivered: %s", len(e.Jobs), plural(len(e.Jobs), "result", "results"), strings.Join(e.Jobs, "; "))
}

// Worker runs the command for the jobs of a take stream.
type Worker struct {
	cfg   Config
	stop  chan string
	abort chan struct{}
}

// New returns a worker of cfg.
func New(cfg Config) *Worker {
	if cfg.Concurrency < 1 {
		cfg.Concurrency = 1
	}
	if cfg.DrainPoll == 0 {
		cfg.DrainPoll = DefaultDrainPoll
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Worker{cfg: cfg, stop: make(chan string, 2), abort: make(chan struct{}, 1)}
}

// Stop starts a clean stop (signal names its cause, or is empty): nothing
// new starts, running commands have Grace to finish, then are killed and
// reported failed; Run returns once every result is delivered.
func (w *Worker) Stop(signal string) {
	select {
	case w.stop <- signal:
	default:
	}
}

// Abort kills the running commands at once and gives up on undelivered
// results: their jobs go back to ready when the stream closes.
func (w *Worker) Abort() {
	select {
	case w.abort <- struct{}{}:
	default:
	}
}

// jobRef names one delivery of a job.
type jobRef struct {
	id       string
	attempts uint32
}

func refOf(j *api.Job) jobRef { return jobRef{id: j.ID, attempts: j.Attempts} }

// session is one take stream.
type session struct {
	seq    int
	stream *client.Stream
	cancel context.CancelFunc
	// closed ends the reader's wait to hand over a frame.
	closed chan struct{}
}

type frame struct {
	seq int
	job api.Job
	err error
}

type opened struct {
	stream *client.Stream
	cancel context.CancelFunc
	err    error
}

type running struct {
	job   api.Job
	proc  *process
	began time.Time
}

type ended struct {
	run *running
	out outcome
	res result
}

type drainAnswer struct {
	activity int
	alive    bool
	err      error
}

// loop is the state of one Run, owned by its goroutine.
type loop struct {
	cfg     Config
	w       *Worker
	notes   *lineSink
	acks    *acker
	results *resultFiles

	// ctx is Run's, ended when Run returns: it bounds every stream.
	ctx       context.Context
	ackCtx    context.Context
	ackCancel context.CancelFunc

	sess       *session
	seq        int
	connecting bool
	backoff    time.Duration
	lostAt     time.Time
	reconnectC <-chan time.Time

	running  map[string]*running
	waiting  []api.Job
	started  int
	finished int
	// activity counts deliveries, so that a drain answer computed while
	// one arrived is not trusted.
	activity int

	stopping   bool
	aborted    bool
	killed     int
	graceC     <-chan time.Time
	ackGiveUpC <-chan time.Time
	ackTimer   bool

	drainAsking bool
	drainC      <-chan time.Time
	drainErr    bool

	frames  chan frame
	opens   chan opened
	ends    chan ended
	answers chan drainAnswer
}

// Run opens the take stream and works until the worker stops: Stop,
// Abort, ctx's end, --max-jobs or --drain. The first connection must
// succeed; later ones are retried. It returns an *UndeliveredError when
// results could not be delivered.
func (w *Worker) Run(ctx context.Context) error {
	runCtx, endRun := context.WithCancel(ctx)
	defer endRun()
	l := &loop{
		cfg: w.cfg, w: w, ctx: runCtx, notes: newLineSink(w.cfg.Output),
		running: map[string]*running{},
		frames:  make(chan frame), opens: make(chan opened, 1),
		ends: make(chan ended), answers: make(chan drainAnswer, 1),
	}
	l.acks = newAcker(w.cfg.Client, l.note)
	l.ackCtx, l.ackCancel = context.WithCancel(context.WithoutCancel(ctx))
	defer l.ackCancel()
	var err error
	if l.results, err = newResultFiles(w.cfg.TempDir); err != nil {
		l.note(fmt.Sprintf("%v: $%s is %s for every job, and the costs written there are lost", err, EnvResult, os.DevNull))
	}
	defer l.results.close()
	o := l.open()
	if o.err != nil {
		return fmt.Errorf("open take stream: %w", o.err)
	}
	l.attach(o)
	for !l.done() {
		l.maybeDrain()
		l.step()
	}
	return l.finish()
}

// step waits for one thing to happen and handles it.
func (l *loop) step() {
	select {
	case f := <-l.frames:
		l.onFrame(f)
	case o := <-l.opens:
		l.onOpened(o)
	case e := <-l.ends:
		l.onEnded(e)
	case a := <-l.answers:
		l.onDrainAnswer(a)
	case <-l.acks.changed:
	case sig := <-l.w.stop:
		l.beginStop(sig)
	case <-l.w.abort:
		l.doAbort()
	case <-l.ctx.Done():
		if !l.aborted {
			l.doAbort()
		}
	case <-l.reconnectC:
		l.reconnectC = nil
		l.reconnect()
	case <-l.graceC:
		l.graceC = nil
		for _, r := range l.running {
			r.proc.kill()
		}
	case <-l.ackGiveUpC:
		l.ackGiveUpC = nil
		l.ackCancel()
	case <-l.drainC:
		l.drainC = nil
	}
}

func (l *loop) note(s string) { l.notes.line([]byte("zizq: "), []byte(s)) }

// open connects a take stream; it blocks.
func (l *loop) open() opened {
	ctx, cancel := context.WithCancel(l.ctx)
	s, err := l.cfg.Client.Take(ctx, client.TakeOptions{Queues: l.cfg.Queues, Prefetch: l.cfg.Concurrency, WorkerID: l.cfg.WorkerID})
	if err != nil {
		cancel()
		return opened{err: err}
	}
	return opened{stream: s, cancel: cancel}
}

// attach makes an open stream the worker's and starts reading it.
func (l *loop) attach(o opened) {
	l.seq++
	s := &session{seq: l.seq, stream: o.stream, cancel: o.cancel, closed: make(chan struct{})}
	l.sess = s
	l.backoff = 0
	go func() {
		for {
			j, err := s.stream.Next()
			select {
			case l.frames <- frame{seq: s.seq, job: j, err: err}:
			case <-s.closed:
				return
			}
			if err != nil {
				return
			}
		}
	}()
}

func (l *loop) onFrame(f frame) {
	if l.sess == nil || f.seq != l.sess.seq {
		return // a frame of a stream dropped already: the server requeued it
	}
	if f.err != nil {
		l.lost(f.err)
		return
	}
	l.activity++
	j := f.job
	if _, ok := l.running[j.ID]; ok {
		// Back while it still runs here (the server requeued it when a
		// stream dropped): its result will answer this delivery. One job
		// never runs twice at once in one worker.
		return
	}
	if l.acks.redeliver(refOf(&j)) {
		return // finished here already: its result is sent now
	}
	if l.stopping || l.quotaReached() {
		return // held until the stream closes, then ready again
	}
	if len(l.running) < l.cfg.Concurrency {
		l.startJob(j)
		return
	}
	l.waiting = append(l.waiting, j) // only after a reconnect, while older commands run
}

func (l *loop) quotaReached() bool { return l.cfg.MaxJobs > 0 && l.started >= l.cfg.MaxJobs }

// lost handles the end of the take stream.
func (l *loop) lost(err error) {
	l.closeSession()
	l.waiting = nil // the server put them back in the queue
	if l.stopping {
		return
	}
	if errors.Is(err, io.EOF) {
		err = errors.New("the server closed it")
	}
	l.note(fmt.Sprintf("lost the take stream of %s (%v): reconnecting; running commands go on, jobs not started went back to the queue", l.cfg.Client.URL(), err))
	l.lostAt = time.Now()
	l.scheduleReconnect()
}

func (l *loop) scheduleReconnect() {
	l.backoff = min(max(2*l.backoff, reconnectFirst), reconnectMax)
	d := l.backoff/2 + rand.N(l.backoff/2+1)
	l.reconnectC = time.After(d)
}

func (l *loop) reconnect() {
	if l.stopping || l.connecting {
		return
	}
	l.connecting = true
	go func() { l.opens <- l.open() }()
}

func (l *loop) onOpened(o opened) {
	l.connecting = false
	switch {
	case o.err != nil && l.stopping:
	case o.err != nil:
		l.scheduleReconnect()
	case l.stopping:
		o.cancel()
		_ = o.stream.Close()
	default:
		l.attach(o)
		l.note(fmt.Sprintf("take stream back after %s", time.Since(l.lostAt).Round(100*time.Millisecond)))
	}
}

// startJob runs the command for a job.
func (l *loop) startJob(j api.Job) {
	l.started++
	l.activity++
	payload := []byte(j.Payload)
	if len(payload) == 0 {
		payload = []byte("null")
	}
	path, err := l.results.create(j.ID)
	if err != nil {
		l.note(fmt.Sprintf("job %s: %v: its $%s is %s, and the costs written there are lost", j.ID, err, EnvResult, os.DevNull))
	}
	p, failed := start(spec{
		argv: l.cfg.Command, env: l.jobEnv(&j, path), stdin: payload,
		out: l.notes, prefix: j.ID, timeout: l.cfg.Timeout, grace: l.cfg.Grace,
	})
	r := &running{job: j, began: l.cfg.Now()}
	if failed != nil {
		l.results.discard(path)
		l.onEnded(ended{run: r, out: *failed})
		return
	}
	r.proc = p
	l.running[j.ID] = r
	l.emit(Event{Kind: EventStarted, PID: p.pid()}, &j)
	go func() {
		out := <-p.done
		l.ends <- ended{run: r, out: out, res: l.results.take(path)}
	}()
}

func (l *loop) jobEnv(j *api.Job, resultPath string) []string {
	return append(l.cfg.Env[:len(l.cfg.Env):len(l.cfg.Env)],
		"ZIZQ_JOB_ID="+j.ID,
		"ZIZQ_JOB_TYPE="+j.Type,
		"ZIZQ_JOB_QUEUE="+j.Queue,
		"ZIZQ_JOB_PRIORITY="+strconv.FormatUint(uint64(j.Priority), 10),
		"ZIZQ_JOB_ATTEMPTS="+strconv.FormatUint(uint64(j.Attempts), 10),
		"ZIZQ_URL="+l.cfg.Client.URL(),
		EnvResult+"="+resultPath,
	)
}

func (l *loop) emit(e Event, j *api.Job) {
	e.Time = l.cfg.Now()
	if j != nil {
		e.ID, e.Type, e.Queue, e.Attempts = j.ID, j.Type, j.Queue, j.Attempts
	}
	l.cfg.Events.Event(e)
}

// onEnded reports a finished command and sends its result.
func (l *loop) onEnded(e ended) {
	delete(l.running, e.run.job.ID)
	l.finished++
	ev, fail := l.verdict(e.out)
	ev.Budgets, ev.Warning = e.res.settles, e.res.warning
	if ev.Warning != "" {
		ev.Warning = "result file ignored: " + ev.Warning
		if !l.aborted { // else nothing is sent at all
			l.note(fmt.Sprintf("job %s: %s; its %s is sent without costs", e.run.job.ID, ev.Warning, outcomeWord(fail)))
		}
	}
	if t := e.res.throttle; t != nil {
		l.throttle(&ev, fail, e.out, t, e.run.job.ID)
	}
	l.emit(ev, &e.run.job)
	if !l.aborted {
		l.acks.submit(l.ackCtx, refOf(&e.run.job), fail, e.res.settles)
	}
	l.startWaiting()
	if l.cfg.MaxJobs > 0 && l.finished >= l.cfg.MaxJobs {
		l.beginStop("")
	}
}

// verdict is the event and the failure report (nil: success) of a run.
func (l *loop) verdict(o outcome) (Event, *api.FailureRequest) {
	ev := Event{Kind: EventFailed, PID: o.pid, Status: o.exitCode, Signal: o.signal, Duration: o.duration}
	switch {
	case o.stopped:
		ev.Message = msgStopped
	case o.timedOut:
		ev.Kind, ev.Message = EventTimedOut, "timed out after "+l.cfg.Timeout.String()
	case o.startErr != nil:
		ev.Message = o.startErr.Error()
	case o.signal != "":
		ev.Message = "killed by " + o.signal
	case o.exitCode != 0:
		ev.Message = "exit status " + strconv.Itoa(o.exitCode)
	default:
		ev.Kind = EventSucceeded
		return ev, nil
	}
	fail := &api.FailureRequest{Message: api.Ptr(ev.Message)}
	if len(o.tail) > 0 {
		fail.Backtrace = api.Ptr(string(o.tail))
	}
	return ev, fail
}

// throttle puts a result file's throttle in the run's failure when the
// command exited with status 75 (EX_TEMPFAIL), the one status that says
// "the upstream refused, try again later"; with any other ending it is
// ignored with a warning, since the run did not say it was refused.
func (l *loop) throttle(ev *Event, fail *api.FailureRequest, o outcome, t *api.Throttle, id string) {
	if fail != nil && o.tempFailed() {
		fail.Throttle, ev.Throttle = t, t
		return
	}
	how := "exit status 0"
	if fail != nil {
		how = ev.Message
	}
	ev.Warning = fmt.Sprintf("result file's throttle ignored: the command ended with %s, and only exit status %d (EX_TEMPFAIL) reports a refusal", how, ExitTempFail)
	if !l.aborted {
		l.note(fmt.Sprintf("job %s: %s; its %s is sent without it", id, ev.Warning, outcomeWord(fail)))
	}
}

// tempFailed reports whether the command itself exited with status 75,
// not killed, timed out or stopped.
func (o outcome) tempFailed() bool {
	return o.startErr == nil && !o.timedOut && !o.stopped && o.signal == "" && o.exitCode == ExitTempFail
}

// outcomeWord names what is sent for a run: its success or its failure.
func outcomeWord(fail *api.FailureRequest) string {
	if fail == nil {
		return "success"
	}
	return "failure"
}

func (l *loop) startWaiting() {
	for len(l.waiting) > 0 && !l.stopping && !l.quotaReached() && len(l.running) < l.cfg.Concurrency {
		j := l.waiting[0]
		l.waiting = l.waiting[1:]
		l.startJob(j)
	}
}

// beginStop stops taking work: jobs delivered but not started stay
// unstarted (the stream stays open until every running job's result is
// in, then closes and they go back to ready).
func (l *loop) beginStop(signal string) {
	if l.stopping {
		if signal != "" {
			l.doAbort() // a second signal
		}
		return
	}
	l.stopping = true
	l.waiting = nil
	l.reconnectC = nil
	if signal != "" || len(l.running) > 0 {
		l.emit(Event{Kind: EventStopping, Signal: signal, Running: len(l.running)}, nil)
	}
	if len(l.running) > 0 {
		l.graceC = time.After(l.cfg.Grace)
	}
}

func (l *loop) doAbort() {
	if !l.stopping {
		l.emit(Event{Kind: EventStopping, Running: len(l.running)}, nil)
	}
	l.stopping, l.aborted = true, true
	l.waiting = nil
	l.killed += len(l.running)
	for _, r := range l.running {
		r.proc.kill()
	}
	l.ackCancel()
}

// done reports whether Run may return: stopping, no command running, and
// every result delivered (or given up on).
func (l *loop) done() bool {
	if !l.stopping || len(l.running) > 0 {
		return false
	}
	if l.aborted || l.ackCtx.Err() != nil || l.acks.busy() == 0 {
		return true
	}
	if !l.ackTimer { // results still on their way: at most Grace more
		l.ackTimer = true
		l.ackGiveUpC = time.After(l.cfg.Grace)
	}
	return false
}

func (l *loop) finish() error {
	l.closeSession()
	l.ackCancel()
	l.acks.wait()
	if l.aborted && l.killed > 0 {
		return fmt.Errorf("stopped at once: %d running %s killed; %s back to ready", l.killed, plural(l.killed, "command", "commands"), plural(l.killed, "its job goes", "their jobs go"))
	}
	if u := l.acks.undelivered(); len(u) > 0 {
		return &UndeliveredError{Jobs: u}
	}
	return nil
}

// closeSession closes the current stream: the server puts the jobs it
// holds back in the queue.
func (l *loop) closeSession() {
	if l.sess == nil {
		return
	}
	l.sess.cancel()
	_ = l.sess.stream.Close()
	close(l.sess.closed)
	l.sess = nil
}
