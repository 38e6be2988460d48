package engine

import (
	"sort"

	"github.com/zizq/zizq/store"
)

// PutMode says whether PutBudget may replace an existing budget.
type PutMode uint8

const (
	// CreateOnly refuses an existing key (POST).
	CreateOnly PutMode = iota
	// CreateOrReplace replaces an existing budget, keeping created_at (PUT).
	CreateOrReplace
)

// BudgetView is a budget with, when asked, its live figures.
type BudgetView struct {
	Budget store.Budget
	State  *BudgetState
}

// BudgetState holds a budget's live figures (API.md §17.10).
type BudgetState struct {
	Available      float64
	Capacity       int64
	InFlight       int64
	Held           int64
	Parked         int64
	OldestParkedMs *int64
	NextTokenAt    *int64
	Dispatched     int64
}

// PutBudget creates or replaces a budget. cfg holds the validated
// allocation and strategy; the key and timestamps are set here.
func (e *Engine) PutBudget(key string, cfg store.Budget, mode PutMode) (store.Budget, Waiter, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.enterOp()
	defer e.finishOp()
	ms := e.nowMs()
	cfg.Key, cfg.CreatedAt, cfg.UpdatedAt = key, ms, ms
	a := e.accounts[key]
	if a == nil {
		if err := e.checkBudgetLimit(key, 0); err != nil {
			return store.Budget{}, nil, err
		}
		e.addAccount(cfg)
		return e.commitBudget(cfg)
	}
	if mode == CreateOnly {
		return store.Budget{}, nil, errorf(Conflict, "budget '%s' already exists", key)
	}
	cfg.CreatedAt = a.cfg.CreatedAt
	if err := e.reconfigure(a, cfg); err != nil {
		return store.Budget{}, nil, err
	}
	return e.commitBudget(cfg)
}

// PatchBudget applies a change to an existing budget's configuration; the
// change function validates the merged result.
func (e *Engine) PatchBudget(key string, change func(cfg *store.Budget) error) (store.Budget, Waiter, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.enterOp()
	defer e.finishOp()
	a := e.accounts[key]
	if a == nil {
		return store.Budget{}, nil, errorf(NotFound, "budget '%s' not found", key)
	}
	cfg := a.cfg
	if err := change(&cfg); err != nil {
		return store.Budget{}, nil, err
	}
	cfg.Key, cfg.CreatedAt, cfg.UpdatedAt = key, a.cfg.CreatedAt, e.nowMs()
	if err := e.reconfigure(a, cfg); err != nil {
		return store.Budget{}, nil, err
	}
	return e.commitBudget(cfg)
}

func (e *Engine) commitBudget(cfg store.Budget) (store.Budget, Waiter, error) {
	w := e.journal.Append(store.PutBudget(cfg))
	return cfg, w, nil
}

// reconfigure applies a new configuration, refusing one that an unfinished
// bound job could never pay. The level in tokens is kept (clamped), the new
// rate applies from now, and the line is looked at again at once.
func (e *Engine) reconfigure(a *account, cfg store.Budget) error {
	if err := a.checkBound(cfg); err != nil {
		return err
	}
	if kindOf(cfg) != a.pool.Kind() {
		// Its while_in_flight budgets' groups judge time_based heads.
		e.changed(a)
	}
	a.pool.Reconfigure(cfg.Allocation, cfg.DurationMs, cfg.Burst, kindOf(cfg), e.vnow)
	a.cfg = cfg
	e.changed(a)
	return nil
}

func (a *account) checkBound(cfg store.Budget) error {
	if err := a.checkLimit(cfg.Key, "allocate", "allocation", cfg.Allocation); err != nil {
		return err
	}
	if cfg.Strategy == store.TimeBased && cfg.Burst > 0 {
		return a.checkLimit(cfg.Key, "burst", "burst", cfg.Burst)
	}
	return nil
}

func (a *account) checkLimit(key, verb, noun string, limit int64) error {
	var n, most int64
	for c, count := range a.costs {
		if c > limit {
			n += count
			most = max(most, c)
		}
	}
	if n == 0 {
		return nil
	}
	return errorf(Unprocessable, "budget '%s' cannot %s %d: %d unfinished %s draw up to %d from it. Raise the %s, delete them, or wait for them to drain.",
		key, verb, limit, n, plural(n, "job"), most, noun)
}

func plural(n int64, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// DeleteBudget deletes a budget no unfinished job is bound to.
func (e *Engine) DeleteBudget(key string) (Waiter, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.enterOp()
	defer e.finishOp()
	a := e.accounts[key]
	if a == nil {
		return nil, errorf(NotFound, "budget '%s' not found", key)
	}
	if n := a.bound; n > 0 {
		return nil, errorf(Conflict, "budget '%s' is referenced by %d unfinished %s. Delete them or wait for them to finish before deleting it.", key, n, plural(n, "job"))
	}
	if a.dl != nil {
		e.refills.remove(a.dl)
	}
	delete(e.accounts, key)
	e.obs.budgets++
	w := e.journal.Append(store.DeleteBudget(key))
	return w, nil
}

// Budget returns one budget, with live figures when state is true.
func (e *Engine) Budget(key string, state bool) (BudgetView, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.catchUp()
	a := e.accounts[key]
	if a == nil {
		return BudgetView{}, errorf(NotFound, "budget '%s' not found", key)
	}
	return e.budgetView(a, state), nil
}

// Budgets returns every budget sorted by key.
func (e *Engine) Budgets(state bool) []BudgetView {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.catchUp()
	return e.budgetViews(state)
}

func (e *Engine) budgetViews(state bool) []BudgetView {
	out := make([]BudgetView, 0, len(e.accounts))
	for _, a := range e.accounts {
		out = append(out, e.budgetView(a, state))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Budget.Key < out[j].Budget.Key })
	return out
}

func (e *Engine) budgetView(a *account, state bool) BudgetView {
	v := BudgetView{Budget: a.cfg}
	if !state {
		return v
	}
	st := &BudgetState{
		Available:  round3(a.pool.Available(e.vnow)),
		Capacity:   a.pool.Capacity(),
		InFlight:   a.inFlight,
		Held:       a.pool.Held(),
		Dispatched: a.dispatched,
	}
	var oldest int64 = -1
	for g := range a.served {
		n, front := e.refusedIn(a, g)
		st.Parked += int64(n)
		if front.ok() {
			if at := e.rec(front.idx).readyAt; oldest < 0 || at < oldest {
				oldest = at
			}
		}
	}
	if oldest >= 0 {
		age := max(0, e.nowMs()-oldest)
		st.OldestParkedMs = &age
	}
	if a.dl != nil {
		at := ceilMs(a.dl.at)
		st.NextTokenAt = &at
	}
	v.State = st
	return v
}

func ceilMs(ns int64) int64 {
	ms := ns / 1e6
	if ns%1e6 != 0 {
		ms++
	}
	return ms
}
