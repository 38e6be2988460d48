package engine

import (
	"fmt"
	"time"

	"github.com/zizq/zizq/server/jobid"
	"github.com/zizq/zizq/store"
)

// Restorer loads the store's state into a new engine, piece by piece, as
// the store reads it: budgets first, then live jobs (an in-flight one counts
// as ready), then unique keys, then batches, then purge deadlines. It
// journals nothing but, at Finish, the unique keys that jobs left in flight
// take again (see unique.go), the start_by that such jobs no longer keep
// and the deaths of waiting jobs whose start_by has passed (deadline.go).
// Jobs given in (priority, id) order load fastest.
//
// The engine is locked from Restore until Serve or Finish. After Serve it
// serves while the rest loads: each later call locks it in turn, and
// dispatch stays within the horizon, the part of the one order that no job
// still to load can precede (see Serve).
type Restorer struct {
	e        *Engine
	jobs     int
	inFlight []ref // jobs the last run left in flight
	serving  bool
	// last is the greatest key loaded so far, the horizon's end once the
	// next advance comes; sinceAdvance counts the jobs loaded since the
	// horizon last moved.
	last         key
	loadedAny    bool
	sinceAdvance int
	step         int // horizonStep; tests move the horizon more often
}

// horizonStep is how many jobs a serving restore loads between two moves
// of the horizon: each move looks at every group and budget again, and at
// ten million jobs a move per batch of the store's reader would cost more
// than the loading itself.
const horizonStep = 16 << 10

// Restore begins loading the store's state; call it once, before takers
// connect.
func (e *Engine) Restore() *Restorer {
	e.mu.Lock()
	e.enterOp()
	e.restoredFamilies = map[*account]bool{}
	return &Restorer{e: e, step: horizonStep}
}

// Budget adds a budget. A pause that ended while the server was down is
// over; one that has not is timed. Budgets come before Serve.
func (r *Restorer) Budget(b store.Budget) {
	a := r.e.addAccount(r.e.pastPauseCleared(b))
	r.e.deadlineDirty(a)
	r.e.restoreSubPauses(a)
}

// MaxID makes every later job ID sort after id, the largest the store ever
// held; it must be called, live jobs or not, before Serve.
func (r *Restorer) MaxID(id string) { r.e.idgen.Observe(id) }

// Serve unlocks the engine before the jobs load, so that it serves the jobs
// loaded so far while the rest load. Call it after the budgets and MaxID,
// only when the store's live jobs are plain (store.LoadStart): no unique
// key or batch of a live job comes after them. It reports whether the
// engine serves; it does not when a family exists, since a family job's
// place in the one order is its fair-share tag, not where the store reads
// it.
//
// Why the order holds: jobs come in (priority, id) order, and outside
// families a job's key is (priority, its ID's time, id), so every job still
// to load sorts after the last one loaded. The horizon admits the keys up
// to that one: no job beyond it is affordable, and a job enqueued
// meanwhile (its ID after every stored one) waits beyond it unless its
// priority puts it before. So a taker never receives a job while a better
// one, loaded or not, could be given instead. A budget's head may be a job
// beyond the horizon; it reserves only against the jobs after it, which
// are beyond it too, and a job loaded later before it is paid before it,
// as a better job enqueued after a head is.
func (r *Restorer) Serve() bool {
	e := r.e
	for _, a := range e.accounts {
		if a.fam != nil {
			return false
		}
	}
	r.serving = true
	e.horizon = admitNone
	e.finishOp()
	e.mu.Unlock()
	return true
}

// Job adds a live job; its budgets must have been added.
func (r *Restorer) Job(lj store.LiveJob) error {
	return r.Jobs([]store.LiveJob{lj})
}

// Jobs adds live jobs, in (priority, id) order when serving.
func (r *Restorer) Jobs(batch []store.LiveJob) error {
	if len(batch) == 0 {
		return nil
	}
	if !r.serving {
		return r.add(batch)
	}
	e := r.e
	e.mu.Lock()
	defer e.mu.Unlock()
	e.enterOp()
	err := r.add(batch)
	e.fireDue(e.vnow) // a start_by that passed while the server was down: before any dispatch
	if r.sinceAdvance >= r.step || r.jobs == len(batch) {
		r.advance(bound{kind: boundAt, k: r.last, incl: true})
	}
	e.finishOp()
	return err
}

func (r *Restorer) add(batch []store.LiveJob) error {
	e := r.e
	for i := range batch {
		lj := &batch[i]
		sj := store.Job{
			ID: lj.ID, Queue: lj.Queue, Type: lj.Type, Priority: lj.Priority, Status: lj.Status,
			ReadyAt: lj.ReadyAt, Attempts: lj.Attempts, RetryLimit: lj.RetryLimit, Backoff: lj.Backoff,
			Retention: lj.Retention, Budgets: lj.Budgets, FairTag: lj.FairTag, StartBy: lj.StartBy,
		}
		if lj.Status == store.InFlight && lj.StartBy != 0 && lj.StartBy <= e.nowMs() {
			// It started in time and comes back as after a disconnect: a
			// deadline that has passed no longer holds it. A waiting job's
			// dies at the first deadlines handled (Finish, or the end of
			// this batch when serving).
			sj.StartBy = 0
			e.journal.Append(store.ClearStartBy(lj.ID))
		}
		j, err := e.newJob(&sj, false)
		if err != nil {
			return fmt.Errorf("restore job %s: %w", lj.ID, err)
		}
		// The IDs to come sort after MaxID's, which no live job's passes.
		e.schedule(j)
		r.jobs++
		r.sinceAdvance++
		if k := e.keyOf(j); !r.loadedAny || r.last.less(k) {
			r.last, r.loadedAny = k, true
		}
		if lj.Status == store.InFlight && !r.serving {
			r.inFlight = append(r.inFlight, j)
		}
	}
	return nil
}

// advance moves the horizon to b: the settle that follows looks at every
// served group's candidate again.
func (r *Restorer) advance(b bound) {
	e := r.e
	e.horizon = b
	r.sinceAdvance = 0
	for _, q := range e.queueList {
		if e.served(q) {
			for _, g := range q.groups {
				e.markGroup(g)
			}
		}
	}
}

// Unique adds a job's unique key: a live job's (loaded before), holding it
// or not, or a finished job's that holds it.
func (r *Restorer) Unique(u store.UniqueJob) {
	defer r.lock()()
	r.e.restoreUnique(u)
}

// Batch restores the batch of a live batched job (batch.go).
func (r *Restorer) Batch(b store.LiveBatch) {
	defer r.lock()()
	r.e.restoreBatch(b)
}

// Purge adds the purge deadline (ms) of a retained terminal job.
func (r *Restorer) Purge(id string, at int64) {
	if jid, ok := jobid.Parse(id); ok {
		defer r.lock()()
		r.e.purges.push(purge{at: at * int64(time.Millisecond), id: jid})
	}
}

// lock locks the engine when it serves and returns its unlock.
func (r *Restorer) lock() func() {
	if !r.serving {
		return func() {}
	}
	r.e.mu.Lock()
	return r.e.mu.Unlock
}

// Finish ends the load and unlocks the engine; it returns the jobs loaded.
// A serving restore returns no jobs left in flight to their unique keys:
// it serves only when no live job has one.
func (r *Restorer) Finish() int {
	e := r.e
	if r.serving {
		e.mu.Lock()
		e.enterOp()
		r.advance(admitAll)
	}
	e.restoredFamilies = nil
	e.fireDue(e.vnow) // purges already due go first: their keys are free
	e.recovered(r.inFlight)
	e.finishOp()
	e.mu.Unlock()
	return r.jobs
}
