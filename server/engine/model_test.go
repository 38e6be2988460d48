package engine

import (
	"fmt"
	"math"
	"math/big"
	"sort"
	"strings"

	"github.com/zizq/zizq/server/jobid"
)

// refModel is the reference model of the dispatch rule (docs/ENGINE.md): a
// deliberately simple, slow implementation that recomputes every answer from
// the rule's definitions on every question, with its own exact rational token
// arithmetic. It shares no code with the engine; the property test drives both
// with the same operations and requires the same decisions, in the same order,
// and the same live state.
//
// The rule as this model reads it:
//   - Order: (priority, tag, id). A job's tag is its ID's time (ms), or,
//     for a job bound to a family's sub-budget, its fair-share tag: the
//     later of the family's virtual time (the greatest tag it dispatched;
//     at least the present when none of its jobs waits) and the sub-key's
//     next start, which the job moves on by its quantum (the family's time
//     for its cost in tokens, at least 1 ms; for while_in_flight, its cost
//     in ms) divided by the sub-key's weight (model_weights_test.go).
//   - Families: a binding of "<family>/<sub>", with no budget of that key,
//     charges the sub-budget (made from the family's template at first
//     use) and the family, at the same cost. A sub-budget with nothing
//     bound and a full pool is forgotten (its next start too): a new one
//     is made when a job needs it.
//   - Pause: a paused budget pays nothing until its pause ends (if it
//     ends); a job that a paused budget refuses holds no headship.
//   - A queue is served while a connected taker serves it. Only waiting
//     jobs of served queues are in lines or can be dispatched.
//   - res(B, J) is the cost of B's head when that head comes before J.
//     B pays J when B's pool can pay J's cost plus res(B, J).
//   - J is affordable when its queue is served and every budget pays it.
//   - J is in B's line when J is B's head, or B does not pay J, unless B is
//     time_based and a while_in_flight budget of J does not pay J (then J
//     waits in that budget's line only: the first exception).
//   - Heads: a budget with no head takes the earliest job of its line. A
//     head stays until it is dispatched or leaves (deleted, moved,
//     rebound), its queue loses its last taker, it is a time_based head
//     that a while_in_flight budget does not pay, or it is affordable while
//     an earlier job of its queue is affordable too (the third exception,
//     applied once no decision is left, to every such head at once).
//   - Decisions: the taker with room that has had room longest (a taker
//     that receives a job and keeps room goes to the back; takers that gain
//     room in one operation line up in connection order) among those with
//     an affordable job receives the earliest affordable job of its
//     queues, while the global in-flight count is below the limit.
//   - Time: a time_based pool drips allocation tokens per duration up to
//     its capacity (burst, else allocation). A calendar budget spends at
//     most its allocation per period, the periods starting at every
//     multiple of its period (ns since the unix epoch); it pays a cost
//     when what it spent in the current period plus the cost is within
//     the allocation. Both spend: a job refused by a while_in_flight
//     budget waits in that budget's line only, as for time_based.
//   - Settles: an ack or failure may give a job's actual cost to its
//     time_based and calendar budgets. A time_based level moves by
//     estimate − actual (never above the capacity, and as far below zero
//     as it goes: a debt); a calendar budget's spend moves by actual −
//     estimate (never below zero), but a credit for a job dispatched
//     before its current period (dispatch times kept to the ms, as the
//     engine keeps them) is dropped. The model settles at every
//     operation and at every moment some waiting job of a served queue
//     that a time_based budget does not pay becomes payable by it, or a
//     scheduled job's ready_at comes; those are handled in time order, each
//     as of its own time.
//   - Deadlines (model_deadline_test.go): a job not in flight at its
//     start_by dies then, before anything else of that instant.
type refModel struct {
	now      int64 // ns
	limit    int
	conns    int
	jobs     map[string]*refJob
	budgets  map[string]*refBudget
	takers   []*refTaker // connection order
	room     []*refTaker // room order
	gained   []*refTaker
	inFlight int
	log      []refDispatch
	expired  []refDispatch // deaths by start_by (conn 0)
}

type refState int

const (
	refScheduled refState = iota
	refWaiting
	refInFlight
	// refHeld: a fold into the job commits; it is out of dispatch, in no
	// line, as if not yet enqueued.
	refHeld
)

type refJob struct {
	id         string
	dispatched int64 // ns, while in flight
	prio       uint16
	tag        int64 // ms
	queue      string
	binds      []refBind
	state      refState
	readyAt    int64 // ns
	taker      *refTaker
	startBy    int64 // ns, 0: none
}

type refBind struct {
	key  string
	cost int64
}

type refBudget struct {
	key       string
	timeBased bool
	// calendar: period (ns); used was spent in period usedIn (a period's
	// index); since is when it became calendar.
	calendar             bool
	period, used, usedIn int64
	since                int64
	alloc, dur           int64 // dur in ms
	burst                int64
	held                 int64
	level                *big.Rat // time_based: tokens at time at
	at                   int64
	head                 *refJob
	pauseEnd             int64 // ns: 0 not paused, math.MaxInt64 until resumed
	// Families: perKey is a family's template, keys a template's
	// overrides; a sub-budget has its family and the tag its next job
	// starts from (model_weights_test.go).
	perKey *refBudget
	keys   refKeys
	family *refBudget
	vtime  int64    // a family's virtual time (ms)
	next   *big.Rat // a sub-budget's next start (ms, exact; nil: 0)
}

type refTaker struct {
	conn     int
	queues   map[string]bool // nil: all
	prefetch int
	held     map[*refJob]bool
	closed   bool
}

type refDispatch struct {
	id   string
	conn int
	at   int64
}

func newRefModel(now int64, limit int) *refModel {
	return &refModel{now: now, limit: limit, jobs: map[string]*refJob{}, budgets: map[string]*refBudget{}}
}

// ---- tokens ---------------------------------------------------------------

func (b *refBudget) capacity() int64 {
	if b.timeBased && b.burst > 0 {
		return b.burst
	}
	return b.alloc
}

func (b *refBudget) spends() bool { return b.timeBased || b.calendar }

// periodOf is the index of the calendar period holding t.
func (b *refBudget) periodOf(t int64) int64 { return t / b.period }

// usedAt is what a calendar budget spent in the period holding t.
func (b *refBudget) usedAt(t int64) int64 {
	if b.periodOf(t) != b.usedIn {
		return 0
	}
	return b.used
}

// settleCost applies a job's actual cost, estimate having been taken at
// its dispatch.
func (b *refBudget) settleCost(estimate, actual, dispatched, t int64) {
	switch {
	case b.timeBased:
		lv := new(big.Rat).Add(b.levelAt(t), big.NewRat(estimate-actual, 1))
		if c := big.NewRat(b.capacity(), 1); lv.Cmp(c) > 0 {
			lv = c
		}
		b.level, b.at = lv, t
	case b.calendar:
		start := max(b.periodOf(t)*b.period, b.since)
		if actual < estimate && dispatched/1e6*1e6 < start {
			return // its period is gone
		}
		b.used, b.usedIn = max(0, b.usedAt(t)+actual-estimate), b.periodOf(t)
	}
}

// rate is tokens per ns.
func (b *refBudget) rate() *big.Rat { return big.NewRat(b.alloc, b.dur*1_000_000) }

func (b *refBudget) levelAt(t int64) *big.Rat {
	lv := new(big.Rat).Mul(b.rate(), big.NewRat(t-b.at, 1))
	lv.Add(lv, b.level)
	if c := big.NewRat(b.capacity(), 1); lv.Cmp(c) > 0 {
		return c
	}
	return lv
}

func (b *refBudget) canPay(cost, t int64) bool {
	if b.pauseEnd > t {
		return false
	}
	if b.calendar {
		return cost <= b.alloc-b.usedAt(t)
	}
	if !b.timeBased {
		return cost <= b.alloc-b.held
	}
	return cost <= b.capacity() && b.levelAt(t).Cmp(big.NewRat(cost, 1)) >= 0
}

func (b *refBudget) debit(cost, t int64) {
	b.held += cost
	if b.timeBased {
		b.level = new(big.Rat).Sub(b.levelAt(t), big.NewRat(cost, 1))
		b.at = t
	}
	if b.calendar {
		b.used, b.usedIn = b.usedAt(t)+cost, b.periodOf(t)
	}
}

// affordableAt is the first ns at or after t at which the pool holds need.
func (b *refBudget) affordableAt(need, t int64) (int64, bool) {
	if b.calendar {
		switch {
		case need > b.alloc:
			return 0, false
		case b.usedAt(t)+need <= b.alloc:
			return t, true
		}
		return (b.periodOf(t) + 1) * b.period, true
	}
	if !b.timeBased || need > b.capacity() {
		return 0, false
	}
	lack := new(big.Rat).Sub(big.NewRat(need, 1), b.levelAt(t))
	if lack.Sign() <= 0 {
		return t, true
	}
	wait := new(big.Rat).Quo(lack, b.rate())
	q := new(big.Int).Quo(wait.Num(), wait.Denom())
	if new(big.Rat).SetInt(q).Cmp(wait) < 0 {
		q.Add(q, big.NewInt(1))
	}
	return t + q.Int64(), true
}

func (b *refBudget) available(t int64) float64 {
	if b.calendar {
		return float64(b.alloc - b.usedAt(t))
	}
	if !b.timeBased {
		return float64(b.alloc - b.held)
	}
	f, _ := b.levelAt(t).Float64()
	return f
}

// reconfigure applies a new configuration: a time_based pool keeps its
// level in tokens, rounded down to the new duration's resolution (a debt
// rounded up) and clamped; one that turns time_based starts full. A
// calendar budget keeps what it spent in the current period, which is
// then the current period of its new length; one that turns calendar has
// spent nothing.
func (b *refBudget) reconfigureCalendar(alloc, period, t int64) {
	used := int64(0)
	if b.calendar {
		used = b.usedAt(t)
	} else {
		b.since = t
	}
	b.timeBased, b.calendar, b.alloc, b.dur, b.burst, b.period = false, true, alloc, 0, 0, period
	b.used, b.usedIn = used, b.periodOf(t)
}

func (b *refBudget) reconfigure(timeBased bool, alloc, dur, burst, t int64) {
	b.calendar = false
	if !timeBased {
		b.timeBased, b.alloc, b.dur, b.burst = false, alloc, 0, 0
		return
	}
	if !b.timeBased {
		b.timeBased, b.alloc, b.dur, b.burst = true, alloc, dur, burst
		b.level, b.at = big.NewRat(b.capacity(), 1), t
		return
	}
	lv := b.levelAt(t)
	b.alloc, b.dur, b.burst = alloc, dur, burst
	whole := new(big.Int).Quo(lv.Num(), lv.Denom())
	if whole.Cmp(big.NewInt(b.capacity())) >= 0 {
		b.level = big.NewRat(b.capacity(), 1)
	} else {
		scale := big.NewInt(dur * 1_000_000)
		units := new(big.Int).Mul(lv.Num(), scale)
		units.Div(units, lv.Denom()) // floor: a debt rounds up
		b.level = new(big.Rat).SetFrac(units, scale)
	}
	b.at = t
}

// ---- the rule's definitions -------------------------------------------------

func refBefore(a, b *refJob) bool {
	if a.prio != b.prio {
		return a.prio < b.prio
	}
	if a.tag != b.tag {
		return a.tag < b.tag
	}
	return a.id < b.id
}

// paused reports whether some budget of j is paused now: j holds no
// headship.
func (m *refModel) paused(j *refJob) bool {
	for _, bd := range j.binds {
		if m.budgets[bd.key].pauseEnd > m.now {
			return true
		}
	}
	return false
}

func (m *refModel) serves(t *refTaker, q string) bool {
	return !t.closed && (t.queues == nil || t.queues[q])
}

func (m *refModel) served(q string) bool {
	for _, t := range m.takers {
		if m.serves(t, q) {
			return true
		}
	}
	return false
}

func (j *refJob) costOf(key string) (int64, bool) {
	for _, b := range j.binds {
		if b.key == key {
			return b.cost, true
		}
	}
	return 0, false
}

func (m *refModel) res(b *refBudget, j *refJob) int64 {
	if b.head != nil && refBefore(b.head, j) {
		c, _ := b.head.costOf(b.key)
		return c
	}
	return 0
}

func (m *refModel) pays(b *refBudget, j *refJob) bool {
	c, _ := j.costOf(b.key)
	return b.canPay(c+m.res(b, j), m.now)
}

func (m *refModel) affordable(j *refJob) bool {
	if j.state != refWaiting || !m.served(j.queue) {
		return false
	}
	for _, bd := range j.binds {
		if !m.pays(m.budgets[bd.key], j) {
			return false
		}
	}
	return true
}

// wifRefused: some while_in_flight budget of j does not pay it.
func (m *refModel) wifRefused(j *refJob) bool {
	for _, bd := range j.binds {
		if b := m.budgets[bd.key]; !b.spends() && !m.pays(b, j) {
			return true
		}
	}
	return false
}

func (m *refModel) inLine(b *refBudget, j *refJob) bool {
	if j.state != refWaiting || !m.served(j.queue) {
		return false
	}
	if _, ok := j.costOf(b.key); !ok {
		return false
	}
	if b.head == j {
		return true
	}
	return !m.pays(b, j) && !(b.spends() && m.wifRefused(j))
}

func (m *refModel) waiting() []*refJob {
	var out []*refJob
	for _, j := range m.jobs {
		if j.state == refWaiting {
			out = append(out, j)
		}
	}
	sort.Slice(out, func(a, b int) bool { return refBefore(out[a], out[b]) })
	return out
}

func (m *refModel) budgetKeys() []string {
	keys := make([]string, 0, len(m.budgets))
	for k := range m.budgets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ---- settling -------------------------------------------------------------

func (m *refModel) settle() {
	m.forgetIdleSubs()
	defer m.forgetIdleSubs()
	m.seatGained()
	for i := 0; ; i++ {
		if i > 100000 {
			panic("model: settle does not end")
		}
		m.fixHeads()
		if m.dispatchOne() {
			continue
		}
		if m.releaseIdle() {
			continue
		}
		return
	}
}

func (m *refModel) fixHeads() {
	for {
		changed := false
		for _, k := range m.budgetKeys() {
			b := m.budgets[k]
			h := b.head
			if h == nil {
				continue
			}
			// Its queue lost its last taker, a budget of it is paused, or
			// (first exception) a while_in_flight budget does not pay this
			// time_based head.
			if !m.served(h.queue) || m.paused(h) || (b.spends() && m.wifRefused(h)) {
				b.head = nil
				changed = true
			}
		}
		for _, k := range m.budgetKeys() {
			b := m.budgets[k]
			if b.head != nil {
				continue
			}
			for _, j := range m.waiting() {
				if m.inLine(b, j) && !m.paused(j) {
					b.head = j
					changed = true
					break
				}
			}
		}
		if !changed {
			return
		}
	}
}

func (m *refModel) hasRoom(t *refTaker) bool {
	return !t.closed && (t.prefetch == 0 || len(t.held) < t.prefetch)
}

func (m *refModel) dispatchOne() bool {
	if m.limit > 0 && m.inFlight >= m.limit {
		return false
	}
	for _, t := range m.room {
		for _, j := range m.waiting() {
			if m.serves(t, j.queue) && m.affordable(j) {
				m.dispatch(t, j)
				return true
			}
		}
	}
	return false
}

func (m *refModel) dispatch(t *refTaker, j *refJob) {
	for _, bd := range j.binds {
		b := m.budgets[bd.key]
		b.debit(bd.cost, m.now)
		if b.perKey != nil {
			b.vtime = max(b.vtime, j.tag)
		}
	}
	m.leave(j)
	j.dispatched = m.now
	j.state = refInFlight
	j.taker = t
	t.held[j] = true
	m.inFlight++
	m.log = append(m.log, refDispatch{id: j.id, conn: t.conn, at: m.now})
	m.unseat(t)
	if m.hasRoom(t) {
		m.room = append(m.room, t)
	}
}

func (m *refModel) releaseIdle() bool {
	var clear []*refBudget
	for _, k := range m.budgetKeys() {
		b := m.budgets[k]
		h := b.head
		if h == nil || !m.affordable(h) {
			continue
		}
		for _, j := range m.waiting() {
			if j != h && j.queue == h.queue && refBefore(j, h) && m.affordable(j) {
				clear = append(clear, b)
				break
			}
		}
	}
	for _, b := range clear {
		b.head = nil
	}
	return len(clear) > 0
}

// leave takes a waiting job out of every headship.
func (m *refModel) leave(j *refJob) {
	for _, b := range m.budgets {
		if b.head == j {
			b.head = nil
		}
	}
}

func (m *refModel) unseat(t *refTaker) {
	for i, r := range m.room {
		if r == t {
			m.room = append(m.room[:i:i], m.room[i+1:]...)
			return
		}
	}
}

func (m *refModel) seated(t *refTaker) bool {
	for _, r := range m.room {
		if r == t {
			return true
		}
	}
	return false
}

func (m *refModel) gainRoom(t *refTaker) { m.gained = append(m.gained, t) }

func (m *refModel) seatGained() {
	sort.Slice(m.gained, func(a, b int) bool { return m.gained[a].conn < m.gained[b].conn })
	for _, t := range m.gained {
		if !m.seated(t) && m.hasRoom(t) {
			m.room = append(m.room, t)
		}
	}
	m.gained = nil
}

// ---- time -------------------------------------------------------------------

// nextDeadline is the earliest moment at which a scheduled job comes due or
// a time_based budget comes to pay a waiting job of a served queue that it
// does not pay now.
func (m *refModel) nextDeadline() (int64, bool) {
	var at int64
	found := false
	take := func(t int64) {
		if !found || t < at {
			at, found = t, true
		}
	}
	for _, j := range m.jobs {
		if j.state == refScheduled {
			take(j.readyAt)
		}
	}
	m.nextExpiry(take)
	for _, b := range m.budgets {
		if b.pauseEnd > m.now {
			if b.pauseEnd < math.MaxInt64 {
				take(b.pauseEnd)
			}
			continue // a paused budget pays nothing before its pause ends
		}
		if !b.spends() {
			continue
		}
		for _, j := range m.waiting() {
			c, ok := j.costOf(b.key)
			if !ok || !m.served(j.queue) || m.pays(b, j) {
				continue
			}
			if t, ok := b.affordableAt(c+m.res(b, j), m.now); ok {
				take(t)
			}
		}
	}
	return at, found
}

// advanceTo handles every deadline up to t, each as of its own time.
func (m *refModel) advanceTo(t int64) {
	for {
		d, ok := m.nextDeadline()
		if !ok || d > t {
			break
		}
		m.now = max(m.now, d)
		m.expireDue()
		for _, j := range m.jobs {
			if j.state == refScheduled && j.readyAt <= m.now {
				j.state = refWaiting
			}
		}
		m.endPauses()
		m.settle()
	}
	m.now = max(m.now, t)
}

// ---- operations ---------------------------------------------------------------

// putBudget configures a budget and, for a family, its template (nil: not
// a family), all at once: dispatch sees only the whole new configuration.
func (m *refModel) putBudget(key string, timeBased bool, alloc, dur, burst int64, perKey *refBudget) {
	b := m.budgets[key]
	if b == nil {
		b = &refBudget{key: key, timeBased: timeBased, alloc: alloc, dur: dur, burst: burst, at: m.now}
		if !timeBased {
			b.dur, b.burst = 0, 0
		} else {
			b.level = big.NewRat(b.capacity(), 1)
		}
		m.budgets[key] = b
	} else {
		b.reconfigure(timeBased, alloc, dur, burst, m.now)
		b.pauseEnd = 0 // a PUT replaces the whole configuration
	}
	m.setTemplate(key, perKey)
	m.settle()
}

// putCalendar configures a calendar budget of alloc per period (ns).
func (m *refModel) putCalendar(key string, alloc, period int64) {
	b := m.budgets[key]
	if b == nil {
		b = &refBudget{key: key, at: m.now}
		m.budgets[key] = b
	}
	b.reconfigureCalendar(alloc, period, m.now)
	b.pauseEnd = 0 // a PUT replaces the whole configuration
	m.setTemplate(key, nil)
	m.settle()
}

// implied reports whether j's binding of key comes from one of its
// family's sub-budgets, not from the job's own bindings.
func (m *refModel) implied(j *refJob, key string) bool {
	for _, bd := range j.binds {
		if f := m.familyOf(bd.key); f != nil && f.key == key && bd.key != key {
			return true
		}
	}
	return false
}

// settleJob applies an in-flight job's actual costs, by the keys it was
// bound with: a sub-budget's settles its family too.
func (m *refModel) settleJob(id string, actual map[string]int64) {
	j := m.jobs[id]
	for _, bd := range j.binds {
		c, ok := actual[bd.key]
		if !ok {
			for named, nc := range actual {
				if f := m.familyOf(named); f != nil && f.key == bd.key && named != bd.key {
					c, ok = nc, true
				}
			}
		}
		if b := m.budgets[bd.key]; ok && b.spends() {
			b.settleCost(bd.cost, c, j.dispatched, m.now)
		}
	}
	// No decision here: the ack or failure that carries the settles is
	// one operation, and decides once it is done.
}

// maxBoundCost is the largest cost an unfinished job pays to the budget.
func (m *refModel) maxBoundCost(key string) int64 {
	var most int64
	for _, j := range m.jobs {
		if c, ok := j.costOf(key); ok && c > most {
			most = c
		}
	}
	return most
}

func (m *refModel) enqueue(id string, prio uint16, queue string, binds []refBind, readyAt int64) {
	m.forgetIdleSubs()
	binds = m.expand(binds)
	j := &refJob{id: id, prio: prio, queue: queue, binds: binds, readyAt: readyAt, state: refWaiting, tag: m.tagFor(id, binds)}
	if readyAt > m.now {
		j.state = refScheduled
	}
	m.jobs[id] = j
	m.settle()
}

func (m *refModel) connect(queues []string, prefetch int) *refTaker {
	m.conns++
	t := &refTaker{conn: m.conns, prefetch: prefetch, held: map[*refJob]bool{}}
	if queues != nil {
		t.queues = map[string]bool{}
		for _, q := range queues {
			t.queues[q] = true
		}
	}
	m.takers = append(m.takers, t)
	m.gainRoom(t)
	m.settle()
	return t
}

func (m *refModel) release(j *refJob) {
	for _, bd := range j.binds {
		m.budgets[bd.key].held -= bd.cost
	}
	t := j.taker
	delete(t.held, j)
	j.taker = nil
	m.inFlight--
	m.gainRoom(t)
}

func (m *refModel) ack(id string) bool {
	j := m.jobs[id]
	if j == nil || j.state != refInFlight {
		return false
	}
	m.release(j)
	delete(m.jobs, id)
	m.settle()
	return true
}

// fail retries an in-flight job at retryAt (ns).
func (m *refModel) fail(id string, retryAt int64) {
	j := m.jobs[id]
	m.release(j)
	m.keepStartBy(j)
	j.readyAt = retryAt
	j.state = refScheduled
	if retryAt <= m.now {
		j.state = refWaiting
	}
	m.settle()
}

func (m *refModel) remove(id string) {
	j := m.jobs[id]
	switch j.state {
	case refWaiting:
		m.leave(j)
	case refInFlight:
		m.release(j)
	}
	delete(m.jobs, id)
	m.settle()
}

func (m *refModel) close(t *refTaker) {
	t.closed = true
	m.unseat(t)
	held := make([]*refJob, 0, len(t.held))
	for j := range t.held {
		held = append(held, j)
	}
	for _, j := range held {
		m.release(j)
		m.keepStartBy(j)
		j.state = refWaiting
	}
	m.settle()
}

// hold takes a waiting job out of dispatch while a fold into it commits.
func (m *refModel) hold(id string) {
	j := m.jobs[id]
	m.leave(j)
	j.state = refHeld
	m.settle()
}

// unhold puts a held job back, as it was: waiting in its place.
func (m *refModel) unhold(id string) {
	if j := m.jobs[id]; j != nil && j.state == refHeld {
		j.state = refWaiting
		m.settle()
	}
}

// move re-prioritises a waiting or scheduled job: it leaves and comes back.
func (m *refModel) move(id string, prio uint16) {
	j := m.jobs[id]
	m.leave(j)
	j.prio = prio
	m.settle()
}

// rebind replaces a waiting or scheduled job's bindings; its tag stays.
func (m *refModel) rebind(id string, binds []refBind) {
	m.forgetIdleSubs()
	j := m.jobs[id]
	m.leave(j)
	j.binds = m.expand(binds)
	m.settle()
}

// setTemplate gives a budget its family template (nil: no family, any
// sub-budgets forgotten) and every sub-budget the new configuration.
func (m *refModel) setTemplate(key string, t *refBudget) {
	m.forgetIdleSubs()
	fam := m.budgets[key]
	if fam.perKey == nil && t != nil {
		fam.vtime = m.now / int64(1_000_000) // a new family's time starts now
	}
	old := fam.perKey
	fam.perKey = t
	for k, sub := range m.budgets {
		if sub.family != fam {
			continue
		}
		if t == nil {
			delete(m.budgets, k)
			continue
		}
		sub.reconfigure(t.timeBased, t.keyAlloc(key, k), t.dur, t.burst, m.now)
		reweigh(sub, old, t, key)
	}
}

// ---- live state ---------------------------------------------------------------

// parked counts the jobs of b's line that b does not pay.
func (m *refModel) parked(b *refBudget) int64 {
	var n int64
	for _, j := range m.waiting() {
		if m.inLine(b, j) && !m.pays(b, j) {
			n++
		}
	}
	return n
}

// queueParked counts the waiting jobs of a served queue that are not
// affordable.
func (m *refModel) queueParked(q string) int64 {
	var n int64
	for _, j := range m.waiting() {
		if j.queue == q && m.served(q) && !m.affordable(j) {
			n++
		}
	}
	return n
}

type refWhy struct {
	waitingFor string
	budgets    []string // key:ahead:reservedBy
}

func (m *refModel) why(id string) refWhy {
	j := m.jobs[id]
	switch {
	case j.state == refScheduled:
		return refWhy{waitingFor: "schedule"}
	case j.state == refInFlight:
		return refWhy{waitingFor: "nothing"}
	case !m.served(j.queue) || m.affordable(j):
		return refWhy{waitingFor: "worker"}
	}
	w := refWhy{waitingFor: "budget"}
	for _, bd := range j.binds {
		b := m.budgets[bd.key]
		if !m.inLine(b, j) || m.pays(b, j) {
			continue // parked on b means b cannot pay it now
		}
		ahead := 0
		for _, o := range m.waiting() {
			if o != j && refBefore(o, j) && m.inLine(b, o) {
				ahead++
			}
		}
		reserved := ""
		if h := b.head; h != nil && h != j && refBefore(h, j) && b.canPay(bd.cost, m.now) {
			reserved = h.id
		}
		w.budgets = append(w.budgets, fmt.Sprintf("%s:%d:%s", b.key, ahead, reserved))
	}
	return w
}

// dump describes the model's state for failure messages.
func (m *refModel) dump() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "model at %d, in flight %d/%d\n", m.now, m.inFlight, m.limit)
	for _, k := range m.budgetKeys() {
		b := m.budgets[k]
		head := "-"
		if b.head != nil {
			head = b.head.id
		}
		fmt.Fprintf(&sb, "  budget %s tb=%v alloc=%d dur=%d burst=%d held=%d avail=%.4f head=%s\n", k, b.timeBased, b.alloc, b.dur, b.burst, b.held, b.available(m.now), head)
	}
	for _, t := range m.takers {
		if !t.closed {
			fmt.Fprintf(&sb, "  taker %d queues=%v prefetch=%d held=%d seated=%v\n", t.conn, t.queues, t.prefetch, len(t.held), m.seated(t))
		}
	}
	for _, j := range m.waiting() {
		var lines []string
		for _, bd := range j.binds {
			if m.inLine(m.budgets[bd.key], j) {
				lines = append(lines, bd.key)
			}
		}
		fmt.Fprintf(&sb, "  job %s q=%s prio=%d binds=%v served=%v affordable=%v lines=%v\n", j.id, j.queue, j.prio, j.binds, m.served(j.queue), m.affordable(j), lines)
	}
	return sb.String()
}

// ---- families and pauses ----------------------------------------------------

// endPauses ends the pauses that have come to their end.
func (m *refModel) endPauses() {
	for _, b := range m.budgets {
		if b.pauseEnd != 0 && b.pauseEnd <= m.now {
			b.pauseEnd = 0
		}
	}
}

// pause sets a budget's pause end (ns; 0 resumes).
func (m *refModel) pause(key string, end int64) {
	if end != 0 && end <= m.now {
		end = 0
	}
	m.budgets[key].pauseEnd = end
	m.settle()
}

// familyOf returns the family that would make key a sub-budget, or nil.
func (m *refModel) familyOf(key string) *refBudget {
	for i := strings.LastIndexByte(key, '/'); i > 0; i = strings.LastIndexByte(key[:i], '/') {
		if b := m.budgets[key[:i]]; b != nil && b.perKey != nil {
			return b
		}
	}
	return nil
}

// expand resolves bindings as sent: a sub-budget's binding also charges its
// family, and the sub-budget is made when it does not exist.
func (m *refModel) expand(binds []refBind) []refBind {
	var out []refBind
	for _, bd := range binds {
		out = append(out, bd)
		if m.budgets[bd.key] != nil && m.budgets[bd.key].family == nil {
			continue
		}
		fam := m.budgets[bd.key].familyOrNil()
		if fam == nil {
			fam = m.familyOf(bd.key)
			t := fam.perKey
			sub := &refBudget{key: bd.key, timeBased: t.timeBased, alloc: t.keyAlloc(fam.key, bd.key), dur: t.dur, burst: t.burst, at: m.now, family: fam}
			if sub.timeBased {
				sub.level = big.NewRat(sub.capacity(), 1)
			}
			m.budgets[bd.key] = sub
		}
		out = append(out, refBind{key: fam.key, cost: bd.cost})
	}
	return out
}

func (b *refBudget) familyOrNil() *refBudget {
	if b == nil {
		return nil
	}
	return b.family
}

// quantum is the family's time for cost tokens (ms, at least 1).
func (fam *refBudget) quantum(cost int64) int64 {
	if !fam.timeBased {
		return max(cost, 1)
	}
	q := new(big.Rat).SetFrac64(cost*fam.dur, fam.alloc)
	n := new(big.Int).Quo(q.Num(), q.Denom())
	if new(big.Rat).SetInt(n).Cmp(q) < 0 {
		n.Add(n, big.NewInt(1))
	}
	return max(n.Int64(), 1)
}

// tagFor gives a new job its tag: its ID's time, or for a job of a
// sub-budget the fair-share tag.
func (m *refModel) tagFor(id string, binds []refBind) int64 {
	jid, _ := jobid.Parse(id)
	tag := jid.Millis()
	for _, bd := range binds {
		sub := m.budgets[bd.key]
		if sub.family == nil {
			continue
		}
		fam := sub.family
		if m.waitingOn(fam) == 0 {
			fam.vtime = max(fam.vtime, m.now/int64(1_000_000))
		}
		tag = m.fairStart(fam, sub, bd.cost)
	}
	return tag
}

// waitingOn counts the waiting jobs bound to b.
func (m *refModel) waitingOn(b *refBudget) int {
	n := 0
	for _, j := range m.jobs {
		if _, ok := j.costOf(b.key); ok && j.state == refWaiting {
			n++
		}
	}
	return n
}

// forgetIdleSubs forgets the sub-budgets with nothing bound and a full
// pool.
func (m *refModel) forgetIdleSubs() {
	for key, b := range m.budgets {
		if b.family == nil || b.held != 0 {
			continue
		}
		if b.timeBased && b.levelAt(m.now).Cmp(big.NewRat(b.capacity(), 1)) < 0 {
			continue
		}
		bound := false
		for _, j := range m.jobs {
			if _, ok := j.costOf(key); ok {
				bound = true
				break
			}
		}
		if !bound {
			delete(m.budgets, key)
		}
	}
}

// plainKeys are the budgets other than sub-budgets, sorted.
func (m *refModel) plainKeys() []string {
	var keys []string
	for _, k := range m.budgetKeys() {
		if m.budgets[k].family == nil {
			keys = append(keys, k)
		}
	}
	return keys
}

// aheadOf lists, per budget of a waiting job, the jobs ahead of it in that
// budget's line (for failure messages).
func (m *refModel) aheadOf(id string) string {
	j := m.jobs[id]
	var out []string
	for _, bd := range j.binds {
		b := m.budgets[bd.key]
		var ids []string
		for _, o := range m.waiting() {
			if o != j && refBefore(o, j) && m.inLine(b, o) {
				ids = append(ids, fmt.Sprintf("%s(p%d t%d)", o.id, o.prio, o.tag))
			}
		}
		out = append(out, fmt.Sprintf("%s: %v", b.key, ids))
	}
	return fmt.Sprintf("%s(p%d t%d) %s", id, j.prio, j.tag, strings.Join(out, "; "))
}
