package engine

import (
	"math"

	"github.com/zizq/zizq/server/budget"
	"github.com/zizq/zizq/store"
)

// Calendar budgets (docs/API.md §Calendar budgets): at most the allocation
// is spent per period, and the pool refills to the allocation at each
// instant of a cron expression in a timezone. Unlike a time_based budget,
// a restart must not refill one: what it spent in the current period is
// journalled (store.SpendBudget) with every dispatch that spends it, and a
// taker hands such a job out only once that spend is durable
// (Taker.DrainWait), so the next process starts from at least what was
// delivered.

// ResetParser reads a calendar budget's reset expression in its timezone
// ("" is UTC) into the instants its pool refills. Its error is the
// client's, worded to name the field.
type ResetParser func(expression, timezone string) (budget.Schedule, error)

// checkSchedule refuses a calendar budget whose reset or timezone cannot
// be read, and a family of calendar sub-budgets: what each spent would
// have to be journalled and restored per sub-budget, which is not built.
func (e *Engine) checkSchedule(cfg store.Budget) *Error {
	if cfg.PerKey != nil && cfg.PerKey.Strategy == store.Calendar {
		return errorf(Unprocessable, "per_key.strategy.type calendar is not supported: a family's sub-budgets are time_based or while_in_flight")
	}
	if cfg.Strategy != store.Calendar {
		return nil
	}
	if e.cfg.Resets == nil {
		return errorf(Unprocessable, "calendar budgets are not available on this server")
	}
	if _, err := e.cfg.Resets(cfg.Reset, cfg.Timezone); err != nil {
		return errorf(Unprocessable, "%s", err)
	}
	return nil
}

// scheduleOf is a checked calendar budget's schedule (nil for the other
// strategies). A stored expression that this build cannot read any more
// (a timezone gone from the database) never resets: the budget spends
// what is left of its period and then waits for a PUT, which is the safe
// side of a quota.
func (e *Engine) scheduleOf(cfg store.Budget) budget.Schedule {
	if cfg.Strategy != store.Calendar {
		return nil
	}
	if e.cfg.Resets != nil {
		if s, err := e.cfg.Resets(cfg.Reset, cfg.Timezone); err == nil {
			return s
		}
	}
	return neverResets{}
}

type neverResets struct{}

func (neverResets) Next(int64) int64 { return math.MaxInt64 }

// spendOp records what calendar budget a spent in its current period.
func (e *Engine) spendOp(a *account) store.Op {
	return store.SpendBudget(a.cfg.Key, store.Spent{EndsAt: ceilMs(a.pool.NextReset(e.vnow)), Used: a.pool.Used(e.vnow)})
}

// spends collects the calendar budgets whose spend changed during an
// operation, journalled once each: a dispatch of hundreds of jobs (one
// drain) is one write, not hundreds.
type spends struct {
	byDispatch []*account // flushed when the operation ends
	to         []*Taker   // the takers that wait for that flush
	bySettle   []*account // journalled with the ack or failure
}

// spentByDispatch records that a dispatch to t spent calendar budget a.
func (e *Engine) spentByDispatch(a *account, t *Taker) {
	if !a.dispatchSpent {
		a.dispatchSpent = true
		e.spends.byDispatch = append(e.spends.byDispatch, a)
	}
	if !t.spendWait {
		t.spendWait = true
		e.spends.to = append(e.spends.to, t)
	}
}

// flushSpends journals what the operation's dispatches spent; each taker
// that received such a job waits for it before handing the job out.
func (e *Engine) flushSpends() {
	if len(e.spends.byDispatch) == 0 {
		return
	}
	ops := make([]store.Op, 0, len(e.spends.byDispatch))
	for _, a := range e.spends.byDispatch {
		a.dispatchSpent = false
		ops = append(ops, e.spendOp(a))
	}
	w := e.journal.Append(ops...)
	for _, t := range e.spends.to {
		t.spendWait = false
		t.spent = w
	}
	clear(e.spends.byDispatch)
	clear(e.spends.to)
	e.spends.byDispatch, e.spends.to = e.spends.byDispatch[:0], e.spends.to[:0]
}

// spentBySettle records that a settle changed calendar budget a's spend.
func (e *Engine) spentBySettle(a *account) {
	if !a.settleSpent {
		a.settleSpent = true
		e.spends.bySettle = append(e.spends.bySettle, a)
	}
}

// settleSpendOps appends to ops what the settles spent, once a budget, to
// be durable with the acks and failures that carried them.
func (e *Engine) settleSpendOps(ops []store.Op) []store.Op {
	for _, a := range e.spends.bySettle {
		a.settleSpent = false
		ops = append(ops, e.spendOp(a))
	}
	clear(e.spends.bySettle)
	e.spends.bySettle = e.spends.bySettle[:0]
	return ops
}
