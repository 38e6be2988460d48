// Package budget keeps the token state of one budget (docs/API.md §Strategies)
// with exact integer arithmetic.
//
// A Pool does no locking, starts no goroutines, reads no clock and allocates
// nothing: the dispatch engine calls it under its own lock and passes the time
// in. Times are int64 nanoseconds on any monotonic scale the caller picks. The
// only code not its own that it runs is a calendar pool's Schedule.
//
// # time_based arithmetic
//
// A time_based budget drips allocation A tokens per duration D ms into a pool
// capped at capacity C. One token is D·10^6 units (D ms in ns), so the pool
// gains exactly A units per nanosecond and a job of cost c needs c·D·10^6
// units: every level the pool can reach is an integer number of units, and
// the first nanosecond at which a cost becomes affordable is an exact ceiling
// division. The pool is brought up to date lazily, from the time it was last
// brought up to date, so the lateness of whatever timer woke the caller never
// accumulates.
//
// # Settling and debt
//
// A job is debited its estimate at dispatch and may report its actual cost
// when it finishes (Settle). A credit (actual below the estimate) first pays
// down any debt, then raises the level, never above the capacity. A debit
// (actual above it) is taken from the level, and what the level lacks becomes
// debt: the pool is below zero. A time_based pool in debt pays nothing, and
// its drip repays the debt before it fills the level again. The debt is capped
// at MaxAllocation tokens, which keeps it within the bounds below; a settle
// that would owe more is forgiven the rest.
//
// # calendar periods
//
// A calendar budget may spend its allocation once per period: at each reset
// instant of its Schedule the pool refills to the allocation, and nothing
// drips in between. The pool counts what the current period spent (used),
// in whole tokens, saturating at math.MaxInt64.
//
// A settle above the estimate can leave used above the allocation: the pool
// is then in debt and pays nothing more this period. The reset forgives the
// debt, unlike time_based: the period's quota is what the upstream grants
// per period, and the upstream's own count starts again at its reset
// whatever the last period overspent, so carrying the debt over would refuse
// work that the upstream accepts. A credit for a job dispatched before the
// current period is dropped for the same reason: its period's spend is gone,
// and crediting it to this one would let this period spend more than its
// allocation.
//
// Resets are applied lazily: the first method that comes at or after the
// next reset applies it, whatever the time since, with one call to the
// Schedule (never a walk over the missed ones). Methods that only read
// answer as if it had been applied, without changing the pool.
//
// # Bounds
//
// The products need more than 64 bits, so they use u128. With A, C ≤ 2^31−1
// and D ≤ 2^53 (inputs are clamped to these ranges):
//
//	unit       = D·10^6             < 2^73
//	capacity   = C·unit             < 2^104  (the level never exceeds it)
//	debt       ≤ MaxAllocation·unit < 2^104  (capped; the level is 0 meanwhile)
//	refill     = A·Δt, Δt < 2^64    < 2^95   (level + refill < 2^105)
//	need       = debt + cost·unit   < 2^105, cost·unit computed only for cost ≤ C
//	settle     = d·unit, d ≤ 2·MaxAllocation < 2^105 (level + it, debt + it < 2^106)
//	paid       = debt + total·unit: total·unit is checked, and from 2^126 on
//	             the wait is past the int64 range
//	reconfigure: remainder·D_new    < 2^73·2^53 = 2^126
//
// so no operation overflows 128 bits. A calendar pool counts whole tokens in
// int64, saturating.
package budget

import "math"

// Bounds of a budget's configuration (docs/API.md §Budget bodies).
// Constructors and Reconfigure clamp their inputs into these ranges.
const (
	// MaxAllocation is the largest allocation, and the largest burst. It is
	// also the largest debt of a time_based pool, in tokens.
	MaxAllocation = math.MaxInt32
	// MaxDurationMs is the largest time_based duration (about 285,000 years).
	MaxDurationMs = 1 << 53
)

// nsPerMs converts a duration in ms to the number of units in one token.
const nsPerMs = 1_000_000

// Kind is the strategy of a budget.
type Kind uint8

const (
	// WhileInFlight budgets hold each job's cost while the job is in flight.
	WhileInFlight Kind = iota
	// TimeBased budgets drip tokens in at a fixed rate; spent tokens never return.
	TimeBased
	// Calendar budgets grant their allocation once per period of a Schedule.
	Calendar
)

// String returns the wire name of the strategy.
func (k Kind) String() string {
	switch k {
	case WhileInFlight:
		return "while_in_flight"
	case TimeBased:
		return "time_based"
	case Calendar:
		return "calendar"
	default:
		return "unknown"
	}
}

// debugChecks makes a Debit that the pool cannot pay, or a Release of more
// than is held, panic instead of saturating. Tests turn it on; production
// code never panics here.
var debugChecks = false

// Pool is the token state of one budget.
//
// The zero Pool is a while_in_flight pool with allocation 0, which pays
// nothing; build pools with NewWhileInFlight, NewTimeBased or NewCalendar.
type Pool struct {
	kind       Kind
	allocation int64
	// held is the cost of the debits not yet released, whatever the kind at
	// debit time: when a budget turns into while_in_flight it then holds
	// exactly what its in-flight jobs cost (docs/API.md §Changing a budget),
	// and a job that leaves in flight while the budget is time_based or
	// calendar still gives its cost back, so a round trip through another
	// kind cannot leak tokens. Settles leave it alone.
	held int64

	// time_based only.
	durationMs int64
	capacity   int64 // C in tokens: burst if set, else allocation
	unit       u128  // units in one token: durationMs·10^6
	capUnits   u128  // capacity·unit
	level      u128  // units in the pool at time last; 0 while there is debt
	debt       u128  // units owed at time last, at most MaxAllocation tokens
	last       int64 // the time level and debt were last brought up to date

	// calendar only (calendar.go).
	sched       Schedule
	used        int64 // tokens spent in the current period, saturating
	periodStart int64 // when the current period began (see roll)
	nextReset   int64 // when it ends; math.MaxInt64: never
}

// NewWhileInFlight returns a while_in_flight pool holding nothing.
func NewWhileInFlight(allocation int64) Pool {
	return Pool{kind: WhileInFlight, allocation: clampAllocation(allocation)}
}

// NewTimeBased returns a full time_based pool at time now. A burst of 0
// (or less) means unset: the capacity is then the allocation.
func NewTimeBased(allocation, durationMs, burst int64, now int64) Pool {
	var p Pool
	p.setTimeBased(allocation, durationMs, burst)
	p.level = p.capUnits
	p.last = now
	return p
}

// setTimeBased installs a time_based configuration; it leaves level, debt,
// last and held alone.
func (p *Pool) setTimeBased(allocation, durationMs, burst int64) {
	p.kind = TimeBased
	p.allocation = clampAllocation(allocation)
	p.durationMs = min(max(durationMs, 1), MaxDurationMs)
	p.capacity = p.allocation
	if burst > 0 {
		p.capacity = min(burst, MaxAllocation)
	}
	p.unit = mul64x64(uint64(p.durationMs), nsPerMs)
	p.capUnits = p.unit.mul64(uint64(p.capacity))
}

func clampAllocation(a int64) int64 { return min(max(a, 1), MaxAllocation) }

// addSaturating returns x+y for y ≥ 0, saturating at math.MaxInt64.
func addSaturating(x, y int64) int64 {
	if x > math.MaxInt64-y {
		return math.MaxInt64
	}
	return x + y
}

// Kind returns the pool's strategy.
func (p *Pool) Kind() Kind { return p.kind }

// Capacity returns the most tokens the pool can hold: the burst (else the
// allocation) for time_based, the allocation for the other kinds.
func (p *Pool) Capacity() int64 {
	if p.kind == TimeBased {
		return p.capacity
	}
	return p.allocation
}

// Held returns the tokens held by in-flight jobs of a while_in_flight pool,
// and 0 for the other kinds.
func (p *Pool) Held() int64 {
	if p.kind != WhileInFlight {
		return 0
	}
	return p.held
}

// CanPay reports whether the pool can pay cost at time now. A cost of 0 or
// less is always payable; any other is not while the pool is in debt.
func (p *Pool) CanPay(cost int64, now int64) bool {
	if cost <= 0 {
		return true
	}
	switch p.kind {
	case TimeBased:
		if cost > p.capacity {
			return false
		}
		// In debt the level is 0, which pays no cost above 0.
		level, _ := p.stateAt(now)
		return !level.less(p.unit.mul64(uint64(cost)))
	case Calendar:
		return cost <= p.allocation-p.usedAt(now)
	default:
		return cost <= p.allocation-p.held
	}
}

// Debit spends cost at time now. The caller must have checked CanPay under
// the same lock; a Debit the pool cannot pay empties a time_based pool,
// spends past the allocation of a calendar one (or holds more than the
// allocation of a while_in_flight one) rather than panicking. Every Debit
// must be matched by exactly one Release, whatever the pool's kind at
// either moment.
func (p *Pool) Debit(cost int64, now int64) {
	if !p.debit(cost, now) && debugChecks {
		panic("budget: debit the pool cannot pay")
	}
}

// debit is Debit; it reports false if the pool could not pay.
func (p *Pool) debit(cost int64, now int64) bool {
	if cost <= 0 {
		return true
	}
	p.held = addSaturating(p.held, cost)
	switch p.kind {
	case TimeBased:
		return p.debitTimeBased(cost, now)
	case Calendar:
		return p.debitCalendar(cost, now)
	default:
		return p.held <= p.allocation
	}
}

func (p *Pool) debitTimeBased(cost int64, now int64) bool {
	p.advance(now)
	if cost > p.capacity {
		p.level = u128{}
		return false
	}
	need := p.unit.mul64(uint64(cost))
	if p.level.less(need) {
		p.level = u128{}
		return false
	}
	p.level = p.level.sub(need)
	return true
}

// Release gives back cost when a job debited from this pool leaves in flight.
// A while_in_flight pool can pay it again at once; a time_based or calendar
// pool refunds nothing (docs/API.md §Strategies) but stops counting the job
// as in flight, which matters if the budget later turns into while_in_flight.
func (p *Pool) Release(cost int64) {
	if !p.release(cost) && debugChecks {
		panic("budget: release of more than is held")
	}
}

// release is Release; it reports false if cost exceeded what was held.
func (p *Pool) release(cost int64) bool {
	if cost <= 0 {
		return true
	}
	if cost > p.held {
		p.held = 0
		return false
	}
	p.held -= cost
	return true
}

// Settle applies, at time now, the actual cost of a job that was debited
// estimate at dispatchedAt (negative costs count as 0). A time_based or
// calendar pool is credited the difference, or debited it, into debt if
// need be (see the package doc); a calendar pool drops the credit of a job
// dispatched before its current period began, and a time_based pool
// ignores dispatchedAt. A while_in_flight pool ignores the settle: its
// tokens come back on Release. Settle leaves what is held alone: the
// dispatch's Release, of the estimate, still comes separately.
func (p *Pool) Settle(estimate, actual, dispatchedAt, now int64) {
	// Both in [0, MaxInt64], so the difference fits.
	diff := max(actual, 0) - max(estimate, 0)
	switch p.kind {
	case TimeBased:
		p.settleTimeBased(diff, now)
	case Calendar:
		p.settleCalendar(diff, dispatchedAt, now)
	}
}

// settleMost is the most tokens a time_based settle moves either way: a
// credit cannot do more than repay the largest debt and fill the largest
// capacity, nor a debit more than empty that capacity and owe the largest
// debt, so clamping to it changes nothing but the size of the products.
const settleMost = 2 * MaxAllocation

func (p *Pool) settleTimeBased(diff int64, now int64) {
	p.advance(now)
	switch {
	case diff < 0:
		p.credit(p.unit.mul64(uint64(min(-diff, settleMost))))
	case diff > 0:
		p.charge(p.unit.mul64(uint64(min(diff, settleMost))))
	}
}

// credit gives units back: to the debt first, then to the level.
func (p *Pool) credit(units u128) {
	if units.less(p.debt) {
		p.debt = p.debt.sub(units)
		return
	}
	units = units.sub(p.debt)
	p.debt = u128{}
	p.level = p.level.add(units)
	if p.capUnits.less(p.level) {
		p.level = p.capUnits
	}
}

// charge takes units from the level; what it lacks is owed, up to the cap.
func (p *Pool) charge(units u128) {
	if !p.level.less(units) {
		p.level = p.level.sub(units)
		return
	}
	p.debt = p.debt.add(units.sub(p.level))
	p.level = u128{}
	if most := p.unit.mul64(MaxAllocation); most.less(p.debt) {
		p.debt = most
	}
}

// Available returns the tokens available at time now: fractional for
// time_based, and minus the debt while a time_based or calendar pool is in
// debt; for calendar the allocation minus what the period spent; for
// while_in_flight the allocation minus what is held, which is negative after
// the allocation was lowered below it.
func (p *Pool) Available(now int64) float64 {
	switch p.kind {
	case TimeBased:
		level, debt := p.stateAt(now)
		if debt != (u128{}) {
			return -p.tokensFloat(debt)
		}
		return p.tokensFloat(level)
	case Calendar:
		return float64(p.allocation - p.usedAt(now))
	default:
		return float64(p.allocation - p.held)
	}
}

// Debt returns the tokens a time_based or calendar pool owes at time now
// (fractional for time_based), and 0 when it owes none.
func (p *Pool) Debt(now int64) float64 {
	switch p.kind {
	case TimeBased:
		_, debt := p.stateAt(now)
		return p.tokensFloat(debt)
	case Calendar:
		return float64(max(p.usedAt(now)-p.allocation, 0))
	default:
		return 0
	}
}

// RepaidAt returns when the debt owed at time now will be repaid, assuming
// nothing else is settled: for time_based the first nanosecond at which the
// drip has covered it (clamped to math.MaxInt64), for calendar the next
// reset, which forgives it. ok is false when the pool owes nothing.
func (p *Pool) RepaidAt(now int64) (at int64, ok bool) {
	switch p.kind {
	case TimeBased:
		_, debt := p.stateAt(now)
		if debt == (u128{}) {
			return 0, false
		}
		return p.dripped(debt, now), true
	case Calendar:
		// A pool in debt at now has no reset due by now.
		if p.usedAt(now) <= p.allocation {
			return 0, false
		}
		return p.nextReset, true
	default:
		return 0, false
	}
}

// Full reports whether the pool is as it would be new: nothing held, for
// time_based a level at capacity (so no debt), for calendar nothing spent in
// the period.
func (p *Pool) Full(now int64) bool {
	if p.held > 0 {
		return false
	}
	switch p.kind {
	case TimeBased:
		level, _ := p.stateAt(now)
		return level == p.capUnits
	case Calendar:
		return p.usedAt(now) == 0
	default:
		return true
	}
}

// PaidAt returns when the pool will have paid total tokens in all from now,
// paying each as soon as it has it (clamped to math.MaxInt64; now for a
// total of 0 or less). For time_based it is the first nanosecond at which
// the level now plus the refill since covers the debt and total: the level
// never waits at capacity meanwhile, since what arrives is paid at once. For
// calendar it is the first reset by which what is left of the current
// period and an allocation a reset since cover it, looking no further than
// MaxPaidAtResets resets. ok is false for a while_in_flight pool.
func (p *Pool) PaidAt(total int64, now int64) (at int64, ok bool) {
	switch {
	case p.kind == WhileInFlight:
		return 0, false
	case total <= 0:
		return now, true
	case p.kind == Calendar:
		return p.paidAtCalendar(total, now), true
	}
	level, debt := p.stateAt(now)
	need, fits := p.unit.mul64Checked(uint64(total))
	if !fits || need.hi >= 1<<62 {
		// need − level ≥ 2^126 − 2^104: far more than the 2^95 units the
		// drip brings in the whole int64 range.
		return math.MaxInt64, true
	}
	need = need.add(debt)
	if !level.less(need) {
		return now, true
	}
	return p.dripped(need.sub(level), now), true
}

// AffordableAt returns the earliest time at or after now at which the pool
// can pay cost, assuming nothing else is debited or settled: now if it can
// already; for time_based the first nanosecond at which the drip has repaid
// any debt and brought the level to cost (clamped to math.MaxInt64); for
// calendar the next reset. ok is false for a while_in_flight pool, whose
// tokens come back only on Release, and when cost exceeds the capacity.
func (p *Pool) AffordableAt(cost int64, now int64) (at int64, ok bool) {
	switch {
	case p.kind == WhileInFlight || cost > p.Capacity():
		return 0, false
	case p.CanPay(cost, now):
		return now, true
	case p.kind == Calendar:
		// A cost within the allocation that the period cannot pay: no
		// reset is due by now, so the stored one is the next.
		return p.nextReset, true
	}
	level, debt := p.stateAt(now)
	need := debt.add(p.unit.mul64(uint64(cost)))
	return p.dripped(need.sub(level), now), true
}

// dripped returns the first nanosecond at or after now by which the drip
// has brought units more than the pool has at now (clamped to
// math.MaxInt64).
func (p *Pool) dripped(units u128, now int64) int64 {
	// The pool is as at now from t0 on and gains allocation units per ns.
	t0 := max(now, p.last)
	wait := units.quoCeil64(uint64(p.allocation))
	// room = MaxInt64 − t0, computed mod 2^64: the true value is in [0, 2^64).
	room := uint64(math.MaxInt64) - uint64(t0)
	if wait.hi != 0 || wait.lo > room {
		return math.MaxInt64
	}
	return int64(uint64(t0) + wait.lo)
}

// Reconfigure applies a new configuration (PUT or PATCH) at time now
// (docs/API.md §Changing a budget). A time_based pool keeps its level in
// tokens, rounded down to the new unit and clamped to the new capacity, or
// its debt, rounded up to the new unit (a change of unit never forgives part
// of a debt), and refills at the new rate from now on. A pool that turns
// time_based starts full. A while_in_flight pool keeps what its in-flight
// jobs hold, even above the new allocation: it pays nothing more until
// enough is released; so does a pool that turns while_in_flight. durationMs
// and burst matter only to time_based.
//
// A calendar pool needs a Schedule, so use ReconfigureCalendar to make or
// keep one. Kind Calendar here only changes the allocation of a pool that
// is already calendar (keeping its schedule); any other pool, and any
// unknown kind, is made while_in_flight.
func (p *Pool) Reconfigure(allocation, durationMs, burst int64, kind Kind, now int64) {
	switch {
	case kind == TimeBased && p.kind == TimeBased:
		p.retime(allocation, durationMs, burst, now)
	case kind == TimeBased:
		held := p.held
		*p = NewTimeBased(allocation, durationMs, burst, now)
		p.held = held
	case kind == Calendar && p.kind == Calendar:
		p.ReconfigureCalendar(allocation, p.sched, now)
	default:
		*p = Pool{kind: WhileInFlight, allocation: clampAllocation(allocation), held: p.held}
	}
}

// retime changes the configuration of a time_based pool, keeping its tokens
// or its debt.
func (p *Pool) retime(allocation, durationMs, burst int64, now int64) {
	p.advance(now)
	oldMs := uint64(p.durationMs)
	if p.debt != (u128{}) {
		whole, frac := p.tokens(p.debt)
		p.setTimeBased(allocation, durationMs, burst)
		// frac/(oldMs·10^6) tokens = frac·newMs/oldMs new units, rounded
		// up. The debt stays within MaxAllocation tokens: its exact value
		// is, and the cap is a whole number of new units.
		newFrac := frac.mul64(uint64(p.durationMs)).quoCeil64(oldMs)
		p.debt = p.unit.mul64(whole).add(newFrac)
		return
	}
	whole, frac := p.tokens(p.level)
	p.setTimeBased(allocation, durationMs, burst)
	if whole >= uint64(p.capacity) {
		p.level = p.capUnits
		return
	}
	// Rounded down this time: a change of unit never adds tokens.
	newFrac, _ := frac.mul64(uint64(p.durationMs)).quoRem64(oldMs)
	p.level = p.unit.mul64(whole).add(newFrac)
}

// tokens splits units into whole tokens and the remaining units. Dividing
// by 10^6 and then by the duration keeps both divisors within 64 bits.
func (p *Pool) tokens(units u128) (whole uint64, frac u128) {
	perMs, _ := units.quoRem64(nsPerMs)
	w, _ := perMs.quoRem64(uint64(p.durationMs))
	// A level or a debt is at most MaxAllocation tokens, so w.hi is 0.
	return w.lo, units.sub(p.unit.mul64(w.lo))
}

// tokensFloat returns units in tokens: whole tokens exactly, then the
// fraction, so that whole numbers print whole.
func (p *Pool) tokensFloat(units u128) float64 {
	whole, frac := p.tokens(units)
	return float64(whole) + frac.float64()/p.unit.float64()
}

// stateAt returns the time_based level and debt at time now without
// changing the pool: the refill since last repays the debt, then fills the
// level up to the capacity. A now before the last update counts as no time
// passed.
func (p *Pool) stateAt(now int64) (level, debt u128) {
	if now <= p.last || p.level == p.capUnits {
		return p.level, p.debt
	}
	// uint64 subtraction gives the exact gap even across the int64 sign.
	refill := mul64x64(uint64(p.allocation), uint64(now)-uint64(p.last))
	if refill.less(p.debt) {
		return u128{}, p.debt.sub(refill)
	}
	level = p.level.add(refill.sub(p.debt))
	if p.capUnits.less(level) {
		return p.capUnits, u128{}
	}
	return level, u128{}
}

// advance brings the time_based level and debt up to date at time now.
func (p *Pool) advance(now int64) {
	if now > p.last {
		p.level, p.debt = p.stateAt(now)
		p.last = now
	}
}
