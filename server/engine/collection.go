package engine

import "slices"

// Collections keep a family's many groups from costing every decision.
//
// A family with thousands of live sub-budgets binds thousands of groups of
// a queue, and every dispatch or release changes the family's pool. Were
// each such change to recompute every one of those groups, a decision would
// cost O(groups). Instead the groups of one queue that bind one family at
// one cost form a collection, which is ONE entry of the queue's heap of
// candidates. Each member keeps its partial candidate: its first member
// when every budget but the family pays it. The family pays a prefix of the
// one order, the same for every member (they cost it the same), except that
// its head is never held back by its own reservation; so the collection's
// earliest partial candidate is the earliest job of the collection that
// every budget pays, when the family pays it, and no job of the collection
// is affordable when the family does not. A change of the family costs one
// look at the collection's minimum, not a pass over its groups.
//
// The collection also keeps the first and last members of its groups, in
// the one order, for choosing the family's head and its refill moment.
type collection struct {
	candEntry
	a      *account // the family
	q      *queue
	cost   int64 // what each of its groups' jobs costs the family
	groups map[*group]struct{}
	parts  jobSet // the partial candidates of its groups
	firsts jobSet // the first members of its groups
	lasts  jobSet // the last members of its groups (a time_based family's refillAt)
	heads  jobSet // the jobs that filed heads are (fileHead), each once
	dirty  bool   // its candidate needs recomputing (markColl)
}

// candEntry is an entry of a queue's heap of candidates: a group outside
// collections, or a collection.
type candEntry struct {
	cand item  // the earliest affordable job of the entry, else none
	hidx int32 // index in q.cands, -1 when absent
}

type collKey struct {
	q    *queue
	cost int64
}

// collectorOf returns the family binding by which a group is collected.
func collectorOf(g *group) (bind, bool) {
	for _, b := range g.binds() {
		if b.a.fam != nil {
			return b, true
		}
	}
	return bind{}, false
}

// collect puts a group that is being attached into its family's collection
// of its queue and cost, if it binds a family; it reports whether it did.
func (e *Engine) collect(g *group) bool {
	b, ok := collectorOf(g)
	if !ok {
		return false
	}
	a := b.a
	if a.colls == nil {
		a.colls = &collSet{byKey: map[collKey]*collection{}}
	}
	k := collKey{q: g.q, cost: b.cost}
	c := a.colls.byKey[k]
	if c == nil {
		c = &collection{candEntry: candEntry{cand: none, hidx: -1}, a: a, q: g.q, cost: b.cost,
			groups: map[*group]struct{}{}, parts: newJobSet(), firsts: newJobSet(), lasts: newJobSet(), heads: newJobSet()}
		a.colls.add(k, c)
		g.q.colls = append(g.q.colls, c)
	}
	c.groups[g] = struct{}{}
	g.coll = c
	g.first, g.last = none, none
	e.edgesChanged(g)
	return true
}

// uncollect takes a detached group (no candidate any more) out of its
// collection, dropping the collection when it is empty.
func (e *Engine) uncollect(g *group) {
	c := g.coll
	if g.first.ok() {
		c.firsts.remove(g.first.k())
		c.lasts.remove(g.last.k())
		g.first, g.last = none, none
	}
	delete(c.groups, g)
	g.coll = nil
	if len(c.groups) > 0 {
		return
	}
	c.parts.t = nil
	e.recomputeColl(c) // leaves the queue's heap
	c.a.colls.remove(collKey{q: c.q, cost: c.cost})
	q := c.q
	q.colls = deleteColl(q.colls, c)
}

// collSet is a budget's collections, by queue and cost and as a list:
// every change of a family ranges over them, and ranging over a map costs
// a random start and a walk of its table even for one member.
type collSet struct {
	byKey map[collKey]*collection
	list  []*collection
}

// all returns the collections; none for a budget that has none (nil).
func (s *collSet) all() []*collection {
	if s == nil {
		return nil
	}
	return s.list
}

func (s *collSet) add(k collKey, c *collection) {
	s.byKey[k] = c
	s.list = append(s.list, c)
}

func (s *collSet) remove(k collKey) {
	if c := s.byKey[k]; c != nil {
		delete(s.byKey, k)
		s.list = deleteColl(s.list, c)
	}
}

// deleteColl removes c from list, keeping the order of the others.
func deleteColl(list []*collection, c *collection) []*collection {
	for i, x := range list {
		if x == c {
			return slices.Delete(list, i, i+1)
		}
	}
	return list
}

// edgesChanged keeps a collected group's first and last members in its
// collection.
func (e *Engine) edgesChanged(g *group) {
	if g.coll == nil {
		return
	}
	e.setFirst(g, g.members().min())
	e.setLast(g, g.members().max())
}

// joinedEdges is edgesChanged after it joined the group: only an end it
// passes moves, so the group's set is not walked.
func (e *Engine) joinedEdges(g *group, it item) {
	if g.coll == nil {
		return
	}
	if !g.first.ok() || it.less(g.first) {
		e.setFirst(g, it)
	}
	if !g.last.ok() || g.last.less(it) {
		e.setLast(g, it)
	}
}

// leftEdges is edgesChanged after the member of key k left the group: an
// end moves only when it was that member.
func (e *Engine) leftEdges(g *group, k key) {
	if g.coll == nil {
		return
	}
	if g.first.ok() && g.first.k() == k {
		e.setFirst(g, g.members().min())
	}
	if g.last.ok() && g.last.k() == k {
		e.setLast(g, g.members().max())
	}
}

// setFirst and setLast move a collected group's end to m, refiling it in
// its collection's set of such ends.
func (e *Engine) setFirst(g *group, m item) { moveEnd(&g.first, &g.coll.firsts, m) }
func (e *Engine) setLast(g *group, m item)  { moveEnd(&g.last, &g.coll.lasts, m) }

func moveEnd(end *item, ends *jobSet, m item) {
	if m == *end {
		return
	}
	if end.ok() {
		ends.remove(end.k())
	}
	if m.ok() {
		ends.insert(m)
	}
	*end = m
}

// setPart records a collected group's partial candidate.
func (e *Engine) setPart(g *group, c item) {
	col := g.coll
	if g.cand != c {
		if g.cand.ok() {
			col.parts.remove(g.cand.k())
		}
		if c.ok() {
			col.parts.insert(c)
		}
		g.cand = c
	}
	e.markColl(col)
}

// markColl queues a collection's candidate for recomputing, once however
// many of its groups and budgets changed: refreshCandidates does it before
// any decision reads the queue's candidates.
func (e *Engine) markColl(c *collection) {
	if !c.dirty {
		c.dirty = true
		e.dirtyColls = append(e.dirtyColls, c)
	}
}

// recomputeColl sets a collection's candidate: its earliest partial
// candidate when the family pays it.
func (e *Engine) recomputeColl(c *collection) {
	c.dirty = false
	m := none
	if c.parts.t != nil {
		m = c.parts.min()
	}
	if m.ok() && !e.familyAdmits(c, m) {
		m = none
	}
	if !m.ok() && c.hidx < 0 {
		c.cand = none
		return
	}
	q := c.q
	c.cand = m
	switch {
	case !m.ok():
		q.cands.remove(&c.candEntry)
	case c.hidx < 0:
		q.cands.push(&c.candEntry)
	default:
		q.cands.fix(&c.candEntry)
	}
	e.touch(q)
	e.hotChanged(q)
}

// familyAdmits reports whether the collection's family pays m, one of its
// jobs (payBound, for m's own group).
func (e *Engine) familyAdmits(c *collection, m item) bool {
	var g *group // only whether m's group holds the family's head matters
	if m.idx == c.a.head.idx {
		g = c.a.headGroup
	}
	return e.payBound(c.a, c.cost, g).admits(m.k())
}

// groupOfItem returns the group of a waiting job.
func (e *Engine) groupOfItem(m item) *group {
	r := e.rec(m.idx)
	return e.queueList[r.q].group(e.sigOf(r))
}

// placeHead files a budget's new head where releaseIdleReservations looks
// for affordable heads: in its queue's loose heads, or, for a budget other
// than the family whose head is in a collected group, in the collection's
// heads while every budget but the family pays it (recompute keeps that
// up to date, as the group's budgets change).
func (e *Engine) placeHead(a *account) {
	g := a.headGroup
	c := g.coll
	if c == nil || c.a == a {
		g.q.looseHeads.add(a)
		return
	}
	e.fileHead(a, c, e.partBound(g))
}

// fileHead is placeHead for a head in a group of c, not c's family's, of
// which every budget but the family pays the prefix pb.
func (e *Engine) fileHead(a *account, c *collection, pb bound) {
	in := pb.admits(a.head.k())
	if in == (a.headIn != nil) {
		return
	}
	if in {
		if !headFiled(a.headGroup, a.head) {
			c.heads.insert(a.head)
		}
		a.headIn = c
	} else {
		e.unplaceHead(a)
	}
}

// unplaceHead takes a budget's head out of where placeHead filed it.
func (e *Engine) unplaceHead(a *account) {
	a.headGroup.q.looseHeads.remove(a)
	if c := a.headIn; c != nil {
		a.headIn = nil
		if !headFiled(a.headGroup, a.head) {
			c.heads.remove(a.head.k())
		}
	}
}

// headFiled reports whether some budget of g has h, one of g's jobs, for
// its head filed in g's collection. The heads filed there are a set of
// jobs, not of budgets: the entries hold no pointer, so the collector never
// scans them, and the budgets heading a job are among its group's few.
func headFiled(g *group, h item) bool {
	for _, b := range g.binds() {
		if b.a.headIn != nil && b.a.head.idx == h.idx {
			return true
		}
	}
	return false
}

// filedOn appends the budgets whose head is h, a job of g, filed in g's
// collection, in key order.
func filedOn(g *group, h item, out []*account) []*account {
	for _, b := range g.binds() {
		if b.a.headIn != nil && b.a.head.idx == h.idx {
			out = append(out, b.a)
		}
	}
	return out
}

// replaceHeads refiles the heads of the other budgets in a collected group
// after its partial candidate was recomputed from pb, its partBound.
func (e *Engine) replaceHeads(g *group, pb bound) {
	for _, b := range g.binds() {
		if b.a != g.coll.a && b.a.headGroup == g {
			e.fileHead(b.a, g.coll, pb)
		}
	}
}

// idleHeads appends the heads filed in the queue's collections that every
// budget pays and that are not best, the queue's earliest affordable job.
// The family pays a prefix of the one order, so the walk stops at the
// first head it refuses.
func (e *Engine) idleHeads(q *queue, best item, out []*account) []*account {
	for _, c := range q.colls {
		c.heads.ascend(0, func(h item) bool {
			e.work++
			if !e.familyAdmits(c, h) {
				return false
			}
			if h.idx != best.idx {
				if g := e.groupOfItem(h); e.affordBound(g).admits(h.k()) {
					out = filedOn(g, h, out)
				}
			}
			return true
		})
	}
	return out
}
