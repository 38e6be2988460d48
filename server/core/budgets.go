package core

import (
	"context"

	"github.com/zizq/zizq/server/engine"
	"github.com/zizq/zizq/store"
)

// PutBudget creates a budget (CreateOnly: refusing an existing key) or
// creates or replaces it (CreateOrReplace). cfg holds the validated
// allocation and strategy. A creation whose commit fails is undone.
func (s *Service) PutBudget(ctx context.Context, key string, cfg store.Budget, mode PutMode) (store.Budget, error) {
	if err := s.ready(ctx); err != nil {
		return store.Budget{}, err
	}
	b, w, err := s.engine.PutBudget(key, cfg, enginePutMode(mode))
	if err != nil {
		return store.Budget{}, translate(err)
	}
	if err := wait(ctx, w); err != nil {
		s.unwindBudgets(ctx, []string{key})
		return store.Budget{}, err
	}
	return b, nil
}

// PatchBudget changes an existing budget; change validates the result.
func (s *Service) PatchBudget(ctx context.Context, key string, change func(*store.Budget) error) (store.Budget, error) {
	if err := s.ready(ctx); err != nil {
		return store.Budget{}, err
	}
	b, w, err := s.engine.PatchBudget(key, change)
	if err != nil {
		return store.Budget{}, translate(err)
	}
	return b, wait(ctx, w)
}

// DeleteBudget deletes a budget that no unfinished job and no cron
// entry's template is bound to.
func (s *Service) DeleteBudget(ctx context.Context, key string) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	// Held across the delete, so no entry binds the budget meanwhile.
	s.cron.mu.Lock()
	defer s.cron.mu.Unlock()
	if group, entry, ok := s.cronReference(key); ok {
		if _, err := s.engine.Budget(key, false); err != nil {
			return translate(err) // a missing budget is a 404 first
		}
		return refuse(KindConflict, "budget '%s' is referenced by cron entry '%s' of group '%s'. Delete the entry or unbind the budget before deleting it.", key, entry, group)
	}
	w, err := s.engine.DeleteBudget(key)
	if err != nil {
		return translate(err)
	}
	return wait(ctx, w)
}

// Budget returns one budget, with its live figures when state is true.
func (s *Service) Budget(ctx context.Context, key string, state bool) (BudgetView, error) {
	if err := s.ready(ctx); err != nil {
		return BudgetView{}, err
	}
	v, err := s.engine.Budget(key, state)
	return coreBudgetView(v), translate(err)
}

// Budgets returns every budget sorted by key.
func (s *Service) Budgets(ctx context.Context, state bool) ([]BudgetView, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	return coreBudgetViews(s.engine.Budgets(state)), nil
}

// SubBudgets returns the live sub-budgets of the family parent, by key,
// with their live figures when state is true.
func (s *Service) SubBudgets(ctx context.Context, parent string, state bool) ([]BudgetView, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	v, err := s.engine.SubBudgets(parent, state)
	return coreBudgetViews(v), translate(err)
}

// Forecast returns when the budget key's backlog will have been
// dispatched, at its own pace or at the one w describes (nil: its own);
// it changes nothing.
func (s *Service) Forecast(ctx context.Context, key string, w *WhatIf) (Forecast, error) {
	if err := s.ready(ctx); err != nil {
		return Forecast{}, err
	}
	f, err := s.engine.Forecast(key, (*engine.WhatIf)(w))
	return f, translate(err)
}

// Stats returns the live counts and every budget with its figures.
func (s *Service) Stats(ctx context.Context) (Stats, error) {
	if err := s.ready(ctx); err != nil {
		return Stats{}, err
	}
	return coreStats(s.engine.Stats()), nil
}

// A write is applied to the engine before its commit, so a failed commit
// (disk full, read-only database) leaves the engine ahead of the store.
// Where that could do harm it is undone:
//
//   - an enqueue: its jobs would be dispatched though they are not durable,
//     so they are deleted again before anyone sees them (Enqueue);
//   - a budget creation (POST, PUT, create_with): a job bound to the budget
//     could commit later while the budget never does, and the server would
//     not start again, so the budget is deleted unless the store has it.
//
// Other failed writes are left as the engine has them and are corrected by
// the next restart, which rebuilds the engine from the store: an ack or a
// failure report that did not commit brings its job back as ready (it runs
// again: at-least-once), a delete brings the job back, a patch is undone.

// unwindBudgets deletes from the engine the budgets among keys that the
// store does not hold, once every write appended so far has finished (so
// that a creation still committing for another request is seen). A budget
// that jobs are bound to is kept: they are being unwound themselves, or
// committed, which only happens when the store works again.
func (s *Service) unwindBudgets(ctx context.Context, keys []string) {
	if len(keys) == 0 {
		return
	}
	ctx = context.WithoutCancel(ctx)
	if err := s.store.Barrier(ctx); err != nil {
		return
	}
	stored, err := s.store.Budgets(ctx)
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

// Sizes returns the sizes of the store's files (0 before ready).
func (s *Service) Sizes() (dbBytes, walBytes int64) {
	if !s.IsReady() {
		return 0, 0
	}
	return s.store.Sizes()
}

// QueueDepth returns how many of the store's appended writes wait to
// commit (0 before ready).
func (s *Service) QueueDepth() int {
	if !s.IsReady() {
		return 0
	}
	return s.store.QueueDepth()
}

// Work returns the engine's count of entries examined and decisions made.
func (s *Service) Work() (examined, decisions uint64) {
	if !s.IsReady() {
		return 0, 0
	}
	return s.engine.Work()
}

// Throttle reports that the upstream refused, for budget key without a
// job (POST /budgets/{key}/throttle); it returns the budget with its live
// figures.
func (s *Service) Throttle(ctx context.Context, key string, r Refusal) (BudgetView, error) {
	if err := s.ready(ctx); err != nil {
		return BudgetView{}, err
	}
	v, err := s.engine.Throttle(key, r)
	if err != nil {
		return BudgetView{}, translate(err)
	}
	return coreBudgetView(v), nil
}
