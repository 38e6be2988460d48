package budget

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// oracle is an independent model of a Pool. The time_based level is an
// exact rational number of tokens, min(C, level + (t−t0)·A/(D·10^6)), with
// no notion of units; a debt is a level below zero, which the same formula
// repays before it fills. A calendar pool is a counter of what was spent
// against an explicit list of its reset instants.
type oracle struct {
	kind       Kind
	allocation int64
	durationMs int64
	capacity   int64
	rate       *big.Rat // tokens per nanosecond (time_based)
	level      *big.Rat // tokens at time last (time_based); negative: debt
	last       int64
	held       int64 // cost debited and not yet released, any kind
	// capped is set once a settle's debt was cut to MaxAllocation tokens,
	// which forgives tokens and so breaks the window bound (checkWindows).
	capped bool
	// memo is at(memoNow), which a check asks for a dozen times; every
	// method that changes the model forgets it.
	memo    *big.Rat
	memoNow int64

	// calendar: resets is sorted; the first one after since is the next.
	resets      []int64
	since       int64
	used        int64
	periodStart int64
}

func newOracle(kind Kind, allocation, durationMs, burst, now int64) *oracle {
	o := &oracle{}
	o.reconfigure(allocation, durationMs, burst, kind, now)
	return o
}

func newCalendarOracle(allocation, used int64, resets []int64, now int64) *oracle {
	o := &oracle{}
	o.reconfigureCalendar(allocation, resets, now)
	o.used = max(used, 0)
	return o
}

var maxDebt = new(big.Rat).SetInt64(-MaxAllocation)

func (o *oracle) at(now int64) *big.Rat {
	if o.memo == nil || o.memoNow != now {
		o.memo, o.memoNow = o.levelAt(now), now
	}
	return new(big.Rat).Set(o.memo)
}

func (o *oracle) forget() { o.memo = nil }

func (o *oracle) levelAt(now int64) *big.Rat {
	if now <= o.last {
		return new(big.Rat).Set(o.level)
	}
	dt := new(big.Rat).SetInt(new(big.Int).Sub(big.NewInt(now), big.NewInt(o.last)))
	l := new(big.Rat).Add(o.level, dt.Mul(dt, o.rate))
	if c := new(big.Rat).SetInt64(o.capacity); l.Cmp(c) > 0 {
		return c
	}
	return l
}

// bring moves the time_based model to max(last, now).
func (o *oracle) bring(now int64) {
	o.level = o.at(now)
	o.last = max(o.last, now)
}

// nextAfter returns the index in resets of the first reset after t
// (len(resets) if none), scanning the list.
func (o *oracle) nextAfter(t int64) int {
	for i, r := range o.resets {
		if r > t {
			return i
		}
	}
	return len(o.resets)
}

func (o *oracle) resetAt(i int) int64 {
	if i >= len(o.resets) {
		return math.MaxInt64
	}
	return o.resets[i]
}

// due reports whether a reset came after since and by now.
func (o *oracle) due(now int64) bool {
	r := o.resetAt(o.nextAfter(o.since))
	return r != math.MaxInt64 && r <= now
}

func (o *oracle) usedAt(now int64) int64 {
	if o.due(now) {
		return 0
	}
	return o.used
}

// nextReset is the first reset after both since and now.
func (o *oracle) nextReset(now int64) int64 { return o.resetAt(o.nextAfter(max(o.since, now))) }

// roll applies the calendar's reset, if one came, at a mutating call.
func (o *oracle) roll(now int64) {
	if o.due(now) {
		o.used = 0
		o.periodStart = o.resetAt(o.nextAfter(o.since))
	}
	o.since = max(o.since, now)
}

func (o *oracle) canPay(cost, now int64) bool {
	switch {
	case cost <= 0:
		return true
	case o.kind == WhileInFlight:
		return cost <= o.allocation-o.held
	case o.kind == Calendar:
		return cost <= o.allocation-o.usedAt(now) // used may be MaxInt64
	case cost > o.capacity:
		return false
	}
	return o.at(now).Cmp(new(big.Rat).SetInt64(cost)) >= 0
}

func (o *oracle) debit(cost, now int64) {
	defer o.forget()
	if cost <= 0 {
		return
	}
	o.held += cost
	switch o.kind {
	case TimeBased:
		o.bring(now)
		o.level.Sub(o.level, new(big.Rat).SetInt64(cost))
	case Calendar:
		o.roll(now)
		o.used = satAdd(o.used, cost)
	}
}

func (o *oracle) release(cost int64) { o.held -= cost }

func (o *oracle) settle(estimate, actual, dispatchedAt, now int64) {
	defer o.forget()
	diff := new(big.Int).Sub(big.NewInt(max(actual, 0)), big.NewInt(max(estimate, 0)))
	switch o.kind {
	case TimeBased:
		o.bring(now)
		o.level.Add(o.level, new(big.Rat).SetInt(diff.Neg(diff)))
		if c := new(big.Rat).SetInt64(o.capacity); o.level.Cmp(c) > 0 {
			o.level = c
		}
		if o.level.Cmp(maxDebt) < 0 {
			o.level.Set(maxDebt)
			o.capped = true
		}
	case Calendar:
		o.roll(now)
		switch {
		case diff.Sign() > 0:
			o.used = satAdd(o.used, diff.Int64())
		case diff.Sign() < 0 && dispatchedAt >= o.periodStart:
			o.used = max(o.used+diff.Int64(), 0)
		}
	}
}

func (o *oracle) available(now int64) *big.Rat {
	switch o.kind {
	case TimeBased:
		return o.at(now)
	case Calendar:
		return new(big.Rat).SetInt64(o.allocation - o.usedAt(now))
	}
	return new(big.Rat).SetInt64(o.allocation - o.held)
}

func (o *oracle) debt(now int64) *big.Rat {
	if a := o.available(now); o.kind != WhileInFlight && a.Sign() < 0 {
		return a.Neg(a)
	}
	return new(big.Rat)
}

func (o *oracle) full(now int64) bool {
	switch {
	case o.held > 0:
		return false
	case o.kind == TimeBased:
		return o.at(now).Cmp(new(big.Rat).SetInt64(o.capacity)) == 0
	case o.kind == Calendar:
		return o.usedAt(now) == 0
	}
	return true
}

// dripped returns the first integer time t ≥ max(now, last) at which the
// level there plus (t − t0)·rate reaches tokens, clamped to MaxInt64.
func (o *oracle) dripped(tokens *big.Rat, now int64) int64 {
	t0 := max(now, o.last)
	// Smallest integer k with level + k·rate ≥ tokens: ⌈(tokens − level)/rate⌉.
	k := new(big.Rat).Sub(tokens, o.at(now))
	if k.Sign() <= 0 {
		return now
	}
	k.Quo(k, o.rate)
	q, m := new(big.Int).DivMod(k.Num(), k.Denom(), new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	at := q.Add(q, big.NewInt(t0))
	if !at.IsInt64() {
		return math.MaxInt64
	}
	return at.Int64()
}

func (o *oracle) affordableAt(cost, now int64) (int64, bool) {
	switch {
	case o.kind == WhileInFlight, o.kind == TimeBased && cost > o.capacity,
		o.kind == Calendar && cost > o.allocation:
		return 0, false
	case o.canPay(cost, now):
		return now, true
	case o.kind == Calendar:
		return o.nextReset(now), true
	}
	return o.dripped(new(big.Rat).SetInt64(cost), now), true
}

func (o *oracle) paidAt(total, now int64) (int64, bool) {
	switch {
	case o.kind == WhileInFlight:
		return 0, false
	case total <= 0:
		return now, true
	case o.kind == TimeBased:
		return o.dripped(new(big.Rat).SetInt64(total), now), true
	}
	paid := max(o.allocation-o.usedAt(now), 0)
	if total <= paid {
		return now, true
	}
	// Walk the list, an allocation a reset, for at most MaxPaidAtResets.
	i := o.nextAfter(max(o.since, now))
	for range MaxPaidAtResets {
		if i >= len(o.resets) {
			break
		}
		if paid += o.allocation; paid >= total {
			return o.resets[i], true
		}
		i++
	}
	return math.MaxInt64, true
}

func (o *oracle) repaidAt(now int64) (int64, bool) {
	switch {
	case o.debt(now).Sign() == 0:
		return 0, false
	case o.kind == Calendar:
		return o.nextReset(now), true
	}
	return o.dripped(new(big.Rat), now), true
}

func (o *oracle) usedNow(now int64) int64 {
	if o.kind != Calendar {
		return 0
	}
	return o.usedAt(now)
}

func (o *oracle) nextResetNow(now int64) int64 {
	if o.kind != Calendar {
		return 0
	}
	return o.nextReset(now)
}

func (o *oracle) reconfigure(allocation, durationMs, burst int64, kind Kind, now int64) {
	defer o.forget()
	if kind == Calendar && o.kind == Calendar {
		o.reconfigureCalendar(allocation, o.resets, now)
		return
	}
	wasTimeBased := o.kind == TimeBased && o.level != nil
	var level *big.Rat
	if wasTimeBased {
		level = o.at(now)
		o.last = max(o.last, now)
	}
	o.kind, o.allocation, o.durationMs = kind, allocation, durationMs
	o.capacity = allocation
	o.resets, o.used = nil, 0
	if kind != TimeBased {
		o.kind, o.durationMs, o.level = WhileInFlight, 0, nil
		return
	}
	if burst > 0 {
		o.capacity = burst
	}
	unit := new(big.Int).Mul(big.NewInt(durationMs), big.NewInt(1e6))
	o.rate = new(big.Rat).SetFrac(big.NewInt(allocation), unit)
	c := new(big.Rat).SetInt64(o.capacity)
	if !wasTimeBased {
		o.level, o.last = c, now
		return
	}
	// Keep the tokens, floored to a whole number of the new units (1/(D·10^6)
	// token): below zero the floor rounds the debt up. Then clamp them to
	// the new capacity.
	scaled := new(big.Rat).Mul(level, new(big.Rat).SetInt(unit))
	floor := new(big.Int).Div(scaled.Num(), scaled.Denom()) // Euclidean: floor, the denominator being positive
	o.level = new(big.Rat).SetFrac(floor, unit)
	if o.level.Cmp(c) > 0 {
		o.level = c
	}
}

func (o *oracle) reconfigureCalendar(allocation int64, resets []int64, now int64) {
	defer o.forget()
	if o.kind == Calendar {
		o.roll(now)
	} else {
		*o = oracle{kind: Calendar, held: o.held, used: 0, periodStart: now}
	}
	o.allocation, o.capacity = allocation, allocation
	o.resets, o.since = resets, now
}

// tb is what the checks need from a *testing.T.
type tb interface {
	require.TestingT
	Helper()
}

// closeTo reports whether got is within a relative 1e-9 of want.
func closeTo(want *big.Rat, got float64) bool {
	w, _ := want.Float64()
	return math.Abs(got-w) <= 1e-9*max(1, math.Abs(w))
}

// at is a time answer with its ok.
type at struct {
	At int64
	OK bool
}

// observed is everything the checks compare but the float answers, so that
// one comparison covers it: a require call per answer costs more than the
// pool and the oracle together.
type observed struct {
	Kind                      Kind
	Capacity, HeldField, Held int64
	CanPay, CanPayOne         bool
	AffordableAt, RepaidAt    at
	PaidAt                    [6]at // for the totals of checkAgainst, in order
	Full                      bool
	Used, NextReset           int64
}

func observePool(p *Pool, cost, now int64, totals []int64) observed {
	v := observed{Kind: p.Kind(), Capacity: p.Capacity(), HeldField: p.held, Held: p.Held(),
		CanPay: p.CanPay(cost, now), CanPayOne: p.CanPay(1, now),
		Full: p.Full(now), Used: p.Used(now), NextReset: p.NextReset(now)}
	v.AffordableAt.At, v.AffordableAt.OK = p.AffordableAt(cost, now)
	v.RepaidAt.At, v.RepaidAt.OK = p.RepaidAt(now)
	for i, total := range totals {
		v.PaidAt[i].At, v.PaidAt[i].OK = p.PaidAt(total, now)
	}
	return v
}

func observeOracle(o *oracle, cost, now int64, totals []int64) observed {
	v := observed{Kind: o.kind, Capacity: o.capacity, HeldField: o.held,
		CanPay: o.canPay(cost, now), CanPayOne: o.canPay(1, now),
		Full: o.full(now), Used: o.usedNow(now), NextReset: o.nextResetNow(now)}
	if o.kind == WhileInFlight {
		v.Held = o.held
	}
	v.AffordableAt.At, v.AffordableAt.OK = o.affordableAt(cost, now)
	v.RepaidAt.At, v.RepaidAt.OK = o.repaidAt(now)
	for i, total := range totals {
		v.PaidAt[i].At, v.PaidAt[i].OK = o.paidAt(total, now)
	}
	return v
}

// checkAgainst compares everything observable about p at time now, for a
// job of the given cost, with the oracle.
func checkAgainst(t tb, p *Pool, o *oracle, cost, now int64) {
	totals := []int64{cost, cost + 3*o.capacity, 1 << 40, math.MaxInt64}
	if o.kind == Calendar {
		// Paid at the last reset PaidAt walks to, and one token past it.
		edge := max(o.allocation-o.usedAt(now), 0) + o.allocation*MaxPaidAtResets
		totals = append(totals, edge, edge+1)
	}
	want, got := observeOracle(o, cost, now, totals), observePool(p, cost, now, totals)
	debt := o.debt(now)
	if want == got && closeTo(o.available(now), p.Available(now)) && closeTo(debt, p.Debt(now)) &&
		(debt.Sign() == 0 || !got.CanPayOne) {
		return
	}
	t.Helper()
	ctx := []any{"kind=%v A=%d D=%d C=%d cost=%d now=%d last=%d used=%d since=%d PaidAt of %v", o.kind, o.allocation, o.durationMs, o.capacity, cost, now, o.last, o.used, o.since, totals}
	require.Equal(t, want, got, ctx...)
	require.False(t, debt.Sign() > 0 && got.CanPayOne, ctx...) // a pool in debt never pays
	wantAvail, _ := o.available(now).Float64()
	require.InDelta(t, wantAvail, p.Available(now), 1e-9*max(1, math.Abs(wantAvail)), ctx...)
	wantDebt, _ := debt.Float64()
	require.InDelta(t, wantDebt, p.Debt(now), 1e-9*max(1, wantDebt), ctx...)
}

// debitRecord is one change to a time_based pool's tokens at the pool's
// time then: a debit's cost, or a settle's actual − estimate (negative for
// a credit), and the debt after it (nil: none).
type debitRecord struct {
	at   int64
	cost int64
	debt *big.Rat
}

// checkWindows returns an error if some run of consecutive records spent
// more than capacity + allocation·W/duration + the debt after the run, W
// being the time between the first and the last record of the run: the
// level before the run is at most the capacity and after it at least minus
// the debt, and in between it gains at most the refill. (A credit the
// capacity clamps only makes the run spend more than it counts.)
//
// For records i..j with prefix sums P, the bound is
// (P_j − r·T_j − debt_j) − (P_{i−1} − r·T_i) ≤ C, so it is enough to compare
// each j with the smallest P_{i−1} − r·T_i seen so far: every window is
// covered in one pass.
func checkWindows(records []debitRecord, allocation, durationMs, capacity int64) error {
	rate := new(big.Rat).SetFrac(big.NewInt(allocation), new(big.Int).Mul(big.NewInt(durationMs), big.NewInt(1e6)))
	c := new(big.Rat).SetInt64(capacity)
	prefix := new(big.Rat)
	var lowest *big.Rat
	for j, r := range records {
		rt := new(big.Rat).Mul(rate, new(big.Rat).SetInt64(r.at))
		x := new(big.Rat).Sub(prefix, rt)
		if lowest == nil || x.Cmp(lowest) < 0 {
			lowest = x
		}
		prefix.Add(prefix, new(big.Rat).SetInt64(r.cost))
		spent := new(big.Rat).Sub(prefix, rt)
		spent.Sub(spent, lowest)
		bound := new(big.Rat).Set(c)
		if r.debt != nil {
			bound.Add(bound, r.debt)
		}
		if spent.Cmp(bound) > 0 {
			return fmt.Errorf("record %d at %d: a window ending here spent %s tokens, more than the capacity %d plus the refill and the debt %s", j, r.at, spent.FloatString(6), capacity, bound.Sub(bound, c).FloatString(6))
		}
	}
	return nil
}

func TestCheckWindows(t *testing.T) {
	t.Parallel()

	const sec = int64(1e9)
	r := func(at, cost int64) debitRecord { return debitRecord{at: at, cost: cost} }
	// 6 per minute: 6 at once, then one per 10 s is exactly at the bound.
	ok := []debitRecord{r(0, 1), r(0, 1), r(0, 1), r(0, 1), r(0, 3), r(10*sec, 1), r(20*sec, 1)}
	require.NoError(t, checkWindows(ok, 6, 60000, 7))
	require.Error(t, checkWindows(ok, 6, 60000, 6))
	// One nanosecond early is over, even in a window that starts later.
	early := []debitRecord{r(0, 6), r(10*sec-1, 1)}
	require.Error(t, checkWindows(early, 6, 60000, 6))
	// The window over the limit need not start at the first debit.
	late := []debitRecord{r(0, 1), r(100*sec, 4), r(110*sec-1, 1)}
	require.Error(t, checkWindows(late, 6, 60000, 4))
	require.NoError(t, checkWindows(late, 6, 60000, 5))

	// A settle above the estimate may overspend by the debt it leaves...
	owed := []debitRecord{r(0, 6), {at: 0, cost: 2, debt: big.NewRat(2, 1)}}
	require.NoError(t, checkWindows(owed, 6, 60000, 6))
	// ...and no more, however the run ends.
	owed[1].debt = big.NewRat(19, 10)
	require.Error(t, checkWindows(owed, 6, 60000, 6))
	// A credit gives tokens back, which may be spent again, once.
	credit := []debitRecord{r(0, 6), r(0, -3), r(0, 3)}
	require.NoError(t, checkWindows(credit, 6, 60000, 6))
	credit = append(credit, r(5*sec, 1))
	require.Error(t, checkWindows(credit, 6, 60000, 6))
}

// interesting configuration values, including both ends of every range.
var (
	allocations = []int64{1, 2, 6, 7, 100, 1000, MaxAllocation - 1, MaxAllocation}
	durations   = []int64{1, 3, 1000, 60000, 300000, 3600000, 86400000, MaxDurationMs - 1, MaxDurationMs}
	bursts      = []int64{0, 0, 0, 1, 2, 20, 1000, MaxAllocation}
)

func randConfig(rng *rand.Rand) (allocation, durationMs, burst int64) {
	allocation = allocations[rng.IntN(len(allocations))]
	if rng.IntN(3) == 0 {
		allocation = 1 + rng.Int64N(MaxAllocation)
	}
	durationMs = durations[rng.IntN(len(durations))]
	if rng.IntN(3) == 0 {
		durationMs = 1 + rng.Int64N(MaxDurationMs)
	}
	burst = bursts[rng.IntN(len(bursts))]
	if rng.IntN(4) == 0 {
		burst = 1 + rng.Int64N(MaxAllocation)
	}
	return allocation, durationMs, burst
}

// satAdd returns now+d clamped to the int64 range.
func satAdd(now, d int64) int64 {
	switch {
	case d > 0 && now > math.MaxInt64-d:
		return math.MaxInt64
	case d < 0 && now < math.MinInt64-d:
		return math.MinInt64
	}
	return now + d
}

// TestPool_AgainstOracle runs random sequences of (advance time, try to
// debit) on time_based pools and compares every answer with the oracle, then
// checks the window bound over the whole sequence.
func TestPool_AgainstOracle(t *testing.T) {
	t.Parallel()

	rng := rand.New(rand.NewPCG(20240601, 17))
	for seq := range 200 {
		allocation, durationMs, burst := randConfig(rng)
		now := []int64{0, 0, math.MinInt64 + 1, 1788215727072 * 1e6, math.MaxInt64 - 1e15}[rng.IntN(5)]
		p := NewTimeBased(allocation, durationMs, burst, now)
		o := newOracle(TimeBased, allocation, durationMs, burst, now)
		c := p.Capacity()
		// Nanoseconds per token, clamped so the step sizes stay int64.
		perToken := int64(min(float64(durationMs)*1e6/float64(allocation), math.MaxInt64/8))

		var records []debitRecord
		// The pool's time moves only at debits, and never backwards: a query
		// at a later time commits nothing.
		effective := now
		for range 250 {
			switch rng.IntN(10) {
			case 0: // no time passes
			case 1:
				now = satAdd(now, rng.Int64N(1000))
			case 2:
				now = satAdd(now, -rng.Int64N(1e9)) // the caller's clock went back
			case 3:
				now = satAdd(now, rng.Int64N(1<<62))
			case 4:
				if at, ok := p.AffordableAt(min(c, 1+rng.Int64N(3)), now); ok {
					now = at
				}
			default:
				now = satAdd(now, rng.Int64N(perToken*2+1))
			}

			cost := 1 + rng.Int64N(min(c, 10))
			switch rng.IntN(8) {
			case 0:
				cost = c
			case 1:
				cost = c + 1
			case 2:
				cost = 1 + rng.Int64N(c)
			}
			checkAgainst(t, &p, o, cost, now)
			if o.canPay(cost, now) {
				p.Debit(cost, now)
				o.debit(cost, now)
				effective = max(effective, now)
				records = append(records, debitRecord{at: effective, cost: cost})
			}
			checkAgainst(t, &p, o, cost, now)
		}
		require.NoError(t, checkWindows(records, allocation, durationMs, c), "sequence %d: A=%d D=%d C=%d %v", seq, allocation, durationMs, c, records)
	}
}

// TestPool_StandingBacklog debits whenever a job becomes affordable, as the
// engine does under a standing backlog, and checks that the debits come at
// exactly allocation/duration over 10,000 of them: within one job's cost of
// capacity + allocation·T/duration, however late each wake-up is, as long as
// the pool cannot fill up during the lateness.
func TestPool_StandingBacklog(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name                          string
		allocation, durationMs, burst int64
		maxCost, maxLateNs            int64
	}{
		{"SixPerMinute", 6, 60000, 0, 1, 0},
		{"SixPerMinuteBurstOne", 6, 60000, 1, 1, 0},
		{"SixPerMinuteLate", 6, 60000, 0, 1, 2e6},
		{"SixPerMinuteBurstOneLate", 6, 60000, 1, 1, 2e6},
		{"HundredPerFiveMinutes", 100, 300000, 0, 1, 0},
		{"HundredPerFiveMinutesLate", 100, 300000, 0, 1, 2e6},
		{"HundredPerFiveMinutesCostsLate", 100, 300000, 0, 3, 2e6},
		{"ThousandPerSecondLate", 1000, 1000, 0, 1, 2e6},
		{"ThousandPerSecondCostsLate", 1000, 1000, 50, 5, 2e6},
		{"SevenPerThreeMs", 7, 3, 0, 1, 0},
		{"SevenPerThreeMsLate", 7, 3, 0, 1, 2e6},
		{"ThreePerDayLate", 3, 86400000 + 7, 0, 1, 2e6},
		{"HugeAllocation", MaxAllocation, 3600000, 0, 1, 0},
		{"HugeAllocationLate", MaxAllocation, 3600000, 0, 1, 2e6},
		{"HugeBurstCostsLate", 1000, 60000, MaxAllocation, 7, 2e6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			rng := rand.New(rand.NewPCG(uint64(tt.allocation), uint64(tt.durationMs)))
			unit := new(big.Int).Mul(big.NewInt(tt.durationMs), big.NewInt(1e6))
			p := NewTimeBased(tt.allocation, tt.durationMs, tt.burst, 0)
			// The backlog empties the pool at once (one big debit keeps
			// this quick for huge capacities), then jobs take every token.
			debited := p.Capacity()
			p.Debit(debited, 0)
			var now, lastDebit, n, totalLate int64
			cost := 1 + rng.Int64N(tt.maxCost)
			for n < 10000 {
				// Drain fully at every wake-up, even past the 10,000th.
				for p.CanPay(cost, now) {
					p.Debit(cost, now)
					debited += cost
					lastDebit = now
					n++
					if tt.maxCost == 1 && tt.maxLateNs == 0 {
						// The n-th token after the first burst is there at
						// exactly ⌈n·D·10^6/A⌉ ns.
						want, rem := new(big.Int).QuoRem(new(big.Int).Mul(big.NewInt(n), unit), big.NewInt(tt.allocation), new(big.Int))
						if rem.Sign() != 0 {
							want.Add(want, big.NewInt(1))
						}
						require.Equal(t, want.Int64(), now, "debit %d", n)
					}
					cost = 1 + rng.Int64N(tt.maxCost)
				}
				at, ok := p.AffordableAt(cost, now)
				require.True(t, ok)
				require.Greater(t, at, now)
				late := rng.Int64N(tt.maxLateNs + 1)
				totalLate += late
				now = at + late
			}

			rate := new(big.Rat).SetFrac(big.NewInt(tt.allocation), unit)
			// short = C + A·T/(D·10^6) − debited: what could have been spent by T but was not.
			short := new(big.Rat).Mul(rate, new(big.Rat).SetInt64(lastDebit))
			short.Add(short, new(big.Rat).SetInt64(p.Capacity()))
			short.Sub(short, new(big.Rat).SetInt64(debited))
			require.GreaterOrEqual(t, short.Sign(), 0, "over-issued by %s", short.FloatString(9))

			maxCost := new(big.Rat).SetInt64(tt.maxCost)
			// A wake-up finds at most maxCost + A·(maxLate+1)/(D·10^6) tokens.
			peak := new(big.Rat).Mul(rate, new(big.Rat).SetInt64(tt.maxLateNs+1))
			peak.Add(peak, maxCost)
			if peak.Cmp(new(big.Rat).SetInt64(p.Capacity())) <= 0 {
				require.Negative(t, short.Cmp(maxCost), "drifted: %s tokens short", short.FloatString(9))
				// Nothing was lost: what was not debited is still in the pool.
				left, _ := short.Float64()
				require.InDelta(t, left, p.Available(lastDebit), 1e-6)
				return
			}
			// The pool can fill up while a wake-up is late (burst 1): the
			// tokens above the capacity are lost, as min(C, …) says, but
			// never more than the refill during the lateness.
			lost := new(big.Rat).Mul(rate, new(big.Rat).SetInt64(totalLate))
			require.LessOrEqual(t, short.Cmp(lost.Add(lost, maxCost)), 0, "lost %s tokens", short.FloatString(9))
		})
	}
}

// fuzzBytes decodes fuzz input; past the end it yields zeros.
type fuzzBytes []byte

func (b *fuzzBytes) byte() byte {
	if len(*b) == 0 {
		return 0
	}
	x := (*b)[0]
	*b = (*b)[1:]
	return x
}

func (b *fuzzBytes) uint64() uint64 {
	var buf [8]byte
	n := copy(buf[:], *b)
	*b = (*b)[n:]
	return binary.BigEndian.Uint64(buf[:])
}

func (b *fuzzBytes) config() (kind Kind, allocation, durationMs, burst int64) {
	kind = Kind(b.byte() % 2)
	allocation = allocations[int(b.byte())%len(allocations)]
	if x := b.byte(); x >= 200 {
		allocation = 1 + int64(b.uint64()%MaxAllocation)
	}
	durationMs = durations[int(b.byte())%len(durations)]
	if x := b.byte(); x >= 200 {
		durationMs = 1 + int64(b.uint64()%MaxDurationMs)
	}
	burst = bursts[int(b.byte())%len(bursts)]
	if x := b.byte(); x >= 200 {
		burst = 1 + int64(b.uint64()%MaxAllocation)
	}
	if kind == WhileInFlight {
		durationMs, burst = 0, 0
	}
	return kind, allocation, durationMs, burst
}

func (b *fuzzBytes) cost(capacity int64) int64 {
	switch b.byte() % 8 {
	case 0:
		return 0
	case 1:
		return capacity
	case 2:
		return capacity + 1
	case 3:
		return 1 + int64(b.uint64()%uint64(capacity))
	default:
		return 1 + int64(b.byte())%min(capacity, 16)
	}
}

// runOps decodes a pool and a sequence of operations from data, applies them
// to a Pool and to the oracle, and checks that they agree after every step.
func runOps(t *testing.T, data []byte) {
	b := fuzzBytes(data)
	kind, allocation, durationMs, burst := b.config()
	now := int64(b.uint64())
	var p Pool
	if kind == TimeBased {
		p = NewTimeBased(allocation, durationMs, burst, now)
	} else {
		p = NewWhileInFlight(allocation)
	}
	o := newOracle(kind, allocation, durationMs, burst, now)
	var inFlight []int64

	for step := 0; len(b) > 0 && step < 400; step++ {
		switch b.byte() % 8 {
		case 0:
			now = satAdd(now, int64(b.byte())*int64(b.byte()+1)*1000)
		case 1:
			now = satAdd(now, int64(b.uint64()>>(1+b.byte()%63)))
		case 2:
			now = satAdd(now, -int64(b.byte())*1e6)
		case 3, 4:
			cost := b.cost(p.Capacity())
			checkAgainst(t, &p, o, cost, now)
			if o.canPay(cost, now) {
				p.Debit(cost, now)
				o.debit(cost, now)
				inFlight = append(inFlight, cost)
			}
		case 5:
			if len(inFlight) > 0 {
				i := int(b.byte()) % len(inFlight)
				p.Release(inFlight[i])
				o.release(inFlight[i])
				inFlight = append(inFlight[:i], inFlight[i+1:]...)
			}
		case 6:
			kind, allocation, durationMs, burst := b.config()
			p.Reconfigure(allocation, durationMs, burst, kind, now)
			o.reconfigure(allocation, durationMs, burst, kind, now)
		case 7:
			// Jump to the first affordable nanosecond; one before it must not pay.
			cost := b.cost(p.Capacity())
			if at, ok := p.AffordableAt(cost, now); ok {
				if at > now && at != math.MaxInt64 {
					require.False(t, p.CanPay(cost, at-1), "cost %d payable before %d", cost, at)
				}
				now = at
				if at != math.MaxInt64 || p.CanPay(cost, at) {
					require.True(t, p.CanPay(cost, at), "cost %d not payable at %d", cost, at)
				}
			}
		}
		checkAgainst(t, &p, o, 1, now)
	}
}

// TestPool_RandomOps is the property test with every operation: debits,
// releases, reconfigurations (kind changes included) and clock jumps.
func TestPool_RandomOps(t *testing.T) {
	t.Parallel()

	rng := rand.New(rand.NewPCG(7, 11))
	for range 300 {
		data := make([]byte, 64+rng.IntN(1500))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		runOps(t, data)
	}
}

func FuzzPool(f *testing.F) {
	// time_based 6/min from 0: burst, refill, reconfigure to 100/5 min.
	f.Add([]byte{1, 2, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		3, 7, 1, 3, 7, 1, 3, 7, 1, 3, 7, 1, 3, 7, 1, 3, 7, 1, 3, 7, 1,
		7, 7, 1, 3, 7, 1, 0, 200, 200, 6, 1, 3, 0, 4, 0, 0, 0, 7, 1})
	// while_in_flight 5 with costs, releases, lowered below held, to time_based and back.
	f.Add([]byte{0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		3, 7, 2, 3, 7, 2, 3, 7, 2, 5, 0, 6, 0, 0, 0, 0, 0, 0, 0, 3, 7, 1,
		6, 1, 2, 0, 3, 0, 0, 0, 3, 7, 3, 5, 1, 6, 0, 5, 0, 0, 0, 0, 0, 5, 0, 3, 7, 1})
	// Extremes: A = C = 2^31−1 and D = 2^53 ms, starting near MinInt64.
	f.Add([]byte{1, 7, 0, 8, 0, 7, 0, 0x80, 0, 0, 0, 0, 0, 0, 1,
		4, 1, 1, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 3, 1, 7, 2, 1, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		6, 1, 0, 0, 0, 0, 0, 0, 3, 3, 7, 5})
	// D = 1 ms with huge jumps.
	f.Add([]byte{1, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		3, 1, 1, 0x40, 0, 0, 0, 0, 0, 0, 0, 3, 3, 1, 7, 1, 2, 9, 3, 2, 6, 1, 5, 0, 8, 0, 0, 0, 7, 2})
	rng := rand.New(rand.NewPCG(3, 5))
	for range 16 {
		data := make([]byte, 256)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		runOps(t, data)
	})
}

// recorder is a require.TestingT that records a failure instead of failing
// the test, so that tests can check that the checks themselves can fail.
type recorder struct{ failed bool }

type failNow struct{}

func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) FailNow()              { r.failed = true; panic(failNow{}) }
func (r *recorder) Helper()               {}

// fails reports whether check fails against a recorder.
func fails(check func(tb)) bool {
	r := &recorder{}
	func() {
		defer func() {
			if v := recover(); v != nil {
				if _, ok := v.(failNow); !ok {
					panic(v)
				}
			}
		}()
		check(r)
	}()
	return r.failed
}

func TestCheckAgainst_DetectsEarlyToken(t *testing.T) {
	t.Parallel()

	p := NewTimeBased(6, 60000, 0, 0)
	o := newOracle(TimeBased, 6, 60000, 0, 0)
	for range 6 {
		p.Debit(1, 0)
		o.debit(1, 0)
	}
	require.False(t, fails(func(t tb) { checkAgainst(t, &p, o, 1, 10e9-1) }))
	// One nanosecond's worth of refill too much: the token comes 1 ns early.
	p.level = p.level.add(u128Of(6))
	require.True(t, fails(func(t tb) { checkAgainst(t, &p, o, 1, 10e9-1) }))
	require.True(t, fails(func(t tb) { checkAgainst(t, &p, o, 1, 0) }))
}
