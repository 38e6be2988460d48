package batchexpr

import (
	"bufio"
	"container/list"
	"context"
	"encoding/gob"
	"io"
	"os"
	"runtime/debug"
	"time"
)

// The worker protocol, gob over the worker's stdin and stdout: the worker
// says hello, the parent sends the setup, then requests and answers
// alternate, one at a time, until the parent closes stdin.

// workerEnv marks a process started as a worker; the value guards against
// an accidental match.
const (
	workerEnv   = "ZIZQ_INTERNAL_BATCHEXPR_WORKER"
	workerValue = "1"
	protocol    = 2
)

type hello struct{ Protocol int }

type setup struct {
	Limits      Limits
	MemoryBytes int64
}

// Task is one evaluation: the dry run of a new job's own programs, a fold
// into a pending job, or both (in that order).
type Task struct {
	// Check, when set, is compiled and dry-run with New as both $existing
	// and $new.
	Check *Config
	// Into, when set, folds New into Existing with the pending job's
	// programs.
	Into     *Config
	Existing []byte
	New      []byte
}

// Answer is a task's outcome: whether New folds into Existing, and the
// merged payload when it does.
type Answer struct {
	Folds   bool
	Payload []byte
}

// request is a task with the time it has left: its deadline counts from
// its queueing in the parent, so a task that waited runs for less than the
// limit.
type request struct {
	Task
	Timeout time.Duration
}

type answer struct {
	Answer
	Stage   Stage // 0: no refusal
	Msg     string
	Overran bool // the refusal is the deadline's
}

// ServeIfWorker turns the process into a batch worker, and never returns,
// if it was started as one (by a Sandbox); otherwise it returns at once.
// Call it first thing in main, and in TestMain of the packages whose tests
// fold batches (the test binary is the worker there).
func ServeIfWorker() {
	if os.Getenv(workerEnv) != workerValue {
		return
	}
	os.Exit(serveWorker(os.Stdin, os.Stdout))
}

// serveWorker runs tasks from r, answering on w, until r ends.
func serveWorker(r io.Reader, w io.Writer) int {
	dec := gob.NewDecoder(bufio.NewReader(r))
	bw := bufio.NewWriter(w)
	enc := gob.NewEncoder(bw)
	if enc.Encode(hello{Protocol: protocol}) != nil || bw.Flush() != nil {
		return 1
	}
	var s setup
	if err := dec.Decode(&s); err != nil {
		return 1
	}
	confine(s.MemoryBytes)
	cache := newProgramCache(programCacheSize)
	for {
		var req request
		if err := dec.Decode(&req); err != nil {
			return 0 // the parent closed stdin (or died)
		}
		a := run(req, cache, s.Limits)
		if enc.Encode(a) != nil || bw.Flush() != nil {
			return 1
		}
	}
}

// confine bounds what a hostile program can take from the machine: the
// address space (where the platform allows, see limitMemory), the stack
// (a deep recursion dies at 64 MiB instead of 1 GiB) and the heap's
// growth before the collector works hard.
func confine(memoryBytes int64) {
	debug.SetMaxStack(64 << 20)
	if memoryBytes > 0 {
		debug.SetMemoryLimit(memoryBytes / 2)
		if !raceBuild {
			limitMemory(memoryBytes)
		}
	}
}

// run evaluates a task under the time it has left; its refusals name the
// whole limit, which is what the deadline stands for.
func run(req request, cache *programCache, lim Limits) answer {
	ctx, cancel := context.WithTimeout(context.Background(), req.Timeout)
	defer cancel()
	a, err := evaluate(ctx, req.Task, cache, lim)
	if err != nil {
		e, ok := err.(*Error)
		if !ok {
			e = &Error{Stage: StageFold, Msg: err.Error()}
		}
		return answer{Stage: e.Stage, Msg: e.Msg, Overran: ctx.Err() != nil}
	}
	return answer{Answer: a}
}

func evaluate(ctx context.Context, t Task, cache *programCache, lim Limits) (Answer, error) {
	incoming, err := Decode(t.New)
	if err != nil {
		return Answer{}, err
	}
	if t.Check != nil {
		p, err := cache.get(*t.Check)
		if err != nil {
			return Answer{}, err
		}
		if err := p.DryRun(ctx, incoming, lim); err != nil {
			return Answer{}, err
		}
	}
	if t.Into == nil {
		return Answer{}, nil
	}
	p, err := cache.get(*t.Into)
	if err != nil {
		return Answer{}, err
	}
	existing, err := Decode(t.Existing)
	if err != nil {
		return Answer{}, err
	}
	folds, out, err := p.Fold(ctx, existing, incoming, lim)
	return Answer{Folds: folds, Payload: out}, err
}

// programCacheSize bounds the compiled programs a worker keeps: a batch's
// pair is compiled once and used for every fold of the batch.
const programCacheSize = 256

// programCache keeps the most recently used compiled programs.
type programCache struct {
	max   int
	order *list.List // of *cached, most recent first
	byCfg map[Config]*list.Element
}

type cached struct {
	cfg Config
	p   *Program
	err error
}

func newProgramCache(max int) *programCache {
	return &programCache{max: max, order: list.New(), byCfg: map[Config]*list.Element{}}
}

// get returns the compiled cfg (or why it does not compile).
func (c *programCache) get(cfg Config) (*Program, error) {
	if el, ok := c.byCfg[cfg]; ok {
		c.order.MoveToFront(el)
		e := el.Value.(*cached)
		return e.p, e.err
	}
	p, err := Compile(cfg)
	c.byCfg[cfg] = c.order.PushFront(&cached{cfg: cfg, p: p, err: err})
	if c.order.Len() > c.max {
		old := c.order.Remove(c.order.Back()).(*cached)
		delete(c.byCfg, old.cfg)
	}
	return p, err
}

// MemoryLimited reports whether workers run under an address-space limit:
// on Linux, but for race builds (see race.go). Elsewhere a hostile program
// can take its worker's memory, though never the server's.
func MemoryLimited() bool { return limitsMemory && !raceBuild }
