package engine

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/zizq/zizq/server/jobid"
	"github.com/zizq/zizq/store"
)

// BindingSpec is a requested budget binding. CreateWith, when set, is the
// budget to create (atomically with the job) if the key does not exist.
type BindingSpec struct {
	Key        string
	Cost       int64
	CreateWith *store.Budget
}

// NewJob is a validated enqueue request. ReadyAt nil means now.
type NewJob struct {
	Type       string
	Queue      string
	Priority   uint16
	Payload    []byte
	ReadyAt    *int64
	RetryLimit *uint32
	Backoff    *store.Backoff
	Retention  *store.Retention
	Budgets    []BindingSpec
	// UniqueKey ("" = none) and its scope: the job is not created while
	// another job holding the key is in that scope (see unique.go).
	UniqueKey   string
	UniqueWhile store.UniqueWhile
	// Batch is the job's batch; BatchOpen makes the job its key's pending
	// job (the key must have none, or the plan must seal it).
	Batch     *store.BatchConfig
	BatchOpen bool
	// StartBy (unix ms) or StartWithinMs (from now) is the job's deadline
	// for waiting (deadline.go): 0 for none; at most one is set.
	StartBy       int64
	StartWithinMs int64
}

// Enqueued is the outcome of one request of an enqueue: the new job; or,
// when another job holds its unique key, that job (Duplicate), as the
// engine knows it; or, when the request folded into the pending job of its
// batch, that job (Folded, set by the core, which decides folds: see
// EnqueueBatch).
type Enqueued struct {
	store.Job
	Duplicate bool
	Folded    bool
}

// Enqueue adds jobs atomically: either every job is accepted or none is. It
// returns the jobs as enqueued and a Waiter for their durable commit. The
// jobs are visible at once but wait out of dispatch until the caller, once
// the commit succeeded, calls Admit: no worker ever receives a job whose
// enqueue could still fail. (If the commit fails, Delete them.) A request
// whose unique key another job holds creates nothing and binds nothing
// (its bindings are not checked, its create_with not applied): its outcome
// is that job, marked Duplicate. The ops of with, if any, are journalled in
// the jobs' group, so that they commit together (a cron fire and its
// schedule), even when every job is a duplicate; a refused enqueue
// journals nothing.
func (e *Engine) Enqueue(specs []NewJob, with ...store.Op) ([]Enqueued, Waiter, error) {
	jobs, _, w, err := e.EnqueueBatch(specs, BatchPlan{}, with...)
	return jobs, w, err
}

// EnqueueBatch is Enqueue with the folds and seals of a plan (batch.go),
// applied in the same commit and only if the pending jobs it was made
// against are unchanged (else ErrBatchMoved, and nothing is journalled). It
// also returns the pending jobs folded into, as they are now, in
// plan.Folds order; they wait out of dispatch until FinishBatch. The ops
// of with commit in the group even when the enqueue only folds.
func (e *Engine) EnqueueBatch(specs []NewJob, plan BatchPlan, with ...store.Op) ([]Enqueued, []store.Job, Waiter, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.enterOp()
	ms := e.nowMs()
	if err := e.checkBatchPlan(specs, plan); err != nil {
		return nil, nil, nil, err
	}
	startBy, err := checkStartBy(specs, ms)
	if err != nil {
		return nil, nil, nil, err
	}
	dups := e.duplicates(specs)
	created, err := e.checkBindings(withoutDuplicates(specs, dups), ms)
	if err != nil {
		return nil, nil, nil, err
	}
	ops := make([]store.Op, 0, len(created)+len(specs)+len(plan.Folds)+len(plan.Seals)+len(with))
	ops, folded := e.applyBatchPlan(ops, plan)
	for _, cfg := range created {
		e.addAccount(cfg)
		ops = append(ops, store.PutBudget(cfg))
	}
	out := make([]Enqueued, len(specs))
	for i, s := range specs {
		if dups != nil && dups[i] != nil {
			continue
		}
		sj := store.Job{
			ID: e.idgen.Next(), Type: s.Type, Queue: s.Queue, Priority: s.Priority,
			Status: store.Ready, Payload: s.Payload, ReadyAt: ms,
			RetryLimit: s.RetryLimit, Backoff: s.Backoff, Retention: s.Retention,
			Batch: s.Batch, BatchOpen: s.BatchOpen,
		}
		if s.UniqueKey != "" {
			sj.UniqueKey, sj.UniqueWhile = s.UniqueKey, s.UniqueWhile
		}
		if startBy != nil {
			sj.StartBy = startBy[i]
		}
		if s.ReadyAt != nil {
			sj.ReadyAt = *s.ReadyAt
			if sj.ReadyAt > ms {
				sj.Status = store.Scheduled
				sj.BatchOpen = false // a scheduled job takes no folds
			}
		}
		for _, b := range s.Budgets {
			sj.Budgets = append(sj.Budgets, store.Binding{Key: b.Key, Cost: b.Cost})
		}
		j, err := e.newJob(&sj, true)
		if err != nil { // cannot happen: bindings were checked
			return nil, nil, nil, err
		}
		if sj.BatchOpen {
			e.openBatch(j)
		}
		if sj.UniqueKey != "" {
			e.claim(j, sj.UniqueKey)
		}
		out[i] = Enqueued{Job: sj}
		ops = append(ops, store.InsertJob(sj))
	}
	for i, d := range dups {
		switch {
		case d == nil:
		case d.item >= 0:
			out[i] = Enqueued{Job: out[d.item].Job, Duplicate: true}
		default:
			out[i] = Enqueued{Job: e.existing(d), Duplicate: true}
		}
	}
	ops = append(ops, with...)
	var w Waiter = done{}
	if len(ops) > 0 {
		w = e.journal.Append(ops...)
	}
	e.finishOp()
	return out, folded, w, nil
}

// withoutDuplicates returns specs with the bindings of duplicates dropped,
// for checkBindings: a duplicate binds nothing.
func withoutDuplicates(specs []NewJob, dups []*duplicate) []NewJob {
	if dups == nil {
		return specs
	}
	out := slices.Clone(specs)
	for i, d := range dups {
		if d != nil {
			out[i].Budgets = nil
		}
	}
	return out
}

// Admit places enqueued jobs whose commit succeeded: scheduled jobs wait
// for their time, others are offered to takers at once. Jobs deleted (or
// already placed) since their enqueue are skipped.
func (e *Engine) Admit(ids []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.enterOp()
	for _, id := range ids {
		if j, ok := e.lookup(id); ok && e.rec(j.idx).state == stNew {
			e.schedule(j)
		}
	}
	e.finishOp()
}

// checkBindings validates the bindings of a whole request against the
// budgets, returning the budgets that create_with must create (the first
// create_with of a missing key, in request order, wins).
func (e *Engine) checkBindings(specs []NewJob, ms int64) ([]store.Budget, error) {
	var created []store.Budget
	pending := map[string]int{}
	for i, s := range specs {
		if err := e.checkFamilyBindings(s.Budgets); err != nil {
			err.Item = i
			return nil, err
		}
		for _, b := range s.Budgets {
			cfg, err := e.authoritative(b, ms, &created, pending)
			if err == nil {
				err = checkCost(b.Cost, cfg)
			}
			if err != nil {
				err.Item = i
				return nil, err
			}
		}
	}
	return created, nil
}

func (e *Engine) authoritative(b BindingSpec, ms int64, created *[]store.Budget, pending map[string]int) (store.Budget, *Error) {
	if a := e.accounts[b.Key]; a != nil {
		return a.cfg, nil
	}
	if fam := e.familyOf(b.Key); fam != nil {
		// A sub-budget to be: its template bounds the cost, and so does
		// its family, which the job is charged too.
		if err := checkCost(b.Cost, fam.cfg); err != nil {
			return store.Budget{}, err
		}
		return subConfig(fam, b.Key, ms), nil
	}
	if i, ok := pending[b.Key]; ok {
		return (*created)[i], nil
	}
	if b.CreateWith == nil {
		return store.Budget{}, errorf(Unprocessable, "budget '%s' does not exist", b.Key)
	}
	if err := e.checkBudgetLimit(b.Key, len(*created)); err != nil {
		return store.Budget{}, err
	}
	cfg := *b.CreateWith
	cfg.Key, cfg.CreatedAt, cfg.UpdatedAt = b.Key, ms, ms
	if err := e.checkSchedule(cfg); err != nil {
		return store.Budget{}, err
	}
	pending[b.Key] = len(*created)
	*created = append(*created, cfg)
	return cfg, nil
}

func (e *Engine) checkBudgetLimit(key string, extra int) *Error {
	if max := e.cfg.MaxBudgets; max > 0 && len(e.accounts)-e.subBudgets+extra >= max {
		return errorf(Unprocessable, "cannot create budget '%s': limit of %d budgets reached", key, max)
	}
	return nil
}

func checkCost(cost int64, cfg store.Budget) *Error {
	if cost > cfg.Allocation {
		return errorf(Unprocessable, "job cost %d exceeds budget '%s' allocation %d", cost, cfg.Key, cfg.Allocation)
	}
	if cfg.Strategy == store.TimeBased && cfg.Burst > 0 && cost > cfg.Burst {
		return errorf(Unprocessable, "job cost %d exceeds budget '%s' burst %d", cost, cfg.Key, cfg.Burst)
	}
	return nil
}

// Ack completes in-flight jobs. It returns the IDs that were not in flight.
func (e *Engine) Ack(ids []string) ([]string, Waiter) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.enterOp()
	missing, w := e.ack(ids, nil)
	e.finishOp()
	return missing, w
}

// ack is Ack, settling the jobs that plans names first (AckSettled).
func (e *Engine) ack(ids []string, plans map[string][]settling) ([]string, Waiter) {
	ms := e.nowMs()
	var missing []string
	ops := make([]store.Op, 0, len(ids))
	for _, id := range ids {
		j, ok := e.lookup(id)
		if !ok || e.rec(j.idx).state != stInFlight {
			missing = append(missing, id)
			continue
		}
		e.applySettles(j, plans[id])
		ops = e.complete(ops, j, id, ms)
		e.obs.finish(j.id, false)
		e.forget(j)
	}
	ops = e.settleSpendOps(ops)
	var w Waiter = done{}
	if len(ops) > 0 {
		w = e.journal.Append(ops...)
	}
	return missing, w
}

// complete appends the ops that make a finished job terminal: deleted at
// once when completed jobs are not retained.
func (e *Engine) complete(ops []store.Op, j ref, id string, ms int64) []store.Op {
	keep := e.cfg.DefaultCompletedRetentionMs
	if o := e.override(j.idx); o != nil && o.retention != nil && o.retention.CompletedMs != nil {
		keep = *o.retention.CompletedMs
	}
	ops = e.finishUnique(ops, j, id, store.Completed, keep != 0)
	if keep == 0 {
		return append(ops, store.DeleteJob(id))
	}
	purgeAt := addMs(ms, keep)
	e.schedulePurge(j.id, purgeAt)
	return append(ops, store.Finish(id, store.Completed, e.rec(j.idx).attempts, 0, ms, purgeAt))
}

func addMs(ms int64, d uint64) int64 {
	if d > uint64(math.MaxInt64/int64(time.Millisecond)-ms) {
		return math.MaxInt64 / int64(time.Millisecond)
	}
	return ms + int64(d)
}

func (e *Engine) schedulePurge(id jobid.ID, at int64) {
	e.purges.push(purge{at: at * int64(time.Millisecond), id: id})
}

// Failure is a worker's report that a job failed.
type Failure struct {
	Message   string
	ErrorType string
	Backtrace string
	RetryAt   *int64
	Kill      bool
	// Budgets settles the job's real costs (settle.go) before it fails.
	Budgets []Settle
	// Throttle reports that the upstream refused it (adaptive.go): the
	// budget backs off, and the failure does not count toward the retry
	// limit unless Count.
	Throttle *FailThrottle
}

// Fail records a failure of an in-flight job and retries it or lets it
// die. The job returned is as the engine knows it after the failure
// (ErrorRecord and history are the store's).
func (e *Engine) Fail(id string, f Failure) (store.Job, Waiter, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.enterOp()
	defer e.finishOp()
	j, ok := e.lookup(id)
	if !ok || e.rec(j.idx).state != stInFlight {
		return store.Job{}, nil, errorf(NotFound, "job not found in in-flight set")
	}
	plan, err := e.planSettles(j, id, f.Budgets)
	if err != nil {
		return store.Job{}, nil, err
	}
	throttled, err := e.throttleTarget(j, id, f.Throttle)
	if err != nil {
		return store.Job{}, nil, err
	}
	ms := e.nowMs()
	r := e.rec(j.idx)
	out := e.view(id, j.idx) // dequeued_at, before the job leaves its taker
	e.applySettles(j, plan)
	settled := e.settleSpendOps(nil)
	e.obs.finish(j.id, true)
	e.detach(j)
	r.attempts++
	rec := store.ErrorRecord{
		JobID: id, Attempt: r.attempts, Message: f.Message, ErrorType: f.ErrorType,
		Backtrace: f.Backtrace, DequeuedAt: out.DequeuedAt, FailedAt: ms,
	}
	out.Attempts, out.FailedAt = r.attempts, ms
	e.failedAt[j.idx] = ms
	limit := e.cfg.DefaultRetryLimit
	o := e.override(j.idx)
	if o != nil && o.retryLimit != nil {
		limit = *o.retryLimit
	}
	if throttled != nil {
		e.refused(throttled, f.Throttle.Refusal)
		if !f.Throttle.Count {
			e.uncounted[j.idx]++
		}
	}
	limit += e.uncounted[j.idx] // the failures the upstream caused
	var ops []store.Op
	switch {
	case f.Kill || (f.RetryAt == nil && r.attempts > limit):
		out.Status = store.Dead
		ops, out.PurgeAt = e.die(j, id, ms)
	default:
		r.setReadyAt(ms + e.backoffMs(r.attempts, o))
		if f.RetryAt != nil {
			r.setReadyAt(*f.RetryAt)
		}
		out.ReadyAt = r.readyAt()
		e.schedule(j)
		out.Status = store.Ready
		if e.rec(j.idx).state == stScheduled {
			out.Status = store.Scheduled
		}
		ops = e.requeued([]store.Op{store.Retry(id, r.attempts, ms, r.readyAt(), out.Status)}, j, false)
		ops = e.keptStartBy(ops, j)
		out.StartBy = e.startByOf(j.idx)
	}
	w := e.journal.Append(append(append(settled, ops...), store.AddError(rec))...)
	return out, w, nil
}

// die makes the job dead: deleted at once when dead jobs are not retained
// (the response still says dead). It returns the ops and the purge time.
func (e *Engine) die(j ref, id string, ms int64) ([]store.Op, int64) {
	keep := e.cfg.DefaultDeadRetentionMs
	if o := e.override(j.idx); o != nil && o.retention != nil && o.retention.DeadMs != nil {
		keep = *o.retention.DeadMs
	}
	attempts := e.rec(j.idx).attempts
	ops := e.finishUnique(nil, j, id, store.Dead, keep != 0)
	e.forget(j)
	if keep == 0 {
		return append(ops, store.DeleteJob(id)), 0
	}
	purgeAt := addMs(ms, keep)
	e.schedulePurge(j.id, purgeAt)
	return append(ops, store.Finish(id, store.Dead, attempts, ms, 0, purgeAt)), purgeAt
}

// backoffMs is Zizq 0.6.1's retry delay: a^exponent·1000 + base + U[0,1)·jitter·a.
func (e *Engine) backoffMs(attempts uint32, o *overrides) int64 {
	b := e.cfg.DefaultBackoff
	if o != nil && o.backoff != nil {
		b = *o.backoff
	}
	a := float64(attempts)
	d := math.Pow(a, float64(b.Exponent))*1000 + float64(b.BaseMs) + e.cfg.Random()*float64(b.JitterMs)*a
	if d > float64(math.MaxInt64/int64(time.Millisecond)/2) || math.IsNaN(d) {
		return math.MaxInt64 / int64(time.Millisecond) / 2
	}
	return int64(d)
}

// Delete removes jobs; live ones leave the engine at once (an in-flight job
// frees its worker's slot and a later ack gets 404). It reports which of the
// IDs were live.
func (e *Engine) Delete(ids []string) ([]bool, Waiter) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.enterOp()
	live := make([]bool, len(ids))
	ops := make([]store.Op, len(ids))
	for i, id := range ids {
		if j, ok := e.lookup(id); ok {
			e.forget(j)
			live[i] = true
		} else if jid, ok := jobid.Parse(id); ok {
			e.dropFinished(jid)
		}
		ops[i] = store.DeleteJob(id)
	}
	w := e.journal.Append(ops...)
	e.finishOp()
	return live, w
}

// Patch changes a live job. The change function edits the job as the
// engine knows it (its Status is the live wire status; fields the engine
// does not keep are zero) and may refuse with an error. Queue, priority,
// ready_at, retry limit, backoff and retention may change; a change of
// queue, priority or ready_at moves the job, and an in-flight job only
// takes the data. It returns the job as the engine knows it.
func (e *Engine) Patch(id string, change func(now int64, j *store.Job) error) (store.Job, Waiter, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.enterOp()
	defer e.finishOp()
	j, ok := e.lookup(id)
	if !ok {
		return store.Job{}, nil, errorf(NotFound, "job not found")
	}
	op, err := e.patch(j, id, change)
	if err != nil {
		return store.Job{}, nil, err
	}
	e.obs.patches++
	return e.view(id, j.idx), e.journal.Append(op), nil
}

// PatchMany applies one change to every live job of ids that it accepts
// (those it refuses, or that are no longer live, are skipped) and journals
// every change in one group: they commit together or not at all. It
// returns how many it changed.
func (e *Engine) PatchMany(ids []string, change func(now int64, j *store.Job) error) (int64, Waiter) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.enterOp()
	defer e.finishOp()
	ops := make([]store.Op, 0, len(ids))
	for _, id := range ids {
		j, ok := e.lookup(id)
		if !ok {
			continue
		}
		if op, err := e.patch(j, id, change); err == nil {
			ops = append(ops, op)
		}
	}
	var w Waiter = done{}
	if len(ops) > 0 {
		w = e.journal.Append(ops...)
		e.obs.patches++
	}
	return int64(len(ops)), w
}

// patch applies a change to a live job and places it again; it returns the
// op that records it.
func (e *Engine) patch(j ref, id string, change func(now int64, j *store.Job) error) (store.Op, error) {
	ms := e.nowMs()
	next := e.view(id, j.idx)
	if err := change(ms, &next); err != nil {
		return nil, err
	}
	r := e.rec(j.idx)
	moved := r.state != stInFlight
	if moved {
		e.detach(j)
	}
	e.moveQueue(j.idx, next.Queue)
	r.prio = next.Priority
	r.setReadyAt(next.ReadyAt)
	e.setOverrides(j.idx, overrides{retryLimit: next.RetryLimit, backoff: next.Backoff, retention: next.Retention})
	if moved {
		e.schedule(j)
		e.closeIfScheduled(j)
	}
	status := e.view(id, j.idx).Status
	return store.PatchJob(store.JobPatch{
		ID: id, Queue: next.Queue, Priority: next.Priority, Status: status, ReadyAt: next.ReadyAt,
		RetryLimit: next.RetryLimit, Backoff: next.Backoff, Retention: next.Retention,
	}), nil
}

// moveQueue re-homes a detached (or in-flight) job's counters to another
// queue. An in-flight job keeps its taker; its new queue applies once it
// waits again.
func (e *Engine) moveQueue(idx int32, name string) {
	r := e.rec(idx)
	if e.queueList[r.q].name == name {
		return
	}
	if r.state != stNew {
		e.queueList[r.q].counts[r.state]--
	}
	r.q = e.queue(name).idx
	if r.state != stNew {
		e.queueList[r.q].counts[r.state]++
	}
}

// Reset deletes every job (in flight included) and every budget.
func (e *Engine) Reset() Waiter {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.enterOp()
	for _, j := range e.ids.all() {
		e.forget(j)
	}
	for _, a := range e.accounts {
		if a.dl != nil {
			e.refills.remove(a.dl)
		}
		e.dropAccount(a)
	}
	e.subBudgets = 0
	e.purges.items = nil
	e.obs.budgets++
	e.unique = newUniqueIndex()
	w := e.journal.Append(store.DeleteEverything())
	e.finishOp()
	return w
}

// Job returns a live job as the engine knows it (no payload; see view);
// false if it is not live.
func (e *Engine) Job(id string) (store.Job, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j, ok := e.lookup(id)
	if !ok {
		return store.Job{}, false
	}
	return e.view(id, j.idx), true
}

// done is a Waiter for nothing.
type done struct{}

func (done) Wait(context.Context) error { return nil }
