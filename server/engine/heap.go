package engine

// groupHeap orders the groups of a queue that have a candidate by it.
type groupHeap struct{ items []*group }

func (h *groupHeap) less(a, b int) bool { return h.items[a].cand.k.less(h.items[b].cand.k) }
func (h *groupHeap) swap(a, b int) {
	h.items[a], h.items[b] = h.items[b], h.items[a]
	h.items[a].hidx, h.items[b].hidx = a, b
}
func (h *groupHeap) push(g *group) {
	g.hidx = len(h.items)
	h.items = append(h.items, g)
	up(h, g.hidx)
}
func (h *groupHeap) remove(g *group) {
	i := g.hidx
	last := len(h.items) - 1
	h.swap(i, last)
	h.items[last] = nil
	h.items = h.items[:last]
	g.hidx = -1
	if i < last {
		fix(h, i)
	}
}
func (h *groupHeap) fix(g *group) { fix(h, g.hidx) }
func (h *groupHeap) len() int     { return len(h.items) }

// queueHeap orders the queues that have an affordable job by their earliest.
type queueHeap struct{ items []*queue }

func (h *queueHeap) less(a, b int) bool { return h.items[a].best().k.less(h.items[b].best().k) }
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

// deadline kinds.
const (
	dlPromote = iota // a scheduled job becomes ready
	dlRefill         // a time_based budget can pay a job it refuses
	dlPurge          // a retained terminal job expires
)

// deadline is one entry of the engine's single timer queue.
type deadline struct {
	at      int64 // unix nanoseconds
	kind    int
	job     *job
	account *account
	purgeID string
	idx     int
}

type deadlineHeap struct{ items []*deadline }

func (h *deadlineHeap) less(a, b int) bool { return h.items[a].at < h.items[b].at }
func (h *deadlineHeap) swap(a, b int) {
	h.items[a], h.items[b] = h.items[b], h.items[a]
	h.items[a].idx, h.items[b].idx = a, b
}
func (h *deadlineHeap) len() int { return len(h.items) }
func (h *deadlineHeap) min() *deadline {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}
func (h *deadlineHeap) push(d *deadline) {
	d.idx = len(h.items)
	h.items = append(h.items, d)
	up(h, d.idx)
}
func (h *deadlineHeap) remove(d *deadline) {
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
