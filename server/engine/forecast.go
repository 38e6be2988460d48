package engine

// Forecast is when a budget's current backlog will have been dispatched
// at today's pace (GET /budgets/{key}/forecast, our extension).
type Forecast struct {
	Key string
	// Parked counts the backlog: every unfinished ready job bound to the
	// budget (waiting for it or for another budget, served or not).
	Parked int64
	// DrainsAt is when the last of them is dispatched (ms): exact for a
	// time_based budget whose jobs are bound to it alone and have a taker
	// with room; for while_in_flight from the observed mean time in flight
	// (Estimated), nil until there is an observation; from PausedUntil for
	// a paused budget, nil while paused without an end.
	DrainsAt  *int64
	Estimated bool
}

// WhatIf is a configuration to forecast with instead of the budget's own;
// nil fields keep the budget's.
type WhatIf struct {
	Allocation *int64
	DurationMs *int64
	Burst      *int64
}

// Forecast answers for the budget key (a sub-budget's full key works too),
// with the configuration changed by w when w is not nil; it changes
// nothing. A what-if that the budget's own PATCH would refuse is refused
// alike (Unprocessable).
func (e *Engine) Forecast(key string, w *WhatIf) (Forecast, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.catchUp()
	a := e.accounts[key]
	if a == nil {
		return Forecast{}, errorf(NotFound, "budget '%s' not found", key)
	}
	return Forecast{Key: key}, nil // TODO(lead): issue 16
}

// SubBudgets returns the live sub-budgets of the family parent, by key,
// with live figures when state is true; NotFound when parent is not a
// family.
func (e *Engine) SubBudgets(parent string, state bool) ([]BudgetView, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.catchUp()
	a := e.accounts[parent]
	if a == nil || a.cfg.PerKey == nil {
		return nil, errorf(NotFound, "budget family '%s' not found", parent)
	}
	return []BudgetView{}, nil // TODO(lead): issue 16
}
