package engine

import (
	"slices"
	"sort"
)

// A group holds the waiting jobs of one queue that share one binding
// signature: the same budgets at the same costs. Every budget pays a prefix of
// a group (docs/ENGINE.md §Lines and heads: a budget pays a job unless its
// tokens, less the reservation of an earlier head, fall short of the job's
// cost, so within one cost it pays everything, nothing, or what comes before
// its head), and so does the group's whole signature. A group's earliest
// affordable job is therefore its first member or nothing, and no decision
// ever has to step over a job that cannot go.
//
// A group that binds a family is collected (collection.go): its cand is
// then its partial candidate, the first member when every budget but the
// family pays it, and it is not itself in q.cands.
//
// A group is 128 bytes, two cache lines (TestLayout_CacheLines): a
// dispatch from one of a family's many groups reads all of it cold.
type group struct {
	candEntry // cand: the first member when it is affordable, else none
	q         *queue
	sig       *signature   // nil: the queue's jobs without budgets
	tree      bptree[item] // its members (members wraps them as a set), kept in the group: one cache miss less a visit
	coll      *collection  // nil: not collected
	first     item         // collected: its first member as its collection knows it
	last      item         // collected: its last member, likewise
	dirty     bool
}

// members returns the group's members as a set.
func (g *group) members() jobSet { return jobSet{&g.tree} }

// binds returns the group's bindings, in canonical order.
func (g *group) binds() []bind {
	if g.sig == nil {
		return nil
	}
	return g.sig.binds
}

// costOf returns the cost the group's jobs pay to a.
func (g *group) costOf(a *account) int64 {
	for _, b := range g.binds() {
		if b.a == a {
			return b.cost
		}
	}
	return 0
}

func sortedBinds(binds []bind) []bind {
	sig := append([]bind(nil), binds...)
	sort.Slice(sig, func(i, j int) bool { return sig[i].a.cfg.Key < sig[j].a.cfg.Key })
	return sig
}

// queue holds the waiting jobs of one queue (in groups) and its takers.
type queue struct {
	name   string
	idx    uint32 // index in Engine.queueList
	groups map[*signature]*group
	cands  groupHeap // groups and collections with a candidate, earliest first
	served int       // connected takers of this queue alone
	roomy  takerList // those of them with room, in room order
	counts [numStates]int64
	heads  acctSet // budgets whose head is a job of this queue
	// looseHeads holds those of them that are not filed in a collection
	// (placeHead).
	looseHeads acctSet
	colls      []*collection // the collections of its groups
	qidx       int           // index in Engine.hot, -1 when absent
	touched    bool          // a group was recomputed since the last reservation check
}

func (e *Engine) queue(name string) *queue {
	q := e.queues[name]
	if q == nil {
		q = &queue{name: name, idx: uint32(len(e.queueList)), groups: map[*signature]*group{}, qidx: -1,
			heads: acctSet{pos: headPos}, looseHeads: acctSet{pos: loosePos}}
		e.queues[name] = q
		e.queueList = append(e.queueList, q)
	}
	return q
}

// best returns the earliest affordable job of the queue, or none.
func (q *queue) best() item {
	if len(q.cands.items) == 0 {
		return none
	}
	return q.cands.items[0].cand
}

// served reports whether some connected taker serves the queue.
func (e *Engine) served(q *queue) bool { return e.servedAll > 0 || q.served > 0 }

// group returns the queue's group of signature sig, or nil.
func (q *queue) group(sig *signature) *group {
	if sig == nil {
		return q.groups[nil]
	}
	if g := sig.group; g != nil && g.q == q {
		return g
	}
	g := q.groups[sig]
	if g != nil {
		sig.group = g
	}
	return g
}

// groupOf returns a record's group in its queue, creating it.
func (e *Engine) groupOf(r *jobRec) *group {
	q := e.queueList[r.q]
	sig := e.sigOf(r)
	if g := q.group(sig); g != nil {
		return g
	}
	g := &group{candEntry: candEntry{cand: none, hidx: -1}, q: q, sig: sig, first: none}
	q.groups[sig] = g
	if e.served(q) {
		e.attach(g)
	}
	return g
}

// attach makes a group of a served queue known to its budgets.
// A collected group is known to its family through its collection.
func (e *Engine) attach(g *group) {
	e.collect(g)
	e.countCoBudgets(g, +1)
	for _, b := range g.binds() {
		if g.coll == nil || b.a != g.coll.a {
			b.a.served.add(g)
		}
		e.changed(b.a)
	}
	e.markGroup(g)
}

// detachGroup makes a group unknown to its budgets (its queue lost its
// last taker, or it is empty): its jobs are in no line and reserve nothing.
func (e *Engine) detachGroup(g *group) {
	for _, b := range g.binds() {
		b.a.served.remove(g)
		e.changed(b.a)
	}
	e.countCoBudgets(g, -1)
	e.setCandidate(g, none)
	if g.coll != nil {
		e.uncollect(g)
	}
}

// join makes a job waiting: a member of its group.
func (e *Engine) join(j ref) {
	e.setState(j.idx, stWaiting)
	r := e.rec(j.idx)
	r.aux = -1
	g := e.groupOf(r)
	it := itemAt(e.keyOf(j), j.idx)
	g.members().insert(it)
	e.joinedEdges(g, it)
	e.markGroup(g)
	for _, b := range e.binds(r) {
		b.a.waitN++
		b.a.waitCost += b.cost
	}
	if e.served(g.q) {
		for _, b := range g.binds() {
			e.checkHead(b.a) // a budget without a head may now refuse it
			e.deadlineDirty(b.a)
		}
	}
}

// leave takes a waiting job out of its group; it is no budget's head any more
// (docs/ENGINE.md §Lines and heads: a head that leaves gives up its headship).
func (e *Engine) leave(j ref) { e.leaveAt(j, e.keyOf(j)) }

// leaveAt is leave for a job whose key k the caller has at hand.
func (e *Engine) leaveAt(j ref, k key) {
	r := e.rec(j.idx)
	g := e.queueList[r.q].group(e.sigOf(r))
	for _, b := range g.binds() {
		if b.a.head.idx == j.idx {
			e.clearHead(b.a)
		}
	}
	g.members().remove(k)
	e.leftEdges(g, k)
	if g.coll != nil && g.cand.idx == j.idx {
		// At once: the job may join another group of the collection
		// before this one is recomputed, and its key is the same there.
		e.setPart(g, none)
	}
	e.markGroup(g)
	for _, b := range e.binds(r) {
		b.a.waitN--
		b.a.waitCost -= b.cost
	}
	if e.served(g.q) {
		for _, b := range g.binds() {
			e.deadlineDirty(b.a)
		}
	}
	if g.members().len() == 0 {
		e.dropGroup(g)
	}
}

func (e *Engine) dropGroup(g *group) {
	if e.served(g.q) {
		e.detachGroup(g)
	}
	g.dirty = false
	delete(g.q.groups, g.sig)
	if g.sig != nil && g.sig.group == g {
		g.sig.group = nil
	}
}

// markGroup queues a group's candidate for recomputing.
func (e *Engine) markGroup(g *group) {
	if !g.dirty {
		g.dirty = true
		e.dirtyGroups = append(e.dirtyGroups, g)
	}
}

// affordBound is the prefix of the group that every one of its budgets
// pays now, within the horizon.
func (e *Engine) affordBound(g *group) bound {
	b := e.horizon
	for _, s := range g.binds() {
		b = b.tighter(e.payBound(s.a, s.cost, g))
	}
	return b
}

// partBound is the prefix of the group that every one of its budgets but
// its collection's family pays now (affordBound, for a group outside
// collections).
func (e *Engine) partBound(g *group) bound {
	b := e.horizon
	for _, s := range g.binds() {
		if g.coll == nil || s.a != g.coll.a {
			b = b.tighter(e.payBound(s.a, s.cost, g))
		}
	}
	return b
}

// recompute sets the group's candidate: its first member when affordable.
func (e *Engine) recompute(g *group) {
	g.dirty = false
	e.work += uint64(1 + len(g.binds()))
	e.touch(g.q)
	if g.members().len() == 0 || !e.served(g.q) {
		e.setCandidate(g, none)
		return
	}
	m := g.members().min()
	pb := e.partBound(g)
	if !pb.admits(m.k()) {
		m = none
	}
	e.setCandidate(g, m)
	if g.coll != nil {
		e.replaceHeads(g, pb)
	}
}

// setCandidate records a group's candidate and keeps the queue's and the
// engine's heaps of candidates in order.
func (e *Engine) setCandidate(g *group, c item) {
	if g.coll != nil {
		e.setPart(g, c)
		return
	}
	if !c.ok() && g.hidx < 0 {
		return
	}
	// Even the same candidate may have moved (re-prioritised): re-sift.
	q := g.q
	g.cand = c
	switch {
	case !c.ok():
		q.cands.remove(&g.candEntry)
	case g.hidx < 0:
		q.cands.push(&g.candEntry)
	default:
		q.cands.fix(&g.candEntry)
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
	case !best.ok() && q.qidx >= 0:
		e.hot.remove(q)
	case best.ok() && q.qidx < 0:
		e.hot.push(q)
	case best.ok():
		e.hot.fix(q)
	}
}

// serveChanged applies a queue gaining its first or losing its last taker:
// its groups join or leave their budgets, and heads among its jobs give up
// their headship when it loses its last taker.
func (e *Engine) serveChanged(q *queue, served bool) {
	if !served {
		for _, a := range slices.Clone(q.heads.list) {
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
