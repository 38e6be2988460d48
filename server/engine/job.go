package engine

import (
	"time"

	"github.com/zizq/zizq/store"
)

// jobState is where a live job is in the engine.
type jobState uint8

const (
	stNew       jobState = iota // not yet placed (not counted)
	stScheduled                 // waits for its ready_at in the deadline heap
	stReady                     // in its queue's ready set (maybe still reserving its lines)
	stParked                    // in the lines of the budgets that refuse it, nowhere else
	stInFlight                  // in one taker's in-flight set
	numStates
)

// job is the engine's record of one live job. The embedded store.Job is what
// is journalled and rendered; Status there is the wire status (a parked job
// is Ready).
type job struct {
	store.Job
	q        *queue
	state    jobState
	hidx     [2]int
	dl       *deadline
	binds    []bind
	parkedAt int64 // ms; when it last started waiting in a line
	taker    *Taker
}

// bind is one resolved budget binding of a job.
type bind struct {
	a      *account
	cost   int64
	inLine bool
}

// queue holds the ready jobs of one queue and the takers that serve it.
type queue struct {
	name   string
	ready  jobHeap
	roomy  map[*Taker]struct{}
	served int
	counts [numStates]int64
}

func (e *Engine) queue(name string) *queue {
	q := e.queues[name]
	if q == nil {
		q = &queue{name: name, ready: jobHeap{slot: slotQueue}, roomy: make(map[*Taker]struct{})}
		e.queues[name] = q
	}
	return q
}

// served reports whether some connected taker serves the queue.
func (e *Engine) served(q *queue) bool { return e.servedAll > 0 || q.served > 0 }

// newJob makes the engine record for a stored job and binds it to its
// budgets, which must exist.
func (e *Engine) newJob(sj store.Job) (*job, error) {
	j := &job{Job: sj, q: e.queue(sj.Queue), hidx: [2]int{-1, -1}}
	for _, b := range sj.Budgets {
		a := e.accounts[b.Key]
		if a == nil {
			return nil, errorf(Unprocessable, "budget '%s' does not exist", b.Key)
		}
		j.binds = append(j.binds, bind{a: a, cost: b.Cost})
	}
	e.jobs[j.ID] = j
	for _, b := range j.binds {
		b.a.bound[j] = struct{}{}
	}
	return j, nil
}

// admit places a new or re-placed job by its status: scheduled jobs wait
// for their time, others are offered at once.
func (e *Engine) admit(j *job) {
	if j.Status == store.Scheduled {
		e.schedule(j)
		return
	}
	j.Status = store.Ready
	e.offer(j)
}

func (e *Engine) schedule(j *job) {
	e.setState(j, stScheduled)
	j.Status = store.Scheduled
	j.dl = &deadline{at: j.ReadyAt * int64(time.Millisecond), kind: dlPromote, job: j}
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
	if old == stReady || s == stReady {
		e.moveClaims(j, old == stReady)
	}
	j.state = s
}

// offer handles a job that has just become ready: parked if a budget
// refuses it, else straight to a taker with room, else into its ready set.
func (e *Engine) offer(j *job) {
	now := e.now()
	if !e.payable(j, now) {
		e.park(j, now)
		return
	}
	if t := e.roomyTaker(j.q); t != nil {
		e.deliver(j, t, now)
		return
	}
	e.toReady(j)
}

// moveClaims adds (or, when leaving the ready set, removes) a job's claims.
// A released claim may let a parked job go, so its budgets are looked at.
func (e *Engine) moveClaims(j *job, leaving bool) {
	served := e.served(j.q)
	for _, b := range j.binds {
		c := b.cost
		if leaving {
			c = -c
			e.markAccount(b.a)
		}
		b.a.claimAll += c
		if served {
			b.a.claimServed += c
		}
	}
}

// toReady puts an affordable job in its ready set: it leaves its lines and
// claims its costs until a taker receives it.
func (e *Engine) toReady(j *job) {
	if j.state == stReady {
		return
	}
	e.unline(j)
	e.setState(j, stReady)
	j.Status = store.Ready
	j.q.ready.push(j)
	e.global.push(j)
}

func (e *Engine) removeReady(j *job) {
	j.q.ready.remove(j)
	e.global.remove(j)
}

// park leaves the job only in the lines of the budgets that refused it.
func (e *Engine) park(j *job, now time.Time) {
	e.removeReady(j)
	if j.state != stParked {
		j.parkedAt = nowMs(now)
	}
	e.setState(j, stParked)
	j.Status = store.Ready
}

// deliver debits every budget and hands the job to the taker.
func (e *Engine) deliver(j *job, t *Taker, now time.Time) {
	ns := now.UnixNano()
	for _, b := range j.binds {
		b.a.pool.Debit(b.cost, ns)
		b.a.dispatched++
		b.a.inFlight++
		if b.a.line.Len() > 0 {
			// An earlier job may debit a budget whose line head was last
			// refused elsewhere: the head now waits on these tokens, so
			// the budget's refill deadline must be looked at again.
			e.markAccount(b.a)
		}
	}
	e.unline(j)
	e.removeReady(j)
	e.setState(j, stInFlight)
	j.Status = store.InFlight
	j.DequeuedAt = nowMs(now)
	j.taker = t
	t.inFlight[j] = struct{}{}
	e.inFlight++
	e.journal.Append(store.SetStatus(j.ID, store.InFlight, j.DequeuedAt))
	t.out = append(t.out, j.Job)
	if e.cfg.OnDispatch != nil {
		e.cfg.OnDispatch(j.Job, now, j.parkedAt)
	}
	j.parkedAt = 0 // parked time is counted once per dispatch
	e.updateRoom(t)
	t.wake()
}

// release ends a job's in-flight state: its while_in_flight tokens go back
// and its taker regains a slot. It runs exactly once per dispatch, whatever
// ended it.
func (e *Engine) release(j *job) {
	wasFull := e.globalFull()
	for _, b := range j.binds {
		b.a.pool.Release(b.cost)
		b.a.inFlight--
		e.markAccount(b.a)
	}
	t := j.taker
	delete(t.inFlight, j)
	j.taker = nil
	e.inFlight--
	e.updateRoom(t)
	e.markTaker(t)
	if wasFull && !e.globalFull() {
		for other := range e.takers {
			e.markTaker(other)
		}
	}
}

// detach takes a live job out of every structure, leaving it stNew.
func (e *Engine) detach(j *job) {
	switch j.state {
	case stScheduled:
		e.deadlines.remove(j.dl)
		j.dl = nil
	case stReady:
		e.removeReady(j)
	case stInFlight:
		e.release(j)
	}
	e.unline(j)
	e.setState(j, stNew)
}

// forget removes a live job from the engine entirely.
func (e *Engine) forget(j *job) {
	e.detach(j)
	for _, b := range j.binds {
		delete(b.a.bound, j)
	}
	delete(e.jobs, j.ID)
}

// snapshot returns the job as the wire sees it.
func (j *job) snapshot() store.Job { return j.Job }
