package engine

import (
	"container/list"
	"sort"

	"github.com/zizq/zizq/server/jobid"
	"github.com/zizq/zizq/store"
)

// Taker is one take connection: the queues it serves, its prefetch, the jobs
// it holds in flight and the frames waiting to be written to it.
type Taker struct {
	e        *Engine
	conn     uint64   // connection order
	slot     int32    // index in Engine.takerSlots
	queues   []*queue // nil: every queue
	prefetch int      // 0: unlimited
	inFlight map[int32]flight
	out      []store.Job
	notify   chan struct{}
	// Room order: a taker with room sits in the room lists (one per queue
	// it serves, or the list of takers of every queue) at roomSeq; the
	// earliest gets the next job it can take. A taker that receives a job
	// and still has room goes to the back, so takers share jobs in turn.
	roomSeq uint64
	elems   []*list.Element
	roomy   bool
	gained  bool // gained room during the current operation
	closed  bool
	// spent is the journal's answer to the last spend of a calendar
	// budget by a job dispatched to it (calendar.go), until drained;
	// spendWait marks it for the operation's flush.
	spent     Waiter
	spendWait bool
}

// flight is one job a taker holds: its ID and when it was dispatched (ms).
type flight struct {
	id         jobid.ID
	dequeuedAt int64
}

// takerList is a room list: takers with room, earliest roomSeq first.
type takerList struct{ l list.List }

func (tl *takerList) front() *Taker {
	if el := tl.l.Front(); el != nil {
		return el.Value.(*Taker)
	}
	return nil
}

// NewTaker connects a taker serving the named queues (none: all queues)
// with at most prefetch unacknowledged jobs (0: unlimited).
func (e *Engine) NewTaker(queues []string, prefetch int) *Taker {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.enterOp()
	e.conns++
	t := &Taker{e: e, conn: e.conns, prefetch: prefetch, inFlight: map[int32]flight{}, notify: make(chan struct{}, 1)}
	e.seat(t)
	for _, name := range dedupe(queues) {
		t.queues = append(t.queues, e.queue(name))
	}
	e.takers[t] = struct{}{}
	e.serve(t, +1)
	e.gainRoom(t)
	e.finishOp()
	return t
}

// serve counts the taker in (+1) or out (-1) of its queues; a queue that
// gains its first or loses its last taker changes what is in the lines.
func (e *Engine) serve(t *Taker, delta int) {
	if t.queues == nil {
		was := e.servedAll > 0
		e.servedAll += delta
		if now := e.servedAll > 0; now != was {
			for _, q := range e.queues {
				if q.served == 0 {
					e.serveChanged(q, now)
				}
			}
		}
		return
	}
	for _, q := range t.queues {
		was := e.served(q)
		q.served += delta
		if now := e.served(q); now != was {
			e.serveChanged(q, now)
		}
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
// room, so the taker may receive more jobs at once. It does not wait for
// calendar spends: a caller that hands the jobs out uses DrainWait.
func (t *Taker) Drain(buf []store.Job) []store.Job {
	buf, _ = t.DrainWait(buf)
	return buf
}

// DrainWait is Drain, and also returns what to wait for before handing
// the frames out: the spend of a calendar budget that one of them paid
// (nil when none did), which must be durable first.
func (t *Taker) DrainWait(buf []store.Job) ([]store.Job, Waiter) {
	e := t.e
	e.mu.Lock()
	defer e.mu.Unlock()
	e.enterOp()
	buf = append(buf, t.out...)
	clear(t.out)
	t.out = t.out[:0]
	w := t.spent
	t.spent = nil
	e.gainRoom(t)
	e.finishOp()
	return buf, w
}

// InFlight reports how many jobs the taker holds.
func (t *Taker) InFlight() int {
	t.e.mu.Lock()
	defer t.e.mu.Unlock()
	return len(t.inFlight)
}

// Close disconnects the taker: every job it still holds goes back to
// waiting (attempts, ready_at and dequeued_at unchanged).
func (t *Taker) Close() {
	e := t.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if t.closed {
		return
	}
	e.enterOp()
	t.closed = true
	e.setRoomy(t, false)
	delete(e.takers, t)
	e.serve(t, -1)
	held := make([]ref, 0, len(t.inFlight))
	for idx, f := range t.inFlight {
		held = append(held, ref{id: f.id, idx: idx})
	}
	sort.Slice(held, func(a, b int) bool { return held[a].id.Less(held[b].id) })
	for _, j := range held {
		// The store's dequeued_at may lag (dispatch marks are written
		// lazily, and this requeue is not waited for): the engine says it
		// until the job is dispatched again.
		e.requeuedAt[j.idx] = t.inFlight[j.idx].dequeuedAt
		e.release(j)
		e.setState(j.idx, stNew)
		// docs/API.md §Unique jobs: unlike Zizq, a requeue after a disconnect
		// takes the key again, as a retry does.
		ops := e.requeued([]store.Op{store.SetStatus(j.id.String(), store.Ready, 0)}, j, false)
		e.journal.Append(e.keptStartBy(ops, j)...)
		e.join(j)
	}
	t.out = nil
	e.unseat(t)
	e.finishOp()
}

func (t *Taker) hasRoom() bool {
	if t.closed || len(t.out) >= t.e.cfg.MaxPendingFrames {
		return false
	}
	return t.prefetch == 0 || len(t.inFlight) < t.prefetch
}

// gainRoom notes that a taker may have room now; takers that gain room in
// one operation join the room lists at its end, in connection order.
func (e *Engine) gainRoom(t *Taker) {
	if !t.roomy && !t.gained && t.hasRoom() {
		t.gained = true
		e.gainedRoom = append(e.gainedRoom, t)
	}
}

// seatGained puts the takers that gained room into the room lists.
func (e *Engine) seatGained() {
	if len(e.gainedRoom) == 0 {
		return
	}
	sort.Slice(e.gainedRoom, func(a, b int) bool { return e.gainedRoom[a].conn < e.gainedRoom[b].conn })
	for _, t := range e.gainedRoom {
		t.gained = false
		if !t.roomy && t.hasRoom() {
			e.setRoomy(t, true)
		}
	}
	e.gainedRoom = e.gainedRoom[:0]
}

// setRoomy puts a taker at the back of its room lists, or takes it out.
func (e *Engine) setRoomy(t *Taker, roomy bool) {
	if t.roomy {
		for i, el := range t.elems {
			e.roomList(t, i).l.Remove(el)
		}
		t.elems = t.elems[:0]
		t.roomy = false
	}
	if !roomy {
		return
	}
	t.roomy = true
	e.roomSeq++
	t.roomSeq = e.roomSeq
	if t.queues == nil {
		t.elems = append(t.elems, e.roomyAll.l.PushBack(t))
		return
	}
	for i := range t.queues {
		t.elems = append(t.elems, e.roomList(t, i).l.PushBack(t))
	}
}

func (e *Engine) roomList(t *Taker, i int) *takerList {
	if t.queues == nil {
		return &e.roomyAll
	}
	return &t.queues[i].roomy
}

func (e *Engine) globalFull() bool {
	return e.cfg.GlobalInFlightLimit > 0 && e.inFlight >= e.cfg.GlobalInFlightLimit
}

// seat gives a taker a slot, which in-flight records name.
func (e *Engine) seat(t *Taker) {
	if n := len(e.freeSlots); n > 0 {
		t.slot = e.freeSlots[n-1]
		e.freeSlots = e.freeSlots[:n-1]
		e.takerSlots[t.slot] = t
		return
	}
	t.slot = int32(len(e.takerSlots))
	e.takerSlots = append(e.takerSlots, t)
}

func (e *Engine) unseat(t *Taker) {
	e.takerSlots[t.slot] = nil
	e.freeSlots = append(e.freeSlots, t.slot)
}

// bestFor returns the earliest affordable job among the taker's queues.
func (e *Engine) bestFor(t *Taker) item {
	if t.queues == nil {
		if q := e.hot.min(); q != nil {
			return q.best()
		}
		return none
	}
	best := none
	for _, q := range t.queues {
		if j := q.best(); j.ok() && (!best.ok() || j.less(best)) {
			best = j
		}
	}
	return best
}

// dispatchOne makes one decision of the dispatch rule: the taker that has
// waited longest with room, among those with an affordable job, receives
// the earliest affordable job of its queues. It reports whether it did.
func (e *Engine) dispatchOne() bool {
	if e.globalFull() || len(e.hot.items) == 0 {
		return false
	}
	winner := e.roomyAll.front()
	for _, q := range e.hot.items {
		e.work++
		if t := q.roomy.front(); t != nil && (winner == nil || t.roomSeq < winner.roomSeq) {
			winner = t
		}
	}
	if winner == nil {
		return false
	}
	best := e.bestFor(winner)
	e.deliver(best, winner)
	return true
}
