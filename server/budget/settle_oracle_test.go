package budget

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// periodic returns a Schedule of count resets period ns apart from origin,
// and for the oracle the same instants listed by repeated addition (up to
// the int64 range, as every stops there).
func periodic(origin, period, count int64) (Schedule, []int64) {
	var list []int64
	for t := origin; int64(len(list)) < count; t += period {
		list = append(list, t)
		if t > math.MaxInt64-period {
			break
		}
	}
	return every{origin: origin, period: period, count: count}, list
}

// schedule decodes a Schedule, with the list of its instants, around now.
func (b *fuzzBytes) schedule(now int64) (Schedule, []int64) {
	switch b.byte() % 16 {
	case 0:
		return nil, nil
	case 1:
		// More resets than PaidAt walks.
		period := 1 + int64(b.byte())*1e6
		return periodic(satAdd(now, -int64(b.byte())*period), period, MaxPaidAtResets+50)
	case 2, 3, 4, 5, 6:
		t := satAdd(now, -int64(b.byte())*1e9)
		var list []int64
		for range b.byte() % 24 {
			gap := 1 + int64(b.byte())*int64(b.byte())*1e6
			if b.byte()%4 == 0 {
				gap = 1 + int64(b.uint64()>>(1+b.byte()%63))
			}
			if gap > math.MaxInt64-t {
				break
			}
			t += gap
			list = append(list, t)
		}
		return instants(list), list
	default:
		period := 1 + int64(b.uint64()>>(20+b.byte()%44))
		origin := satAdd(now, int64(int8(b.byte()))*period)
		return periodic(origin, period, 1+int64(b.byte())*4)
	}
}

// used decodes what a restored calendar pool had spent, maybe more than
// its allocation.
func (b *fuzzBytes) used(allocation int64) int64 {
	switch b.byte() % 4 {
	case 0:
		return 0
	case 1:
		return allocation
	case 2:
		return allocation + int64(b.byte()) - 64
	default:
		return int64(b.uint64() >> (b.byte() % 64))
	}
}

// actual decodes a job's actual cost for its estimate, negative and huge
// ones included.
func (b *fuzzBytes) actual(estimate, capacity int64) int64 {
	switch b.byte() % 8 {
	case 0:
		return 0
	case 1:
		return estimate
	case 2:
		return estimate + 1
	case 3:
		return estimate - 1
	case 4:
		return estimate + 1 + int64(b.uint64()%uint64(2*capacity))
	case 5:
		return int64(b.uint64() >> (b.byte() % 64))
	case 6:
		return -int64(b.byte())
	default:
		return int64(b.byte()) % (2*estimate + 2)
	}
}

// pool decodes a pool of any kind at now, and its oracle.
func (b *fuzzBytes) pool(now int64) (Pool, *oracle) {
	kind, allocation, durationMs, burst := b.config()
	switch {
	case b.byte()%3 == 0:
		used := b.used(allocation)
		sched, list := b.schedule(now)
		return NewCalendar(allocation, used, sched, now), newCalendarOracle(allocation, used, list, now)
	case kind == TimeBased:
		return NewTimeBased(allocation, durationMs, burst, now), newOracle(kind, allocation, durationMs, burst, now)
	default:
		return NewWhileInFlight(allocation), newOracle(kind, allocation, durationMs, burst, now)
	}
}

// flight is a job debited from the pool and not yet released.
type flight struct {
	estimate, at int64
	settled      bool
}

// runSettleOps decodes a pool and a sequence of operations from data,
// settles and calendar changes included, applies them to a Pool and to the
// oracle, and checks that they agree after every step.
func runSettleOps(t *testing.T, data []byte) {
	b := fuzzBytes(data)
	now := int64(b.uint64())
	p, o := b.pool(now)
	var inFlight []flight

	for step := 0; len(b) > 0 && step < 300; step++ {
		cost := b.cost(p.Capacity())
		switch b.byte() % 16 {
		case 0:
			now = satAdd(now, int64(b.byte())*int64(b.byte()+1)*1000)
		case 1:
			now = satAdd(now, int64(b.uint64()>>(1+b.byte()%63)))
		case 2:
			now = satAdd(now, -int64(b.byte())*1e6)
		case 3:
			// To the next reset, or the nanosecond before it.
			if r := p.NextReset(now); r != 0 && r != math.MaxInt64 {
				now = r - int64(b.byte()%2)
			}
		case 4, 5, 6:
			if o.canPay(cost, now) {
				p.Debit(cost, now)
				o.debit(cost, now)
				inFlight = append(inFlight, flight{estimate: cost, at: now})
			}
		case 7:
			if len(inFlight) > 0 {
				i := int(b.byte()) % len(inFlight)
				p.Release(inFlight[i].estimate)
				o.release(inFlight[i].estimate)
				inFlight = append(inFlight[:i], inFlight[i+1:]...)
			}
		case 8, 9:
			if len(inFlight) > 0 {
				f := &inFlight[int(b.byte())%len(inFlight)]
				if !f.settled {
					actual := b.actual(f.estimate, p.Capacity())
					p.Settle(f.estimate, actual, f.at, now)
					o.settle(f.estimate, actual, f.at, now)
					f.settled = true
				}
			}
		case 10:
			// A settle of no job in flight, dispatched at any time before.
			estimate := b.cost(p.Capacity())
			actual := b.actual(estimate, p.Capacity())
			at := satAdd(now, -int64(b.uint64()>>(1+b.byte()%63)))
			p.Settle(estimate, actual, at, now)
			o.settle(estimate, actual, at, now)
		case 11:
			kind, allocation, durationMs, burst := b.config()
			if b.byte()%3 == 0 {
				kind = Calendar
			}
			p.Reconfigure(allocation, durationMs, burst, kind, now)
			o.reconfigure(allocation, durationMs, burst, kind, now)
		case 12:
			_, allocation, _, _ := b.config()
			sched, list := b.schedule(now)
			p.ReconfigureCalendar(allocation, sched, now)
			o.reconfigureCalendar(allocation, list, now)
		case 13:
			// Jump to the first affordable nanosecond; one before it must not pay.
			if at, ok := p.AffordableAt(cost, now); ok && at != math.MaxInt64 {
				if at > now {
					require.False(t, p.CanPay(cost, at-1), "cost %d payable before %d", cost, at)
				}
				now = at
				require.True(t, p.CanPay(cost, at), "cost %d not payable at %d", cost, at)
			}
		case 14:
			// Jump to the repayment: owed until the nanosecond before.
			if at, ok := p.RepaidAt(now); ok && at != math.MaxInt64 {
				require.Greater(t, at, now)
				require.Positive(t, p.Debt(at-1), "repaid before %d", at)
				now = at
				require.Zero(t, p.Debt(now), "not repaid at %d", at)
			}
		case 15:
			if at, ok := p.PaidAt(cost+int64(b.byte())*p.Capacity()/16, now); ok && at != math.MaxInt64 {
				now = at
			}
		}
		checkAgainst(t, &p, o, cost, now)
	}
}

// TestPool_SettleRandomOps is the property test with every operation of
// every kind: debits, releases, settles, reconfigurations (calendar ones
// and kind changes included) and clock jumps.
func TestPool_SettleRandomOps(t *testing.T) {
	t.Parallel()

	rng := rand.New(rand.NewPCG(25, 2026))
	kinds := map[Kind]int{}
	for range 300 {
		data := make([]byte, 64+rng.IntN(1500))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		runSettleOps(t, data)
		b := fuzzBytes(data[8:]) // the pool, as runSettleOps decodes it after now
		p, _ := b.pool(0)
		kinds[p.Kind()]++
	}
	// Each kind starts a good share of the sequences.
	for _, k := range []Kind{WhileInFlight, TimeBased, Calendar} {
		require.Greater(t, kinds[k], 50, "%v", k)
	}
}

// enc builds fuzz input for runSettleOps in the order it decodes it, so
// that the seeds say what they do.
type enc []byte

func (e enc) b(xs ...byte) enc { return append(e, xs...) }

func (e enc) u(x uint64) enc { return binary.BigEndian.AppendUint64(e, x) }

// cost k in 1..16 (as fuzzBytes.cost decodes it).
func (e enc) cost(k byte) enc { return e.b(4, k-1) }

// tb6PerMinute is a time_based pool of 6 a minute: allocations[2] per
// durations[3], no burst, not calendar.
func (e enc) tb6PerMinute() enc { return e.b(1, 2, 0, 3, 0, 0, 0, 1) }

func FuzzPool_Settle(f *testing.F) {
	// time_based 6/min: two debits, a settle above the estimate into debt,
	// a jump to the repayment, a settle below it, a settle of no job in
	// flight, a reconfigure in debt to 100/5 min, a jump to affordable.
	f.Add([]byte(enc{}.u(0).tb6PerMinute().
		cost(2).b(4).cost(4).b(4).
		cost(1).b(8, 1, 7, 9). // the 4 cost 9: 5 over, 5 owed
		cost(1).b(14).
		cost(1).b(9, 0, 0). // the 2 cost 0
		cost(1).b(10).cost(3).b(7, 12).u(1<<40).b(0).
		cost(1).b(11, 1, 4, 0, 4, 0, 0, 0, 1).
		cost(5).b(13).cost(1).b(7, 0)))
	// calendar 7 a period of about an hour (from an hour ago, 41 resets),
	// restored 6 in debt: reset jumps, debits, a credit of a job of the
	// last period, a new irregular schedule, a jump to PaidAt.
	f.Add([]byte(enc{}.u(0).b(0, 3, 0, 0, 0, 0, 0, 0).b(2, 70).b(7).u(3_600_000_000_000<<20).b(0, 0xff, 10).
		cost(1).b(4).
		cost(1).b(3, 0).
		cost(3).b(4).cost(4).b(4).
		cost(1).b(8, 0, 7, 1). // the 3 cost 1
		cost(1).b(3, 0).
		cost(1).b(4).
		cost(1).b(8, 1, 0). // the 4 of the last period cost 0: dropped
		cost(1).b(12, 0, 5, 0, 0, 0, 0, 0).b(2, 0, 3, 10, 10, 1, 20, 20, 1, 30, 30, 1).
		cost(1).b(3, 1).cost(7).b(15, 40).cost(1).b(3, 0)))
	// calendar with more resets than PaidAt walks, 1 ms apart.
	f.Add([]byte(enc{}.u(1e12).b(0, 2, 0, 0, 0, 0, 0, 0).b(0).b(1, 1, 3).
		cost(6).b(4).cost(6).b(15, 255).cost(6).b(15, 128).cost(3).b(4).cost(1).b(3, 0)))
	// Extremes: A = C = 2^31−1 and D = 2^53 ms from near MinInt64, a settle
	// of MaxInt64 into the debt's cap, reconfigured in debt to D = 1 ms.
	f.Add([]byte(enc{}.u(1<<63+1).b(1, 7, 0, 8, 0, 0, 0, 1).
		cost(16).b(4).
		cost(1).b(8, 0, 5).u(math.MaxInt64).b(0).
		cost(1).b(14).
		cost(1).b(11, 1, 7, 0, 0, 0, 0, 0, 1).
		cost(1).b(14).cost(1).b(13)))
	// calendar of 1 restored with MaxInt64 spent, which the fuzzer found
	// overflowed the oracle's used + cost, and a settle of MaxInt64 more.
	f.Add([]byte(enc{}.u(1<<40).b(0, 0, 0, 0, 0, 0, 0, 0).b(3).u(math.MaxInt64).b(0).b(0).
		cost(1).b(4).cost(1).b(10).cost(1).b(5).u(math.MaxInt64).b(0).u(1).b(0).cost(1).b(13)))
	// while_in_flight 7: settles are no-ops; to calendar and back, held kept.
	f.Add([]byte(enc{}.u(0).b(0, 3, 0, 0, 0, 0, 0, 1).
		cost(3).b(4).cost(1).b(8, 0, 2).
		cost(1).b(12, 0, 5, 0, 0, 0, 0, 0).b(7).u(1<<40).b(0, 0, 3).
		cost(2).b(4).cost(1).b(11, 0, 3, 0, 0, 0, 0, 0, 1).cost(1).b(7, 0)))
	rng := rand.New(rand.NewPCG(25, 5))
	for range 16 {
		data := make([]byte, 512)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		runSettleOps(t, data)
	})
}

// TestPool_SettleAgainstOracle runs random sequences of debits and settles
// on time_based pools, compares every answer with the oracle, and checks
// the window bound with debt over the whole sequence.
func TestPool_SettleAgainstOracle(t *testing.T) {
	t.Parallel()

	rng := rand.New(rand.NewPCG(20261202, 25))
	checked, owed := 0, 0
	for seq := range 200 {
		// One sequence in ten settles huge costs too, into the debt's cap.
		huge := seq%10 == 0
		allocation, durationMs, burst := randConfig(rng)
		now := []int64{0, math.MinInt64 + 1, 1788215727072 * 1e6, math.MaxInt64 - 1e15}[rng.IntN(4)]
		p := NewTimeBased(allocation, durationMs, burst, now)
		o := newOracle(TimeBased, allocation, durationMs, burst, now)
		c := p.Capacity()
		perToken := int64(min(float64(durationMs)*1e6/float64(allocation), math.MaxInt64/8))

		var records []debitRecord
		var inFlight []flight
		effective := now
		record := func(cost int64) {
			effective = max(effective, now)
			records = append(records, debitRecord{at: effective, cost: cost, debt: o.debt(effective)})
		}
		for range 250 {
			switch rng.IntN(8) {
			case 0:
			case 1:
				now = satAdd(now, -rng.Int64N(1e9))
			case 2:
				if at, ok := p.RepaidAt(now); ok {
					now = at
				}
			case 3:
				if at, ok := p.AffordableAt(min(c, 1+rng.Int64N(3)), now); ok {
					now = at
				}
			default:
				now = satAdd(now, rng.Int64N(perToken*2+1))
			}

			cost := 1 + rng.Int64N(min(c, 10))
			if rng.IntN(4) == 0 {
				cost = 1 + rng.Int64N(c)
			}
			checkAgainst(t, &p, o, cost, now)
			if o.debt(now).Sign() > 0 {
				owed++
			}
			if len(inFlight) == 0 || rng.IntN(2) == 0 {
				if o.canPay(cost, now) {
					p.Debit(cost, now)
					o.debit(cost, now)
					inFlight = append(inFlight, flight{estimate: cost, at: now})
					record(cost)
				}
			} else {
				i := rng.IntN(len(inFlight))
				f := inFlight[i]
				inFlight = append(inFlight[:i], inFlight[i+1:]...)
				actual := []int64{0, f.estimate, f.estimate + 1 + rng.Int64N(3), rng.Int64N(2*f.estimate + 1),
					f.estimate + 1 + rng.Int64N(c), f.estimate + 1 + rng.Int64N(c)}[rng.IntN(6)]
				if huge && rng.IntN(20) == 0 {
					actual = math.MaxInt64
				}
				p.Settle(f.estimate, actual, f.at, now)
				o.settle(f.estimate, actual, f.at, now)
				p.Release(f.estimate)
				o.release(f.estimate)
				record(actual - f.estimate)
			}
			checkAgainst(t, &p, o, cost, now)
		}
		if o.capped {
			continue // the cap forgave tokens: the bound does not hold
		}
		checked++
		err := checkWindows(records, allocation, durationMs, c)
		require.NoError(t, err, "sequence %d: A=%d D=%d C=%d", seq, allocation, durationMs, c)
	}
	require.Greater(t, checked, 150)
	require.Greater(t, owed, 1000, "pools in debt are checked often")
}

// TestPool_ReconfigureDebtAgainstOracle changes the configuration of
// time_based pools in debt, at random times, and compares them with the
// oracle after each change.
func TestPool_ReconfigureDebtAgainstOracle(t *testing.T) {
	t.Parallel()

	rng := rand.New(rand.NewPCG(2026, 12))
	for range 300 {
		allocation, durationMs, burst := randConfig(rng)
		now := rng.Int64N(1 << 62)
		p := NewTimeBased(allocation, durationMs, burst, now)
		o := newOracle(TimeBased, allocation, durationMs, burst, now)
		for range 10 {
			// Into debt by up to twice the capacity, sometimes to the cap.
			extra := p.Capacity() + 1 + rng.Int64N(2*p.Capacity())
			if rng.IntN(10) == 0 {
				extra = math.MaxInt64
			}
			p.Settle(0, extra, now, now)
			o.settle(0, extra, now, now)
			checkAgainst(t, &p, o, 1, now)
			now = satAdd(now, rng.Int64N(1+int64(min(float64(durationMs)*1e6, 1<<40))))
			allocation, durationMs, burst = randConfig(rng)
			p.Reconfigure(allocation, durationMs, burst, TimeBased, now)
			o.reconfigure(allocation, durationMs, burst, TimeBased, now)
			checkAgainst(t, &p, o, 1, now)
			checkAgainst(t, &p, o, p.Capacity(), satAdd(now, rng.Int64N(1<<50)))
		}
	}
}

func TestCheckAgainst_DetectsDebtErrors(t *testing.T) {
	t.Parallel()

	p := NewTimeBased(6, 60000, 0, 0)
	o := newOracle(TimeBased, 6, 60000, 0, 0)
	p.Debit(6, 0)
	o.debit(6, 0)
	p.Settle(6, 8, 0, 0)
	o.settle(6, 8, 0, 0)
	require.False(t, fails(func(t tb) { checkAgainst(t, &p, o, 1, 5e9) }))
	// A nanosecond's drip of debt forgiven: repaid a nanosecond early.
	p.debt = p.debt.sub(u128Of(6))
	require.True(t, fails(func(t tb) { checkAgainst(t, &p, o, 1, 5e9) }))

	resets := []int64{hour, 2 * hour, 3 * hour}
	c := NewCalendar(10, 0, instants(resets), 0)
	oc := newCalendarOracle(10, 0, resets, 0)
	c.Debit(10, hour/2)
	oc.debit(10, hour/2)
	c.Debit(4, hour+1)
	oc.debit(4, hour+1)
	require.False(t, fails(func(t tb) { checkAgainst(t, &c, oc, 1, hour+2) }))
	// The credit of the last period's job applied after all.
	c.used = 0
	require.True(t, fails(func(t tb) { checkAgainst(t, &c, oc, 1, hour+2) }))
	oc.settle(10, 0, hour/2, hour+2)
	require.True(t, fails(func(t tb) { checkAgainst(t, &c, oc, 1, hour+2) }))
}
