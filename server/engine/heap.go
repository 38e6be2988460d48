package engine

// before reports whether a precedes b in dispatch order: (priority, id).
func before(a, b *job) bool {
	if a.Priority != b.Priority {
		return a.Priority < b.Priority
	}
	return a.ID < b.ID
}

// Heap slots: a ready job sits in its queue's heap and in the global heap.
const (
	slotQueue = iota
	slotGlobal
)

// jobHeap is a min-heap of jobs in dispatch order that supports removal of
// any member; each job remembers its index per slot.
type jobHeap struct {
	slot  int
	items []*job
}

func (h *jobHeap) min() *job {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

func (h *jobHeap) push(j *job) {
	j.hidx[h.slot] = len(h.items)
	h.items = append(h.items, j)
	h.up(len(h.items) - 1)
}

func (h *jobHeap) remove(j *job) {
	i := j.hidx[h.slot]
	if i < 0 || i >= len(h.items) || h.items[i] != j {
		return
	}
	last := len(h.items) - 1
	h.swap(i, last)
	h.items[last] = nil
	h.items = h.items[:last]
	j.hidx[h.slot] = -1
	if i < last {
		h.down(i)
		h.up(i)
	}
}

func (h *jobHeap) swap(a, b int) {
	h.items[a], h.items[b] = h.items[b], h.items[a]
	h.items[a].hidx[h.slot] = a
	h.items[b].hidx[h.slot] = b
}

func (h *jobHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !before(h.items[i], h.items[p]) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *jobHeap) down(i int) {
	n := len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && before(h.items[r], h.items[l]) {
			m = r
		}
		if !before(h.items[m], h.items[i]) {
			return
		}
		h.swap(i, m)
		i = m
	}
}

// deadline kinds.
const (
	dlPromote = iota // a scheduled job becomes ready
	dlRefill         // a time_based budget can pay its line's head
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

func (h *deadlineHeap) min() *deadline {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

func (h *deadlineHeap) push(d *deadline) {
	d.idx = len(h.items)
	h.items = append(h.items, d)
	h.up(d.idx)
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
		h.down(i)
		h.up(i)
	}
}

func (h *deadlineHeap) swap(a, b int) {
	h.items[a], h.items[b] = h.items[b], h.items[a]
	h.items[a].idx = a
	h.items[b].idx = b
}

func (h *deadlineHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h.items[i].at >= h.items[p].at {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *deadlineHeap) down(i int) {
	n := len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.items[r].at < h.items[l].at {
			m = r
		}
		if h.items[m].at >= h.items[i].at {
			return
		}
		h.swap(i, m)
		i = m
	}
}
