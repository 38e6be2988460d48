package engine

import "github.com/zizq/zizq/server/jobid"

// groupHeap orders the candidate entries of a queue (groups and
// collections) that have a candidate by it.
type groupHeap struct{ items []*candEntry }

func (h *groupHeap) less(a, b int) bool { return h.items[a].cand.k().less(h.items[b].cand.k()) }
func (h *groupHeap) swap(a, b int) {
	h.items[a], h.items[b] = h.items[b], h.items[a]
	h.items[a].hidx, h.items[b].hidx = int32(a), int32(b)
}
func (h *groupHeap) push(g *candEntry) {
	g.hidx = int32(len(h.items))
	h.items = append(h.items, g)
	up(h, len(h.items)-1)
}
func (h *groupHeap) remove(g *candEntry) {
	i := int(g.hidx)
	last := len(h.items) - 1
	h.swap(i, last)
	h.items[last] = nil
	h.items = h.items[:last]
	g.hidx = -1
	if i < last {
		fix(h, i)
	}
}
func (h *groupHeap) fix(g *candEntry) { fix(h, int(g.hidx)) }
func (h *groupHeap) len() int         { return len(h.items) }

// queueHeap orders the queues that have an affordable job by their earliest.
type queueHeap struct{ items []*queue }

func (h *queueHeap) less(a, b int) bool { return h.items[a].best().k().less(h.items[b].best().k()) }
func (h *queueHeap) swap(a, b int) {
	h.items[a], h.items[b] = h.items[b], h.items[a]
	h.items[a].qidx, h.items[b].qidx = a, b
}
func (h *queueHeap) push(q *queue) {
	q.qidx = len(h.items)
	h.items = append(h.items, q)
	up(h, q.qidx)
}
func (h *queueHeap) remove(q *queue) {
	i := q.qidx
	last := len(h.items) - 1
	h.swap(i, last)
	h.items[last] = nil
	h.items = h.items[:last]
	q.qidx = -1
	if i < last {
		fix(h, i)
	}
}
func (h *queueHeap) fix(q *queue) { fix(h, q.qidx) }
func (h *queueHeap) len() int     { return len(h.items) }
func (h *queueHeap) min() *queue {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

// promo is a scheduled job's ready moment (unix ns). The job's record
// knows its place in the heap (aux), so a delete or a patch removes it.
// Its fields are a timedEntry's, so it converts to its entry in the
// scheduled set.
type promo struct {
	at  int64
	id  jobid.ID
	idx int32
}

type promoHeap struct {
	e     *Engine
	items []promo
}

func (h *promoHeap) less(a, b int) bool { return h.items[a].at < h.items[b].at }
func (h *promoHeap) swap(a, b int) {
	h.items[a], h.items[b] = h.items[b], h.items[a]
	h.e.rec(h.items[a].idx).aux = int32(a)
	h.e.rec(h.items[b].idx).aux = int32(b)
}
func (h *promoHeap) len() int { return len(h.items) }
func (h *promoHeap) push(p promo) {
	i := len(h.items)
	h.items = append(h.items, p)
	h.e.rec(p.idx).aux = int32(i)
	h.e.obs.sched.add(timedEntry(p))
	up(h, i)
}
func (h *promoHeap) remove(i int32) {
	p := h.items[i]
	h.e.obs.sched.remove(timedEntry(p))
	last := len(h.items) - 1
	h.swap(int(i), last)
	h.e.rec(h.items[last].idx).aux = -1
	h.items = h.items[:last]
	if int(i) < last {
		fix(h, int(i))
	}
}

// purge is the moment a retained terminal job expires (unix ns).
type purge struct {
	at int64
	id jobid.ID
}

func (p purge) moment() int64 { return p.at }

// timed is an entry of a timedHeap: its moment orders it.
type timed interface{ moment() int64 }

// timedHeap is a min-heap of entries by moment, for deadlines whose entries
// do not know their place (purges, expiries: a removal is a scan, or they
// are skipped when they come).
type timedHeap[T timed] struct{ items []T }

func (h *timedHeap[T]) less(a, b int) bool { return h.items[a].moment() < h.items[b].moment() }
func (h *timedHeap[T]) swap(a, b int)      { h.items[a], h.items[b] = h.items[b], h.items[a] }
func (h *timedHeap[T]) len() int           { return len(h.items) }

func (h *timedHeap[T]) push(x T) {
	h.items = append(h.items, x)
	up(h, len(h.items)-1)
}

func (h *timedHeap[T]) pop() T {
	x := h.items[0]
	last := len(h.items) - 1
	h.swap(0, last)
	h.items = h.items[:last]
	if last > 0 {
		down(h, 0)
	}
	return x
}

type purgeHeap struct{ timedHeap[purge] }

// cancel removes the purge of id; false if there is none. Retries of dead
// jobs are rare operator actions, so a scan is fine.
func (h *purgeHeap) cancel(id jobid.ID) bool {
	for i, p := range h.items {
		if p.id == id {
			last := len(h.items) - 1
			h.swap(i, last)
			h.items = h.items[:last]
			if i < last {
				fix(h, i)
			}
			return true
		}
	}
	return false
}

// refill is a time_based budget's next moment of paying a job it refuses.
type refill struct {
	at      int64 // unix ns
	account *account
	idx     int
}

type refillHeap struct{ items []*refill }

func (h *refillHeap) less(a, b int) bool { return h.items[a].at < h.items[b].at }
func (h *refillHeap) swap(a, b int) {
	h.items[a], h.items[b] = h.items[b], h.items[a]
	h.items[a].idx, h.items[b].idx = a, b
}
func (h *refillHeap) len() int { return len(h.items) }
func (h *refillHeap) push(d *refill) {
	d.idx = len(h.items)
	h.items = append(h.items, d)
	up(h, d.idx)
}
func (h *refillHeap) remove(d *refill) {
	i := d.idx
	if i < 0 || i >= len(h.items) || h.items[i] != d {
		return
	}
	last := len(h.items) - 1
	h.swap(i, last)
	h.items[last] = nil
	h.items = h.items[:last]
	d.idx = -1
	if i < last {
		fix(h, i)
	}
}

// indexHeap is what the sift functions need of a heap.
type indexHeap interface {
	less(a, b int) bool
	swap(a, b int)
	len() int
}

func up(h indexHeap, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func down(h indexHeap, i int) {
	n := h.len()
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h.swap(i, m)
		i = m
	}
}

func fix(h indexHeap, i int) {
	down(h, i)
	up(h, i)
}
