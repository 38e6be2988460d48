package budget

import "math"

// Schedule gives the reset instants of a calendar budget (to the engine, a
// cron expression read in a timezone). The Pool calls Next from its own
// methods, so under the engine's lock: once to apply a reset, once to answer
// for a period that has ended, and up to MaxPaidAtResets−1 times in a
// PaidAt. It must be cheap, and for the Pool to allocate nothing, allocate
// nothing either.
type Schedule interface {
	// Next returns the first reset instant strictly after after (ns), or
	// math.MaxInt64 if there is none.
	Next(after int64) int64
}

// MaxPaidAtResets is the most resets PaidAt looks ahead on a calendar pool:
// a total that takes more periods to pay is reported as paid at
// math.MaxInt64 (never, in practice). It bounds the calls to Schedule.Next
// that PaidAt makes under the engine's lock; 10,000 periods are 27 years of
// daily resets.
const MaxPaidAtResets = 10_000

// NewCalendar returns a calendar pool at time now that has already spent
// used tokens in the current period (what a restart restores; 0 or less is
// none): above the allocation, the pool is in debt until the next reset,
// sched.Next(now). A nil sched never resets. The period's start is not
// known to a Schedule, which only looks forward, so it counts as now: a
// credit for a job dispatched before now is dropped, which can only spend
// less.
func NewCalendar(allocation, used int64, sched Schedule, now int64) Pool {
	return Pool{
		kind:        Calendar,
		allocation:  clampAllocation(allocation),
		sched:       sched,
		used:        max(used, 0),
		periodStart: now,
		nextReset:   upcoming(sched, now),
	}
}

// ReconfigureCalendar makes the pool calendar with allocation and sched at
// time now. A calendar pool keeps what its current period spent, since a
// change of expression or timezone does not give back what was spent; its
// next reset becomes sched.Next(now). A pool that turns calendar starts a
// period at now with nothing spent. Either way it keeps what is held, for a
// later turn to while_in_flight.
func (p *Pool) ReconfigureCalendar(allocation int64, sched Schedule, now int64) {
	if p.kind != Calendar {
		held := p.held
		*p = NewCalendar(allocation, 0, sched, now)
		p.held = held
		return
	}
	p.roll(now)
	p.allocation = clampAllocation(allocation)
	p.sched = sched
	p.nextReset = upcoming(sched, now)
}

// Used returns what a calendar pool spent in the period current at time now,
// and 0 for the other kinds.
func (p *Pool) Used(now int64) int64 {
	if p.kind != Calendar {
		return 0
	}
	return p.usedAt(now)
}

// NextReset returns when the period current at time now ends for a calendar
// pool (math.MaxInt64: never), and 0 for the other kinds.
func (p *Pool) NextReset(now int64) int64 {
	switch {
	case p.kind != Calendar:
		return 0
	case p.resetDue(now):
		return upcoming(p.sched, now)
	default:
		return p.nextReset
	}
}

// upcoming returns sched.Next(after), reading a nil Schedule as one that
// never resets. A Next that is not after after also counts as none: a
// reset at or before now would apply again at every call and lift the
// allocation altogether, where no reset only spends less.
func upcoming(sched Schedule, after int64) int64 {
	if sched == nil {
		return math.MaxInt64
	}
	if at := sched.Next(after); at > after {
		return at
	}
	return math.MaxInt64
}

// resetDue reports whether the current period has ended by now. A next
// reset of math.MaxInt64 is none.
func (p *Pool) resetDue(now int64) bool {
	return now >= p.nextReset && p.nextReset != math.MaxInt64
}

// usedAt returns what was spent in the period current at now.
func (p *Pool) usedAt(now int64) int64 {
	if p.resetDue(now) {
		return 0
	}
	return p.used
}

// roll applies a reset that is due by now. The new period counts from the
// reset that ended the last one: a later reset missed meanwhile saw no
// method called, so no job was dispatched in between.
func (p *Pool) roll(now int64) {
	if !p.resetDue(now) {
		return
	}
	p.used = 0
	p.periodStart = p.nextReset
	p.nextReset = upcoming(p.sched, now)
}

func (p *Pool) debitCalendar(cost int64, now int64) bool {
	p.roll(now)
	ok := cost <= p.allocation-p.used
	p.used = addSaturating(p.used, cost)
	return ok
}

// settleCalendar applies a settle's difference in the current period: a
// debit always, a credit only for a job dispatched in it (see the doc above).
func (p *Pool) settleCalendar(diff, dispatchedAt, now int64) {
	p.roll(now)
	switch {
	case diff > 0:
		p.used = addSaturating(p.used, diff)
	case diff < 0 && dispatchedAt >= p.periodStart:
		// used ≥ 0 and diff ≥ −MaxInt64: no overflow.
		p.used = max(p.used+diff, 0)
	}
}

// paidAtCalendar is PaidAt for total > 0: now if what is left of the
// period pays it, else the k-th reset, after which the k allocations have
// paid the rest, up to MaxPaidAtResets of them.
func (p *Pool) paidAtCalendar(total, now int64) int64 {
	left := max(p.allocation-p.usedAt(now), 0)
	if total <= left {
		return now
	}
	k := (total-left-1)/p.allocation + 1 // ⌈(total−left)/allocation⌉
	if k > MaxPaidAtResets {
		return math.MaxInt64
	}
	at := p.NextReset(now)
	for i := int64(1); i < k && at != math.MaxInt64; i++ {
		at = upcoming(p.sched, at)
	}
	return at
}
