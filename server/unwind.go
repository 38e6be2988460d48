package server

import (
	"context"

	"github.com/zizq/zizq/server/engine"
	"github.com/zizq/zizq/store"
)

// A write is applied to the engine before its commit, so a failed commit
// (disk full, read-only database: 503) leaves the engine ahead of the
// store. Where that could do harm it is undone here:
//
//   - an enqueue: its jobs would be dispatched though they are not durable,
//     so they are deleted again (a worker may already hold one; its ack then
//     gets 404);
//   - a budget creation (POST, PUT, create_with): a job bound to the budget
//     could commit later while the budget never does, and the server would
//     not start again, so the budget is deleted unless the store has it.
//
// Other failed writes are left as the engine has them and are corrected by
// the next restart, which rebuilds the engine from the store: an ack or a
// failure report that did not commit brings its job back as ready (it runs
// again: at-least-once), a delete brings the job back, a patch is undone.
// The undoing deletes are journalled like any change; while the store
// still fails they fail too, harmlessly, since what they delete was never
// stored.

// unwindEnqueue undoes an enqueue whose commit failed.
// admit waits for the commit of enqueued jobs, then lets them be
// dispatched; when the commit fails they are unwound instead, so a failed
// enqueue leaves no trace and no worker ever saw its jobs.
func (s *Server) admit(ctx context.Context, jobs []store.Job, specs []engine.NewJob, w engine.Waiter) error {
	if err := wait(ctx, w); err != nil {
		s.unwindEnqueue(ctx, jobs, specs)
		return err
	}
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	s.engine.Admit(ids)
	return nil
}

func (s *Server) unwindEnqueue(ctx context.Context, jobs []store.Job, specs []engine.NewJob) {
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	s.engine.Delete(ids)
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

// unwindBudgets deletes from the engine the budgets among keys that the
// store does not hold, once every write appended so far has finished (so
// that a creation still committing for another request is seen). A budget
// that jobs are bound to is kept: they are being unwound themselves, or
// committed, which only happens when the store works again.
func (s *Server) unwindBudgets(ctx context.Context, keys []string) {
	if len(keys) == 0 {
		return
	}
	ctx = context.WithoutCancel(ctx)
	if err := s.db.Barrier(ctx); err != nil {
		return
	}
	stored, err := s.db.Budgets(ctx)
	if err != nil {
		s.log.Warn("unwind budgets: read budgets", "err", err)
		return
	}
	have := make(map[string]bool, len(stored))
	for _, b := range stored {
		have[b.Key] = true
	}
	for _, key := range keys {
		if have[key] {
			continue
		}
		if _, err := s.engine.DeleteBudget(key); err == nil {
			s.log.Warn("budget creation did not commit; budget removed", "budget", key)
		}
	}
}
