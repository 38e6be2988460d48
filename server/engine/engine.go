// Package engine is zizq's in-memory dispatch engine. It holds every live job
// (scheduled, waiting or in flight), the budgets and the connected takers, and
// decides which job goes to which worker and when, by the dispatch rule of
// docs/ENGINE.md. It is plain Go with an injected clock: no HTTP, no SQL.
// Every state change is appended to the store's journal while the engine lock
// is held, so the store sees changes in the order the engine made them.
//
// # The dispatch rule, as built
//
// One total order, (priority, id), decides everything. A waiting job of a
// queue that some connected taker serves is affordable when each of its
// budgets pays it: the budget's tokens, less the cost of the budget's head
// when that head comes earlier, cover the job's cost. A budget's line is
// the waiting jobs of served queues that it cannot pay, and its head; a job
// refused by a while_in_flight budget waits in that line only, not in the
// lines of its time_based budgets. Each budget has at most one head, the
// earliest job of its line when the budget had none, and the head keeps its
// place until it is dispatched, leaves (deleted, moved, rebound), its queue
// loses its last taker, or (time_based) a while_in_flight budget refuses it,
// or it is affordable and waits for a worker behind an earlier affordable
// job of its own queue. A taker with room, the one that has had room
// longest first, receives the earliest affordable job of its queues.
//
// After every operation the engine settles: it looks at heads (checking and
// choosing), then makes one decision, and repeats until no taker can receive
// anything; then affordable heads that wait behind an earlier affordable job
// of their queue give their reservation up (all at once), and it settles
// again if that changed anything.
//
// Lines are not stored. Waiting jobs sit in groups, one per queue and
// binding signature (see group), and a budget pays a prefix of each group,
// so every decision reads the first member of a few groups, whatever the
// length of the lines: jobs of unserved queues are in groups their budgets
// do not see, and cost nothing. A family's groups of one queue and cost
// form one collection (collection.go), one entry among the queue's
// candidates, so a change of the family costs O(log groups), whatever the
// number of its live sub-budgets.
//
// # Time
//
// Deadlines (scheduled jobs, refill moments of time_based budgets, purges,
// the alarms of alarm.go, and the jobs' start_by of deadline.go) share one
// timer. A deadline is handled as of its own time, before any later
// operation, so a timer that fires late delays a dispatch but never lowers
// a budget's rate: the pool is debited at the deadline. A job whose
// start_by has come dies before anything else of that instant is decided:
// no job is dispatched at or after its start_by.
//
// # Debt and calendar resets
//
// Both enter the rule through one word only: whether a budget's pool pays
// a cost now. A time_based pool in debt (a job settled above its estimate,
// settle.go) pays nothing, so every job of its served groups is in its
// line, and its head keeps its place; its refill moment is when the drip
// has repaid the debt and then the head's cost, exactly as for a pool
// that is merely low. A calendar pool pays while what it spent in the
// period plus the cost is within the allocation; its refill moment is its
// next reset, where the pool is whole again (forgiving any debt). So a
// calendar budget's line, head and deadline are a time_based budget's,
// with a step where the other has a slope: "time_based" in this package
// means both unless a comment says otherwise, and account.spends says
// which budgets they are.
//
// # Backing off
//
// An adaptive budget that a worker says the upstream refused pays at a
// share of its configured rate (adaptive.go): its pool is reconfigured at
// each step of the climb back, a deadline like any other, and a refusal's
// retry_after is a pause that leaves the configuration alone. The rule
// sees neither: only a pool that pays less, or a budget that is paused.
//
// # Serving while it loads
//
// A restore may serve before it has every job (restore.go): dispatch stays
// within the horizon, a prefix of the one order that no job still to load
// can precede; affordBound and partBound start from it.
//
// # Unique keys
//
// The holder index of unique keys lives here too, beside the records and
// decided under the same lock as the enqueue it answers: a side table of
// the live jobs that have a key, and each key's latest claimant (unique.go
// says when a claimant holds, lets go and takes back its key).
//
// Lock order: Engine.mu, then the store writer's lock (inside Journal.Append);
// nothing blocks while holding Engine.mu.
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
	// Resets reads calendar budgets' reset schedules (calendar.go); nil
	// refuses calendar budgets.
	Resets ResetParser
	// OnDispatch, when set, is called (under the engine lock, so it must be
	// quick) for every job handed to a taker, with the dispatch time and,
	// for a job bound to budgets, when it began to wait (ms; 0 otherwise).
	OnDispatch func(j store.Job, at time.Time, waitingSince int64)
	// OnExpire, when set, is called (under the engine lock) for every job
	// that dies of its start_by (deadline.go), with the time of its death
	// (its start_by, but at a restore) and how late, by the clock, the
	// engine handled it.
	OnExpire func(id string, at time.Time, late time.Duration)
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
	// Invalid: a request that contradicts itself, whatever the state
	// (400): a job bound to a family and to one of its sub-budgets.
	Invalid
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
	idgen   *jobid.Generator
	started time.Time
	// vnow is the engine's time (unix ns): the clock's at each operation,
	// a deadline's own while the deadline is handled. It never goes back.
	vnow int64

	// Live jobs: records in a slab, found by ID; the rarely set fields of a
	// job beside them.
	slab      slab
	ids       idIndex
	overrides map[int32]*overrides
	// failedAt is when a job that has failed failed last (ms): the store's
	// copy may lag behind a retry that is dispatched again at once.
	failedAt map[int32]int64
	// uncounted counts a live job's failures that do not count toward its
	// retry limit: the upstream refused it (adaptive.go). Not stored: after
	// a restart they count.
	uncounted map[int32]uint32
	// requeuedAt is the dequeued_at (ms) of a live job that went back to
	// waiting when its taker went away, until it is dispatched again.
	requeuedAt map[int32]int64
	batches    batchTables
	types      names

	// unique is the holder index of unique keys (unique.go).
	unique uniqueIndex

	// deadlines holds the jobs' start_by and the fifth heap of deadlines,
	// theirs (deadline.go).
	deadlines deadlineTable

	// Interned binding lists (index 0: none) and their signatures.
	bindLists  []bindList
	bindIndex  map[string]uint32
	freeBinds  []uint32
	signatures map[string]*signature

	queues    map[string]*queue
	queueList []*queue  // by queue index
	hot       queueHeap // queues with an affordable job, by their earliest
	// Deadlines: five heaps, one timer at the earliest of them.
	promos   promoHeap
	purges   purgeHeap
	refills  refillHeap
	alarms   alarmHeap
	timer    clock.Timer
	timerAt  int64
	timerGen uint64

	accounts map[string]*account
	// spends holds the calendar spends not yet journalled (calendar.go).
	spends spends

	// onAlarm receives the names of the alarms that came (alarm.go);
	// dueAlarms holds them until the operation ends.
	onAlarm   func(names []string)
	dueAlarms []string

	takers     map[*Taker]struct{}
	takerSlots []*Taker // by slot, nil when free
	freeSlots  []int32
	roomyAll   takerList // takers of every queue with room, in room order
	servedAll  int       // connected takers of every queue
	inFlight   int
	conns      uint64
	roomSeq    uint64

	// Work lists of the current operation.
	changedAccounts []*account
	headChecks      []*account
	roundBuf        []*account // refreshHeads' scratch
	deadlineChecks  []*account
	dirtyGroups     []*group
	dirtyColls      []*collection
	gainedRoom      []*Taker
	touched         []*queue
	sigBuf          []byte
	bindBuf         []bind // newJob's scratch
	// subBudgets counts the live sub-budgets (families.go): they are in
	// accounts but not budgets the limit counts. restoredFamilies marks the
	// families whose virtual time a restore has set (nil after it).
	subBudgets       int
	restoredFamilies map[*account]bool

	// horizon is the part of the one order that may be dispatched: all of
	// it, except while a restore serves the jobs it has loaded so far
	// (restore.go).
	horizon bound

	counts [numStates]int64
	obs    observer // the change feed of dashboards (observe.go)
	// work counts the group and budget entries decisions looked at (for
	// tests that prove unserved backlogs cost nothing).
	work      uint64
	decisions uint64
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
	now := clk.Now()
	e := &Engine{
		cfg:        cfg,
		clock:      clk,
		journal:    journal,
		idgen:      ids,
		started:    now,
		vnow:       now.UnixNano(),
		overrides:  map[int32]*overrides{},
		failedAt:   map[int32]int64{},
		uncounted:  map[int32]uint32{},
		requeuedAt: map[int32]int64{},
		unique:     newUniqueIndex(),
		bindLists:  []bindList{{}},
		bindIndex:  map[string]uint32{},
		signatures: map[string]*signature{},
		queues:     map[string]*queue{},
		accounts:   map[string]*account{},
		takers:     map[*Taker]struct{}{},
		horizon:    admitAll,
	}
	e.promos.e = e
	return e
}

func (e *Engine) nowMs() int64 { return e.vnow / int64(time.Millisecond) }

// enterOp begins an operation: deadlines that have come are handled first,
// each as of its own time, then the engine's time is the clock's.
func (e *Engine) enterOp() {
	now := e.clock.Now().UnixNano()
	e.fireDue(now)
	e.vnow = max(e.vnow, now)
}

// finishOp settles after an operation's changes, handles deadlines that are
// already due (a retry_at in the past), points the timer at the next and
// hands on the alarms that came.
func (e *Engine) finishOp() {
	e.settle()
	e.fireDue(e.vnow)
	e.flushSpends()
	e.armTimer()
	e.deliverAlarms()
	e.obs.poke()
}

// nextDeadline returns the earliest deadline of the five heaps.
func (e *Engine) nextDeadline() (int64, bool) {
	at, ok := int64(0), false
	take := func(t int64) {
		if !ok || t < at {
			at, ok = t, true
		}
	}
	if len(e.promos.items) > 0 {
		take(e.promos.items[0].at)
	}
	if len(e.purges.items) > 0 {
		take(e.purges.items[0].at)
	}
	if len(e.refills.items) > 0 {
		take(e.refills.items[0].at)
	}
	if len(e.alarms.items) > 0 {
		take(e.alarms.items[0].at)
	}
	if t, due := e.deadlines.next(); due {
		take(t)
	}
	return at, ok
}

// fireDue handles every deadline due by until, in time order, settling
// after those of each instant.
func (e *Engine) fireDue(until int64) {
	for {
		at, ok := e.nextDeadline()
		if !ok || at > until {
			return
		}
		e.vnow = max(e.vnow, at)
		e.handleDue()
		e.settle()
	}
}

// handleDue applies every deadline that has come by vnow. Jobs whose
// start_by has come die first: a job is dispatched before its start_by or
// not at all.
func (e *Engine) handleDue() {
	e.expireDue()
	for len(e.promos.items) > 0 && e.promos.items[0].at <= e.vnow {
		p := e.promos.items[0]
		e.promos.remove(0)
		e.setState(p.idx, stNew)
		e.journal.Append(store.SetStatus(p.id.String(), store.Ready, 0))
		e.join(ref{id: p.id, idx: p.idx})
	}
	for len(e.refills.items) > 0 && e.refills.items[0].at <= e.vnow {
		d := e.refills.items[0]
		e.refills.remove(d)
		d.account.dl = nil
		e.changed(d.account)
		e.endPause(d.account)
		e.stepBackoff(d.account)
		e.releaseSub(d.account)
	}
	for len(e.purges.items) > 0 && e.purges.items[0].at <= e.vnow {
		id := e.purges.pop().id
		e.dropFinished(id)
		e.journal.Append(store.DeleteJob(id.String()))
	}
	e.takeDueAlarms()
}

// armTimer points the one timer at the earliest deadline.
func (e *Engine) armTimer() {
	at, ok := e.nextDeadline()
	if !ok {
		if e.timer != nil {
			e.timer.Stop()
			e.timer = nil
		}
		return
	}
	if e.timer != nil && e.timerAt == at {
		return
	}
	if e.timer != nil {
		e.timer.Stop()
	}
	e.timerGen++
	gen := e.timerGen
	e.timerAt = at
	d := time.Duration(at - e.clock.Now().UnixNano())
	e.timer = e.clock.AfterFunc(max(d, 0), func() { e.onTimer(gen) })
}

func (e *Engine) onTimer(gen uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if gen == e.timerGen {
		e.timer = nil
	}
	e.enterOp()
	e.finishOp()
}

// settle makes every decision the current state allows (see the package
// documentation), then recomputes the refill deadlines that changed.
func (e *Engine) settle() {
	e.seatGained()
	for {
		e.refreshHeads()
		e.refreshCandidates()
		if e.dispatchOne() {
			e.decisions++
			continue
		}
		if e.releaseIdleReservations() {
			continue
		}
		break
	}
	e.refreshDeadlines()
}

// refreshCandidates recomputes the candidates of the groups whose budgets
// or members changed, then those of their collections.
func (e *Engine) refreshCandidates() {
	for _, a := range e.changedAccounts {
		a.changedMark = false
		for _, g := range a.served.list {
			e.markGroup(g)
		}
		for _, c := range a.colls.all() {
			e.markColl(c)
		}
	}
	e.changedAccounts = e.changedAccounts[:0]
	// In the order they were marked, which is mostly the one order (acks
	// come in the order of dispatch): new partial candidates then join a
	// collection's sets at the back, where a tree looks first.
	for i := 0; i < len(e.dirtyGroups); i++ {
		if g := e.dirtyGroups[i]; g.dirty {
			e.recompute(g)
		}
	}
	clear(e.dirtyGroups)
	e.dirtyGroups = e.dirtyGroups[:0]
	for _, c := range e.dirtyColls {
		if c.dirty {
			e.recomputeColl(c)
		}
	}
	clear(e.dirtyColls)
	e.dirtyColls = e.dirtyColls[:0]
}

// releaseIdleReservations applies the third exception: an affordable head
// that waits for a worker behind an earlier affordable job of its queue
// gives its reservation up. Every such head is found first and all give up
// at once; it reports whether any did.
func (e *Engine) releaseIdleReservations() bool {
	var release []*account
	for _, q := range e.touchedQueues() {
		best := q.best()
		for _, a := range q.looseHeads.list {
			h := a.head
			if h.idx != best.idx && e.affordBound(a.headGroup).admits(h.k()) {
				release = append(release, a)
			}
		}
		release = e.idleHeads(q, best, release)
	}
	for _, a := range release {
		e.clearHead(a)
	}
	return len(release) > 0
}

// touchedQueues returns the queues with a group recomputed since the last
// call, clearing the marks: only there can a head's standing have changed.
func (e *Engine) touchedQueues() []*queue {
	out := e.touched
	for _, q := range out {
		q.touched = false
	}
	e.touched = e.touched[:0:0]
	return out
}

// refreshDeadlines recomputes the refill deadline of every time_based
// budget whose line or pool changed.
func (e *Engine) refreshDeadlines() {
	for _, a := range e.deadlineChecks {
		a.dlMark = false
		if a.gone {
			continue
		}
		at, ok := e.deadlineOf(a)
		if a.dl != nil && (!ok || a.dl.at != at) {
			e.refills.remove(a.dl)
			a.dl = nil
		}
		if ok && a.dl == nil {
			a.dl = &refill{at: at, account: a}
			e.refills.push(a.dl)
		}
	}
	e.deadlineChecks = e.deadlineChecks[:0]
}

// catchUp brings the engine to the clock's time before a read: deadlines
// that have come are handled, so what is read agrees with the decisions.
func (e *Engine) catchUp() {
	e.enterOp()
	e.finishOp()
}
