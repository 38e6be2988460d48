package engine

import (
	"sort"
	"time"

	"github.com/zizq/zizq/server/budget"
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
	// Weight is a sub-budget's share of its family's turns (weights.go);
	// 0 for every other budget.
	Weight int64
}

// BudgetState holds a budget's live figures (docs/API.md §Live budget state).
type BudgetState struct {
	Available      float64
	Capacity       int64
	InFlight       int64
	Held           int64
	Parked         int64
	OldestParkedMs *int64
	NextTokenAt    *int64
	Dispatched     int64
	// SubBudgets counts a family's live sub-budgets (0 for other budgets).
	SubBudgets int64
	// Spends is set for time_based and calendar budgets, whose jobs'
	// costs settle: Debt is what one owes (tokens, 0 when none) and
	// RepaidAt (ms) when it will have been repaid; Settles, Credited and
	// Debited count its settles and their tokens since the server
	// started, and CostRatio is their mean actual ÷ estimate over about
	// the last 100 (nil before the first).
	Spends                     bool
	Debt                       float64
	RepaidAt                   int64
	Settles, Credited, Debited int64
	CostRatio                  *float64
	// Calendar is set for calendar budgets: Used is what it spent in the
	// current period, which ends at NextResetAt (ms).
	Calendar    bool
	Used        int64
	NextResetAt int64
	// Adaptive is set for a budget that backs off (or was throttled):
	// EffectiveAllocation is what it pays at now (per its duration, for
	// time_based), ThrottledUntil (ms, 0 when not) the end of a
	// refusal's retry_after, Throttles the refusals it counted.
	Adaptive            bool
	EffectiveAllocation float64
	ThrottledUntil      int64
	Throttles           int64
	// Expired counts the jobs that died of their start_by while the
	// budget refused them, since the server started (deadline.go).
	Expired int64
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
	if err := e.checkPauseEnd(cfg); err != nil {
		return store.Budget{}, nil, err
	}
	if err := e.checkManaged(key); err != nil {
		return store.Budget{}, nil, err
	}
	if err := e.checkSchedule(cfg); err != nil {
		return store.Budget{}, nil, err
	}
	a := e.accounts[key]
	if a == nil {
		if err := e.checkBudgetLimit(key, 0); err != nil {
			return store.Budget{}, nil, err
		}
		return e.commitBudget(e.addAccount(cfg))
	}
	if mode == CreateOnly {
		return store.Budget{}, nil, errorf(Conflict, "budget '%s' already exists", key)
	}
	cfg.CreatedAt = a.cfg.CreatedAt
	if cfg.PerKey != nil {
		cfg.SubPauses = a.cfg.SubPauses // its sub-budgets' own, not its configuration
	}
	if err := e.reconfigure(a, cfg); err != nil {
		return store.Budget{}, nil, err
	}
	return e.commitBudget(a)
}

// PatchBudget applies a change to an existing budget's configuration; the
// change function validates the merged result.
func (e *Engine) PatchBudget(key string, change func(cfg *store.Budget) error) (store.Budget, Waiter, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.enterOp()
	defer e.finishOp()
	if fam := e.managedBy(key); fam != nil {
		return e.patchSub(fam, key, change)
	}
	a := e.accounts[key]
	if a == nil {
		return store.Budget{}, nil, errorf(NotFound, "budget '%s' not found", key)
	}
	cfg := a.cfg
	if err := change(&cfg); err != nil {
		return store.Budget{}, nil, err
	}
	if cfg.PerKey == nil {
		cfg.SubPauses = nil // no family, no sub-budgets (checkTemplate)
	}
	cfg.Key, cfg.CreatedAt, cfg.UpdatedAt = key, a.cfg.CreatedAt, e.nowMs()
	if err := e.checkPauseEnd(cfg); err != nil {
		return store.Budget{}, nil, err
	}
	if err := e.checkSchedule(cfg); err != nil {
		return store.Budget{}, nil, err
	}
	if err := e.reconfigure(a, cfg); err != nil {
		return store.Budget{}, nil, err
	}
	return e.commitBudget(a)
}

// commitBudget journals a budget's configuration, and for a calendar
// budget what it spent in the current period: the period may end at
// another instant now, and the store's copy must say so.
func (e *Engine) commitBudget(a *account) (store.Budget, Waiter, error) {
	ops := []store.Op{store.PutBudget(a.cfg)}
	if a.pool.Kind() == budget.Calendar {
		ops = append(ops, e.spendOp(a))
	}
	return a.cfg, e.journal.Append(ops...), nil
}

// reconfigure applies a new configuration, refusing one that an unfinished
// bound job could never pay. The level in tokens is kept (clamped), the new
// rate applies from now, and the line is looked at again at once.
func (e *Engine) reconfigure(a *account, cfg store.Budget) error {
	if err := a.checkBound(cfg); err != nil {
		return err
	}
	if err := e.checkTemplate(a, cfg); err != nil {
		return err
	}
	kindChange := kindOf(cfg) != a.pool.Kind()
	if kindChange {
		// Its while_in_flight budgets' groups judge time_based heads.
		e.changed(a)
	}
	a.sched = e.scheduleOf(cfg)
	if cfg.Adaptive == nil && a.bo != nil {
		a.bo.share, a.bo.applied, a.bo.stepAt = 1, 1, 0 // no back-off any more
	}
	e.configurePool(a, cfg)
	if kindChange {
		e.kindChanged(a)
	}
	a.cfg = cfg
	e.applyShare(a)
	e.changed(a)
	if end := pauseEnd(cfg); end != a.pauseEnd {
		a.pauseEnd = end
		e.pauseChanged(a)
	}
	e.applyTemplate(a)
	return nil
}

// checkManaged refuses a change to a key that a family manages: it names
// one of the family's sub-budgets, which follow the family's template.
func (e *Engine) checkManaged(key string) error {
	if fam := e.managedBy(key); fam != nil {
		return errorf(Conflict, "budget '%s' is managed by family '%s': change the family's per_key instead", key, fam.cfg.Key)
	}
	return nil
}

// checkTemplate refuses a family template (with its Keys' allocations)
// that a bound job of a live sub-budget could never pay, and the removal
// of the template of a family with live sub-budgets (their jobs would lose
// their budgets).
func (e *Engine) checkTemplate(a *account, fam store.Budget) error {
	t := fam.PerKey
	if a.fam == nil {
		return nil
	}
	if t == nil {
		var n int64
		for _, s := range a.fam.subs {
			n += s.bound
		}
		if n > 0 {
			return errorf(Conflict, "budget '%s' is a family with %d unfinished %s bound to its sub-budgets: its per_key cannot be removed until they finish", a.cfg.Key, n, plural(n, "job"))
		}
		return nil
	}
	cfg := store.Budget{Key: a.cfg.Key + "/*", Allocation: t.Allocation, Strategy: t.Strategy, DurationMs: t.DurationMs, Burst: t.Burst}
	for _, s := range sortedSubs(a) {
		cfg.Key, cfg.Allocation = s.cfg.Key, keyAllocation(fam, t, s.cfg.Key)
		if err := s.checkBound(cfg); err != nil {
			return err
		}
	}
	return nil
}

// checkPauseEnd refuses a pause whose end has already come: taken as
// given it would lift at once, ending any pause the budget had, which a
// caller who meant to pause it never wants.
func (e *Engine) checkPauseEnd(cfg store.Budget) error {
	if cfg.PausedUntil <= 0 || cfg.PausedUntil*int64(time.Millisecond) > e.vnow {
		return nil
	}
	return errorf(Unprocessable, "paused_until must be in the future: %d (%s) has passed, it is %s now",
		cfg.PausedUntil, formatMs(cfg.PausedUntil), formatMs(e.nowMs()))
}

// formatMs writes a unix time in ms as the engine's messages do.
func formatMs(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }

// pastPauseCleared drops a pause that ended while the server was down.
func (e *Engine) pastPauseCleared(cfg store.Budget) store.Budget {
	if end := pauseEnd(cfg); end != 0 && end <= e.vnow {
		cfg.Paused, cfg.PausedUntil = false, 0
	}
	return cfg
}

// dropSubs releases every sub-budget of a family that no job is bound to
// any more (it is deleted, or no family any more).
func (e *Engine) dropSubs(a *account) {
	for _, s := range sortedSubs(a) {
		if s.dl != nil {
			e.refills.remove(s.dl)
			s.dl = nil
		}
		e.dropAccount(s)
		delete(a.fam.subs, s.cfg.Key)
		e.subBudgets--
	}
}

// applyTemplate makes a budget a family or not as its configuration says,
// and gives every live sub-budget the family's template.
func (e *Engine) applyTemplate(a *account) {
	if a.cfg.PerKey == nil {
		if a.fam != nil {
			e.dropSubs(a) // checkTemplate: none has a bound job
			a.fam = nil
		}
		return
	}
	if a.fam == nil {
		// Its virtual time starts at the present: tags start from now.
		a.fam = &family{subs: map[string]*account{}, vtime: e.nowMs()}
		return
	}
	for _, s := range a.fam.subs {
		cfg := subConfig(a, s.cfg.Key, s.cfg.CreatedAt)
		cfg.UpdatedAt = e.nowMs()
		was := s.pool.Kind()
		s.pool.Reconfigure(cfg.Allocation, cfg.DurationMs, cfg.Burst, kindOf(cfg), e.vnow)
		if s.pool.Kind() != was {
			e.kindChanged(s)
		}
		s.cfg = cfg
		s.setWeight(weightOf(a.cfg, s.cfg.Key))
		e.changed(s)
		if s.bound == 0 && !e.releaseSub(s) {
			e.deadlineDirty(s) // an idle one goes once its new pool is full
		}
	}
}

func sortedSubs(a *account) []*account {
	out := make([]*account, 0, len(a.fam.subs))
	for _, s := range a.fam.subs {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].cfg.Key < out[j].cfg.Key })
	return out
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
	for c, count := range a.costs.all() {
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
	if err := e.checkManaged(key); err != nil {
		return nil, err
	}
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
	if a.fam != nil {
		e.dropSubs(a)
	}
	e.dropAccount(a)
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
		fam, err := e.subFamily(key)
		if err != nil {
			return BudgetView{}, err
		}
		if fam != nil {
			// An idle sub-budget: as it would be made, with a full pool.
			fresh := account{cfg: subConfig(fam, key, e.nowMs()), pool: newPool(subConfig(fam, key, 0), nil, e.vnow), head: none,
				parent: fam, weight: weightOf(fam.cfg, key)}
			return e.budgetView(&fresh, state), nil
		}
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
	out := make([]BudgetView, 0, len(e.accounts)-e.subBudgets)
	for _, a := range e.accounts {
		if a.parent == nil {
			out = append(out, e.budgetView(a, state))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Budget.Key < out[j].Budget.Key })
	return out
}

func (e *Engine) budgetView(a *account, state bool) BudgetView {
	v := BudgetView{Budget: a.cfg}
	if a.parent != nil {
		v.Weight = a.weight
	}
	if !state {
		return v
	}
	st := &BudgetState{
		Available:  round3(a.pool.Available(e.vnow)),
		Capacity:   a.pool.Capacity(),
		InFlight:   a.inFlight,
		Held:       a.pool.Held(),
		Dispatched: a.dispatched,
		Expired:    a.expired,
	}
	if a.fam != nil {
		st.SubBudgets = int64(len(a.fam.subs))
	}
	e.settleState(a, st)
	e.backoffState(a, st)
	var oldest int64 = -1
	for g := range a.servedGroups() {
		n, front := e.refusedIn(a, g)
		st.Parked += int64(n)
		if front.ok() {
			if at := e.rec(front.idx).readyAt(); oldest < 0 || at < oldest {
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
