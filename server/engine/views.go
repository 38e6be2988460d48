package engine

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/zizq/zizq/server/budget"
	"github.com/zizq/zizq/store"
)

// Counts are live job counts; Ready excludes parked jobs.
type Counts struct {
	Scheduled, Ready, Parked, InFlight int64
}

func (c Counts) total() int64 { return c.Scheduled + c.Ready + c.Parked + c.InFlight }

func (c *Counts) add(o Counts) {
	c.Scheduled += o.Scheduled
	c.Ready += o.Ready
	c.Parked += o.Parked
	c.InFlight += o.InFlight
}

// QueueCounts are the live counts of one queue.
type QueueCounts struct {
	Name string
	Counts
}

// Stats is the engine's part of GET /stats.
type Stats struct {
	Started time.Time
	Jobs    Counts
	Queues  []QueueCounts
	Budgets []BudgetView
}

// JobCount returns how many live jobs the engine holds records of.
func (e *Engine) JobCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return int(e.slab.n) - len(e.slab.free)
}

// Stats returns live counts and every budget with its live figures.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.catchUp()
	s := Stats{Started: e.started, Budgets: e.budgetViews(true)}
	for name, q := range e.queues {
		c := e.queueCounts(q)
		s.Jobs.add(c)
		if c.total() > 0 {
			s.Queues = append(s.Queues, QueueCounts{Name: name, Counts: c})
		}
	}
	sort.Slice(s.Queues, func(i, j int) bool { return s.Queues[i].Name < s.Queues[j].Name })
	return s
}

// LiveQueues returns the names of the queues that hold a live job, in any
// order.
func (e *Engine) LiveQueues() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var names []string
	for name, q := range e.queues {
		if q.counts[stScheduled]+q.counts[stWaiting]+q.counts[stInFlight] > 0 {
			names = append(names, name)
		}
	}
	return names
}

// queueCounts splits a queue's waiting jobs into ready and parked: a
// waiting job of a served queue is parked unless every budget pays it.
func (e *Engine) queueCounts(q *queue) Counts {
	c := Counts{Scheduled: q.counts[stScheduled], InFlight: q.counts[stInFlight], Ready: q.counts[stWaiting]}
	if !e.served(q) {
		return c
	}
	for _, g := range q.groups {
		if g.sig == nil {
			continue
		}
		parked := int64(g.members().len() - e.affordBound(g).count(g.members()))
		c.Parked += parked
		c.Ready -= parked
	}
	return c
}

// lineBounds returns the prefixes that say which members of g wait in a's
// line: those that a does not pay (beyond pb) and, for a time_based budget,
// that no while_in_flight budget refuses (within wb).
func (e *Engine) lineBounds(a *account, g *group) (pb, wb bound) {
	pb = e.payBound(a, g.costOf(a), g)
	wb = admitAll
	if a.spends() {
		wb = e.wifBound(g)
	}
	return pb, wb
}

// refusedIn counts the members of g that wait in a's line and a cannot pay
// (the parked jobs of a in g), and returns the first of them.
func (e *Engine) refusedIn(a *account, g *group) (int, item) {
	pb, wb := e.lineBounds(a, g)
	from, to := pb.count(g.members()), wb.count(g.members())
	if from >= to {
		return 0, none
	}
	return to - from, g.members().at(from)
}

// waitingJob is a waiting job with what the views ask of it.
type waitingJob struct {
	ref
	k key
	g *group
}

func (e *Engine) waitingJob(j ref) waitingJob {
	r := e.rec(j.idx)
	return waitingJob{ref: j, k: e.keyOf(j), g: e.queueList[r.q].group(e.sigOf(r))}
}

// inLine reports whether a waiting job waits in a's line.
func (e *Engine) inLine(a *account, j waitingJob) bool {
	if a.head.idx == j.idx {
		return true
	}
	pb, wb := e.lineBounds(a, j.g)
	return !pb.admits(j.k) && wb.admits(j.k)
}

// affordable reports whether every budget pays a waiting job now.
func (e *Engine) affordable(j waitingJob) bool {
	return e.served(j.g.q) && e.affordBound(j.g).admits(j.k)
}

// ahead counts the jobs of a's line before j, and what they cost a.
func (e *Engine) ahead(a *account, j waitingJob) (n, cost int64) {
	before := bound{kind: boundAt, k: j.k}
	for g := range a.servedGroups() {
		pb, wb := e.lineBounds(a, g)
		c := g.costOf(a)
		if k := wb.tighter(before).count(g.members()) - pb.tighter(before).count(g.members()); k > 0 {
			n += int64(k)
			cost += int64(k) * c
		}
		if h := a.head; h.ok() && a.headGroup == g && h.k().less(j.k) && (pb.admits(h.k()) || !wb.admits(h.k())) {
			n++
			cost += a.headCost
		}
	}
	return n, cost
}

// Why says what a live job waits for.
type Why struct {
	Job        store.Job
	WaitingFor string // schedule, budget, worker or nothing
	// Reason says it in words when the budgets do not: no worker serves the
	// queue, or every worker of it is busy.
	Reason  string
	Budgets []WhyBudget
	// ExpectedAt is when the job is expected to be dispatched (ms), from
	// its place in the lines of its time_based budgets at their rates,
	// if nothing else takes their tokens; nil when no such estimate holds
	// (a while_in_flight budget or a pause without end holds it back).
	ExpectedAt *int64
}

// WhyBudget is one budget in whose line a parked job waits.
type WhyBudget struct {
	Key       string
	Cost      int64
	Available float64
	Ahead     int64
	// AffordableAt is when the budget will have paid the jobs ahead and
	// this one, at its rate, if nothing else takes its tokens (ms; nil for
	// while_in_flight budgets, which wait on releases).
	AffordableAt *int64
	// ReservedBy names the head whose reservation alone holds the job back.
	ReservedBy string
	// Paused: the budget is paused, until PausedUntil (ms) when that is
	// set.
	Paused      bool
	PausedUntil *int64
	// Debt is what the budget owes (tokens, 0 when none), repaid at
	// RepaidAt (ms): it pays nothing until then (settle.go).
	Debt     float64
	RepaidAt *int64
	// RefusedAt (ms) is the last refusal a backing-off budget counted,
	// Effective its effective allocation, ThrottledUntil (ms) the end of
	// its retry_after (adaptive.go).
	RefusedAt      *int64
	Effective      *float64
	ThrottledUntil *int64
}

// Why explains a live job's state; false if the job is not live.
func (e *Engine) Why(id string) (Why, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.catchUp()
	j, ok := e.lookup(id)
	if !ok {
		return Why{}, false
	}
	r := e.rec(j.idx)
	w := Why{Job: e.view(id, j.idx), WaitingFor: "nothing"}
	q := e.queueList[r.q]
	switch {
	case r.state == stScheduled:
		w.WaitingFor = "schedule"
	case r.state != stWaiting:
	case !e.served(q):
		w.WaitingFor, w.Reason = "worker", "no worker serves queue "+q.name
	case e.affordable(e.waitingJob(j)):
		w.WaitingFor, w.Reason = "worker", "every worker of queue "+q.name+" is busy"
		if e.globalFull() {
			w.Reason = "the global in-flight limit is reached"
		}
	default:
		w.WaitingFor = "budget"
		w.Budgets = e.refusals(e.waitingJob(j))
		w.Reason = e.budgetReason(w.Budgets)
		w.ExpectedAt = expectedAt(w.Budgets)
	}
	return w, true
}

// budgetReason names the paused budgets and those in debt among those a
// job waits for.
func (e *Engine) budgetReason(bs []WhyBudget) string {
	var parts []string
	for _, b := range bs {
		if b.Debt > 0 && b.RepaidAt != nil {
			parts = append(parts, settleNote(b.Key, b.Debt, *b.RepaidAt))
		}
		if a := e.accounts[b.Key]; a != nil && b.RefusedAt != nil {
			parts = append(parts, backoffNote(b, a.cfg))
		}
		switch {
		case !b.Paused:
		case b.PausedUntil != nil:
			parts = append(parts, fmt.Sprintf("budget '%s' is paused until %s", b.Key, formatMs(*b.PausedUntil)))
		default:
			parts = append(parts, fmt.Sprintf("budget '%s' is paused", b.Key))
		}
	}
	return strings.Join(parts, "; ")
}

// expectedAt is when every budget a job waits for will have paid it, when
// each has a known time (time_based, and not paused without an end).
func expectedAt(bs []WhyBudget) *int64 {
	var at int64
	for _, b := range bs {
		if b.AffordableAt == nil {
			return nil
		}
		at = max(at, *b.AffordableAt)
	}
	if len(bs) == 0 {
		return nil
	}
	return &at
}

// refusals describes each line a parked job waits in whose budget cannot
// pay it now (a head its budget can pay waits on its other budgets).
func (e *Engine) refusals(j waitingJob) []WhyBudget {
	var out []WhyBudget
	for _, b := range e.binds(e.rec(j.idx)) {
		if !e.inLine(b.a, j) || e.payBound(b.a, b.cost, j.g).admits(j.k) {
			continue
		}
		n, cost := e.ahead(b.a, j)
		wb := WhyBudget{Key: b.a.cfg.Key, Cost: b.cost, Available: round3(b.a.pool.Available(e.vnow)), Ahead: n}
		if h := b.a.head; h.ok() && h.idx != j.idx && h.k().less(j.k) && e.pays(b.a, b.cost) {
			wb.ReservedBy = h.id.String()
		}
		if b.a.pauseEnd > e.vnow {
			wb.Paused = true
			if b.a.pauseEnd < math.MaxInt64 {
				until := ceilMs(b.a.pauseEnd)
				wb.PausedUntil = &until
			}
		}
		e.backoffWhy(b.a, &wb)
		if at, ok := e.paidAt(b.a, b.a.pool, cost+b.cost); ok {
			wb.AffordableAt = &at
		}
		if debt := round3(b.a.pool.Debt(e.vnow)); debt > 0 {
			wb.Debt = debt
			if at, ok := b.a.pool.RepaidAt(e.vnow); ok {
				ms := ceilMs(at)
				wb.RepaidAt = &ms
			}
		}
		out = append(out, wb)
	}
	return out
}

// paidAt predicts when a time_based budget, with pool p, will have paid
// need tokens in all if nobody else takes any (ms, saturating): from the
// end of its pause when it is paused. false for a while_in_flight budget,
// which waits on releases, and while it is paused without an end.
func (e *Engine) paidAt(a *account, p budget.Pool, need int64) (int64, bool) {
	from := e.vnow
	if e.paused(a) {
		if e.pausedUntil(a) == math.MaxInt64 {
			return 0, false
		}
		from = e.pausedUntil(a)
	}
	at, ok := p.PaidAt(need, from)
	switch {
	case !ok:
		return 0, false
	case at == math.MaxInt64:
		return math.MaxInt64, true // saturated: never, in practice
	}
	return ceilMs(at), true
}

// Parked returns the IDs of the parked jobs (waiting jobs of served queues
// that some budget refuses), in dispatch order within each group.
func (e *Engine) Parked() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.catchUp()
	var out []string
	for _, q := range e.queues {
		if !e.served(q) {
			continue
		}
		for _, g := range q.groups {
			if g.sig == nil {
				continue
			}
			// The affordable prefix ends at member n: the rest are parked.
			g.members().ascend(e.affordBound(g).count(g.members()), func(it item) bool {
				out = append(out, it.id.String())
				return true
			})
		}
	}
	return out
}

// Work returns how many group and budget entries the engine's decisions
// have looked at, and how many decisions it made: the work per decision
// must not grow with the jobs waiting for a queue no taker serves.
func (e *Engine) Work() (entries, decisions uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.work, e.decisions
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }
