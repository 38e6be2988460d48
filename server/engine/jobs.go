package engine

import (
	"context"
	"math"
	"time"

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
}

// Enqueue adds jobs atomically: either every job is accepted or none is. It
// returns the jobs as enqueued and a Waiter for their durable commit. The
// jobs are visible at once but wait out of dispatch until the caller, once
// the commit succeeded, calls Admit: no worker ever receives a job whose
// enqueue could still fail. (If the commit fails, Delete them.)
func (e *Engine) Enqueue(specs []NewJob) ([]store.Job, Waiter, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.enterOp()
	ms := e.nowMs()
	created, err := e.checkBindings(specs, ms)
	if err != nil {
		return nil, nil, err
	}
	ops := make([]store.Op, 0, len(created)+len(specs))
	for _, cfg := range created {
		e.addAccount(cfg)
		ops = append(ops, store.PutBudget(cfg))
	}
	jobs := make([]*job, len(specs))
	out := make([]store.Job, len(specs))
	for i, s := range specs {
		sj := store.Job{
			ID: e.ids.Next(), Type: s.Type, Queue: s.Queue, Priority: s.Priority,
			Status: store.Ready, Payload: s.Payload, ReadyAt: ms,
			RetryLimit: s.RetryLimit, Backoff: s.Backoff, Retention: s.Retention,
		}
		if s.ReadyAt != nil {
			sj.ReadyAt = *s.ReadyAt
			if sj.ReadyAt > ms {
				sj.Status = store.Scheduled
			}
		}
		for _, b := range s.Budgets {
			sj.Budgets = append(sj.Budgets, store.Binding{Key: b.Key, Cost: b.Cost})
		}
		j, err := e.newJob(sj)
		if err != nil { // cannot happen: bindings were checked
			return nil, nil, err
		}
		jobs[i] = j
		out[i] = sj
		ops = append(ops, store.InsertJob(sj))
	}
	w := e.journal.Append(ops...)
	e.finishOp()
	return out, w, nil
}

// Admit places enqueued jobs whose commit succeeded: scheduled jobs wait
// for their time, others are offered to takers at once. Jobs deleted (or
// already placed) since their enqueue are skipped.
func (e *Engine) Admit(ids []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.enterOp()
	for _, id := range ids {
		if j := e.jobs[id]; j != nil && j.state == stNew {
			e.admit(j)
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
	pending[b.Key] = len(*created)
	*created = append(*created, cfg)
	return cfg, nil
}

func (e *Engine) checkBudgetLimit(key string, extra int) *Error {
	if max := e.cfg.MaxBudgets; max > 0 && len(e.accounts)+extra >= max {
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
	ms := e.nowMs()
	var missing []string
	ops := make([]store.Op, 0, len(ids))
	for _, id := range ids {
		j := e.jobs[id]
		if j == nil || j.state != stInFlight {
			missing = append(missing, id)
			continue
		}
		e.forget(j)
		ops = append(ops, e.complete(j, ms))
	}
	var w Waiter = done{}
	if len(ops) > 0 {
		w = e.journal.Append(ops...)
	}
	e.finishOp()
	return missing, w
}

// complete turns a finished job into its terminal record: deleted at once
// when completed jobs are not retained.
func (e *Engine) complete(j *job, ms int64) store.Op {
	keep := e.cfg.DefaultCompletedRetentionMs
	if j.Retention != nil && j.Retention.CompletedMs != nil {
		keep = *j.Retention.CompletedMs
	}
	if keep == 0 {
		return store.DeleteJob(j.ID)
	}
	j.Status = store.Completed
	j.CompletedAt = ms
	j.PurgeAt = addMs(ms, keep)
	e.schedulePurge(j.ID, j.PurgeAt)
	return store.PutJob(j.Job)
}

func addMs(ms int64, d uint64) int64 {
	if d > uint64(math.MaxInt64/int64(time.Millisecond)-ms) {
		return math.MaxInt64 / int64(time.Millisecond)
	}
	return ms + int64(d)
}

func (e *Engine) schedulePurge(id string, at int64) {
	e.deadlines.push(&deadline{at: at * int64(time.Millisecond), kind: dlPurge, purgeID: id})
}

// Failure is a worker's report that a job failed.
type Failure struct {
	Message   string
	ErrorType string
	Backtrace string
	RetryAt   *int64
	Kill      bool
}

// Fail records a failure of an in-flight job and retries it or lets it die.
func (e *Engine) Fail(id string, f Failure) (store.Job, Waiter, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.enterOp()
	defer e.finishOp()
	j := e.jobs[id]
	if j == nil || j.state != stInFlight {
		return store.Job{}, nil, errorf(NotFound, "job not found in in-flight set")
	}
	ms := e.nowMs()
	e.detach(j)
	j.Attempts++
	j.FailedAt = ms
	rec := store.ErrorRecord{
		JobID: j.ID, Attempt: j.Attempts, Message: f.Message, ErrorType: f.ErrorType,
		Backtrace: f.Backtrace, DequeuedAt: j.DequeuedAt, FailedAt: ms,
	}
	limit := e.cfg.DefaultRetryLimit
	if j.RetryLimit != nil {
		limit = *j.RetryLimit
	}
	var op store.Op
	switch {
	case f.Kill || (f.RetryAt == nil && j.Attempts > limit):
		op = e.die(j, ms)
	default:
		j.ReadyAt = ms + e.backoffMs(j)
		if f.RetryAt != nil {
			j.ReadyAt = *f.RetryAt
		}
		e.schedule(j)
		op = store.PutJob(j.Job)
	}
	out := j.snapshot()
	w := e.journal.Append(op, store.AddError(rec))
	return out, w, nil
}

// die makes the job dead: deleted at once when dead jobs are not retained
// (the response still says dead).
func (e *Engine) die(j *job, ms int64) store.Op {
	e.forget(j)
	j.Status = store.Dead
	keep := e.cfg.DefaultDeadRetentionMs
	if j.Retention != nil && j.Retention.DeadMs != nil {
		keep = *j.Retention.DeadMs
	}
	if keep == 0 {
		return store.DeleteJob(j.ID)
	}
	j.PurgeAt = addMs(ms, keep)
	e.schedulePurge(j.ID, j.PurgeAt)
	return store.PutJob(j.Job)
}

// backoffMs is Zizq 0.6.1's retry delay: a^exponent·1000 + base + U[0,1)·jitter·a.
func (e *Engine) backoffMs(j *job) int64 {
	b := e.cfg.DefaultBackoff
	if j.Backoff != nil {
		b = *j.Backoff
	}
	a := float64(j.Attempts)
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
		if j := e.jobs[id]; j != nil {
			e.forget(j)
			live[i] = true
		}
		ops[i] = store.DeleteJob(id)
	}
	w := e.journal.Append(ops...)
	e.finishOp()
	return live, w
}

// Patch changes a live job. The change function edits a copy of the job (its
// Status is the live wire status) and may refuse with an error. Queue,
// priority and ready_at changes move the job; an in-flight job only takes
// the data.
func (e *Engine) Patch(id string, change func(now int64, j *store.Job) error) (store.Job, Waiter, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.enterOp()
	defer e.finishOp()
	j := e.jobs[id]
	if j == nil {
		return store.Job{}, nil, errorf(NotFound, "job not found")
	}
	if err := e.patch(j, change); err != nil {
		return store.Job{}, nil, err
	}
	return j.snapshot(), e.journal.Append(store.PutJob(j.Job)), nil
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
		if j := e.jobs[id]; j != nil && e.patch(j, change) == nil {
			ops = append(ops, store.PutJob(j.Job))
		}
	}
	var w Waiter = done{}
	if len(ops) > 0 {
		w = e.journal.Append(ops...)
	}
	return int64(len(ops)), w
}

// patch applies a change to a live job and places it again.
func (e *Engine) patch(j *job, change func(now int64, j *store.Job) error) error {
	ms := e.nowMs()
	next := j.Job
	if err := change(ms, &next); err != nil {
		return err
	}
	next.ID, next.Type, next.Payload, next.Budgets = j.ID, j.Type, j.Payload, j.Budgets
	if j.state == stInFlight {
		next.Status, next.DequeuedAt = j.Status, j.DequeuedAt
		e.moveQueue(j, next.Queue)
		j.Job = next
		j.k.prio = next.Priority
		return nil
	}
	e.detach(j)
	e.moveQueue(j, next.Queue)
	j.Job = next
	j.k.prio = next.Priority
	j.Status = store.Ready
	if j.ReadyAt > ms {
		j.Status = store.Scheduled
	}
	e.admit(j)
	return nil
}

// moveQueue re-homes a detached (or in-flight) job's counters to another
// queue. An in-flight job keeps its taker; its new queue applies once it
// waits again.
func (e *Engine) moveQueue(j *job, name string) {
	if j.q.name == name {
		return
	}
	j.q.counts[j.state]--
	j.q = e.queue(name)
	j.q.counts[j.state]++
}

// Reset deletes every job (in flight included) and every budget.
func (e *Engine) Reset() Waiter {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.enterOp()
	for _, j := range e.jobs {
		e.forget(j)
	}
	for key, a := range e.accounts {
		if a.dl != nil {
			e.deadlines.remove(a.dl)
		}
		delete(e.accounts, key)
	}
	for _, d := range append([]*deadline(nil), e.deadlines.items...) {
		if d.kind == dlPurge {
			e.deadlines.remove(d)
		}
	}
	w := e.journal.Append(store.DeleteEverything())
	e.finishOp()
	return w
}

// Job returns a live job as the wire sees it; false if it is not live.
func (e *Engine) Job(id string) (store.Job, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j := e.jobs[id]
	if j == nil {
		return store.Job{}, false
	}
	return j.snapshot(), true
}

// done is a Waiter for nothing.
type done struct{}

func (done) Wait(context.Context) error { return nil }
