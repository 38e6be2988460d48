package engine

import (
	"slices"
	"strings"

	"github.com/zizq/zizq/store"
)

// Windows of the live lists, for dashboards: up to limit jobs of one list
// found by position, with the list's total and the first item's position,
// both exact. The waiting jobs are not kept in one ordered set; each group
// is one (group.go), so the ready list is the merge of every group's set
// in the dispatch order, read through the one comparator the sets use
// (item.less): when that order changes, windows follow. A position is the
// sum of the groups' ranks, and the k-th job is found by a selection over
// the groups' counted trees, so no window costs more than a few tree
// descents per group and per job shown. The in-flight and scheduled lists
// are one ordered set each (observe.go).

// AnchorKind says where a window is.
type AnchorKind uint8

const (
	// AnchorHead: the first jobs of the list.
	AnchorHead AnchorKind = iota
	// AnchorTail: the last jobs.
	AnchorTail
	// AnchorOffset: from a position (clamped so the window stays full).
	AnchorOffset
	// AnchorAround: centred on a job; Fallback says what to show when it
	// is not in the list.
	AnchorAround
	// AnchorNowhere, as a fallback: an empty window.
	AnchorNowhere
)

// Anchor places a window.
type Anchor struct {
	Kind     AnchorKind
	Offset   int
	ID       string
	Fallback AnchorKind // AnchorHead, AnchorTail or AnchorNowhere
}

// Window is a part of a list.
type Window struct {
	Jobs  []store.Job // as the engine knows them (see view)
	First int         // position of Jobs[0] (0 when empty)
	Total int         // jobs in the list
	// Resolved is the anchor's job when an AnchorAround found it.
	Resolved string
}

// WindowRequest asks for one list's window.
type WindowRequest struct {
	Anchor Anchor
	Limit  int
}

// Windows returns a window of each list, all read at one instant. A list
// whose request has Limit 0 is left empty. Watch must be in force for the
// in-flight and scheduled lists.
func (e *Engine) Windows(reqs [NumLists]WindowRequest) [NumLists]Window {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.catchUp()
	var out [NumLists]Window
	for l, r := range reqs {
		if r.Limit > 0 {
			out[l] = e.window(List(l), r.Anchor, r.Limit)
		}
	}
	return out
}

func (e *Engine) window(l List, a Anchor, limit int) Window {
	switch l {
	case ListReady:
		return windowOf(e, e.readySources(nil), a, limit)
	case ListInFlight:
		return windowOf(e, e.timedSources(&e.obs.flights), a, limit)
	default:
		return windowOf(e, e.timedSources(&e.obs.sched), a, limit)
	}
}

// Totals returns the number of jobs in each list.
func (e *Engine) Totals() [NumLists]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.catchUp()
	return [NumLists]int{
		ListReady:     int(e.counts[stWaiting]),
		ListInFlight:  int(e.counts[stInFlight]),
		ListScheduled: int(e.counts[stScheduled]),
	}
}

// entry is a member of a list's ordered sets.
type entry[T any] interface {
	lesser[T]
	jobRef() ref
}

func (it item) jobRef() ref { return ref{id: it.id.unpack(), idx: it.idx} }

// readySources returns the ordered sets of the waiting jobs: every group,
// or the groups of the queues keep accepts.
func (e *Engine) readySources(keep func(*queue) bool) []*bptree[item] {
	var out []*bptree[item]
	for _, q := range e.queueList {
		if keep != nil && !keep(q) {
			continue
		}
		for _, g := range q.groups {
			if g.members().len() > 0 {
				out = append(out, g.members().t)
			}
		}
	}
	return out
}

func (e *Engine) timedSources(x *timedIndex) []*bptree[timedEntry] {
	if x.tree.len() == 0 {
		return nil
	}
	return []*bptree[timedEntry]{&x.tree}
}

func total[T entry[T]](srcs []*bptree[T]) int {
	n := 0
	for _, s := range srcs {
		n += s.len()
	}
	return n
}

// windowOf resolves the anchor over the merged sources and reads the window.
func windowOf[T entry[T]](e *Engine, srcs []*bptree[T], a Anchor, limit int) Window {
	w := Window{Total: total(srcs)}
	start, ok := 0, true
	switch a.Kind {
	case AnchorTail:
		start = w.Total - limit
	case AnchorOffset:
		start = min(a.Offset, w.Total-limit)
	case AnchorAround:
		var pos int
		if pos, ok = e.positionOf(srcs, a.ID); ok {
			start, w.Resolved = pos-limit/2, a.ID
		} else if a.Fallback == AnchorTail {
			start, ok = w.Total-limit, true
		} else {
			ok = a.Fallback == AnchorHead
		}
	}
	if !ok || w.Total == 0 {
		return w
	}
	w.First = max(0, min(start, w.Total-limit))
	mergeWalk(srcs, w.First, true, func(it T) bool {
		j := it.jobRef()
		w.Jobs = append(w.Jobs, e.view(j.id.String(), j.idx))
		return len(w.Jobs) < limit
	})
	return w
}

// positionOf returns the position of a job in the merged order, if it is
// a member of one of the sources.
func (e *Engine) positionOf(srcs any, id string) (int, bool) {
	j, ok := e.lookup(id)
	if !ok {
		return 0, false
	}
	r := e.rec(j.idx)
	switch s := srcs.(type) {
	case []*bptree[item]:
		if r.state != stWaiting {
			return 0, false
		}
		return rankAll(s, itemAt(e.keyOf(j), j.idx)), true
	case []*bptree[timedEntry]:
		for _, t := range s {
			k, ok := e.timedKey(t, j, r)
			if ok {
				if _, found := t.get(k); found {
					return t.rank(k, false), true
				}
			}
		}
	}
	return 0, false
}

// timedKey is a job's entry in the in-flight or scheduled set.
func (e *Engine) timedKey(t *bptree[timedEntry], j ref, r *jobRec) (timedEntry, bool) {
	switch {
	case t == &e.obs.flights.tree && r.state == stInFlight:
		return timedEntry{at: e.takerSlots[r.aux].inFlight[j.idx].dequeuedAt, id: j.id, idx: j.idx}, true
	case t == &e.obs.sched.tree && r.state == stScheduled:
		return timedEntry(e.promos.items[r.aux]), true
	}
	return timedEntry{}, false
}

func rankAll[T entry[T]](srcs []*bptree[T], x T) int {
	n := 0
	for _, s := range srcs {
		n += s.rank(x, false)
	}
	return n
}

// starts returns, for each source, how many of its members come before
// position k of the merged order. It narrows each source's range around
// the k-th member with pivots that are weighted medians of the ranges'
// middles, so every round drops at least a quarter of what is left.
func starts[T entry[T]](srcs []*bptree[T], k int) []int {
	lo, hi := make([]int, len(srcs)), make([]int, len(srcs))
	for i, s := range srcs {
		hi[i] = s.len()
	}
	if len(srcs) == 1 {
		lo[0] = min(k, hi[0])
		return lo
	}
	type mid struct {
		v T
		w int
	}
	mids := make([]mid, 0, len(srcs))
	for {
		left := 0
		mids = mids[:0]
		for i, s := range srcs {
			if n := hi[i] - lo[i]; n > 0 {
				left += n
				v, _ := s.at(lo[i] + n/2)
				mids = append(mids, mid{v: v, w: n})
			}
		}
		if left == 0 {
			return lo
		}
		slices.SortFunc(mids, func(a, b mid) int {
			if a.v.less(b.v) {
				return -1
			}
			return 1
		})
		pivot, acc := mids[len(mids)-1].v, 0
		for _, m := range mids {
			if acc += m.w; 2*acc >= left {
				pivot = m.v
				break
			}
		}
		before := 0
		ranks := make([]int, len(srcs))
		for i, s := range srcs {
			ranks[i] = min(max(s.rank(pivot, false), lo[i]), hi[i])
			before += ranks[i]
		}
		switch {
		case before == k:
			return ranks
		case before < k:
			for i, s := range srcs {
				lo[i] = min(max(s.rank(pivot, true), lo[i]), hi[i])
			}
		default:
			copy(hi, ranks)
		}
	}
}

// walk calls f on the members of the merged order from position pos on,
// forwards, or from pos-1 down, backwards, while f returns true.
func (e *Engine) walk(srcs any, pos int, forward bool, f any) {
	switch s := srcs.(type) {
	case []*bptree[item]:
		mergeWalk(s, pos, forward, f.(func(item) bool))
	case []*bptree[timedEntry]:
		mergeWalk(s, pos, forward, f.(func(timedEntry) bool))
	}
}

// mergeWalk is walk over sources of one entry type: a heap of the sources'
// current members, earliest first (latest first backwards).
func mergeWalk[T entry[T]](srcs []*bptree[T], pos int, forward bool, f func(T) bool) {
	if pos < 0 || len(srcs) == 0 {
		return
	}
	idx := starts(srcs, pos)
	h := mergeHeap[T]{forward: forward}
	for i, s := range srcs {
		j := idx[i]
		if !forward {
			j--
		}
		if v, ok := s.at(j); ok {
			h.push(cursor[T]{v: v, src: i, at: j})
		}
	}
	for len(h.items) > 0 {
		c := h.items[0]
		if !f(c.v) {
			return
		}
		if forward {
			c.at++
		} else {
			c.at--
		}
		if v, ok := srcs[c.src].at(c.at); ok {
			c.v = v
			h.items[0] = c
			down(&h, 0)
		} else {
			h.pop()
		}
	}
}

type cursor[T entry[T]] struct {
	v   T
	src int
	at  int
}

type mergeHeap[T entry[T]] struct {
	items   []cursor[T]
	forward bool
}

func (h *mergeHeap[T]) less(a, b int) bool {
	if h.forward {
		return h.items[a].v.less(h.items[b].v)
	}
	return h.items[b].v.less(h.items[a].v)
}
func (h *mergeHeap[T]) swap(a, b int) { h.items[a], h.items[b] = h.items[b], h.items[a] }
func (h *mergeHeap[T]) len() int      { return len(h.items) }
func (h *mergeHeap[T]) push(c cursor[T]) {
	h.items = append(h.items, c)
	up(h, len(h.items)-1)
}
func (h *mergeHeap[T]) pop() {
	last := len(h.items) - 1
	h.swap(0, last)
	h.items = h.items[:last]
	if last > 0 {
		down(h, 0)
	}
}

// Direction of a Find.
type Direction uint8

const (
	// Forward: the first match after the anchor.
	Forward Direction = iota
	// Backward: the first match before the anchor, going back.
	Backward
	// Locate: the anchor's own position; the query is not looked at.
	Locate
)

// FindRequest is a search of a list, like less's /, n and N.
type FindRequest struct {
	List List
	// ID anchors the search at a job; "" starts at the start (Forward) or
	// the end (Backward). An anchor not in the list does too (Locate finds
	// nothing).
	ID        string
	Direction Direction
	// Queues and Types match by substring: any value of a field, every
	// field given.
	Queues, Types []string
	Limit         int
}

// Found is a Find's answer: the match's position and a window around it.
type Found struct {
	Position int
	Window   Window
}

// findChunk bounds the jobs one hold of the lock looks at: a search over a
// deep list lets dispatch in between.
const findChunk = 4096

// Find searches a list and returns the first match with a window of limit
// jobs centred on it; false when nothing matches.
func (e *Engine) Find(req FindRequest) (Found, bool) {
	if req.Direction == Locate {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.catchUp()
		return e.found(req, req.ID)
	}
	at := findFrom{id: req.ID, pos: -1}
	for {
		e.mu.Lock()
		e.catchUp()
		id, next, done := e.findStep(req, at)
		if id != "" {
			defer e.mu.Unlock()
			return e.found(req, id)
		}
		e.mu.Unlock()
		if done {
			return Found{}, false
		}
		at = next
	}
}

// findFrom is where a search goes on: after (before) the job id, or, if it
// has left the list, at the position pos it was at (-1: the list's start,
// or end, backwards).
type findFrom struct {
	id  string
	pos int
}

// found is the answer for the match id, under the lock.
func (e *Engine) found(req FindRequest, id string) (Found, bool) {
	w := e.window(req.List, Anchor{Kind: AnchorAround, ID: id, Fallback: AnchorNowhere}, req.Limit)
	if w.Resolved == "" {
		return Found{}, false
	}
	pos, _ := e.positionOf(e.sourcesOf(req.List, nil), id)
	return Found{Position: pos, Window: w}, true
}

func (e *Engine) sourcesOf(l List, keep func(*queue) bool) any {
	switch l {
	case ListReady:
		return e.readySources(keep)
	case ListInFlight:
		return e.timedSources(&e.obs.flights)
	}
	return e.timedSources(&e.obs.sched)
}

// findStep looks at up to findChunk jobs from where the search is: it
// returns a match, or where to go on, or done when the list ends.
func (e *Engine) findStep(req FindRequest, from findFrom) (match string, next findFrom, done bool) {
	queues := e.matching(req.Queues, func(yield func(int, string) bool) {
		for i, q := range e.queueList {
			if !yield(i, q.name) {
				return
			}
		}
	})
	types := e.matching(req.Types, func(yield func(int, string) bool) {
		for i, t := range e.types.list {
			if !yield(i, t) {
				return
			}
		}
	})
	keep := func(q *queue) bool { return queues == nil || queues[q.idx] }
	srcs := e.sourcesOf(req.List, keep)
	forward := req.Direction == Forward
	pos := 0
	if !forward {
		pos = total2(srcs)
	}
	if p, ok := e.positionOf(srcs, from.id); ok && from.id != "" {
		pos = p
		if forward {
			pos++
		}
	} else if from.pos >= 0 {
		pos = from.pos
	}
	steps := 0
	e.walk(srcs, pos, forward, walker(req.List, func(j ref) bool {
		steps++
		r := e.rec(j.idx)
		if (queues == nil || queues[r.q]) && (types == nil || types[e.typeOf(r)]) {
			match = j.id.String()
			return false
		}
		if steps == findChunk {
			next = findFrom{id: j.id.String(), pos: pos - steps}
			if forward {
				next.pos = pos + steps
			}
			return false
		}
		return true
	}))
	return match, next, match == "" && next.id == ""
}

// walker adapts a function of jobs to the entry type of a list.
func walker(l List, f func(ref) bool) any {
	if l == ListReady {
		return func(it item) bool { return f(it.jobRef()) }
	}
	return func(t timedEntry) bool { return f(t.jobRef()) }
}

func total2(srcs any) int {
	switch s := srcs.(type) {
	case []*bptree[item]:
		return total(s)
	case []*bptree[timedEntry]:
		return total(s)
	}
	return 0
}

// matching returns which of the names hold one of subs (nil: no filter).
func (e *Engine) matching(subs []string, names func(yield func(int, string) bool)) map[uint32]bool {
	if len(subs) == 0 {
		return nil
	}
	out := map[uint32]bool{}
	for i, n := range names {
		for _, s := range subs {
			if strings.Contains(n, s) {
				out[uint32(i)] = true
				break
			}
		}
	}
	return out
}
