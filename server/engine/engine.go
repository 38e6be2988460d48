// Package engine is zizq's in-memory dispatch engine. It holds every live job
// (scheduled, ready, parked or in flight), the budgets and the connected
// takers, and decides which job goes to which worker and when. It is plain Go
// with an injected clock: no HTTP, no SQL. Every state change is appended to
// the store's journal while the engine lock is held, so the store sees changes
// in the order the engine made them.
//
// Lock order: Engine.mu is the only lock; nothing blocks while holding it.
package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/zizq/zizq/server/clock"
	"github.com/zizq/zizq/server/jobid"
	"github.com/zizq/zizq/store"
)

// Waiter waits for journalled changes to be durable.
type Waiter interface {
	Wait(ctx context.Context) error
}

// Journal receives the engine's changes, in order. Append must not block.
type Journal interface {
	Append(ops ...store.Op) Waiter
}

// Config holds the server-wide settings the engine decides with.
type Config struct {
	// GlobalInFlightLimit bounds in-flight jobs across all takers (0 = none).
	GlobalInFlightLimit int
	DefaultRetryLimit   uint32
	DefaultBackoff      store.Backoff
	// Default retention of terminal jobs, in milliseconds.
	DefaultCompletedRetentionMs uint64
	DefaultDeadRetentionMs      uint64
	// MaxBudgets bounds the number of budgets (0 = none).
	MaxBudgets int
	// MaxPendingFrames bounds the frames waiting to be written to one taker,
	// so a slow reader cannot make the server buffer without bound.
	MaxPendingFrames int
	// Random returns a number in [0,1) for backoff jitter (nil = math/rand).
	Random func() float64
	// OnDispatch, when set, is called (under the engine lock, so it must be
	// quick) for every job handed to a taker, with the exact dispatch time
	// and, if the job waited in a budget's line (parked) since it became
	// ready, when it began to (ms; 0 when it did not).
	OnDispatch func(j store.Job, at time.Time, parkedAt int64)
}

// DefaultConfig returns Zizq's defaults.
func DefaultConfig() Config {
	return Config{
		GlobalInFlightLimit:    1024,
		DefaultRetryLimit:      25,
		DefaultBackoff:         store.Backoff{Exponent: 4, BaseMs: 15000, JitterMs: 30000},
		DefaultDeadRetentionMs: 7 * 24 * 3600 * 1000,
		MaxBudgets:             8192,
		MaxPendingFrames:       256,
	}
}

// ErrorKind classifies engine errors; the HTTP layer maps them to statuses.
type ErrorKind uint8

const (
	// NotFound: the job or budget does not exist (404).
	NotFound ErrorKind = iota + 1
	// Conflict: the request clashes with existing state (409).
	Conflict
	// Unprocessable: valid request that the current state refuses (422).
	Unprocessable
)

// Error is an engine refusal with a message meant for the client.
type Error struct {
	Kind ErrorKind
	Msg  string
	// Item is the index of the offending job in a bulk request, or -1.
	Item int
}

func (e *Error) Error() string { return e.Msg }

func errorf(kind ErrorKind, format string, args ...any) *Error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...), Item: -1}
}

// Engine is the dispatch engine. All methods are safe for concurrent use.
type Engine struct {
	mu      sync.Mutex
	cfg     Config
	clock   clock.Clock
	journal Journal
	ids     *jobid.Generator
	started time.Time

	jobs      map[string]*job
	queues    map[string]*queue
	global    jobHeap // every ready job, for takers of all queues
	deadlines deadlineHeap
	timer     clock.Timer
	timerAt   int64
	timerGen  uint64

	accounts map[string]*account

	takers    map[*Taker]struct{}
	roomyAll  map[*Taker]struct{} // takers of all queues with room
	servedAll int                 // connected takers of all queues
	inFlight  int

	dirtyAccounts []*account
	dirtyTakers   []*Taker

	counts [numStates]int64
}

// New returns an empty engine. Load the store's state with Restore before
// serving.
func New(cfg Config, clk clock.Clock, journal Journal, ids *jobid.Generator) *Engine {
	if cfg.MaxPendingFrames <= 0 {
		cfg.MaxPendingFrames = 256
	}
	if cfg.Random == nil {
		cfg.Random = rand.Float64
	}
	return &Engine{
		cfg:      cfg,
		clock:    clk,
		journal:  journal,
		ids:      ids,
		started:  clk.Now(),
		jobs:     make(map[string]*job),
		queues:   make(map[string]*queue),
		global:   jobHeap{slot: slotGlobal},
		accounts: make(map[string]*account),
		takers:   make(map[*Taker]struct{}),
		roomyAll: make(map[*Taker]struct{}),
	}
}

// Purge is a retained terminal job that expires at At (ms).
type Purge struct {
	ID string
	At int64
}

// Restore loads the store's state: budgets, live jobs (in-flight jobs must
// already be back to ready) and purge deadlines. Call it once, before takers
// connect; it journals nothing.
func (e *Engine) Restore(budgets []store.Budget, jobs []store.Job, purges []Purge) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, b := range budgets {
		e.addAccount(b)
	}
	for i := range jobs {
		sj := jobs[i]
		if sj.Status == store.InFlight {
			sj.Status = store.Ready
		}
		j, err := e.newJob(sj)
		if err != nil {
			return fmt.Errorf("restore job %s: %w", sj.ID, err)
		}
		e.ids.Observe(sj.ID)
		e.admit(j)
	}
	for _, p := range purges {
		e.deadlines.push(&deadline{at: p.At * int64(time.Millisecond), kind: dlPurge, purgeID: p.ID})
	}
	e.settle()
	return nil
}

func (e *Engine) now() time.Time { return e.clock.Now() }

func nowMs(t time.Time) int64 { return t.UnixMilli() }

// settle runs the work that state changes left behind: budgets whose lines
// may now move and takers that may now receive jobs. Every public method
// that changes state ends with it, then the timer is set to the earliest
// deadline.
func (e *Engine) settle() {
	for {
		if n := len(e.dirtyAccounts); n > 0 {
			a := e.dirtyAccounts[n-1]
			e.dirtyAccounts = e.dirtyAccounts[:n-1]
			a.dirty = false
			if e.accounts[a.cfg.Key] == a {
				e.walk(a)
			}
			continue
		}
		if n := len(e.dirtyTakers); n > 0 {
			t := e.dirtyTakers[n-1]
			e.dirtyTakers = e.dirtyTakers[:n-1]
			t.dirty = false
			e.pull(t)
			continue
		}
		if d := e.deadlines.min(); d != nil && d.at <= e.now().UnixNano() {
			e.fireDue() // already due (e.g. a retry_at in the past): no timer round trip
			continue
		}
		break
	}
	e.armTimer()
}

func (e *Engine) markAccount(a *account) {
	if !a.dirty {
		a.dirty = true
		e.dirtyAccounts = append(e.dirtyAccounts, a)
	}
}

func (e *Engine) markTaker(t *Taker) {
	if !t.dirty && !t.closed {
		t.dirty = true
		e.dirtyTakers = append(e.dirtyTakers, t)
	}
}

// armTimer points the one timer at the earliest deadline.
func (e *Engine) armTimer() {
	top := e.deadlines.min()
	if top == nil {
		if e.timer != nil {
			e.timer.Stop()
			e.timer = nil
		}
		return
	}
	if e.timer != nil && e.timerAt == top.at {
		return
	}
	if e.timer != nil {
		e.timer.Stop()
	}
	e.timerGen++
	gen := e.timerGen
	e.timerAt = top.at
	d := time.Duration(top.at - e.now().UnixNano())
	if d < 0 {
		d = 0
	}
	e.timer = e.clock.AfterFunc(d, func() { e.onTimer(gen) })
}

func (e *Engine) onTimer(gen uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if gen == e.timerGen {
		e.timer = nil
	}
	e.fireDue()
	e.settle()
}

// fireDue handles every deadline that has come, each computed from its own
// schedule, so a late timer releases everything that is due at once.
func (e *Engine) fireDue() {
	now := e.now()
	ns := now.UnixNano()
	for {
		d := e.deadlines.min()
		if d == nil || d.at > ns {
			return
		}
		e.deadlines.remove(d)
		switch d.kind {
		case dlPromote:
			j := d.job
			j.dl = nil
			j.Status = store.Ready
			e.journal.Append(store.SetStatus(j.ID, store.Ready, 0))
			e.offer(j)
		case dlRefill:
			d.account.dl = nil
			e.markAccount(d.account)
		case dlPurge:
			e.journal.Append(store.DeleteJob(d.purgeID))
		}
	}
}
