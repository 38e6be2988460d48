// Package budget keeps the token state of one budget (docs/API.md §Strategies)
// with exact integer arithmetic.
//
// A Pool does no locking, starts no goroutines, reads no clock and allocates
// nothing: the dispatch engine calls it under its own lock and passes the time
// in. Times are int64 nanoseconds on any monotonic scale the caller picks.
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
// The products need more than 64 bits, so they use u128. With A, C ≤ 2^31−1
// and D ≤ 2^53 (inputs are clamped to these ranges):
//
//	unit       = D·10^6           < 2^73
//	capacity   = C·unit           < 2^104  (the level never exceeds it)
//	refill     = A·Δt, Δt < 2^64  < 2^95   (level + refill < 2^105)
//	need       = cost·unit        ≤ capacity, computed only for cost ≤ C
//	paid       = total·unit, checked: from 2^126 on, the wait is past int64
//	reconfigure: remainder·D_new  < 2^73·2^53 = 2^126
//
// so no operation overflows 128 bits.
package budget

import "math"

// Bounds of a budget's configuration (docs/API.md §Budget bodies).
// Constructors and Reconfigure clamp their inputs into these ranges.
const (
	// MaxAllocation is the largest allocation, and the largest burst.
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
)

// String returns the wire name of the strategy.
func (k Kind) String() string {
	switch k {
	case WhileInFlight:
		return "while_in_flight"
	case TimeBased:
		return "time_based"
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
// nothing; build pools with NewWhileInFlight or NewTimeBased.
type Pool struct {
	kind       Kind
	allocation int64
	// held is the cost of the debits not yet released, whatever the kind at
	// debit time: when a budget turns into while_in_flight it then holds
	// exactly what its in-flight jobs cost (docs/API.md §Changing a budget),
	// and a job that leaves in flight while the budget is time_based still
	// gives its cost back, so a round trip through time_based cannot leak
	// tokens.
	held int64

	// time_based only.
	durationMs int64
	capacity   int64 // C in tokens: burst if set, else allocation
	unit       u128  // units in one token: durationMs·10^6
	capUnits   u128  // capacity·unit
	level      u128  // units in the pool at time last
	last       int64 // the time level was last brought up to date
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

// setTimeBased installs a time_based configuration; it leaves level, last and
// held alone.
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

// Kind returns the pool's strategy.
func (p *Pool) Kind() Kind { return p.kind }

// Capacity returns the most tokens the pool can hold: the allocation for
// while_in_flight, the burst (else the allocation) for time_based.
func (p *Pool) Capacity() int64 {
	if p.kind == TimeBased {
		return p.capacity
	}
	return p.allocation
}

// Held returns the tokens held by in-flight jobs of a while_in_flight pool,
// and 0 for a time_based pool.
func (p *Pool) Held() int64 {
	if p.kind == TimeBased {
		return 0
	}
	return p.held
}

// CanPay reports whether the pool can pay cost at time now. A cost of 0 or
// less is always payable.
func (p *Pool) CanPay(cost int64, now int64) bool {
	if cost <= 0 {
		return true
	}
	if p.kind != TimeBased {
		return cost <= p.allocation-p.held
	}
	if cost > p.capacity {
		return false
	}
	return !p.levelAt(now).less(p.unit.mul64(uint64(cost)))
}

// Debit spends cost at time now. The caller must have checked CanPay under
// the same lock; a Debit the pool cannot pay empties a time_based pool (or
// holds more than the allocation of a while_in_flight one) rather than
// panicking. Every Debit must be matched by exactly one Release, whatever
// the pool's kind at either moment.
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
	if p.held > math.MaxInt64-cost {
		p.held = math.MaxInt64
	} else {
		p.held += cost
	}
	if p.kind != TimeBased {
		return p.held <= p.allocation
	}
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
// A while_in_flight pool can pay it again at once; a time_based pool refunds
// nothing (docs/API.md §Strategies) but stops counting the job as in flight,
// which matters if the budget later turns into while_in_flight.
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

// Available returns the tokens available at time now: fractional for
// time_based; for while_in_flight the allocation minus what is held, which
// is negative after the allocation was lowered below it.
func (p *Pool) Available(now int64) float64 {
	if p.kind != TimeBased {
		return float64(p.allocation - p.held)
	}
	level := p.levelAt(now)
	// Whole tokens exactly, then the fraction, so whole levels print whole.
	whole, frac := p.tokens(level)
	return float64(whole) + frac.float64()/p.unit.float64()
}

// Full reports whether the pool is as it would be new: nothing held, and
// for time_based a level at capacity.
func (p *Pool) Full(now int64) bool {
	if p.held > 0 {
		return false
	}
	return p.kind != TimeBased || p.levelAt(now) == p.capUnits
}

// PaidAt returns when a time_based pool will have paid total tokens in
// all from now, paying each as soon as it has it: the first nanosecond at
// which the level now plus the refill since reaches total (clamped to
// math.MaxInt64). The level never waits at capacity meanwhile, since
// what arrives is paid at once. ok is false for a while_in_flight pool.
func (p *Pool) PaidAt(total int64, now int64) (at int64, ok bool) {
	if p.kind != TimeBased {
		return 0, false
	}
	have := p.levelAt(now)
	need, fits := p.unit.mul64Checked(uint64(max(total, 0)))
	if !fits || need.hi >= 1<<62 {
		// need − have ≥ 2^126 − 2^104: far more than the 2^95 units the
		// drip brings in the whole int64 range.
		return math.MaxInt64, true
	}
	if !have.less(need) {
		return now, true
	}
	return p.dripped(need.sub(have), now), true
}

// AffordableAt returns the earliest time at or after now at which a
// time_based pool can pay cost, assuming nothing else is debited: now if it
// can already, else the first nanosecond at which the level reaches cost
// (clamped to math.MaxInt64). ok is false for a while_in_flight pool, whose
// tokens come back only on Release, and when cost exceeds the capacity.
func (p *Pool) AffordableAt(cost int64, now int64) (at int64, ok bool) {
	if p.kind != TimeBased || cost > p.capacity {
		return 0, false
	}
	if cost <= 0 {
		return now, true
	}
	have, need := p.levelAt(now), p.unit.mul64(uint64(cost))
	if !have.less(need) {
		return now, true
	}
	return p.dripped(need.sub(have), now), true
}

// dripped returns the first nanosecond at or after now by which the drip
// has brought units more than the level has at now (clamped to
// math.MaxInt64).
func (p *Pool) dripped(units u128, now int64) int64 {
	// The level is as at now from t0 on and gains allocation units per ns.
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
// tokens, rounded down to the new unit and clamped to the new capacity, and
// refills at the new rate from now on. A pool that turns time_based starts
// full. A while_in_flight pool keeps what its in-flight jobs hold, even above
// the new allocation: it pays nothing more until enough is released. Any kind
// other than TimeBased means WhileInFlight; durationMs and burst are then
// ignored.
func (p *Pool) Reconfigure(allocation, durationMs, burst int64, kind Kind, now int64) {
	if kind != TimeBased {
		p.kind = WhileInFlight
		p.allocation = clampAllocation(allocation)
		p.durationMs, p.capacity = 0, 0
		p.unit, p.capUnits, p.level = u128{}, u128{}, u128{}
		return
	}
	if p.kind != TimeBased {
		p.setTimeBased(allocation, durationMs, burst)
		p.level = p.capUnits
		p.last = now
		return
	}
	p.advance(now)
	whole, frac := p.tokens(p.level)
	oldMs := uint64(p.durationMs)
	p.setTimeBased(allocation, durationMs, burst)
	if whole >= uint64(p.capacity) {
		p.level = p.capUnits
		return
	}
	// frac/(oldMs·10^6) tokens = frac·newMs/oldMs new units, rounded down.
	newFrac, _ := frac.mul64(uint64(p.durationMs)).quoRem64(oldMs)
	p.level = p.unit.mul64(whole).add(newFrac)
}

// tokens splits level into whole tokens and the remaining units. Dividing
// by 10^6 and then by the duration keeps both divisors within 64 bits.
func (p *Pool) tokens(level u128) (whole uint64, frac u128) {
	perMs, _ := level.quoRem64(nsPerMs)
	w, _ := perMs.quoRem64(uint64(p.durationMs))
	// w ≤ capacity < 2^31, so w.hi is 0.
	return w.lo, level.sub(p.unit.mul64(w.lo))
}

// levelAt returns the time_based level at time now without changing the
// pool. A now before the last update counts as no time passed.
func (p *Pool) levelAt(now int64) u128 {
	if now <= p.last || p.level == p.capUnits {
		return p.level
	}
	// uint64 subtraction gives the exact gap even across the int64 sign.
	refill := mul64x64(uint64(p.allocation), uint64(now)-uint64(p.last))
	level := p.level.add(refill)
	if p.capUnits.less(level) {
		return p.capUnits
	}
	return level
}

// advance brings the time_based level up to date at time now.
func (p *Pool) advance(now int64) {
	if now > p.last {
		p.level = p.levelAt(now)
		p.last = now
	}
}
