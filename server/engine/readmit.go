package engine

import (
	"github.com/zizq/zizq/server/jobid"
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
	if j, ok := e.lookup(sj.ID); ok {
		return store.Job{}, nil, errorf(Unprocessable, "job %s is not dead: it is %s", sj.ID, e.view(sj.ID, j.idx).Status)
	}
	if sj.Status != store.Dead {
		return store.Job{}, nil, errorf(Unprocessable, "job %s is not dead: it is %s", sj.ID, sj.Status)
	}
	for _, b := range sj.Budgets {
		if e.accounts[b.Key] == nil && e.familyOf(b.Key) == nil {
			return store.Job{}, nil, errorf(Unprocessable, "cannot retry job %s: budget '%s' does not exist", sj.ID, b.Key)
		}
	}
	// A dead job's purge deadline is pending until its purge is journalled;
	// without one the row is gone (or about to be), so there is nothing to
	// revive.
	if id, ok := jobid.Parse(sj.ID); sj.PurgeAt != 0 && (!ok || !e.purges.cancel(id)) {
		return store.Job{}, nil, errorf(NotFound, "job not found")
	}
	ms := e.nowMs()
	sj.Status = store.Ready
	sj.ReadyAt = ms
	sj.PurgeAt = 0
	var cleared []store.Op
	if sj.StartBy != 0 && sj.StartBy <= ms {
		// A deadline it died of, or one that passed since: it runs again
		// without it.
		sj.StartBy = 0
		cleared = append(cleared, store.ClearStartBy(sj.ID))
	}
	j, err := e.newJob(&sj, false)
	if err != nil { // cannot happen: bindings were checked
		return store.Job{}, nil, err
	}
	e.idgen.Observe(sj.ID)
	w := e.journal.Append(e.readmitUnique(append([]store.Op{store.PatchJob(store.JobPatch{
		ID: sj.ID, Queue: sj.Queue, Priority: sj.Priority, Status: store.Ready, ReadyAt: ms,
		RetryLimit: sj.RetryLimit, Backoff: sj.Backoff, Retention: sj.Retention,
	}), store.Finish(sj.ID, store.Ready, sj.Attempts, sj.FailedAt, 0, 0)}, cleared...), j)...)
	out := sj // as readmitted, like Enqueue: it may be dispatched at once
	e.schedule(j)
	return out, w, nil
}
