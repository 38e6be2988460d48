package engine

import (
	"math"
	"sort"
	"time"

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
	// DrainsAt is when the last of them is dispatched (ms), never before
	// now: exact for a time_based budget whose jobs are bound to it alone
	// and have a taker with room; for while_in_flight estimated
	// (Estimated) from the observed mean time in flight; from the end of a
	// pause. A family's is the latest of its own and of its sub-budgets'
	// that hold jobs. nil when it is unknown, Unknown saying why.
	DrainsAt  *int64
	Estimated bool
	Unknown   string
	// Resets counts, for a calendar budget, the resets that come before
	// the backlog is paid: 0 when the current period pays it, n when the
	// n-th reset from now pays its last job (DrainsAt is that reset).
	Resets int64
	// BackingOff: the budget backs off after a refusal, and the forecast
	// is at its effective rate, which climbs back meanwhile.
	BackingOff bool
}

// maxForecastResets bounds the resets a calendar forecast walks, as the
// pool's own PaidAt does.
const maxForecastResets = 10_000

// resetsBy counts the resets from next on at or before at (ms).
func resetsBy(s budget.Schedule, next int64, atMs int64) int64 {
	var n int64
	for r := next; r != math.MaxInt64 && ceilMs(r) <= atMs && n < maxForecastResets; r = s.Next(r) {
		n++
	}
	return n
}

// Why a forecast is unknown.
const (
	UnknownPaused   = "paused without an end"
	UnknownNoFlight = "no job of it has finished yet: no time in flight observed"
	UnknownOverdue  = "jobs run longer than observed"
	UnknownNever    = "never at this pace"
)

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
		a = &account{cfg: cfg, pool: newPool(cfg, nil, e.vnow), head: none} // idle: as new (never calendar: checkTemplate)
	}
	cfg, pool := a.cfg, a.pool
	if w != nil {
		cfg = w.apply(cfg)
		if err := a.checkBound(cfg); err != nil {
			return Forecast{}, err
		}
		if a.sched != nil {
			pool.ReconfigureCalendar(cfg.Allocation, a.sched, e.vnow)
		} else {
			pool.Reconfigure(cfg.Allocation, cfg.DurationMs, cfg.Burst, kindOf(cfg), e.vnow)
		}
	}
	f := Forecast{Key: key, Parked: a.waitN}
	flights := e.flightsOf(a)
	d := e.drainsAt(a, cfg, pool, flights[a])
	if a.fam != nil {
		// Its jobs wait for their sub-budgets too: the last of them goes
		// no sooner than the slowest sub-budget's backlog.
		for _, s := range sortedSubs(a) {
			if s.waitN > 0 {
				d = d.later(e.drainsAt(s, s.cfg, s.pool, flights[s]))
			}
		}
	}
	f.DrainsAt, f.Estimated, f.Unknown = d.at, d.estimated, d.unknown
	f.BackingOff = e.backingOff(a)
	if a.sched != nil && f.DrainsAt != nil {
		f.Resets = resetsBy(a.sched, pool.NextReset(e.vnow), *f.DrainsAt)
	}
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

// drain is one budget's answer: when its backlog is dispatched (ms), nil
// when unknown (and why).
type drain struct {
	at        *int64
	estimated bool
	unknown   string
}

// later is the drain of a backlog that waits for both: the later time;
// unknown when either is.
func (d drain) later(o drain) drain {
	switch {
	case d.at == nil:
		return d
	case o.at == nil:
		return o
	case *o.at > *d.at:
		d.at = o.at
	}
	d.estimated = d.estimated || o.estimated
	return d
}

func drainAt(ms int64, estimated bool) drain { return drain{at: &ms, estimated: estimated} }

// inFlight is one job in flight on a budget: what it holds and when it
// was dispatched (ns).
type inFlight struct {
	cost, since int64
}

// flightsOf returns the jobs in flight on budget a, and on each of its
// sub-budgets when it is a family, by account.
func (e *Engine) flightsOf(a *account) map[*account][]inFlight {
	out := map[*account][]inFlight{}
	for _, t := range e.takerSlots {
		if t == nil {
			continue
		}
		for idx, f := range t.inFlight {
			for _, b := range e.binds(e.rec(idx)) {
				if b.a == a || (a.fam != nil && b.a.parent == a) {
					out[b.a] = append(out[b.a], inFlight{cost: b.cost, since: f.dequeuedAt * int64(time.Millisecond)})
				}
			}
		}
	}
	return out
}

// drainsAt is when budget a, configured as cfg with pool p, will have
// dispatched its backlog: exact for time_based (paidAt), estimated for
// while_in_flight (wifDrainsAt).
func (e *Engine) drainsAt(a *account, cfg store.Budget, p budget.Pool, flights []inFlight) drain {
	if cfg.Strategy != store.WhileInFlight {
		if at, ok := e.paidAt(a, p, a.waitCost); ok {
			return drainAt(at, false)
		}
		if e.paused(a) {
			return drain{unknown: UnknownPaused}
		}
		return drain{unknown: UnknownNever}
	}
	from := e.vnow
	if e.paused(a) {
		if e.pausedUntil(a) == math.MaxInt64 {
			return drain{unknown: UnknownPaused, estimated: true}
		}
		from = e.pausedUntil(a)
	}
	if a.waitCost == 0 {
		return drainAt(ceilMs(from), true)
	}
	if a.flightMean == 0 {
		return drain{unknown: UnknownNoFlight, estimated: true}
	}
	at, ok := wifDrainsAt(from, e.vnow, int64(math.Ceil(a.flightMean)), cfg.Allocation, a.waitCost, flights)
	if !ok {
		return drain{unknown: UnknownOverdue, estimated: true}
	}
	return drainAt(ceilMs(at), true)
}

// wifDrainsAt estimates when a while_in_flight budget of allocation
// tokens dispatches the last of a backlog of need tokens, from (ns, at or
// after now) on, if every job runs mean ns: each token is a slot that
// takes a job of the backlog whenever it is free, one after the other. A
// slot held by a job in flight is free when that job is expected back,
// since+mean; a job in flight longer than mean has no expected end, so its
// slots are left out: they push the estimate out, and when no slot is left
// the estimate is unknown (false). The answer is never before from.
func wifDrainsAt(from, now, mean, allocation, need int64, flights []inFlight) (int64, bool) {
	type slots struct{ at, n int64 }
	sort.Slice(flights, func(i, j int) bool { return flights[i].since < flights[j].since })
	var held int64
	for _, f := range flights {
		held += f.cost
	}
	// Tokens beyond the allocation (a what-if below what is held) come
	// back to nobody: the first ones released pay that debt.
	debt := max(held-allocation, 0)
	var free []slots
	if n := allocation - held; n > 0 {
		free = append(free, slots{from, n})
	}
	for _, f := range flights {
		n := f.cost
		if d := min(debt, n); d > 0 {
			debt, n = debt-d, n-d
		}
		if end := f.since + mean; n > 0 && end > now {
			free = append(free, slots{max(end, from), n})
		}
	}
	if len(free) == 0 {
		return 0, false
	}
	// started(t) counts the backlog's tokens dispatched by t; the answer
	// is the first t at which it reaches need.
	started := func(t int64) int64 {
		var n int64
		for _, s := range free {
			if t >= s.at {
				k := (t-s.at)/mean + 1
				if k > math.MaxInt64/s.n || n > math.MaxInt64-k*s.n {
					return math.MaxInt64
				}
				n += k * s.n
			}
		}
		return n
	}
	lo, hi := free[0].at, free[len(free)-1].at // free is in time order
	for started(hi) < need {
		if hi > math.MaxInt64/2 {
			return math.MaxInt64, true // saturated: never, in practice
		}
		hi = max(hi*2-lo, hi+mean)
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if started(mid) >= need {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, true
}
