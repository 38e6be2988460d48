package engine

import (
	"math"
	"time"

	"github.com/zizq/zizq/server/budget"
	"github.com/zizq/zizq/server/jobid"
	"github.com/zizq/zizq/store"
)

// jobState is where a live job is in the engine.
type jobState uint8

const (
	stNew       jobState = iota // not yet placed (not counted)
	stScheduled                 // waits for its ready_at in the promotion heap
	stWaiting                   // in its group: ready, or parked in lines
	stInFlight                  // held by one taker
	numStates
)

// ref names a live job: its ID and its record.
type ref struct {
	id  jobid.ID
	idx int32
}

func (e *Engine) rec(idx int32) *jobRec { return e.slab.at(idx) }

func (e *Engine) keyOf(r ref) key { return key{prio: e.rec(r.idx).prio, tag: e.tagOf(r), id: r.id} }

// tagOf returns a job's tag: its ID's time, or its fair-share tag.
func (e *Engine) tagOf(r ref) int64 {
	tag := r.id.Millis()
	if e.rec(r.idx).flags&recLead != 0 {
		tag += int64(e.slab.lead(r.idx))
	}
	return tag
}

// leadOf is a fair-share tag less the ID's time, saturated to 32 bits: a
// tag more than 24 days from its ID's time orders as if it were 24 days.
func leadOf(id jobid.ID, tag int64) int32 {
	if tag == 0 {
		return 0
	}
	return int32(min(max(tag-id.Millis(), math.MinInt32), math.MaxInt32))
}

// lookup finds a live job by its wire ID.
func (e *Engine) lookup(id string) (ref, bool) {
	jid, ok := jobid.Parse(id)
	if !ok {
		return ref{}, false
	}
	idx, ok := e.ids.get(jid)
	return ref{id: jid, idx: idx}, ok
}

// newJob makes the engine record for a job and binds it to its budgets,
// which must exist (a sub-budget of a family is made here). The record
// starts stNew: admit places it. A fresh job bound to a family gets its
// fair-share tag here, in j.FairTag; any other keeps the one it has.
func (e *Engine) newJob(j *store.Job, fresh bool) (ref, error) {
	jid, ok := jobid.Parse(j.ID)
	if !ok {
		return ref{}, errorf(Unprocessable, "invalid job ID %q", j.ID)
	}
	binds, err := e.resolveBinds(e.bindBuf[:0], j.Budgets)
	if err != nil {
		return ref{}, err
	}
	if fresh && j.FairTag == 0 {
		for i, b := range binds {
			if b.implied {
				j.FairTag = e.fairTag(binds[i-1].a, b.a, b.cost)
			}
		}
	}
	idx := e.slab.alloc()
	r := e.rec(idx)
	*r = jobRec{
		attempts: j.Attempts, prio: j.Priority, aux: -1,
		q: e.queue(j.Queue).idx, binds: e.internBinds(e.types.intern(j.Type), binds),
	}
	r.setReadyAt(j.ReadyAt)
	if o := (overrides{retryLimit: j.RetryLimit, backoff: j.Backoff, retention: j.Retention}); !o.empty() {
		e.overrides[idx] = &o
		r.flags |= recOverrides
	}
	if lead := leadOf(jid, j.FairTag); lead != 0 {
		r.flags |= recLead
		e.slab.setLead(idx, lead)
	}
	e.ids.set(jid, idx)
	if j.StartBy != 0 {
		e.setStartBy(ref{id: jid, idx: idx}, j.StartBy)
	}
	if j.FailedAt != 0 {
		e.failedAt[idx] = j.FailedAt
	}
	e.setUnique(idx, j.UniqueKey, j.UniqueWhile)
	if j.Batch != nil {
		e.setBatch(idx, *j.Batch)
	}
	for _, b := range binds {
		b.a.bind(b.cost, +1)
	}
	if e.restoredFamilies != nil && j.FairTag != 0 {
		restoredTag(binds, j.FairTag, e.restoredFamilies)
	}
	clear(binds) // holds no deleted budget alive
	e.bindBuf = binds[:0]
	return ref{id: jid, idx: idx}, nil
}

// resolveBinds appends the accounts of bindings to binds: a sub-budget's
// binding is followed by its family's, implied.
func (e *Engine) resolveBinds(binds []bind, specs []store.Binding) ([]bind, error) {
	for _, b := range specs {
		a, fam := e.resolve(b.Key)
		if a == nil {
			return nil, errorf(Unprocessable, "budget '%s' does not exist", b.Key)
		}
		binds = append(binds, bind{a: a, cost: b.Cost})
		if fam != nil {
			binds = append(binds, bind{a: fam, cost: b.Cost, implied: true})
		}
	}
	return binds, nil
}

// schedule makes a job wait for its ready_at; one already due waits for
// dispatch at once.
func (e *Engine) schedule(j ref) {
	r := e.rec(j.idx)
	if r.flags&recHeld != 0 { // until its fold commits (batch.go)
		e.setState(j.idx, stNew)
		return
	}
	at := r.readyAt() * int64(time.Millisecond)
	if at <= e.vnow {
		e.setState(j.idx, stNew)
		e.join(j)
		return
	}
	e.setState(j.idx, stScheduled)
	e.promos.push(promo{at: at, id: j.id, idx: j.idx})
}

// setState moves a job between states, keeping every counter true.
func (e *Engine) setState(idx int32, s jobState) {
	r := e.rec(idx)
	old := r.state
	if old == s {
		return
	}
	q := e.queueList[r.q]
	if old != stNew {
		e.counts[old]--
		q.counts[old]--
	}
	if s != stNew {
		e.counts[s]++
		q.counts[s]++
	}
	r.state = s
	e.obs.moved(old, s)
}

// deliver debits every budget and hands the job, the member it of its
// group, to the taker. The member's key is the job's: a family job's tag
// is not looked up again.
func (e *Engine) deliver(it item, t *Taker) {
	j := it.jobRef()
	r := e.rec(j.idx)
	for _, b := range e.binds(r) {
		b.a.pool.Debit(b.cost, e.vnow)
		b.a.dispatched++
		b.a.inFlight++
		e.changed(b.a)
		if b.a.pool.Kind() == budget.Calendar {
			e.spentByDispatch(b.a, t)
		}
	}
	e.dispatchedTag(it.tag(), e.binds(r))
	waited := int64(0)
	if len(e.binds(r)) > 0 {
		waited = r.readyAt() // when it became ready (a requeue keeps it)
	}
	e.leaveAt(j, it.k())
	e.setState(j.idx, stInFlight)
	ms := e.nowMs()
	r.aux = t.slot
	t.inFlight[j.idx] = flight{id: j.id, dequeuedAt: ms}
	delete(e.requeuedAt, j.idx)
	e.obs.flights.add(timedEntry{at: ms, id: j.id, idx: j.idx})
	e.inFlight++
	id := j.id.String()
	e.journalDispatch(j, id, ms)
	frame := e.view(id, j.idx)
	t.out = append(t.out, frame)
	if e.cfg.OnDispatch != nil {
		e.cfg.OnDispatch(frame, time.Unix(0, e.vnow), waited)
	}
	e.setRoomy(t, t.hasRoom()) // to the back of the room order, or out of it
	t.wake()
}

// release ends a job's in-flight state: its while_in_flight tokens go back
// and its taker regains a slot. It runs exactly once per dispatch, whatever
// ended it.
func (e *Engine) release(j ref) {
	r := e.rec(j.idx)
	t := e.takerSlots[r.aux]
	flown := e.vnow - t.inFlight[j.idx].dequeuedAt*int64(time.Millisecond)
	for _, b := range e.binds(r) {
		b.a.pool.Release(b.cost)
		b.a.inFlight--
		b.a.observeFlight(flown)
		e.changed(b.a)
	}
	f := t.inFlight[j.idx]
	e.obs.flights.remove(timedEntry{at: f.dequeuedAt, id: f.id, idx: j.idx})
	delete(t.inFlight, j.idx)
	r.aux = -1
	e.inFlight--
	e.gainRoom(t)
}

// detach takes a live job out of every structure, leaving it stNew.
func (e *Engine) detach(j ref) {
	r := e.rec(j.idx)
	switch r.state {
	case stScheduled:
		e.promos.remove(r.aux)
	case stWaiting:
		e.leave(j)
	case stInFlight:
		e.release(j)
	}
	e.setState(j.idx, stNew)
}

// forget removes a live job from the engine entirely.
func (e *Engine) forget(j ref) {
	e.detach(j)
	e.unbind(j.idx)
	r := e.rec(j.idx)
	e.releaseBinds(r.binds)
	if r.flags&recOverrides != 0 {
		delete(e.overrides, j.idx)
	}
	delete(e.failedAt, j.idx)
	delete(e.uncounted, j.idx)
	delete(e.requeuedAt, j.idx)
	e.dropStartBy(j.idx)
	e.forgetUnique(j)
	e.dropBatch(j.idx)
	e.ids.delete(j.id)
	e.slab.release(j.idx)
}

func (e *Engine) unbind(idx int32) {
	for _, b := range e.binds(e.rec(idx)) {
		b.a.bind(b.cost, -1)
		if b.a.parent != nil && b.a.bound == 0 && !e.releaseSub(b.a) {
			e.deadlineDirty(b.a) // released once its pool is full
		}
	}
}

// override returns a job's own settings (nil when it has none).
func (e *Engine) override(idx int32) *overrides {
	if e.rec(idx).flags&recOverrides == 0 {
		return nil
	}
	return e.overrides[idx]
}

// setOverrides replaces a job's own settings.
func (e *Engine) setOverrides(idx int32, o overrides) {
	r := e.rec(idx)
	if o.empty() {
		delete(e.overrides, idx)
		r.flags &^= recOverrides
		return
	}
	e.overrides[idx] = &o
	r.flags |= recOverrides
}

// view returns a live job as the engine knows it: every field that can
// change while it lives. The store has the rest, which never change (the
// payload), and dequeued_at of a job no longer in flight.
func (e *Engine) view(id string, idx int32) store.Job {
	r := e.rec(idx)
	j := store.Job{
		ID: id, Type: e.types.list[e.typeOf(r)], Queue: e.queueList[r.q].name, Priority: r.prio,
		ReadyAt: r.readyAt(), Attempts: r.attempts, FailedAt: e.failedAt[idx], StartBy: e.startByOf(idx),
	}
	switch r.state {
	case stScheduled:
		j.Status = store.Scheduled
	case stInFlight:
		j.Status = store.InFlight
		j.DequeuedAt = e.takerSlots[r.aux].inFlight[idx].dequeuedAt
	default:
		j.Status = store.Ready
		j.DequeuedAt = e.requeuedAt[idx]
	}
	if o := e.override(idx); o != nil {
		j.RetryLimit, j.Backoff, j.Retention = o.retryLimit, o.backoff, o.retention
	}
	for _, b := range e.binds(r) {
		if !b.implied {
			j.Budgets = append(j.Budgets, store.Binding{Key: b.a.cfg.Key, Cost: b.cost})
		}
	}
	if u, ok := e.uniqueOf(idx); ok {
		j.UniqueKey, j.UniqueWhile = u.key, u.while
	}
	j.Batch = e.batchOf(idx)
	return j
}
