package engine

import (
	"time"

	"github.com/google/btree"
	"github.com/zizq/zizq/server/budget"
	"github.com/zizq/zizq/store"
)

// account is the live side of one budget: its token pool, its line of
// waiting jobs in (priority, id) order, and the jobs bound to it.
type account struct {
	cfg        store.Budget
	pool       budget.Pool
	line       *btree.BTreeG[*job] // parked jobs this budget refuses
	lineQueues map[*queue]int      // line members per queue
	bound      map[*job]struct{}
	// Claims: an affordable job that waits for a worker earmarks its cost,
	// so later jobs cannot take its tokens (its reservation). claimServed
	// counts only jobs whose queue a connected taker serves: claims of jobs
	// nobody can run never hold back jobs that can run.
	claimAll    int64
	claimServed int64
	inFlight    int64
	dispatched  int64
	dl          *deadline
	dirty       bool
}

func newPool(cfg store.Budget, ns int64) budget.Pool {
	if cfg.Strategy == store.TimeBased {
		return budget.NewTimeBased(cfg.Allocation, cfg.DurationMs, cfg.Burst, ns)
	}
	return budget.NewWhileInFlight(cfg.Allocation)
}

func (e *Engine) addAccount(cfg store.Budget) *account {
	a := &account{
		cfg:        cfg,
		pool:       newPool(cfg, e.now().UnixNano()),
		line:       btree.NewG(16, before),
		lineQueues: make(map[*queue]int),
		bound:      make(map[*job]struct{}),
	}
	e.accounts[cfg.Key] = a
	return a
}

// maxCost is the largest cost a job bound to the budget may have.
func maxCost(cfg store.Budget) int64 {
	if cfg.Strategy == store.TimeBased && cfg.Burst > 0 && cfg.Burst < cfg.Allocation {
		return cfg.Burst
	}
	return cfg.Allocation
}

// reservedAgainst reports whether an earlier job in the account's line, whose
// queue a connected taker serves, reserves the budget against j.
func (e *Engine) reservedAgainst(a *account, j *job) bool {
	reserved := false
	a.line.Ascend(func(h *job) bool {
		if h == j || !before(h, j) {
			return false
		}
		if e.served(h.q) {
			reserved = true
			return false
		}
		return true
	})
	return reserved
}

// claims returns what the budget has earmarked for waiting jobs, as seen by
// job j (excluding j's own claim).
func (e *Engine) claims(a *account, j *job, cost int64) int64 {
	c := a.claimAll
	if e.served(j.q) {
		c = a.claimServed
	}
	if j.state == stReady {
		c -= cost
	}
	return c
}

// canPay reports whether the budget can pay j now: enough tokens beyond the
// claims of waiting jobs, and no earlier parked job reserving it.
func (e *Engine) canPay(a *account, j *job, cost int64, ns int64) bool {
	return a.pool.CanPay(cost+e.claims(a, j, cost), ns) && !e.reservedAgainst(a, j)
}

// payable reports whether every bound budget can pay the job now. Each
// budget that cannot takes the job into its line (at its (priority, id)
// place), so the job waits in the line of every budget that refuses it.
func (e *Engine) payable(j *job, now time.Time) bool {
	ns := now.UnixNano()
	ok := true
	for i := range j.binds {
		b := &j.binds[i]
		if e.canPay(b.a, j, b.cost, ns) {
			continue
		}
		ok = false
		if !b.inLine {
			b.inLine = true
			b.a.line.ReplaceOrInsert(j)
			b.a.lineQueues[j.q]++
			e.markAccount(b.a)
		}
	}
	return ok
}

// unline takes a job out of every line it is in; those budgets' heads may
// have changed, so they are looked at again.
func (e *Engine) unline(j *job) {
	for i := range j.binds {
		b := &j.binds[i]
		if !b.inLine {
			continue
		}
		b.a.line.Delete(j)
		b.a.lineQueues[j.q]--
		if b.a.lineQueues[j.q] == 0 {
			delete(b.a.lineQueues, j.q)
		}
		b.inLine = false
		e.markAccount(b.a)
	}
}

// walk is "budget gains tokens": serve the line from its head while every
// budget can pay. A job that can pay goes to a taker with room, or else to
// its ready set, claiming its costs while it waits for a worker. The walk
// stops at the first job of a served queue that cannot go: it heads the
// line and reserves the budget from then on. Jobs of queues no taker serves
// reserve nothing, but they too leave the line when the budget can pay
// them, in their own (priority, id) order, so parked counts stay true with
// no worker connected.
func (e *Engine) walk(a *account) {
	now := e.now()
	// The first job of a served queue and the first of an unserved queue
	// that could not move: the refill deadline wakes whichever can go first.
	var stopServed, stopUnserved *job
	servedLeft := e.servedInLine(a)
	var after *job
	for {
		if stopUnserved != nil && servedLeft == 0 {
			break // only unserved jobs remain, and they keep their places
		}
		h := e.nextInLine(a, after)
		if h == nil {
			break
		}
		after = h
		served := e.served(h.q)
		if served {
			servedLeft--
		}
		if !served && stopUnserved != nil {
			continue // keeps its place behind an earlier unserved job
		}
		if !e.payable(h, now) {
			if served {
				stopServed = h
				break
			}
			stopUnserved = h
			continue
		}
		if t := e.roomyTaker(h.q); served && t != nil {
			e.deliver(h, t, now)
		} else {
			e.toReady(h)
		}
	}
	e.setRefill(a, now, stopServed, stopUnserved)
}

// servedInLine counts the line members whose queue a taker serves.
func (e *Engine) servedInLine(a *account) int {
	n := 0
	for q, c := range a.lineQueues {
		if e.served(q) {
			n += c
		}
	}
	return n
}

// nextInLine returns the first line member after `after` (nil: the head).
func (e *Engine) nextInLine(a *account, after *job) *job {
	var found *job
	visit := func(h *job) bool {
		if h == after {
			return true
		}
		found = h
		return false
	}
	if after == nil {
		a.line.Ascend(visit)
	} else {
		a.line.AscendGreaterOrEqual(after, visit)
	}
	return found
}

// bindOf returns the job's binding to the account.
func (j *job) bindOf(a *account) *bind {
	for i := range j.binds {
		if j.binds[i].a == a {
			return &j.binds[i]
		}
	}
	return nil
}

// setRefill keeps one deadline per time_based budget: the moment the job
// the walk stopped at becomes affordable here. None when nothing waits on
// this budget's tokens.
func (e *Engine) setRefill(a *account, now time.Time, stoppers ...*job) {
	var at int64
	ok := false
	for _, h := range stoppers {
		if t, yes := e.refillAt(a, h, now); yes && (!ok || t < at) {
			at, ok = t, true
		}
	}
	if a.dl != nil && (!ok || a.dl.at != at) {
		e.deadlines.remove(a.dl)
		a.dl = nil
	}
	if ok && a.dl == nil {
		a.dl = &deadline{at: at, kind: dlRefill, account: a}
		e.deadlines.push(a.dl)
	}
}

func (e *Engine) refillAt(a *account, h *job, now time.Time) (int64, bool) {
	if a.pool.Kind() != budget.TimeBased || h == nil || h.bindOf(a) == nil {
		return 0, false
	}
	ns := now.UnixNano()
	cost := h.bindOf(a).cost
	need := cost + e.claims(a, h, cost)
	if a.pool.CanPay(need, ns) {
		return 0, false // it waits on another budget, or on a reservation
	}
	return a.pool.AffordableAt(need, ns) // none while claims exceed capacity: a dispatch wakes it
}

// changeServed applies a change to which queues are served (a taker comes
// or goes), moving the claims of the affected ready jobs between "served"
// and "unserved", then looks at every line again: who reserves has changed.
func (e *Engine) changeServed(queues []*queue, change func()) {
	affected := queues
	if affected == nil {
		for _, q := range e.queues {
			affected = append(affected, q)
		}
	}
	shift := func(sign int64) {
		for _, q := range affected {
			if !e.served(q) {
				continue
			}
			for _, j := range q.ready.items {
				for _, b := range j.binds {
					b.a.claimServed += sign * b.cost
				}
			}
		}
	}
	shift(-1)
	change()
	shift(+1)
	e.markLinesDirty()
}

// markLinesDirty looks at every budget with a line again; used when the set
// of served queues changes, which changes who reserves.
func (e *Engine) markLinesDirty() {
	for _, a := range e.accounts {
		if a.line.Len() > 0 {
			e.markAccount(a)
		}
	}
}

func kindOf(cfg store.Budget) budget.Kind {
	if cfg.Strategy == store.TimeBased {
		return budget.TimeBased
	}
	return budget.WhileInFlight
}
