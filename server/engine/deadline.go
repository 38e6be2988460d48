package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/zizq/zizq/server/jobid"
	"github.com/zizq/zizq/store"
)

// Deadlines for waiting (issue 26 §3, docs/API.md §Deadlines). A job with a
// start_by that has not been dispatched by then (parked on a budget,
// waiting for a worker, scheduled, or between its enqueue and its commit)
// dies at that instant, handled as of its own time like the engine's other
// deadlines, with an error record that says what it was waiting for.
//
// The deadline lives beside the record, as the rarely set fields do: a
// flag on the record and the time in a map, so a job without one pays
// nothing. The heap of deadlines is lazy: a job that is dispatched,
// acknowledged or deleted leaves its entry behind, and the entry is
// skipped when it comes (or dropped when the heap is compacted); dispatch
// never touches the heap. An entry is the job's while the job is live with
// the same record and the same start_by. A job in flight at its start_by
// started in time: its entry is dropped, and its start_by is cleared when
// it comes back to the queue (keptStartBy), so that nothing holds it to a
// deadline that has passed.

// expiry is a job's start_by (unix ns) in the deadline heap.
type expiry struct {
	at  int64
	id  jobid.ID
	idx int32
}

// deadlineTable holds the start_by of the live jobs that have one (by
// record; the record's recStartBy flag says so) and the heap of their
// deadlines.
type deadlineTable struct {
	startBy map[int32]startBy
	heap    expiryHeap
}

// startBy is a live job's start_by (ms) and its ID, which tells a heap
// entry of its record from one of an earlier job's without a lookup.
type startBy struct {
	ms int64
	id jobid.ID
}

func (x expiry) moment() int64 { return x.at }

type expiryHeap = timedHeap[expiry]

// compactSlack is how many entries beyond twice the live deadlines the heap
// may hold before it is compacted: compaction costs the heap's length, and
// this many pushes at least pay for it.
const compactSlack = 1024

// next returns the earliest entry's time (ns); a stale entry counts too:
// it only wakes the engine for nothing.
func (t *deadlineTable) next() (int64, bool) {
	if len(t.heap.items) == 0 {
		return 0, false
	}
	return t.heap.items[0].at, true
}

// setStartBy gives a live job its deadline (ms).
func (e *Engine) setStartBy(j ref, ms int64) {
	t := &e.deadlines
	if t.startBy == nil {
		t.startBy = map[int32]startBy{}
	}
	t.startBy[j.idx] = startBy{ms: ms, id: j.id}
	e.rec(j.idx).flags |= recStartBy
	if len(t.heap.items) >= 2*len(t.startBy)+compactSlack {
		e.compactExpiries()
	}
	t.heap.push(expiry{at: ms * int64(time.Millisecond), id: j.id, idx: j.idx})
}

// startByOf returns a live job's start_by (ms), 0 when it has none.
func (e *Engine) startByOf(idx int32) int64 {
	if e.rec(idx).flags&recStartBy == 0 {
		return 0
	}
	return e.deadlines.startBy[idx].ms
}

// dropStartBy removes a job's deadline; its heap entry goes stale.
func (e *Engine) dropStartBy(idx int32) {
	r := e.rec(idx)
	if r.flags&recStartBy == 0 {
		return
	}
	delete(e.deadlines.startBy, idx)
	r.flags &^= recStartBy
}

// keptStartBy is called when a job that was dispatched comes back to the
// queue (a failure it retries after, a disconnect, a restart): it keeps its
// deadline for the next attempt only while the deadline is still to come;
// one that has passed is cleared, durably (the op appended to ops).
func (e *Engine) keptStartBy(ops []store.Op, j ref) []store.Op {
	ms := e.startByOf(j.idx)
	if ms == 0 || ms > e.nowMs() {
		return ops
	}
	e.dropStartBy(j.idx)
	return append(ops, store.ClearStartBy(j.id.String()))
}

// liveExpiry reports whether a heap entry is still its job's deadline: the
// job is live in the same record, with the same start_by.
func (e *Engine) liveExpiry(x expiry) bool {
	if e.rec(x.idx).flags&recStartBy == 0 {
		return false
	}
	s := e.deadlines.startBy[x.idx]
	return s.id == x.id && s.ms*int64(time.Millisecond) == x.at
}

// compactExpiries drops the stale entries, so that the heap holds no more
// than about the live deadlines, however many jobs with one finish before
// it.
func (e *Engine) compactExpiries() {
	h := &e.deadlines.heap
	kept := h.items[:0]
	for _, x := range h.items {
		if e.liveExpiry(x) {
			kept = append(kept, x)
		}
	}
	clear(h.items[len(kept):])
	h.items = kept
	for i := len(kept)/2 - 1; i >= 0; i-- {
		down(h, i)
	}
}

// expireDue makes dead every job whose start_by has come by vnow and that
// is not in flight, earliest first.
func (e *Engine) expireDue() {
	h := &e.deadlines.heap
	for len(h.items) > 0 && h.items[0].at <= e.vnow {
		x := h.pop()
		if !e.liveExpiry(x) || e.rec(x.idx).state == stInFlight {
			continue // gone, or it started in time
		}
		e.expire(ref{id: x.id, idx: x.idx})
	}
}

// expire makes a job that was not dispatched by its start_by dead, now (as
// of its start_by when its deadline is handled, later at a restore): an
// error record of the attempt that never started says what it waited for,
// each budget that refused it counts it, and it dies as a failure that may
// not retry does (its dead retention, its unique key).
func (e *Engine) expire(j ref) {
	r := e.rec(j.idx)
	id := j.id.String()
	reason, refusing := e.waitReason(j)
	for _, a := range refusing {
		a.expired++
	}
	if len(refusing) > 0 {
		e.obs.budgets++
	}
	ms := e.nowMs()
	rec := store.ErrorRecord{
		JobID: id, Attempt: r.attempts + 1, FailedAt: ms,
		Message: fmt.Sprintf("not started by %s: %s", formatMs(e.startByOf(j.idx)), reason),
	}
	e.obs.finish(j.id, true)
	ops, _ := e.die(j, id, ms)
	e.journal.Append(append(ops, store.AddError(rec))...)
	if e.cfg.OnExpire != nil {
		at := time.Unix(0, e.vnow)
		e.cfg.OnExpire(id, at, e.clock.Now().Sub(at))
	}
}

// waitReason says what a job that is not in flight waits for, as GET
// /jobs/{id}/why would, and returns the budgets that refuse it (as why
// lists them): none when it waits for its schedule or a worker.
func (e *Engine) waitReason(j ref) (string, []*account) {
	r := e.rec(j.idx)
	q := e.queueList[r.q]
	if r.state == stScheduled {
		return "scheduled for " + formatMs(r.readyAt()), nil
	}
	var refusing []*account
	if r.state == stWaiting && e.served(q) {
		wj := e.waitingJob(j)
		for _, b := range e.binds(r) {
			if e.inLine(b.a, wj) && !e.payBound(b.a, b.cost, wj.g).admits(wj.k) {
				refusing = append(refusing, b.a)
			}
		}
	}
	switch len(refusing) {
	case 0:
		return "waiting for a worker of queue " + q.name, nil
	case 1:
		return "waiting for budget " + refusing[0].cfg.Key, refusing
	}
	keys := make([]string, len(refusing))
	for i, a := range refusing {
		keys[i] = a.cfg.Key
	}
	return "waiting for budgets " + strings.Join(keys, ", "), refusing
}

// checkStartBy materialises the deadlines of an enqueue's requests as of
// now (ms): start_within_ms counts from now, and a deadline that is not
// in the future is refused, since the job would die at once.
func checkStartBy(specs []NewJob, now int64) ([]int64, error) {
	var out []int64
	for i, s := range specs {
		at := s.StartBy
		if s.StartWithinMs > 0 {
			at = addMs(now, uint64(s.StartWithinMs))
		}
		if at == 0 {
			continue
		}
		if at <= now {
			err := errorf(Unprocessable, "start_by must be in the future: the job would die at once")
			err.Item = i
			return nil, err
		}
		if out == nil {
			out = make([]int64, len(specs))
		}
		out[i] = at
	}
	return out, nil
}
