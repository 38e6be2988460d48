package engine

import (
	"errors"

	"github.com/zizq/zizq/store"
)

// Batched jobs. A batched job's batch (its key and jq programs) sits in a
// side table, interned, since few jobs have one; the pending job of each
// key, the one later enqueues with the key fold into, in another. The
// engine never evaluates a program: the core decides each fold outside the
// lock, against a pending job as PendingBatch showed it, and EnqueueBatch
// applies the decisions only if that pending job is still as it was.
//
// A fold changes the pending job's payload, which the engine does not
// hold; until the new payload has committed the job is held out of
// dispatch, as a new enqueue is until Admit, so no worker receives it with
// the payload it had before. FinishBatch puts it back, at its place in the
// (priority, id) order, which a fold does not change.
//
// A pending job stops being one when it is dispatched (its batch closes),
// sealed by an enqueue whose when does not hold, deleted, or made
// scheduled by a patch; each journals CloseBatch but the delete.

// batchTables are the engine's side tables of batched jobs.
type batchTables struct {
	of      map[int32]*batchConf // every live batched job
	confs   map[store.BatchConfig]*batchConf
	pending map[string]*pendingBatch // by batch key
}

// batchConf is one interned batch, shared by the jobs that have it.
type batchConf struct {
	cfg  store.BatchConfig
	refs int
}

// pendingBatch is the pending job of a key; gen counts the folds into it.
type pendingBatch struct {
	j   ref
	gen uint64
}

// PendingBatch is the pending job of a batch key as a fold decision reads
// it.
type PendingBatch struct {
	ID string
	// Gen changes with every fold into the job.
	Gen    uint64
	Config store.BatchConfig
}

// SeenBatch is the pending job of a key that a decision was made against;
// ID "" means that the key had none.
type SeenBatch struct {
	Key string
	ID  string
	Gen uint64
}

// BatchFold replaces the payload of the pending job ID of Key.
type BatchFold struct {
	Key     string
	ID      string
	Payload []byte
}

// BatchPlan is what the core decided for the batched items of an enqueue
// that touch pending jobs from before it.
type BatchPlan struct {
	// Seen holds every key a decision read; the plan applies only while
	// each still has the pending job it had.
	Seen []SeenBatch
	// Folds are the payloads of pending jobs that items folded into.
	Folds []BatchFold
	// Seals are the keys whose pending job is sealed: a new job of the
	// enqueue takes over.
	Seals []string
}

// ErrBatchMoved refuses a plan made against a pending job that has been
// dispatched, sealed, deleted or folded into since: decide again.
var ErrBatchMoved = errors.New("the pending job of a batch changed")

// PendingBatch returns the pending job of a key, false if it has none.
func (e *Engine) PendingBatch(key string) (PendingBatch, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.batches.pending[key]
	if p == nil {
		return PendingBatch{}, false
	}
	return PendingBatch{ID: p.j.id.String(), Gen: p.gen, Config: e.batches.of[p.j.idx].cfg}, true
}

// checkBatchPlan refuses a plan whose pending jobs have changed, and new
// jobs that would open a batch whose key keeps a pending job.
func (e *Engine) checkBatchPlan(specs []NewJob, plan BatchPlan) error {
	for _, s := range plan.Seen {
		p := e.batches.pending[s.Key]
		switch {
		case s.ID == "" && p != nil:
			return ErrBatchMoved
		case s.ID == "":
		case p == nil || p.j.id.String() != s.ID || p.gen != s.Gen || e.rec(p.j.idx).flags&recHeld != 0:
			return ErrBatchMoved
		}
	}
	sealed := make(map[string]bool, len(plan.Seals))
	for _, key := range plan.Seals {
		sealed[key] = true
	}
	opens := map[string]bool{}
	for i, s := range specs {
		if !s.BatchOpen {
			continue
		}
		if s.Batch == nil || opens[s.Batch.Key] {
			return &Error{Kind: Unprocessable, Msg: "a batch key can have one pending job", Item: i}
		}
		opens[s.Batch.Key] = true
		if e.batches.pending[s.Batch.Key] != nil && !sealed[s.Batch.Key] {
			return ErrBatchMoved
		}
	}
	return nil
}

// applyBatchPlan folds and seals as planned; it returns ops with the ops
// that record it appended, and the pending jobs folded into, as they are
// now.
func (e *Engine) applyBatchPlan(ops []store.Op, plan BatchPlan) ([]store.Op, []store.Job) {
	folded := make([]store.Job, 0, len(plan.Folds))
	for _, f := range plan.Folds {
		p := e.batches.pending[f.Key]
		p.gen++
		e.hold(p.j)
		ops = append(ops, store.SetPayload(f.ID, f.Payload))
		folded = append(folded, e.view(f.ID, p.j.idx))
	}
	for _, key := range plan.Seals {
		p := e.batches.pending[key]
		ops = append(ops, store.CloseBatch(p.j.id.String()))
		e.closePending(p.j.idx)
	}
	return ops, folded
}

// FinishBatch ends an EnqueueBatch once its commit is known: the pending
// jobs it folded into go back into dispatch. If the commit failed (ok
// false), the jobs it created (created) lose their batches and those it
// sealed are pending again, if they still wait and nothing took over;
// the caller then deletes the created jobs.
func (e *Engine) FinishBatch(plan BatchPlan, created []string, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.enterOp()
	defer e.finishOp()
	for _, f := range plan.Folds {
		if j, live := e.lookup(f.ID); live {
			e.unhold(j)
		}
	}
	if ok {
		return
	}
	for _, id := range created {
		if j, live := e.lookup(id); live {
			e.closePending(j.idx)
		}
	}
	for _, s := range plan.Seen {
		e.reopen(s)
	}
}

// reopen makes a sealed pending job pending again after its seal failed to
// commit (the store still has it open).
func (e *Engine) reopen(s SeenBatch) {
	j, live := e.lookup(s.ID)
	if !live || e.batches.pending[s.Key] != nil {
		return
	}
	r := e.rec(j.idx)
	if r.flags&recBatch == 0 || r.state == stScheduled || r.state == stInFlight {
		return
	}
	e.openBatch(j)
	e.batches.pending[s.Key].gen = s.Gen + 1
}

// hold takes a job out of dispatch (a waiting one leaves its group) until
// unhold; schedule leaves a held job where it is.
func (e *Engine) hold(j ref) {
	e.detach(j)
	e.rec(j.idx).flags |= recHeld
}

// unhold puts a held job back: waiting, or scheduled if a patch gave it
// a later ready_at meanwhile (and then its batch closes).
func (e *Engine) unhold(j ref) {
	r := e.rec(j.idx)
	if r.flags&recHeld == 0 {
		return
	}
	r.flags &^= recHeld
	e.schedule(j)
	e.closeIfScheduled(j)
}

// setBatch gives a job its batch.
func (e *Engine) setBatch(idx int32, cfg store.BatchConfig) {
	t := &e.batches
	if t.of == nil {
		t.of, t.confs, t.pending = map[int32]*batchConf{}, map[store.BatchConfig]*batchConf{}, map[string]*pendingBatch{}
	}
	c := t.confs[cfg]
	if c == nil {
		c = &batchConf{cfg: cfg}
		t.confs[cfg] = c
	}
	c.refs++
	t.of[idx] = c
	e.rec(idx).flags |= recBatch
}

// openBatch makes a batched job the pending job of its key.
func (e *Engine) openBatch(j ref) {
	key := e.batches.of[j.idx].cfg.Key
	e.batches.pending[key] = &pendingBatch{j: j}
	e.rec(j.idx).flags |= recPending
}

// closePending ends a job's time as the pending job of its key.
func (e *Engine) closePending(idx int32) {
	r := e.rec(idx)
	if r.flags&recPending == 0 {
		return
	}
	r.flags &^= recPending
	delete(e.batches.pending, e.batches.of[idx].cfg.Key)
}

// closeIfScheduled closes the batch of a pending job that has become
// scheduled: only ready jobs take folds, so that a fold never moves a
// job's ready_at.
func (e *Engine) closeIfScheduled(j ref) {
	r := e.rec(j.idx)
	if r.flags&recPending != 0 && r.state == stScheduled {
		e.closePending(j.idx)
		e.journal.Append(store.CloseBatch(j.id.String()))
	}
}

// dropBatch forgets a job's batch (the job leaves the engine).
func (e *Engine) dropBatch(idx int32) {
	r := e.rec(idx)
	if r.flags&recBatch == 0 {
		return
	}
	e.closePending(idx)
	t := &e.batches
	c := t.of[idx]
	if c.refs--; c.refs == 0 {
		delete(t.confs, c.cfg)
	}
	delete(t.of, idx)
	r.flags &^= recBatch | recHeld
}

// batchOf returns a copy of a job's batch, nil if it has none.
func (e *Engine) batchOf(idx int32) *store.BatchConfig {
	if e.rec(idx).flags&recBatch == 0 {
		return nil
	}
	cfg := e.batches.of[idx].cfg
	return &cfg
}

// journalDispatch journals a dispatch; it closes the batch of a pending
// job, in the same group.
func (e *Engine) journalDispatch(j ref, id string, ms int64) {
	if e.rec(j.idx).flags&recPending == 0 {
		e.journal.Append(store.DispatchMark(id, ms))
		return
	}
	e.closePending(j.idx)
	e.journal.Append(store.CloseBatch(id), store.SetStatus(id, store.InFlight, ms))
}

// restoreBatch gives a restored job its batch; the newest open one of each
// key that waits (not scheduled) is its pending job.
func (e *Engine) restoreBatch(b store.LiveBatch) {
	j, live := e.lookup(b.ID)
	if !live {
		return
	}
	e.setBatch(j.idx, b.Batch)
	if !b.Open || e.rec(j.idx).state == stScheduled {
		return
	}
	if p := e.batches.pending[b.Batch.Key]; p != nil {
		if j.id.Less(p.j.id) {
			return
		}
		e.closePending(p.j.idx)
	}
	e.openBatch(j)
}
