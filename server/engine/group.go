package engine

import (
	"sort"
	"strconv"

	"github.com/zizq/zizq/store"
)

// A group holds the waiting jobs of one queue that share one binding
// signature: the same budgets at the same costs. Every budget pays a prefix
// of a group (ENGINE.md: a budget pays a job unless its tokens, less the
// reservation of an earlier head, fall short of the job's cost, so within
// one cost it pays everything, nothing, or what comes before its head), and
// so does the group's whole signature. A group's earliest affordable job is
// therefore its first member or nothing, and no decision ever has to step
// over a job that cannot go.
type group struct {
	q      *queue
	sig    []bind // one per budget, sorted by key
	sigKey string
	set    jobSet
	cand   *job // the first member when it is affordable
	hidx   int  // index in q.cands, -1 when absent
	dirty  bool
}

// costOf returns the cost the group's jobs pay to a.
func (g *group) costOf(a *account) int64 {
	for _, b := range g.sig {
		if b.a == a {
			return b.cost
		}
	}
	return 0
}

// signature returns the canonical signature of a job's bindings and its
// map key.
func signature(binds []bind, buf []byte) ([]bind, []byte) {
	sig := append([]bind(nil), binds...)
	sort.Slice(sig, func(i, j int) bool { return sig[i].a.cfg.Key < sig[j].a.cfg.Key })
	buf = buf[:0]
	for _, b := range sig {
		buf = append(buf, b.a.cfg.Key...)
		buf = append(buf, 0)
		buf = strconv.AppendInt(buf, b.cost, 10)
		buf = append(buf, 0)
	}
	return sig, buf
}

// queue holds the waiting jobs of one queue (in groups) and its takers.
type queue struct {
	name    string
	groups  map[string]*group
	cands   groupHeap // groups with a candidate, earliest first
	served  int       // connected takers of this queue alone
	roomy   takerList // those of them with room, in room order
	counts  [numStates]int64
	heads   map[*account]struct{} // budgets whose head is a job of this queue
	qidx    int                   // index in Engine.hot, -1 when absent
	touched bool                  // a candidate changed since the last reservation check
}

func (e *Engine) queue(name string) *queue {
	q := e.queues[name]
	if q == nil {
		q = &queue{name: name, groups: map[string]*group{}, heads: map[*account]struct{}{}, qidx: -1}
		e.queues[name] = q
	}
	return q
}

// best returns the earliest affordable job of the queue, or nil.
func (q *queue) best() *job {
	if len(q.cands.items) == 0 {
		return nil
	}
	return q.cands.items[0].cand
}

// served reports whether some connected taker serves the queue.
func (e *Engine) served(q *queue) bool { return e.servedAll > 0 || q.served > 0 }

// groupFor returns the job's group in its queue, creating it.
func (e *Engine) groupFor(j *job) *group {
	var sig []bind
	sig, e.sigBuf = signature(j.binds, e.sigBuf)
	if g := j.q.groups[string(e.sigBuf)]; g != nil {
		return g
	}
	g := &group{q: j.q, sig: sig, sigKey: string(e.sigBuf), set: newJobSet(), hidx: -1}
	j.q.groups[g.sigKey] = g
	if e.served(j.q) {
		e.attach(g)
	}
	return g
}

// attach makes a group of a served queue known to its budgets.
func (e *Engine) attach(g *group) {
	for _, b := range g.sig {
		b.a.served[g] = struct{}{}
		e.changed(b.a)
	}
	e.markGroup(g)
}

// detachGroup makes a group unknown to its budgets (its queue lost its
// last taker, or it is empty): its jobs are in no line and reserve nothing.
func (e *Engine) detachGroup(g *group) {
	for _, b := range g.sig {
		delete(b.a.served, g)
		e.changed(b.a)
	}
	e.setCandidate(g, nil)
}

// join makes a job waiting: a member of its group.
func (e *Engine) join(j *job, sinceMs int64) {
	e.setState(j, stWaiting)
	j.Status = store.Ready
	j.since = sinceMs
	g := e.groupFor(j)
	j.g = g
	g.set.insert(j)
	e.markGroup(g)
	if e.served(g.q) {
		for _, b := range g.sig {
			e.checkHead(b.a) // a budget without a head may now refuse it
			e.deadlineDirty(b.a)
		}
	}
}

// leave takes a waiting job out of its group; it is no budget's head any
// more (ENGINE.md: a head that leaves gives up its headship).
func (e *Engine) leave(j *job) {
	g := j.g
	if g == nil {
		return
	}
	for _, b := range j.binds {
		if b.a.head == j {
			e.clearHead(b.a)
		}
	}
	g.set.remove(j)
	j.g = nil
	e.markGroup(g)
	if e.served(g.q) {
		for _, b := range g.sig {
			e.deadlineDirty(b.a)
		}
	}
	if g.set.len() == 0 {
		e.dropGroup(g)
	}
}

func (e *Engine) dropGroup(g *group) {
	if e.served(g.q) {
		e.detachGroup(g)
	}
	g.dirty = false
	delete(g.q.groups, g.sigKey)
}

// markGroup queues a group's candidate for recomputing.
func (e *Engine) markGroup(g *group) {
	if !g.dirty {
		g.dirty = true
		e.dirtyGroups = append(e.dirtyGroups, g)
	}
}

// affordBound is the prefix of the group that every one of its budgets
// pays now.
func (e *Engine) affordBound(g *group) bound {
	b := admitAll
	for _, s := range g.sig {
		b = b.tighter(e.payBound(s.a, s.cost, g))
	}
	return b
}

// recompute sets the group's candidate: its first member when affordable.
func (e *Engine) recompute(g *group) {
	g.dirty = false
	e.work += uint64(1 + len(g.sig))
	e.touch(g.q)
	if g.set.len() == 0 || !e.served(g.q) {
		e.setCandidate(g, nil)
		return
	}
	m := g.set.min()
	if !e.affordBound(g).admits(m.k) {
		m = nil
	}
	e.setCandidate(g, m)
}

// setCandidate records a group's candidate and keeps the queue's and the
// engine's heaps of candidates in order.
func (e *Engine) setCandidate(g *group, c *job) {
	if c == nil && g.hidx < 0 {
		return
	}
	// Even the same candidate may have moved (re-prioritised): re-sift.
	q := g.q
	g.cand = c
	switch {
	case c == nil:
		q.cands.remove(g)
	case g.hidx < 0:
		q.cands.push(g)
	default:
		q.cands.fix(g)
	}
	e.touch(q)
	e.hotChanged(q)
}

func (e *Engine) touch(q *queue) {
	if !q.touched {
		q.touched = true
		e.touched = append(e.touched, q)
	}
}

// hotChanged keeps the engine's heap of queues with a candidate in order.
func (e *Engine) hotChanged(q *queue) {
	best := q.best()
	switch {
	case best == nil && q.qidx >= 0:
		e.hot.remove(q)
	case best != nil && q.qidx < 0:
		e.hot.push(q)
	case best != nil:
		e.hot.fix(q)
	}
}

// serveChanged applies a queue gaining its first or losing its last taker:
// its groups join or leave their budgets, and heads among its jobs give up
// their headship when it loses its last taker.
func (e *Engine) serveChanged(q *queue, served bool) {
	if !served {
		for a := range q.heads {
			e.clearHead(a)
		}
	}
	for _, g := range q.groups {
		if served {
			e.attach(g)
		} else {
			e.detachGroup(g)
		}
	}
}
