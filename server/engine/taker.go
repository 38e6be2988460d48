package engine

import (
	"sort"

	"github.com/zizq/zizq/store"
)

// Taker is one take connection: the queues it serves, its prefetch, the jobs
// it holds in flight and the frames waiting to be written to it.
type Taker struct {
	e        *Engine
	queues   []*queue // nil: every queue
	prefetch int      // 0: unlimited
	inFlight map[*job]struct{}
	out      []store.Job
	notify   chan struct{}
	roomy    bool
	dirty    bool
	closed   bool
}

// NewTaker connects a taker serving the named queues (none: all queues)
// with at most prefetch unacknowledged jobs (0: unlimited).
func (e *Engine) NewTaker(queues []string, prefetch int) *Taker {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := &Taker{e: e, prefetch: prefetch, inFlight: make(map[*job]struct{}), notify: make(chan struct{}, 1)}
	for _, name := range dedupe(queues) {
		t.queues = append(t.queues, e.queue(name))
	}
	e.takers[t] = struct{}{}
	e.changeServed(t.queues, func() { t.serve(+1) })
	e.updateRoom(t)
	e.markTaker(t)
	e.settle()
	return t
}

// serve counts the taker in (+1) or out (-1) of its queues' served counts.
func (t *Taker) serve(delta int) {
	if t.queues == nil {
		t.e.servedAll += delta
	}
	for _, q := range t.queues {
		q.served += delta
	}
}

func dedupe(names []string) []string {
	seen := make(map[string]bool, len(names))
	var out []string
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// Notify is signalled when frames are waiting for Drain.
func (t *Taker) Notify() <-chan struct{} { return t.notify }

func (t *Taker) wake() {
	select {
	case t.notify <- struct{}{}:
	default:
	}
}

// Drain appends the waiting frames to buf and returns it. Draining frees
// room, so the taker may receive more jobs at once.
func (t *Taker) Drain(buf []store.Job) []store.Job {
	e := t.e
	e.mu.Lock()
	defer e.mu.Unlock()
	buf = append(buf, t.out...)
	clear(t.out)
	t.out = t.out[:0]
	if !t.closed {
		e.updateRoom(t)
		e.markTaker(t)
		e.settle()
	}
	return buf
}

// InFlight reports how many jobs the taker holds.
func (t *Taker) InFlight() int {
	t.e.mu.Lock()
	defer t.e.mu.Unlock()
	return len(t.inFlight)
}

// Close disconnects the taker: every job it still holds goes back to ready
// (attempts, ready_at and dequeued_at unchanged).
func (t *Taker) Close() {
	e := t.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if t.closed {
		return
	}
	t.closed = true
	t.setRoomy(false)
	delete(e.takers, t)
	e.changeServed(t.queues, func() { t.serve(-1) })
	held := make([]*job, 0, len(t.inFlight))
	for j := range t.inFlight {
		held = append(held, j)
	}
	sort.Slice(held, func(a, b int) bool { return before(held[a], held[b]) })
	for _, j := range held {
		e.release(j)
		e.setState(j, stNew)
		j.Status = store.Ready
		e.journal.Append(store.SetStatus(j.ID, store.Ready, 0))
		e.offer(j)
	}
	t.out = nil
	e.settle()
}

func (t *Taker) hasRoom() bool {
	if t.closed || len(t.out) >= t.e.cfg.MaxPendingFrames {
		return false
	}
	return t.prefetch == 0 || len(t.inFlight) < t.prefetch
}

// updateRoom keeps the taker in the roomy sets of its queues exactly while
// it has room of its own (the global limit is checked separately).
func (e *Engine) updateRoom(t *Taker) { t.setRoomy(t.hasRoom()) }

func (t *Taker) setRoomy(roomy bool) {
	if t.roomy == roomy {
		return
	}
	t.roomy = roomy
	if t.queues == nil {
		if roomy {
			t.e.roomyAll[t] = struct{}{}
		} else {
			delete(t.e.roomyAll, t)
		}
		return
	}
	for _, q := range t.queues {
		if roomy {
			q.roomy[t] = struct{}{}
		} else {
			delete(q.roomy, t)
		}
	}
}

func (e *Engine) globalFull() bool {
	return e.cfg.GlobalInFlightLimit > 0 && e.inFlight >= e.cfg.GlobalInFlightLimit
}

// roomyTaker returns a connected taker of the queue with room, or nil.
func (e *Engine) roomyTaker(q *queue) *Taker {
	if e.globalFull() {
		return nil
	}
	for t := range q.roomy {
		return t
	}
	for t := range e.roomyAll {
		return t
	}
	return nil
}

// bestReady returns the first ready job, in (priority, id) order, among the
// taker's queues.
func (e *Engine) bestReady(t *Taker) *job {
	if t.queues == nil {
		return e.global.min()
	}
	var best *job
	for _, q := range t.queues {
		if j := q.ready.min(); j != nil && (best == nil || before(j, best)) {
			best = j
		}
	}
	return best
}

// pull fills a taker with room from its queues' ready sets. A candidate a
// budget refuses parks and the next one is tried: no head-of-line blocking.
func (e *Engine) pull(t *Taker) {
	now := e.now()
	for t.hasRoom() && !e.globalFull() {
		j := e.bestReady(t)
		if j == nil {
			return
		}
		if !e.payable(j, now) {
			e.park(j, now)
			continue
		}
		e.deliver(j, t, now)
	}
}
