package engine

import (
	"time"

	"github.com/zizq/zizq/server/jobid"
	"github.com/zizq/zizq/store"
)

// jobState is where a live job is in the engine.
type jobState uint8

const (
	stNew       jobState = iota // not yet placed (not counted)
	stScheduled                 // waits for its ready_at in the deadline heap
	stWaiting                   // in its group: ready, or parked in lines
	stInFlight                  // in one taker's in-flight set
	numStates
)

// job is the engine's record of one live job. The embedded store.Job is what
// is journalled and rendered; Status there is the wire status (a waiting
// job is Ready, parked or not).
type job struct {
	store.Job
	k     key
	q     *queue
	g     *group // while waiting
	state jobState
	binds []bind
	dl    *deadline
	taker *Taker
	since int64 // ms: when it last began to wait
}

// bind is one resolved budget binding of a job.
type bind struct {
	a    *account
	cost int64
}

// newJob makes the engine record for a stored job and binds it to its
// budgets, which must exist.
func (e *Engine) newJob(sj store.Job) (*job, error) {
	id, ok := jobid.Parse(sj.ID)
	if !ok {
		return nil, errorf(Unprocessable, "invalid job ID %q", sj.ID)
	}
	j := &job{Job: sj, k: key{prio: sj.Priority, id: id}, q: e.queue(sj.Queue)}
	for _, b := range sj.Budgets {
		a := e.accounts[b.Key]
		if a == nil {
			return nil, errorf(Unprocessable, "budget '%s' does not exist", b.Key)
		}
		j.binds = append(j.binds, bind{a: a, cost: b.Cost})
	}
	e.jobs[j.ID] = j
	for _, b := range j.binds {
		b.a.bind(b.cost, +1)
	}
	return j, nil
}

// admit places a new or re-placed job by its status: scheduled jobs wait
// for their time, others wait for dispatch at once.
func (e *Engine) admit(j *job) {
	if j.Status == store.Scheduled {
		e.schedule(j)
		return
	}
	e.join(j, e.nowMs())
}

// schedule makes a job wait for its ready_at; one already due waits for
// dispatch at once.
func (e *Engine) schedule(j *job) {
	at := j.ReadyAt * int64(time.Millisecond)
	if at <= e.vnow {
		e.setState(j, stNew)
		e.join(j, e.nowMs())
		return
	}
	e.setState(j, stScheduled)
	j.Status = store.Scheduled
	j.dl = &deadline{at: at, kind: dlPromote, job: j}
	e.deadlines.push(j.dl)
}

// setState moves a job between states, keeping every counter true.
func (e *Engine) setState(j *job, s jobState) {
	old := j.state
	if old == s {
		return
	}
	e.counts[old]--
	j.q.counts[old]--
	e.counts[s]++
	j.q.counts[s]++
	j.state = s
}

// deliver debits every budget and hands the job to the taker.
func (e *Engine) deliver(j *job, t *Taker) {
	for _, b := range j.binds {
		b.a.pool.Debit(b.cost, e.vnow)
		b.a.dispatched++
		b.a.inFlight++
		e.changed(b.a)
	}
	waited := int64(0)
	if len(j.binds) > 0 {
		waited = j.since
	}
	e.leave(j)
	e.setState(j, stInFlight)
	j.Status = store.InFlight
	j.DequeuedAt = e.nowMs()
	j.taker = t
	t.inFlight[j] = struct{}{}
	e.inFlight++
	e.journal.Append(store.SetStatus(j.ID, store.InFlight, j.DequeuedAt))
	t.out = append(t.out, j.Job)
	if e.cfg.OnDispatch != nil {
		e.cfg.OnDispatch(j.Job, time.Unix(0, e.vnow), waited)
	}
	e.setRoomy(t, t.hasRoom()) // to the back of the room order, or out of it
	t.wake()
}

// release ends a job's in-flight state: its while_in_flight tokens go back
// and its taker regains a slot. It runs exactly once per dispatch, whatever
// ended it.
func (e *Engine) release(j *job) {
	for _, b := range j.binds {
		b.a.pool.Release(b.cost)
		b.a.inFlight--
		e.changed(b.a)
	}
	t := j.taker
	delete(t.inFlight, j)
	j.taker = nil
	e.inFlight--
	e.gainRoom(t)
}

// detach takes a live job out of every structure, leaving it stNew.
func (e *Engine) detach(j *job) {
	switch j.state {
	case stScheduled:
		e.deadlines.remove(j.dl)
		j.dl = nil
	case stWaiting:
		e.leave(j)
	case stInFlight:
		e.release(j)
	}
	e.setState(j, stNew)
}

// forget removes a live job from the engine entirely.
func (e *Engine) forget(j *job) {
	e.detach(j)
	e.unbind(j)
	delete(e.jobs, j.ID)
}

func (e *Engine) unbind(j *job) {
	for _, b := range j.binds {
		b.a.bind(b.cost, -1)
	}
}

// snapshot returns the job as the wire sees it.
func (j *job) snapshot() store.Job { return j.Job }
