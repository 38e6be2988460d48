package engine

import (
	"fmt"
	"time"

	"github.com/zizq/zizq/server/budget"
)

// Settling a job's real cost (docs/API.md §Settling the real cost).
//
// A binding's cost is taken whole at dispatch, and is also an estimate: a
// worker that knows what the job really cost reports it with the job's
// success or failure, and each named time_based or calendar budget gets
// the difference back at once (a lower cost) or pays it now (a higher one,
// which may leave the budget in debt: it pays nothing until the drip, or
// for a calendar budget its next reset, has covered the debt). A
// while_in_flight budget has nothing to settle: its tokens come back when
// the job ends anyway.

// Settle is a job's actual cost to one of the budgets it is bound to.
type Settle struct {
	Key  string
	Cost int64
}

// settleStats counts a budget's settles since the engine started.
type settleStats struct {
	count, credited, debited int64
	// ratio is the mean of actual ÷ estimate over the rated settles
	// (those with an estimate), weighted towards the recent (ratioAlpha);
	// valid once rated > 0.
	ratio float64
	rated int64
}

// ratioAlpha weighs each settle into a budget's cost ratio: an
// exponentially weighted mean over about the last 100 settles.
const ratioAlpha = 2.0 / 101

func (s *settleStats) observe(estimate, actual int64) {
	s.count++
	switch {
	case actual < estimate:
		s.credited += estimate - actual
	case actual > estimate:
		s.debited += actual - estimate
	}
	if estimate <= 0 {
		return // no ratio to an estimate of nothing
	}
	// The plain mean of the first settles, until the weighting takes
	// over: a handful of settles then reads as their mean, not as the
	// first one.
	s.rated++
	s.ratio += max(1/float64(s.rated), ratioAlpha) * (float64(actual)/float64(estimate) - s.ratio)
}

// settling is one settle to apply: a budget the job was bound to at cost
// (the estimate), and the actual cost.
type settling struct {
	b      bind
	actual int64
}

// planSettles checks a job's settles and returns what they change; nothing
// changes until every job of the request has been checked. A key the job
// is not bound to, or a while_in_flight budget, is refused (Unprocessable).
// A settle of a family sub-budget settles the family too, which its
// binding also paid.
func (e *Engine) planSettles(j ref, id string, ss []Settle) ([]settling, error) {
	var out []settling
	binds := e.binds(e.rec(j.idx))
	for i, s := range ss {
		if s.Cost < 0 {
			return nil, errorf(Invalid, "budgets[%d].cost must be at least 0", i)
		}
		for _, prev := range ss[:i] {
			if prev.Key == s.Key {
				return nil, errorf(Unprocessable, "budgets names budget '%s' twice for job %s", s.Key, id)
			}
		}
		b, ok := namedBind(binds, s.Key)
		if !ok {
			return nil, errorf(Unprocessable, "job %s is not bound to budget '%s': budgets[%d].key must name one of its budgets", id, s.Key, i)
		}
		n := len(out)
		for _, x := range binds {
			if (x == b || x.implied && x.a == b.a.parent) && x.a.spends() {
				out = append(out, settling{b: x, actual: s.Cost})
			}
		}
		if len(out) == n {
			return nil, errorf(Unprocessable, "budget '%s' is while_in_flight: its tokens come back when job %s finishes, so it has no cost to settle (budgets[%d])", s.Key, id, i)
		}
	}
	return out, nil
}

// namedBind finds the binding a job was given for key (not one a family
// binding implies).
func namedBind(binds []bind, key string) (bind, bool) {
	for _, b := range binds {
		if !b.implied && b.a.cfg.Key == key {
			return b, true
		}
	}
	return bind{}, false
}

// applySettles settles an in-flight job's costs before it leaves in
// flight; the caller journals the calendar spends (settleSpendOps).
func (e *Engine) applySettles(j ref, plan []settling) {
	if len(plan) == 0 {
		return
	}
	t := e.takerSlots[e.rec(j.idx).aux]
	// A dispatch is kept to the millisecond; it counts as the end of that
	// millisecond, so that a job dispatched in the millisecond its period
	// began (a budget created, or made calendar, a moment before) is of
	// that period, not the one before. A reset falls on a whole
	// millisecond, so a job dispatched before it still counts before it.
	dispatched := (t.inFlight[j.idx].dequeuedAt+1)*int64(time.Millisecond) - 1
	for _, s := range plan {
		a := s.b.a
		a.pool.Settle(s.b.cost, s.actual, dispatched, e.vnow)
		a.settle.observe(s.b.cost, s.actual)
		e.changed(a)
		if a.pool.Kind() == budget.Calendar {
			e.spentBySettle(a)
		}
	}
}

// AckSettled completes in-flight jobs as Ack does, first settling the real
// costs that settles gives by job ID. Every settle is checked before any
// job changes: one refused refuses the request, and nothing is acked. The
// settles of a job that is not in flight are ignored with it (missing).
func (e *Engine) AckSettled(ids []string, settles map[string][]Settle) ([]string, Waiter, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.enterOp()
	defer e.finishOp()
	var plans map[string][]settling // nil without settles: an ack allocates nothing for them
	for _, id := range ids {
		ss := settles[id]
		if len(ss) == 0 {
			continue
		}
		j, ok := e.lookup(id)
		if !ok || e.rec(j.idx).state != stInFlight {
			continue
		}
		plan, err := e.planSettles(j, id, ss)
		if err != nil {
			return nil, nil, err
		}
		if plans == nil {
			plans = make(map[string][]settling, len(settles))
		}
		plans[id] = plan
	}
	missing, w := e.ack(ids, plans)
	return missing, w, nil
}

// settleNote describes a budget's debt for why and the logs.
func settleNote(key string, debt float64, repaidAt int64) string {
	return fmt.Sprintf("budget '%s' is in debt by %s %s, repaid at %s", key, formatTokens(debt), pluralTokens(debt), formatMs(repaidAt))
}

func formatTokens(v float64) string {
	return fmt.Sprintf("%g", round3(v))
}

func pluralTokens(v float64) string {
	if round3(v) == 1 {
		return "token"
	}
	return "tokens"
}

// settleState fills in a budget's settling and calendar figures.
func (e *Engine) settleState(a *account, st *BudgetState) {
	if !a.spends() {
		return
	}
	st.Spends = true
	st.Settles, st.Credited, st.Debited = a.settle.count, a.settle.credited, a.settle.debited
	if a.settle.rated > 0 {
		r := round3(a.settle.ratio)
		st.CostRatio = &r
	}
	if debt := a.pool.Debt(e.vnow); debt > 0 {
		st.Debt = round3(debt)
		if at, ok := a.pool.RepaidAt(e.vnow); ok {
			st.RepaidAt = ceilMs(at)
		}
	}
	if a.pool.Kind() == budget.Calendar {
		st.Calendar = true
		st.Used = a.pool.Used(e.vnow)
		st.NextResetAt = ceilMs(a.pool.NextReset(e.vnow))
	}
}
