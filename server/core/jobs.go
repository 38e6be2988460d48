package core

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/zizq/zizq/server/engine"
	"github.com/zizq/zizq/store"
)

// Enqueue adds jobs atomically: every one or none. It answers once they
// are durable, and only then may they be dispatched; if the commit fails
// they are undone and no worker ever sees them. A request whose unique key
// another job holds creates nothing: its outcome is that job, marked
// Duplicate (see showDuplicates). A batched request may fold into the
// pending job of its batch instead: its outcome is that job, marked Folded
// (batch.go).
func (s *Service) Enqueue(ctx context.Context, specs []NewJob) ([]Enqueued, error) {
	jobs, err := s.enqueue(ctx, engineJobs(specs))
	return coreEnqueued(jobs), err
}

// enqueue is Enqueue with ops that commit in the jobs' group (a cron
// fire's schedule, cron_fire.go), even when every request is a duplicate
// or a fold.
func (s *Service) enqueue(ctx context.Context, specs []engine.NewJob, with ...store.Op) ([]engine.Enqueued, error) {
	if err := s.readyFor(ctx, specs); err != nil {
		return nil, err
	}
	for _, sp := range specs {
		if sp.Batch != nil {
			return s.enqueueBatched(ctx, specs, with)
		}
	}
	jobs, _, err := s.commitEnqueue(ctx, specs, engine.BatchPlan{}, with)
	return jobs, err
}

// readyFor waits until the engine may take the jobs: plain jobs go in while
// it loads; a unique key or a batch needs the keys and batches of every
// loaded job, read after them.
func (s *Service) readyFor(ctx context.Context, specs []engine.NewJob) error {
	for _, sp := range specs {
		if sp.UniqueKey != "" || sp.Batch != nil || sp.BatchOpen {
			return s.ready(ctx)
		}
	}
	return s.serving()
}

// commitEnqueue creates jobs, applies a batch plan and journals with in one
// commit, then admits the jobs and puts the folded ones back into
// dispatch, their new payloads in the cache; it returns the outcome of
// each spec and the jobs folded into (in plan.Folds order).
func (s *Service) commitEnqueue(ctx context.Context, specs []engine.NewJob, plan engine.BatchPlan, with []store.Op) ([]engine.Enqueued, []store.Job, error) {
	jobs, folded, w, err := s.engine.EnqueueBatch(specs, plan, with...)
	if err != nil {
		return nil, nil, translate(err)
	}
	ids := make([]string, 0, len(jobs))
	for _, j := range jobs {
		if !j.Duplicate {
			ids = append(ids, j.ID)
		}
	}
	s.fitCache()
	s.cache.putAll(func(yield func(string, []byte) bool) {
		for _, j := range jobs {
			if !j.Duplicate && !yield(j.ID, j.Payload) {
				return
			}
		}
	})
	if err := wait(ctx, w); err != nil {
		s.engine.FinishBatch(plan, ids, false)
		s.unwindEnqueue(ctx, ids, specs)
		return nil, nil, err
	}
	for _, f := range plan.Folds {
		s.cache.replace(f.ID, f.Payload)
	}
	s.engine.Admit(ids)
	if len(plan.Folds) > 0 {
		s.engine.FinishBatch(plan, nil, true)
	}
	s.showDuplicates(ctx, jobs, ids)
	return jobs, folded, nil
}

// fitCache gives the payload cache what PayloadCacheHeap leaves beside
// the engine's jobs.
func (s *Service) fitCache() {
	if s.opts.PayloadCacheHeap > 0 {
		s.cache.setBound(s.opts.PayloadCacheHeap - int64(s.engine.JobCount())*engine.BytesPerJob)
	}
}

// unwindEnqueue undoes an enqueue whose commit failed: the engine forgets
// its jobs and the cache their payloads, and the budgets their create_with
// made are deleted unless the store has them (unwindBudgets, whose comment
// in budgets.go says which failed writes are undone and why).
func (s *Service) unwindEnqueue(ctx context.Context, ids []string, specs []engine.NewJob) {
	s.engine.Delete(ids)
	for _, id := range ids {
		s.cache.take(id)
	}
	var created []string
	for _, sp := range specs {
		for _, b := range sp.Budgets {
			if b.CreateWith != nil {
				created = append(created, b.Key)
			}
		}
	}
	s.unwindBudgets(ctx, created)
}

// Job returns a job, payload included. A live job's fields are the
// engine's; what never changes (payload, type) and a finished job come
// from the store.
func (s *Service) Job(ctx context.Context, id string) (store.Job, error) {
	if err := s.ready(ctx); err != nil {
		return store.Job{}, err
	}
	row, err := s.store.GetJob(ctx, id, s.nowMs())
	if live, ok := s.engine.Job(id); ok {
		if errors.Is(err, store.ErrNotFound) {
			// Enqueued, its insert not yet visible: wait for the store.
			row, err = s.storedJob(ctx, id)
		}
		if err != nil {
			return store.Job{}, err
		}
		return overlay(row, live), nil
	}
	if err == nil && row.Status.Live() {
		// Finished since the store was read: read what it became.
		return s.storedJob(ctx, id)
	}
	if errors.Is(err, store.ErrNotFound) {
		return store.Job{}, NotFound("job not found")
	}
	if err != nil {
		return store.Job{}, fmt.Errorf("get job: %w", err)
	}
	return row, nil
}

// storedJob reads a job from the store once every change journalled so
// far is in it.
func (s *Service) storedJob(ctx context.Context, id string) (store.Job, error) {
	if err := s.store.Barrier(ctx); err != nil {
		return store.Job{}, translate(err)
	}
	j, err := s.store.GetJob(ctx, id, s.nowMs())
	if errors.Is(err, store.ErrNotFound) {
		return store.Job{}, NotFound("job not found")
	}
	if err != nil {
		return store.Job{}, fmt.Errorf("get job: %w", err)
	}
	return j, nil
}

// overlay puts a live job's fields (the engine's) over its stored row.
func overlay(row, live store.Job) store.Job {
	row.Queue, row.Priority, row.Status, row.ReadyAt, row.Attempts = live.Queue, live.Priority, live.Status, live.ReadyAt, live.Attempts
	row.RetryLimit, row.Backoff, row.Retention, row.Budgets = live.RetryLimit, live.Backoff, live.Retention, live.Budgets
	row.StartBy = live.StartBy
	if live.FailedAt != 0 {
		row.FailedAt = live.FailedAt
	}
	if live.Status == store.InFlight || live.DequeuedAt != 0 {
		row.DequeuedAt = live.DequeuedAt // in flight, or requeued: the store may lag
	}
	row.CompletedAt, row.PurgeAt = 0, 0
	return row
}

// Filter selects jobs: the store's filter, and Parked to keep only the
// jobs parked now (waiting jobs of served queues that a budget refuses).
type Filter struct {
	store.Filter
	Parked bool
}

// storeFilter returns the store filter of f, a family's key widened to
// its sub-budgets, narrowed to the parked jobs when asked. The parked set is read before the store's barrier, so the
// store is at least as new as it; a parked job's status is ready, so a
// filter by other statuses selects none.
func (s *Service) storeFilter(f Filter) store.Filter {
	sf := f.Filter
	if len(sf.BudgetKeys) > 0 {
		// A family's key finds the jobs bound through its sub-budgets, as
		// the family counts them bound to it (a delete's 409 says so).
		sf.SubBudgetsOf, sf.NotSubBudgets = s.engine.SubBudgetFilter(sf.BudgetKeys)
	}
	if !f.Parked {
		return sf
	}
	ids := s.engine.Parked()
	if len(sf.Statuses) > 0 && !slices.Contains(sf.Statuses, store.Ready) {
		ids = nil
	}
	sf.Within = store.NewIDSet(ids)
	sf.Statuses = []store.Status{store.Ready}
	return sf
}

// Jobs lists jobs in ID order from the cursor from (exclusive), as of now.
func (s *Service) Jobs(ctx context.Context, f Filter, from string, o store.Order, limit int) ([]store.Job, bool, error) {
	if err := s.ready(ctx); err != nil {
		return nil, false, err
	}
	sf := s.storeFilter(f)
	if err := s.store.Barrier(ctx); err != nil {
		return nil, false, translate(err)
	}
	return s.store.ListJobs(ctx, sf, from, o, limit)
}

// Count counts jobs, as of now.
func (s *Service) Count(ctx context.Context, f Filter) (int64, error) {
	if err := s.ready(ctx); err != nil {
		return 0, err
	}
	sf := s.storeFilter(f)
	if err := s.store.Barrier(ctx); err != nil {
		return 0, translate(err)
	}
	return s.store.CountJobs(ctx, sf)
}

// matching returns the IDs of the jobs a filter selects, as of now.
func (s *Service) matching(ctx context.Context, f Filter) ([]string, error) {
	sf := s.storeFilter(f)
	if err := s.store.Barrier(ctx); err != nil {
		return nil, translate(err)
	}
	return s.store.JobIDs(ctx, sf)
}

// DeleteJob deletes a job in any status (an in-flight one frees its
// worker's slot; its later ack finds nothing).
func (s *Service) DeleteJob(ctx context.Context, id string) error {
	if _, err := s.Job(ctx, id); err != nil {
		return err
	}
	_, w := s.engine.Delete([]string{id})
	return wait(ctx, w)
}

// DeleteJobs deletes the jobs a filter selects and says how many.
func (s *Service) DeleteJobs(ctx context.Context, f Filter) (int64, error) {
	if err := s.ready(ctx); err != nil {
		return 0, err
	}
	ids, err := s.matching(ctx, f)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	_, w := s.engine.Delete(ids)
	return int64(len(ids)), wait(ctx, w)
}

// Change edits a live job's patchable fields (see engine.Patch).
type Change func(now int64, j *store.Job) error

// PatchJob changes a live job and returns it as it is now.
func (s *Service) PatchJob(ctx context.Context, id string, change Change) (store.Job, error) {
	if err := s.ready(ctx); err != nil {
		return store.Job{}, err
	}
	_, w, err := s.engine.Patch(id, change)
	if errors.Is(translate(err), ErrNotFound) {
		return store.Job{}, s.notLive(ctx, id, "patch job %s")
	}
	if err != nil {
		return store.Job{}, translate(err)
	}
	if err := wait(ctx, w); err != nil {
		return store.Job{}, err
	}
	return s.Job(ctx, id)
}

// notLive explains why a job that is not live cannot be changed: it does
// not exist, or it is finished.
func (s *Service) notLive(ctx context.Context, id, what string) error {
	j, err := s.storedJob(ctx, id)
	if err != nil {
		return err
	}
	return Unprocessable("cannot "+what+" in %s status", id, j.Status)
}

// PatchJobs applies one change to every live job a filter selects, in one
// commit, and says how many it changed (finished jobs are skipped).
func (s *Service) PatchJobs(ctx context.Context, f Filter, change Change) (int64, error) {
	if err := s.ready(ctx); err != nil {
		return 0, err
	}
	ids, err := s.matching(ctx, f)
	if err != nil {
		return 0, err
	}
	n, w := s.engine.PatchMany(ids, change)
	return n, wait(ctx, w)
}

// Ack completes in-flight jobs; it returns those that were not in flight.
//
// While the engine loads, a job it does not know yet may be one of the
// last run's: the answer for those waits until it is loaded whole.
func (s *Service) Ack(ctx context.Context, ids []string) ([]string, error) {
	return s.AckSettled(ctx, ids, nil)
}

// AckSettled is Ack, settling first the real costs that settles gives by
// job ID: one settle refused refuses the whole request, and nothing is
// acked (Unprocessable).
func (s *Service) AckSettled(ctx context.Context, ids []string, settles map[string][]Settle) ([]string, error) {
	if err := s.serving(); err != nil {
		return nil, err
	}
	missing, w, err := s.engine.AckSettled(ids, settles)
	if err != nil {
		return nil, translate(err)
	}
	if len(missing) > 0 && s.loading() {
		if err := s.ready(ctx); err != nil {
			return nil, err
		}
		var again engine.Waiter
		if missing, again, err = s.engine.AckSettled(missing, settles); err != nil {
			return nil, translate(err)
		}
		if err := wait(ctx, again); err != nil {
			return nil, err
		}
	}
	return missing, wait(ctx, w)
}

// Fail records a failure of an in-flight job, which retries or dies; it
// returns the job as it is now (no payload).
func (s *Service) Fail(ctx context.Context, id string, f Failure) (store.Job, error) {
	if err := s.serving(); err != nil {
		return store.Job{}, err
	}
	j, w, err := s.engine.Fail(id, engine.Failure(f))
	if err != nil && s.loading() { // as for Ack: it may be a job not loaded yet
		if err := s.ready(ctx); err != nil {
			return store.Job{}, err
		}
		j, w, err = s.engine.Fail(id, engine.Failure(f))
	}
	if err != nil {
		return store.Job{}, translate(err)
	}
	return j, wait(ctx, w)
}

// Retry runs a dead job again (our extension): ready now, its attempts,
// history, overrides and bindings kept, its purge cancelled.
func (s *Service) Retry(ctx context.Context, id string) (store.Job, error) {
	dead, err := s.Job(ctx, id)
	if err != nil {
		return store.Job{}, err
	}
	if dead.Status != store.Dead {
		return store.Job{}, Unprocessable("job %s is not dead: it is %s", dead.ID, dead.Status)
	}
	j, w, err := s.engine.Readmit(dead)
	if err != nil {
		return store.Job{}, translate(err)
	}
	if err := wait(ctx, w); err != nil {
		return store.Job{}, err
	}
	// The row could have been deleted between our read and the
	// readmission: then the update found nothing, and the engine must drop
	// its copy.
	if _, err := s.store.GetJob(ctx, j.ID, 0); errors.Is(err, store.ErrNotFound) {
		_, w := s.engine.Delete([]string{j.ID})
		_ = wait(ctx, w)
		return store.Job{}, NotFound("job not found")
	} else if err != nil {
		return store.Job{}, fmt.Errorf("get job: %w", err)
	}
	return j, nil
}

// Errors lists a job's error records after attempt from.
func (s *Service) Errors(ctx context.Context, id string, from uint32, o store.Order, limit int) ([]store.ErrorRecord, bool, error) {
	if _, err := s.Job(ctx, id); err != nil {
		return nil, false, err
	}
	if err := s.store.Barrier(ctx); err != nil {
		return nil, false, translate(err)
	}
	return s.store.ListErrors(ctx, id, from, o, limit)
}

// Error returns one error record of a job.
func (s *Service) Error(ctx context.Context, id string, attempt uint32) (store.ErrorRecord, error) {
	if _, err := s.Job(ctx, id); err != nil {
		return store.ErrorRecord{}, err
	}
	if err := s.store.Barrier(ctx); err != nil {
		return store.ErrorRecord{}, translate(err)
	}
	rec, err := s.store.GetError(ctx, id, attempt)
	if errors.Is(err, store.ErrNotFound) {
		return rec, NotFound("error record not found")
	}
	return rec, err
}

// Why says what a job waits for (schedule, budget, worker or nothing); a
// finished job waits for nothing.
type Why struct {
	Job        store.Job
	WaitingFor string
	// Reason says it in words when the budgets do not: no worker serves the
	// queue, or every worker of it is busy.
	Reason  string
	Budgets []WhyBudget
	// ExpectedAt is when the job is expected to be dispatched (ms); nil
	// when no such estimate holds.
	ExpectedAt *int64
	Finished   bool
}

// Why explains a job's state.
func (s *Service) Why(ctx context.Context, id string) (Why, error) {
	if err := s.ready(ctx); err != nil {
		return Why{}, err
	}
	if w, ok := s.engine.Why(id); ok {
		return Why{Job: w.Job, WaitingFor: w.WaitingFor, Reason: w.Reason, Budgets: w.Budgets, ExpectedAt: w.ExpectedAt}, nil
	}
	j, err := s.Job(ctx, id)
	if err != nil {
		return Why{}, err
	}
	w := Why{Job: j, WaitingFor: "nothing", Finished: !j.Status.Live()}
	return w, nil
}

// RebindOne edits one job's budget bindings (a scheduled or ready job;
// an in-flight or finished one is refused) and returns it as it is now. An
// edit that does not apply to the job (adding a binding it has, changing
// one it lacks) is refused.
func (s *Service) RebindOne(ctx context.Context, id string, edit BindingEdit) (store.Job, error) {
	if err := s.ready(ctx); err != nil {
		return store.Job{}, err
	}
	change, err := edit.change(true)
	if err != nil {
		return store.Job{}, err
	}
	_, w, err := s.engine.Rebind([]string{id}, change, true)
	if ee := translate(err); errors.Is(ee, ErrNotFound) && ee.Error() == "job not found" {
		return store.Job{}, s.notLive(ctx, id, "change the budgets of job %s")
	}
	if err != nil {
		return store.Job{}, translate(err)
	}
	if err := wait(ctx, w); err != nil {
		return store.Job{}, err
	}
	return s.Job(ctx, id)
}

// RebindJobs edits the bindings of the jobs a filter selects; a job the
// edit does not apply to is left alone, and in-flight ones are left alone
// and reported as blocked.
func (s *Service) RebindJobs(ctx context.Context, f Filter, edit BindingEdit) (RebindResult, error) {
	if err := s.ready(ctx); err != nil {
		return RebindResult{}, err
	}
	change, err := edit.change(false)
	if err != nil {
		return RebindResult{}, err
	}
	ids, err := s.matching(ctx, f)
	if err != nil {
		return RebindResult{}, err
	}
	res, w, err := s.engine.Rebind(ids, change, false)
	if err != nil {
		return RebindResult{}, translate(err)
	}
	return RebindResult(res), wait(ctx, w)
}

// Queues lists the queues of every stored job, as of now.
func (s *Service) Queues(ctx context.Context) ([]string, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	// The engine's first: a job it no longer holds is stored by the time
	// the barrier returns. The store may leave out the queues of ready
	// jobs (store.Store.Queues), which are all live.
	live := s.engine.LiveQueues()
	if err := s.store.Barrier(ctx); err != nil {
		return nil, translate(err)
	}
	stored, err := s.store.Queues(ctx)
	if err != nil {
		return nil, translate(err)
	}
	names := append(stored, live...)
	slices.Sort(names)
	return slices.Compact(names), nil
}

// Reset deletes every cron group first (no entry fires after), then every
// job and budget.
func (s *Service) Reset(ctx context.Context) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	s.cron.mu.Lock()
	crons := s.store.Append(store.DeleteCronGroups())
	s.dropCronLocked()
	jobs := s.engine.Reset()
	s.cron.mu.Unlock()
	if err := wait(ctx, crons); err != nil {
		return err
	}
	return wait(ctx, jobs)
}
