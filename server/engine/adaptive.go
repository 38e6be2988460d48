package engine

import (
	"fmt"
	"math"
	"time"

	"github.com/zizq/zizq/server/budget"
	"github.com/zizq/zizq/store"
)

// Adaptive budgets (docs/API.md §Backing off). A worker that the upstream
// refused (an HTTP 429) says so with the job's failure, or alone; each
// refusal counted multiplies the budget's effective share of its
// configured rate by its decrease, never below its floor, and with no
// refusal the share climbs back linearly to 1 over recover_ms. A
// refusal's retry_after makes the budget pay nothing until then, as a
// pause would, without touching its configuration; refusals within one
// window (the retry_after, at least minRefusalWindow) count once, so a
// hundred workers refused at once halve the rate once, not a hundred
// times.
//
// The share reaches the pool in steps (recoverSteps over recover_ms), each
// at or below the linear climb, so the budget never pays more than its
// effective limit: a time_based budget drips at allocation per
// duration ÷ share (its burst unchanged); a calendar or while_in_flight
// budget pays floor(allocation × share), at least 1. A while_in_flight
// budget's jobs in flight keep what they hold. None of it is stored: a
// restart starts every budget at its configured rate.

// minRefusalWindow is the least time over which refusals count once.
const minRefusalWindow = time.Second

// recoverSteps is how many steps the climb back takes.
const recoverSteps = 50

// backoff is a budget's state after refusals.
type backoff struct {
	// share is the effective share of the configured rate right after
	// the last refusal; the climb starts from it at since (ns: the
	// refusal, or the end of its retry_after).
	share float64
	since int64
	// window ends the time within which a refusal counts with the last
	// one (ns); refusedAt is the last one counted.
	window, refusedAt int64
	throttles         int64
	// applied is the share the pool is configured with, and stepAt when
	// it next changes (ns; 0: it does not).
	applied float64
	stepAt  int64
}

// Refusal is a worker's report that the upstream refused: RetryAfterMs
// (0: none) is how long the budget pays nothing.
type Refusal struct {
	RetryAfterMs int64
}

// FailThrottle is the refusal a failure reports for one of the job's
// budgets; Count makes the failure count toward the job's retry limit.
type FailThrottle struct {
	Budget string
	Refusal
	Count bool
}

// Throttle reports a refusal for budget key, without a job (POST
// /budgets/{key}/throttle). A sub-budget that is not live has nothing to
// back off: NotFound.
func (e *Engine) Throttle(key string, r Refusal) (BudgetView, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.enterOp()
	defer e.finishOp()
	a := e.accounts[key]
	if a == nil {
		return BudgetView{}, errorf(NotFound, "budget '%s' not found", key)
	}
	e.refused(a, r)
	return e.budgetView(a, true), nil
}

// throttleTarget checks a failure's throttle against the job's bindings.
func (e *Engine) throttleTarget(j ref, id string, t *FailThrottle) (*account, error) {
	if t == nil {
		return nil, nil
	}
	b, ok := namedBind(e.binds(e.rec(j.idx)), t.Budget)
	if !ok {
		return nil, errorf(Unprocessable, "job %s is not bound to budget '%s': throttle.budget must name one of its budgets", id, t.Budget)
	}
	return b.a, nil
}

// refused counts a refusal of budget a now.
func (e *Engine) refused(a *account, r Refusal) {
	now := e.vnow
	if a.bo == nil {
		a.bo = &backoff{share: 1, applied: 1}
	}
	bo := a.bo
	if now < bo.window {
		return // counted with the last one
	}
	retry := max(r.RetryAfterMs, 0) * int64(time.Millisecond)
	bo.throttles++
	bo.refusedAt = now
	bo.window = now + max(retry, int64(minRefusalWindow))
	if retry > 0 && now+retry > a.throttleEnd {
		a.throttleEnd = now + retry
		e.pauseChanged(a)
	}
	if ad := a.cfg.Adaptive; ad != nil {
		bo.share = max(ad.Floor, bo.linearShare(now, ad)*ad.Decrease)
		bo.since = max(now, a.throttleEnd)
		e.applyShare(a)
	}
	e.changed(a)
}

// linearShare is the share at t on the climb back.
func (bo *backoff) linearShare(t int64, ad *store.Adaptive) float64 {
	if t <= bo.since || ad.RecoverMs <= 0 {
		return bo.share
	}
	gone := float64(t-bo.since) / (float64(ad.RecoverMs) * float64(time.Millisecond))
	return min(1, bo.share+(1-bo.share)*gone)
}

// steppedShare is the share the pool pays at t, at or below the climb, and
// when the next step comes (0: none).
func (bo *backoff) steppedShare(t int64, ad *store.Adaptive) (share float64, next int64) {
	if bo.share >= 1 {
		return 1, 0
	}
	step := max(ad.RecoverMs*int64(time.Millisecond)/recoverSteps, 1)
	if t < bo.since {
		return bo.share, bo.since + step
	}
	k := (t - bo.since) / step
	if k >= recoverSteps {
		return 1, 0
	}
	return bo.linearShare(bo.since+k*step, ad), bo.since + (k+1)*step
}

// applyShare configures the pool with the share due now.
func (e *Engine) applyShare(a *account) {
	bo, ad := a.bo, a.cfg.Adaptive
	if bo == nil {
		return
	}
	share, next := 1.0, int64(0)
	if ad != nil {
		share, next = bo.steppedShare(e.vnow, ad)
	}
	bo.stepAt = next
	if share != bo.applied {
		bo.applied = share
		e.configurePool(a, a.cfg)
		e.changed(a)
	}
	e.deadlineDirty(a)
}

// share is the effective share of the configured rate the pool pays.
func (a *account) share() float64 {
	if a.bo == nil {
		return 1
	}
	return a.bo.applied
}

// configurePool gives a's pool the configuration cfg at the budget's
// effective share.
func (e *Engine) configurePool(a *account, cfg store.Budget) {
	alloc, dur := effective(cfg, a.share())
	if a.sched != nil {
		a.pool.ReconfigureCalendar(alloc, a.sched, e.vnow)
		return
	}
	a.pool.Reconfigure(alloc, dur, cfg.Burst, kindOf(cfg), e.vnow)
}

// effective returns the allocation and duration a configuration pays at
// share of its rate: a time_based budget a longer duration (its burst and
// allocation unchanged), the others a smaller allocation, at least 1.
func effective(cfg store.Budget, share float64) (alloc, durationMs int64) {
	if share >= 1 {
		return cfg.Allocation, cfg.DurationMs
	}
	if cfg.Strategy == store.TimeBased {
		d := math.Ceil(float64(cfg.DurationMs) / share)
		return cfg.Allocation, int64(min(d, budget.MaxDurationMs))
	}
	return max(1, int64(math.Floor(float64(cfg.Allocation)*share))), cfg.DurationMs
}

// effectiveAllocation is what the budget pays at its share, in its own
// terms: for time_based, tokens per its configured duration.
func effectiveAllocation(cfg store.Budget, share float64) float64 {
	alloc, dur := effective(cfg, share)
	if cfg.Strategy == store.TimeBased && dur > 0 {
		return round3(float64(alloc) * float64(cfg.DurationMs) / float64(dur))
	}
	return float64(alloc)
}

// stepBackoff applies a due step of the climb, and the end of a
// retry_after.
func (e *Engine) stepBackoff(a *account) {
	if a.throttleEnd != 0 && a.throttleEnd <= e.vnow {
		a.throttleEnd = 0
		e.pauseChanged(a)
	}
	if a.bo != nil && a.bo.stepAt != 0 && a.bo.stepAt <= e.vnow {
		e.applyShare(a)
	}
}

// backoffDeadline is the budget's next step of the climb or end of a
// retry_after, if any (refreshDeadlines takes the earliest deadline).
func (e *Engine) backoffDeadline(a *account) (int64, bool) {
	at, ok := int64(0), false
	if a.throttleEnd > e.vnow {
		at, ok = a.throttleEnd, true
	}
	if a.bo != nil && a.bo.stepAt != 0 && (!ok || a.bo.stepAt < at) {
		at, ok = a.bo.stepAt, true
	}
	return at, ok
}

// backingOff reports whether the budget pays less than configured now.
func (e *Engine) backingOff(a *account) bool {
	return a.throttleEnd > e.vnow || a.share() < 1
}

// backoffState fills in a budget's back-off figures.
func (e *Engine) backoffState(a *account, st *BudgetState) {
	if a.cfg.Adaptive == nil && a.bo == nil {
		return
	}
	st.Adaptive = true
	st.EffectiveAllocation = effectiveAllocation(a.cfg, a.share())
	if a.throttleEnd > e.vnow {
		st.ThrottledUntil = ceilMs(a.throttleEnd)
	}
	if a.bo != nil {
		st.Throttles = a.bo.throttles
	}
}

// backoffWhy fills in why's figures of a backing-off budget.
func (e *Engine) backoffWhy(a *account, wb *WhyBudget) {
	if !e.backingOff(a) || a.bo == nil {
		return
	}
	at := ceilMs(a.bo.refusedAt)
	wb.RefusedAt = &at
	if a.cfg.Adaptive != nil {
		eff := effectiveAllocation(a.cfg, a.share())
		wb.Effective = &eff
	}
	if a.throttleEnd > e.vnow {
		until := ceilMs(a.throttleEnd)
		wb.ThrottledUntil = &until
	}
}

// backoffNote describes a backing-off budget for why.
func backoffNote(b WhyBudget, cfg store.Budget) string {
	note := fmt.Sprintf("budget '%s' backs off after the upstream refused at %s", b.Key, formatMs(*b.RefusedAt))
	if b.Effective != nil {
		note += fmt.Sprintf(" (effective %s of %s)", rateWords(cfg, *b.Effective), rateWords(cfg, float64(cfg.Allocation)))
	}
	if b.ThrottledUntil != nil {
		note += fmt.Sprintf("; it pays nothing until %s", formatMs(*b.ThrottledUntil))
	}
	return note
}

// rateWords writes an allocation as a rate for time_based budgets
// ("50/s"), plain for the others.
func rateWords(cfg store.Budget, alloc float64) string {
	n := fmt.Sprintf("%g", round3(alloc))
	if cfg.Strategy != store.TimeBased {
		return n
	}
	switch cfg.DurationMs {
	case 1000:
		return n + "/s"
	case 60_000:
		return n + "/min"
	case 3_600_000:
		return n + "/h"
	case 86_400_000:
		return n + "/day"
	}
	return fmt.Sprintf("%s per %d ms", n, cfg.DurationMs)
}
