package engine

import (
	"math"

	"github.com/zizq/zizq/server/budget"
	"github.com/zizq/zizq/store"
)

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

// flightAlpha weighs each job's time in flight into its budgets' mean: the
// last hundred or so count, so the forecast follows a change of pace.
const flightAlpha = 1.0 / 64

// observeFlight counts a job's time in flight (ns) into a budget's mean.
func (a *account) observeFlight(d int64) {
	d = max(d, 0)
	if a.flightMean == 0 {
		a.flightMean = float64(max(d, 1))
		return
	}
	a.flightMean += flightAlpha * (float64(d) - a.flightMean)
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
		fam, err := e.subFamily(key)
		if err != nil {
			return Forecast{}, err
		}
		if fam == nil {
			return Forecast{}, errorf(NotFound, "budget '%s' not found", key)
		}
		cfg := subConfig(fam, key, 0)
		a = &account{cfg: cfg, pool: newPool(cfg, e.vnow), head: none} // idle: as new
	}
	cfg, pool := a.cfg, a.pool
	if w != nil {
		cfg = w.apply(cfg)
		if err := a.checkBound(cfg); err != nil {
			return Forecast{}, err
		}
		pool.Reconfigure(cfg.Allocation, cfg.DurationMs, cfg.Burst, kindOf(cfg), e.vnow)
	}
	f := Forecast{Key: key, Parked: a.waitN}
	if at, ok := e.drainsAt(a, cfg, pool); ok {
		f.DrainsAt = &at
	}
	f.Estimated = cfg.Strategy != store.TimeBased
	return f, nil
}

func (w *WhatIf) apply(cfg store.Budget) store.Budget {
	if w.Allocation != nil {
		cfg.Allocation = *w.Allocation
	}
	if cfg.Strategy == store.TimeBased {
		if w.DurationMs != nil {
			cfg.DurationMs = *w.DurationMs
		}
		if w.Burst != nil {
			cfg.Burst = *w.Burst
		}
	}
	return cfg
}

// drainsAt is when budget a, configured as cfg with pool p, will have
// dispatched its backlog (ms): exact for time_based (paidAt), from the mean
// time in flight for while_in_flight; false while that is unknown or the
// budget is paused without an end.
func (e *Engine) drainsAt(a *account, cfg store.Budget, p budget.Pool) (int64, bool) {
	if cfg.Strategy == store.TimeBased {
		return e.paidAt(a, p, a.waitCost)
	}
	from := e.vnow
	if e.paused(a) {
		if a.pauseEnd == math.MaxInt64 {
			return 0, false
		}
		from = a.pauseEnd
	}
	if a.waitCost == 0 {
		return ceilMs(from), true
	}
	if a.flightMean == 0 {
		return 0, false
	}
	// allocation tokens turn over once per mean time in flight.
	ns := float64(from) + float64(a.waitCost)*a.flightMean/float64(max(cfg.Allocation, 1))
	if ns >= math.MaxInt64 {
		return math.MaxInt64, true
	}
	return ceilMs(int64(ns)), true
}
