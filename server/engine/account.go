package engine

import (
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/zizq/zizq/server/budget"
	"github.com/zizq/zizq/store"
)

// account is the live side of one budget: its token pool, its head (the one
// job it reserves for) and the groups of served queues whose jobs it binds.
// Its line is not stored: a job is in it when the budget cannot pay it (or
// it is the head), which the pool, the head and the groups answer.
type account struct {
	// The fields a dispatch, a release or a head's change reads come
	// first, in a few cache lines: a family's 10,000 sub-budgets are each
	// visited once in 10,000 dispatches, so each line they span is a miss.
	head      item // none when the budget has no head
	headAt    int32
	headCost  int64
	headGroup *group
	headIn    *collection // the collection whose heads hold its head (collection.go)
	// looseAt is its place in its head's queue's looseHeads, as headAt is
	// in its heads (acctSet).
	looseAt    int32
	bound      int64
	inFlight   int64
	dispatched int64
	// waitN and waitCost count the waiting jobs bound to the budget,
	// served or not, and what they cost it (the forecast's backlog).
	waitN, waitCost int64

	// Families (families.go): fam is set on a family, parent on one of its
	// sub-budgets, whose finish is the tag its next job starts from.
	fam    *family
	parent *account
	finish int64
	// weight is a sub-budget's, finishFrac the remainder of its finish in
	// 1/weight ms (weights.go).
	weight, finishFrac int64

	// pauseEnd is when a pause ends (ns): 0 not paused, MaxInt64 until
	// resumed (pause.go).
	pauseEnd int64
	// bo is its back-off after refusals and throttleEnd the end of the
	// last refusal's retry_after (ns; 0: none), while it pays nothing
	// (adaptive.go).
	bo          *backoff
	throttleEnd int64
	dl          *refill
	// costs counts the unfinished jobs bound to the budget by cost, for the
	// checks of a change of allocation or burst and of a delete.
	costs costCounts
	// served holds the groups of served queues whose jobs it binds, but
	// those it collects (a family's: colls, collection.go).
	served ptrSet[*group]
	colls  *collSet
	// tbCo counts, for each time_based budget, the served groups it shares
	// with this one (a while_in_flight budget's change looks at their
	// heads); nil when there is none.
	tbCo map[*account]int32

	// gone marks a budget no longer in Engine.accounts (dropAccount): the
	// work lists may still hold it, and a flag is cheaper to ask than the
	// map by key.
	gone bool

	// dispatchSpent and settleSpent: its calendar spend changed in this
	// operation and waits in Engine.spends.
	dispatchSpent, settleSpent bool

	changedMark bool // its groups' candidates need recomputing
	headMark    bool // its head needs checking or choosing
	dlMark      bool // its refill deadline needs recomputing

	// flightMean is the mean time in flight (ns) of its jobs, weighted
	// towards the recent (flightAlpha); 0 until one has come back.
	flightMean float64
	pool       budget.Pool // its kind, allocation and held come first

	cfg store.Budget // without Spent, which the pool holds
	// sched is a calendar budget's reset schedule (nil for the others).
	sched budget.Schedule
	// settle counts the settles of its jobs' real costs (settle.go).
	settle  settleStats
	expired int64 // jobs dead of their start_by while it refused them (deadline.go)
}

// newPool is a new budget's pool at time ns: full, or for a calendar
// budget with what it spent in the current period (spent, restored from
// the store; nil for a new budget) when that period has not ended.
func newPool(cfg store.Budget, sched budget.Schedule, ns int64) budget.Pool {
	switch cfg.Strategy {
	case store.TimeBased:
		return budget.NewTimeBased(cfg.Allocation, cfg.DurationMs, cfg.Burst, ns)
	case store.Calendar:
		var used int64
		if s := cfg.Spent; s != nil && s.EndsAt > ns/int64(time.Millisecond) {
			used = s.Used
		}
		return budget.NewCalendar(cfg.Allocation, used, sched, ns)
	}
	return budget.NewWhileInFlight(cfg.Allocation)
}

// addAccount adds a budget whose configuration has been checked
// (checkSchedule).
func (e *Engine) addAccount(cfg store.Budget) *account {
	sched := e.scheduleOf(cfg)
	a := &account{
		cfg:   cfg,
		pool:  newPool(cfg, sched, e.vnow),
		sched: sched,
		head:  none,
	}
	a.cfg.Spent = nil // the pool holds it now
	if cfg.PerKey != nil {
		a.fam = &family{subs: map[string]*account{}, vtime: e.nowMs()} // tags start now
	}
	a.pauseEnd = pauseEnd(cfg)
	if old := e.accounts[cfg.Key]; old != nil {
		old.gone = true
	}
	e.accounts[cfg.Key] = a
	e.obs.budgets++
	return a
}

func headPos(a *account) *int32  { return &a.headAt }
func loosePos(a *account) *int32 { return &a.looseAt }

// dropAccount takes a budget out of the engine's accounts.
func (e *Engine) dropAccount(a *account) {
	delete(e.accounts, a.cfg.Key)
	a.gone = true
}

// spends reports whether the budget's tokens are spent, not held: time_based
// and calendar budgets, whose lines, heads and refill deadlines work alike
// (what this package says of time_based budgets holds of calendar ones,
// unless it says otherwise); a while_in_flight budget's come back.
func (a *account) spends() bool { return a.pool.Kind() != budget.WhileInFlight }

// bind counts an unfinished job bound to the budget at cost.
func (a *account) bind(cost int64, delta int64) {
	a.bound += delta
	a.costs.add(cost, delta)
}

// costCounts counts jobs by cost. Nearly all of a budget's jobs cost one
// amount, which is counted inline, any other in a map: a family's 10,000
// sub-budgets are each counted on every dispatch of their jobs, and a map
// is several cold lines of memory and a hash for that one entry.
type costCounts struct {
	cost, n int64           // one cost and its count; free when n is 0
	more    map[int64]int64 // the other costs (nil: none)
}

func (c *costCounts) add(cost, delta int64) {
	if c.n != 0 && c.cost == cost {
		c.n += delta
		return
	}
	if _, other := c.more[cost]; other || c.n != 0 {
		if c.more == nil {
			c.more = map[int64]int64{}
		}
		if c.more[cost] += delta; c.more[cost] == 0 {
			delete(c.more, cost)
		}
		return
	}
	c.cost, c.n = cost, delta
}

// all yields each cost counted and its count.
func (c *costCounts) all() iter.Seq2[int64, int64] {
	return func(yield func(int64, int64) bool) {
		if c.n != 0 && !yield(c.cost, c.n) {
			return
		}
		for cost, n := range c.more {
			if !yield(cost, n) {
				return
			}
		}
	}
}

// maxCost is the largest cost a job bound to the budget may have.
func maxCost(cfg store.Budget) int64 {
	if cfg.Strategy == store.TimeBased && cfg.Burst > 0 && cfg.Burst < cfg.Allocation {
		return cfg.Burst
	}
	return cfg.Allocation
}

// pays reports whether the pool can pay cost now.
func (e *Engine) pays(a *account, cost int64) bool {
	return !e.paused(a) && a.pool.CanPay(cost, e.vnow)
}

// payBound is the prefix of group g that budget a pays now, for the jobs of
// g, which cost cost here: none when the tokens fall short of cost; all
// when there is no head or the tokens cover the head's reservation too;
// otherwise the jobs before the head (and the head itself when it is in g:
// a head is never held back by its own reservation).
func (e *Engine) payBound(a *account, cost int64, g *group) bound {
	if !e.pays(a, cost) {
		return admitNone
	}
	if !a.head.ok() || e.pays(a, cost+a.headCost) {
		return admitAll
	}
	return bound{kind: boundAt, k: a.head.k(), incl: a.headGroup == g}
}

// wifBound is the prefix of g that every while_in_flight budget of g pays: a
// job that one of them refuses waits in that budget's line only, not in the
// lines of its time_based budgets (docs/ENGINE.md §The exceptions, the first).
func (e *Engine) wifBound(g *group) bound {
	b := admitAll
	for _, s := range g.binds() {
		if !s.a.spends() {
			b = b.tighter(e.payBound(s.a, s.cost, g))
		}
	}
	return b
}

// changed records that a budget's pool, head or groups changed: its groups'
// candidates, its head, its refill deadline and (for a while_in_flight
// budget) the heads of the time_based budgets sharing a group with it must
// be looked at again.
func (e *Engine) changed(a *account) {
	e.obs.budgets++
	if !a.changedMark {
		a.changedMark = true
		e.changedAccounts = append(e.changedAccounts, a)
	}
	e.checkHead(a)
	e.deadlineDirty(a)
	if len(a.tbCo) > 0 && !a.spends() { // a map's range costs, even empty
		for s := range a.tbCo {
			e.checkHead(s)
		}
	}
}

// servedGroups yields every group of a served queue whose jobs the budget
// binds, collected or not.
func (a *account) servedGroups() iter.Seq[*group] {
	return func(yield func(*group) bool) {
		for _, g := range a.served.list {
			if !yield(g) {
				return
			}
		}
		for _, c := range a.colls.all() {
			for g := range c.groups {
				if !yield(g) {
					return
				}
			}
		}
	}
}

// servedCount is how many groups servedGroups yields.
func (a *account) servedCount() int {
	n := a.served.len()
	for _, c := range a.colls.all() {
		n += len(c.groups)
	}
	return n
}

// countCoBudgets counts a group that is attached (+1) or detached (-1)
// in the tbCo of each of its budgets.
func (e *Engine) countCoBudgets(g *group, delta int32) {
	for _, x := range g.binds() {
		for _, y := range g.binds() {
			if x.a != y.a && y.a.spends() {
				x.a.addCo(y.a, delta)
			}
		}
	}
}

func (a *account) addCo(tb *account, delta int32) {
	if a.tbCo == nil {
		a.tbCo = map[*account]int32{}
	}
	if a.tbCo[tb] += delta; a.tbCo[tb] == 0 {
		delete(a.tbCo, tb)
	}
}

// kindChanged recounts a budget in its co-budgets' tbCo after its pool
// became time_based (or stopped being so).
func (e *Engine) kindChanged(a *account) {
	delta := int32(-1)
	if a.spends() {
		delta = +1
	}
	for g := range a.servedGroups() {
		for _, x := range g.binds() {
			if x.a != a {
				x.a.addCo(a, delta)
			}
		}
	}
}

func (e *Engine) checkHead(a *account) {
	if !a.headMark {
		a.headMark = true
		e.headChecks = append(e.headChecks, a)
	}
}

func (e *Engine) deadlineDirty(a *account) {
	if !a.dlMark && (a.spends() || a.pauseEnd != 0 || a.parent != nil || a.bo != nil || a.throttleEnd != 0) {
		a.dlMark = true
		e.deadlineChecks = append(e.deadlineChecks, a)
	}
}

func (e *Engine) setHead(a *account, h item, g *group) {
	a.head, a.headGroup = h, g
	a.headCost = g.costOf(a)
	g.q.heads.add(a)
	e.placeHead(a)
	e.changed(a)
}

func (e *Engine) clearHead(a *account) {
	a.headGroup.q.heads.remove(a)
	e.unplaceHead(a)
	a.head, a.headGroup, a.headCost = none, nil, 0
	e.changed(a)
}

// refreshHeads checks every marked budget's head and chooses one for each
// budget that has none while its line is not empty. A time_based head that
// a while_in_flight budget refuses gives its headship up.
//
// The marked budgets are taken a round at a time, in key order: first every
// head that must go goes, then the budgets without one choose. A budget
// choosing before another's stale head has gone would see that head's
// reservation and, its head being sticky, keep the choice: the outcome
// would hang on the order of the marks.
func (e *Engine) refreshHeads() {
	for len(e.headChecks) > 0 {
		round := e.headRound(e.headChecks)
		e.headChecks = e.headChecks[:0]
		for _, a := range round {
			a.headMark = false
		}
		for _, a := range round {
			if a.head.ok() && (e.groupPaused(a.headGroup) || a.spends() && !e.wifBound(a.headGroup).admits(a.head.k())) {
				e.clearHead(a)
			}
		}
		for _, a := range round {
			if !a.head.ok() {
				if h, g := e.chooseHead(a); h.ok() {
					e.setHead(a, h, g)
				}
			}
		}
	}
}

// headRound copies the live budgets among marks into the scratch round, in
// key order.
func (e *Engine) headRound(marks []*account) []*account {
	round := e.roundBuf[:0]
	for _, a := range marks {
		if !a.gone {
			round = append(round, a)
		} else {
			a.headMark = false
		}
	}
	switch {
	case len(round) == 2: // the usual round of a family job: its sub-budget and the family
		if keyBefore(round[1], round[0]) {
			round[0], round[1] = round[1], round[0]
		}
	case len(round) > 2:
		slices.SortFunc(round, func(x, y *account) int { return strings.Compare(x.cfg.Key, y.cfg.Key) })
	}
	e.roundBuf = round
	return round
}

// keyBefore reports whether a's key sorts before b's. A family's key is a
// proper prefix of its sub-budgets' keys, so it comes first without a look
// at a sub-budget's key, which is a cold line of its own.
func keyBefore(a, b *account) bool {
	switch {
	case b.parent == a:
		return true
	case a.parent == b:
		return false
	}
	return a.cfg.Key < b.cfg.Key
}

// chooseHead returns the earliest job in the budget's line when it has no
// head: with no reservation, a budget refuses a whole group or none of it.
// A family's collections give their groups' first members in order, so it
// looks at the first that may head its line, not at every group.
func (e *Engine) chooseHead(a *account) (item, *group) {
	best, in := none, (*group)(nil)
	for _, g := range a.served.list {
		e.work++
		if e.pays(a, g.costOf(a)) || g.members().len() == 0 {
			continue
		}
		if m := g.members().min(); e.mayHead(a, g, m) && (!best.ok() || m.less(best)) {
			best, in = m, g
		}
	}
	for _, c := range a.colls.all() {
		if e.pays(a, c.cost) || e.paused(a) { // paused: so is each of its groups
			continue
		}
		c.firsts.ascend(0, func(m item) bool {
			e.work++
			if best.ok() && best.less(m) {
				return false
			}
			if g := e.groupOfItem(m); e.mayHead(a, g, m) {
				best, in = m, g
				return false
			}
			return true
		})
	}
	return best, in
}

// mayHead reports whether m, the first member of g, which a refuses, may
// be a's head: no budget of g is paused and, for a time_based budget, no
// while_in_flight budget refuses it.
func (e *Engine) mayHead(a *account, g *group, m item) bool {
	return !e.groupPaused(g) && (!a.spends() || e.wifBound(g).admits(m.k()))
}

// deadlineOf returns the budget's next deadline, if any: the earlier of
// its pool's (poolDeadline) and its back-off's (a step of the climb back,
// the end of a retry_after).
func (e *Engine) deadlineOf(a *account) (int64, bool) {
	at, ok := e.poolDeadline(a)
	if b, has := e.backoffDeadline(a); has && (!ok || b < at) {
		return b, true
	}
	return at, ok
}

// poolDeadline is the end of its pause; for an idle sub-budget, when its
// pool is full (it is released then); else the refill moment of a
// time_based budget (refillAt).
func (e *Engine) poolDeadline(a *account) (int64, bool) {
	switch {
	case e.paused(a):
		end := e.pausedUntil(a)
		return end, end < math.MaxInt64
	case a.parent != nil && a.bound == 0:
		return e.idleAt(a)
	case a.spends():
		return e.refillAt(a)
	}
	return 0, false
}

// refillAt returns the first moment at which the time_based budget pays a
// job of a served queue that it refuses now, if any: the jobs before the
// head need their cost, the head its own, the jobs after it their cost
// beyond the head's reservation.
func (e *Engine) refillAt(a *account) (int64, bool) {
	var at int64
	found := false
	consider := func(need int64) {
		if e.pays(a, need) {
			return
		}
		if t, ok := a.pool.AffordableAt(need, e.vnow); ok && (!found || t < at) {
			at, found = t, true
		}
	}
	for _, g := range a.served.list {
		e.work++
		if g.members().len() == 0 {
			continue
		}
		first, last := g.members().min(), g.members().max()
		e.refillNeeds(a, g.costOf(a), first, last, a.headGroup == g, consider)
	}
	for _, c := range a.colls.all() {
		// Over its groups at once: the earliest first member, the latest
		// last one, and whether the head is in one of them.
		e.work++
		if c.firsts.len() == 0 {
			continue
		}
		in := a.headGroup != nil && a.headGroup.coll == c
		e.refillNeeds(a, c.cost, c.firsts.min(), c.lasts.max(), in, consider)
	}
	return at, found
}

// refillNeeds passes to consider what a's pool needs to pay the jobs,
// costing cost, from first to last that it refuses: the jobs before the
// head (or the head itself, when holdsHead) their cost, the jobs after it
// their cost beyond the head's reservation.
func (e *Engine) refillNeeds(a *account, cost int64, first, last item, holdsHead bool, consider func(int64)) {
	h := a.head
	if !h.ok() {
		consider(cost)
		return
	}
	if first.k().less(h.k()) || holdsHead {
		consider(cost)
	}
	if h.k().less(last.k()) {
		consider(cost + a.headCost)
	}
}

// String helps debugging and test failure messages.
func (a *account) String() string {
	head := "-"
	if a.head.ok() {
		head = a.head.id.String()
	}
	return fmt.Sprintf("%s(head=%s groups=%d bound=%d)", a.cfg.Key, head, a.servedCount(), a.bound)
}

func kindOf(cfg store.Budget) budget.Kind {
	switch cfg.Strategy {
	case store.TimeBased:
		return budget.TimeBased
	case store.Calendar:
		return budget.Calendar
	}
	return budget.WhileInFlight
}
