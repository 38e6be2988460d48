package engine

import (
	"github.com/zizq/zizq/store"
)

// Readmit runs a dead job again (POST /jobs/{id}/retry, our extension): the
// stored dead job sj becomes ready now, keeping its attempts, error history,
// overrides and budget bindings; its purge is cancelled. It fails with
// Unprocessable when the job is live (it is not dead) or a budget it is
// bound to no longer exists, and with NotFound when the job's purge has
// already been journalled (it is gone).
func (e *Engine) Readmit(sj store.Job) (store.Job, Waiter, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.enterOp()
	defer e.finishOp()
	if j := e.jobs[sj.ID]; j != nil {
		return store.Job{}, nil, errorf(Unprocessable, "job %s is not dead: it is %s", sj.ID, j.Status)
	}
	if sj.Status != store.Dead {
		return store.Job{}, nil, errorf(Unprocessable, "job %s is not dead: it is %s", sj.ID, sj.Status)
	}
	for _, b := range sj.Budgets {
		if e.accounts[b.Key] == nil {
			return store.Job{}, nil, errorf(Unprocessable, "cannot retry job %s: budget '%s' does not exist", sj.ID, b.Key)
		}
	}
	// A dead job's purge deadline is pending until its purge is journalled;
	// without one the row is gone (or about to be), so there is nothing to
	// revive.
	if sj.PurgeAt != 0 && !e.cancelPurge(sj.ID) {
		return store.Job{}, nil, errorf(NotFound, "job not found")
	}
	ms := e.nowMs()
	sj.Status = store.Ready
	sj.ReadyAt = ms
	sj.PurgeAt = 0
	j, err := e.newJob(sj)
	if err != nil { // cannot happen: bindings were checked
		return store.Job{}, nil, err
	}
	e.ids.Observe(sj.ID)
	w := e.journal.Append(store.PutJob(j.Job))
	out := j.snapshot() // as readmitted, like Enqueue: it may be dispatched at once
	e.admit(j)
	return out, w, nil
}

// cancelPurge removes the pending purge of a retained job; false if there
// is none. Retries of dead jobs are rare operator actions, so a scan of the
// deadlines is fine.
func (e *Engine) cancelPurge(id string) bool {
	for _, d := range e.deadlines.items {
		if d.kind == dlPurge && d.purgeID == id {
			e.deadlines.remove(d)
			return true
		}
	}
	return false
}
