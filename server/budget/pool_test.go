package budget

import (
	"math"
	"math/big"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	ms     = int64(1e6)
	second = 1000 * ms
	minute = 60 * second
	year   = 365 * 24 * 60 * minute
)

// debitN debits cost n times at now, checking CanPay first as the engine does.
func debitN(t *testing.T, p *Pool, n int, cost, now int64) {
	t.Helper()
	for i := range n {
		require.True(t, p.CanPay(cost, now), "debit %d of %d", i+1, n)
		p.Debit(cost, now)
	}
}

func requireAffordableAt(t *testing.T, p *Pool, cost, now, want int64) {
	t.Helper()
	at, ok := p.AffordableAt(cost, now)
	require.True(t, ok)
	require.Equal(t, want, at)
	if want > now && want != math.MaxInt64 {
		require.False(t, p.CanPay(cost, want-1), "payable 1 ns before %d", want)
	}
	if want != math.MaxInt64 {
		require.True(t, p.CanPay(cost, want), "not payable at %d", want)
	}
}

func TestKind_String(t *testing.T) {
	t.Parallel()
	require.Equal(t, "while_in_flight", WhileInFlight.String())
	require.Equal(t, "time_based", TimeBased.String())
	require.Equal(t, "unknown", Kind(7).String())
}

func TestPool_TimeBased(t *testing.T) {
	t.Parallel()

	t.Run("SixPerMinute", func(t *testing.T) {
		t.Parallel()
		// The seed's example: a burst of 6, then one job every 10 s.
		p := NewTimeBased(6, 60000, 0, 0)
		require.Equal(t, TimeBased, p.Kind())
		require.Equal(t, int64(6), p.Capacity())
		require.Equal(t, 6.0, p.Available(0))
		requireAffordableAt(t, &p, 6, 0, 0)
		debitN(t, &p, 6, 1, 0)
		require.False(t, p.CanPay(1, 0), "7th job at t=0")
		require.Equal(t, 0.0, p.Available(0))
		requireAffordableAt(t, &p, 1, 0, 10*second)
		requireAffordableAt(t, &p, 2, 0, 20*second)
		require.Equal(t, 0.5, p.Available(5*second))
		require.Equal(t, 1.0, p.Available(10*second))
		require.Equal(t, 6.0, p.Available(10*minute), "capped at the capacity")

		// Paced from then on.
		for k := int64(1); k <= 20; k++ {
			requireAffordableAt(t, &p, 1, (k-1)*10*second, k*10*second)
			debitN(t, &p, 1, 1, k*10*second)
		}
		require.Zero(t, p.Held(), "time_based holds nothing")
	})

	t.Run("BurstOne", func(t *testing.T) {
		t.Parallel()
		p := NewTimeBased(6, 60000, 1, 0)
		require.Equal(t, int64(1), p.Capacity())
		debitN(t, &p, 1, 1, 0)
		require.False(t, p.CanPay(1, 0))
		requireAffordableAt(t, &p, 1, 0, 10*second)
		// Idle for an hour: still only one token, then one per 10 s.
		require.Equal(t, 1.0, p.Available(60*minute))
		debitN(t, &p, 1, 1, 60*minute)
		require.False(t, p.CanPay(1, 60*minute))
		requireAffordableAt(t, &p, 1, 60*minute, 60*minute+10*second)
		_, ok := p.AffordableAt(2, 0)
		require.False(t, ok, "a cost above the burst is never affordable")
		require.False(t, p.CanPay(2, 100*minute))
	})

	t.Run("BurstAboveAllocation", func(t *testing.T) {
		t.Parallel()
		p := NewTimeBased(6, 60000, 20, 0)
		require.Equal(t, int64(20), p.Capacity())
		debitN(t, &p, 20, 1, 0)
		require.False(t, p.CanPay(1, 0))
		require.Equal(t, 6.0, p.Available(minute))
		require.True(t, p.CanPay(6, minute))
		require.False(t, p.CanPay(7, minute))
		requireAffordableAt(t, &p, 20, 0, 200*second)
		require.Equal(t, 20.0, p.Available(60*minute))
		debitN(t, &p, 1, 20, 60*minute)
	})

	t.Run("HundredPerFiveMinutes", func(t *testing.T) {
		t.Parallel()
		p := NewTimeBased(100, 5*60000, 0, 0)
		debitN(t, &p, 1, 100, 0)
		require.Equal(t, 20.0, p.Available(minute))
		require.True(t, p.CanPay(20, minute))
		require.False(t, p.CanPay(21, minute))
		require.Equal(t, 80.0, p.Available(4*minute))
		requireAffordableAt(t, &p, 20, 0, minute)
		requireAffordableAt(t, &p, 80, 0, 4*minute)
		requireAffordableAt(t, &p, 100, 0, 5*minute)
		requireAffordableAt(t, &p, 1, 0, 3*second)
		// Spend 30 of the 80 at 4 min: 50 left, 100 again 50·3 s later.
		debitN(t, &p, 3, 10, 4*minute)
		require.Equal(t, 50.0, p.Available(4*minute))
		requireAffordableAt(t, &p, 100, 4*minute, 4*minute+150*second)
	})

	t.Run("FractionalRate", func(t *testing.T) {
		t.Parallel()
		// 7 tokens per 3 ms: a token every 3/7 ms, not a whole number of ns.
		p := NewTimeBased(7, 3, 0, 0)
		debitN(t, &p, 1, 7, 0)
		requireAffordableAt(t, &p, 1, 0, 428572) // ⌈3e6/7⌉
		requireAffordableAt(t, &p, 2, 0, 857143) // ⌈6e6/7⌉
		requireAffordableAt(t, &p, 7, 0, 3*ms)
		debitN(t, &p, 1, 1, 428572)
		// 4 units are left over (7·428572 − 3e6), so the next token needs
		// ⌈(3e6−4)/7⌉ = 428571 ns more: at ⌈6e6/7⌉ again, nothing drifts.
		requireAffordableAt(t, &p, 1, 428572, 428572+428571)
	})

	t.Run("ClockGoesBack", func(t *testing.T) {
		t.Parallel()
		p := NewTimeBased(6, 60000, 0, 0)
		debitN(t, &p, 6, 1, 100*second)
		// An earlier time is treated as no time passed since 100 s.
		require.False(t, p.CanPay(1, 50*second))
		require.Equal(t, 0.0, p.Available(50*second))
		requireAffordableAt(t, &p, 1, 50*second, 110*second)
		require.Equal(t, 0.5, p.Available(105*second))
		debitN(t, &p, 1, 1, 110*second)
		require.False(t, p.CanPay(1, 0))
		require.Equal(t, 0.0, p.Available(math.MinInt64))
		requireAffordableAt(t, &p, 1, math.MinInt64, 120*second)
		// Later times still count from the last update, at 110 s.
		p.Debit(1, 120*second)
		requireAffordableAt(t, &p, 1, 0, 130*second)
	})

	t.Run("CostZero", func(t *testing.T) {
		t.Parallel()
		p := NewTimeBased(1, 1000, 0, 0)
		debitN(t, &p, 1, 1, 0)
		require.True(t, p.CanPay(0, 0))
		p.Debit(0, 0)
		requireAffordableAt(t, &p, 0, 5, 5)
		require.Equal(t, 0.5, p.Available(500*ms))
	})
}

func TestPool_WhileInFlight(t *testing.T) {
	t.Parallel()

	p := NewWhileInFlight(5)
	require.Equal(t, WhileInFlight, p.Kind())
	require.Equal(t, int64(5), p.Capacity())
	require.Equal(t, 5.0, p.Available(0))
	_, ok := p.AffordableAt(1, 0)
	require.False(t, ok, "while_in_flight tokens come back on release, not with time")

	debitN(t, &p, 1, 3, 0)
	require.Equal(t, int64(3), p.Held())
	require.Equal(t, 2.0, p.Available(0))
	require.False(t, p.CanPay(3, 0))
	require.False(t, p.CanPay(3, 100*year), "time does not help")
	debitN(t, &p, 1, 2, 0)
	require.Equal(t, int64(5), p.Held())
	require.False(t, p.CanPay(1, 0))
	require.True(t, p.CanPay(0, 0))

	p.Release(3)
	require.Equal(t, int64(2), p.Held())
	require.True(t, p.CanPay(3, 0))
	require.False(t, p.CanPay(4, 0))
	p.Release(2)
	require.Zero(t, p.Held())
	require.True(t, p.CanPay(5, 0))
	require.False(t, p.CanPay(6, 0))
	require.False(t, p.CanPay(math.MaxInt64, 0))
}

func TestPool_Reconfigure(t *testing.T) {
	t.Parallel()

	t.Run("TimeBasedKeepsTokens", func(t *testing.T) {
		t.Parallel()
		p := NewTimeBased(6, 60000, 0, 0)
		debitN(t, &p, 6, 1, 0)
		require.Equal(t, 3.0, p.Available(30*second))
		// 100 per 5 min is one token per 3 s, from 30 s on.
		p.Reconfigure(100, 300000, 0, TimeBased, 30*second)
		require.Equal(t, int64(100), p.Capacity())
		require.Equal(t, 3.0, p.Available(30*second))
		require.Equal(t, 4.0, p.Available(33*second))
		requireAffordableAt(t, &p, 10, 30*second, 51*second)
	})

	t.Run("ClampedToNewCapacity", func(t *testing.T) {
		t.Parallel()
		p := NewTimeBased(100, 300000, 0, 0)
		p.Reconfigure(6, 60000, 0, TimeBased, minute)
		require.Equal(t, 6.0, p.Available(minute))
		debitN(t, &p, 6, 1, minute)
		requireAffordableAt(t, &p, 1, minute, minute+10*second)

		// A lower burst clamps too; removing it (0) lifts the capacity back.
		q := NewTimeBased(6, 60000, 20, 0)
		q.Reconfigure(6, 60000, 5, TimeBased, 0)
		require.Equal(t, int64(5), q.Capacity())
		require.Equal(t, 5.0, q.Available(0))
		q.Reconfigure(6, 60000, 0, TimeBased, 0)
		require.Equal(t, int64(6), q.Capacity())
		require.Equal(t, 5.0, q.Available(0), "not refilled by the change")
		require.Equal(t, 6.0, q.Available(10*second))
	})

	t.Run("NewRateFromNow", func(t *testing.T) {
		t.Parallel()
		p := NewTimeBased(6, 60000, 0, 0)
		debitN(t, &p, 6, 1, 0)
		// 2.5 tokens at 25 s; then 6 per 2 min (one per 20 s).
		require.Equal(t, 2.5, p.Available(25*second))
		p.Reconfigure(6, 120000, 0, TimeBased, 25*second)
		require.Equal(t, 2.5, p.Available(25*second))
		requireAffordableAt(t, &p, 3, 25*second, 35*second)
		// A faster rate: 60 per minute, from 35 s.
		p.Reconfigure(60, 60000, 0, TimeBased, 35*second)
		require.Equal(t, 3.0, p.Available(35*second))
		requireAffordableAt(t, &p, 10, 35*second, 42*second)
	})

	t.Run("RoundsDownToNewUnit", func(t *testing.T) {
		t.Parallel()
		// A = 1000 per 3 ms: after 1 ns the pool has 1000 units of 3e6 each.
		p := NewTimeBased(1000, 3, 0, 0)
		debitN(t, &p, 1, 1000, 0)
		p.Reconfigure(1000, 1, 0, TimeBased, 1)
		// 1000/3e6 token is 333.33… units of 1e6: rounded down to 333.
		require.Equal(t, u128Of(333), p.level)
		requireAffordableAt(t, &p, 1, 1, 1+1000) // ⌈(1e6−333)/1000⌉
	})

	t.Run("UnchangedConfigIsExact", func(t *testing.T) {
		t.Parallel()
		p := NewTimeBased(7, 3, 0, 0)
		debitN(t, &p, 1, 7, 0)
		before, _ := p.stateAt(12345)
		p.Reconfigure(7, 3, 0, TimeBased, 12345)
		require.Equal(t, before, p.level)
	})

	t.Run("WhileInFlightRaiseFreesAtOnce", func(t *testing.T) {
		t.Parallel()
		p := NewWhileInFlight(2)
		debitN(t, &p, 2, 1, 0)
		require.False(t, p.CanPay(1, 0))
		p.Reconfigure(3, 0, 0, WhileInFlight, 0)
		require.True(t, p.CanPay(1, 0))
		require.False(t, p.CanPay(2, 0))
		require.Equal(t, int64(2), p.Held())
	})

	t.Run("WhileInFlightLowerBelowHeld", func(t *testing.T) {
		t.Parallel()
		p := NewWhileInFlight(5)
		debitN(t, &p, 5, 1, 0)
		p.Reconfigure(2, 0, 0, WhileInFlight, 0)
		require.Equal(t, -3.0, p.Available(0))
		require.False(t, p.CanPay(1, 0))
		p.Release(1)
		p.Release(1)
		p.Release(1)
		require.Equal(t, 0.0, p.Available(0))
		require.False(t, p.CanPay(1, 0))
		p.Release(1)
		require.True(t, p.CanPay(1, 0))
		require.False(t, p.CanPay(2, 0))
	})

	t.Run("ToTimeBasedStartsFull", func(t *testing.T) {
		t.Parallel()
		p := NewWhileInFlight(5)
		debitN(t, &p, 1, 5, 0)
		p.Reconfigure(6, 60000, 0, TimeBased, minute)
		require.Equal(t, TimeBased, p.Kind())
		require.Equal(t, 6.0, p.Available(minute))
		require.Zero(t, p.Held())
		debitN(t, &p, 6, 1, minute)
		requireAffordableAt(t, &p, 1, minute, minute+10*second)
	})

	t.Run("ToWhileInFlightHoldsInFlightCost", func(t *testing.T) {
		t.Parallel()
		// 2 in flight before, 3 dispatched while time_based, all still in flight.
		p := NewWhileInFlight(5)
		debitN(t, &p, 1, 2, 0)
		p.Reconfigure(6, 60000, 0, TimeBased, 0)
		debitN(t, &p, 1, 3, 0)
		p.Reconfigure(6, 0, 0, WhileInFlight, 0)
		require.Equal(t, int64(5), p.Held())
		require.Equal(t, 1.0, p.Available(0))
		require.False(t, p.CanPay(2, 0))
		require.True(t, p.CanPay(1, 0))
	})

	t.Run("RoundTripDoesNotLeak", func(t *testing.T) {
		t.Parallel()
		// Jobs debited as while_in_flight finish while the budget is
		// time_based: their release must still count when it turns back.
		p := NewWhileInFlight(5)
		debitN(t, &p, 1, 5, 0)
		p.Reconfigure(6, 60000, 0, TimeBased, 0)
		require.Equal(t, 6.0, p.Available(0))
		p.Release(5)
		require.Equal(t, 6.0, p.Available(0), "time_based refunds nothing")
		p.Reconfigure(5, 0, 0, WhileInFlight, 0)
		require.Zero(t, p.Held())
		require.True(t, p.CanPay(5, 0))
	})
}

func TestPool_Extremes(t *testing.T) {
	t.Parallel()

	t.Run("LargestEverything", func(t *testing.T) {
		t.Parallel()
		const c = MaxAllocation
		p := NewTimeBased(c, MaxDurationMs, 0, 0)
		require.Equal(t, float64(c), p.Available(0))
		debitN(t, &p, 1, c, 0)
		// One token is 2^53·10^6 units; A units a ns: ⌈2^53·10^6/(2^31−1)⌉ ns.
		requireAffordableAt(t, &p, 1, 0, 4194304001954)
		// The whole pool takes 2^53 ms (285,000 years): past the int64 range.
		at, ok := p.AffordableAt(c, 0)
		require.True(t, ok)
		require.Equal(t, int64(math.MaxInt64), at)
		require.False(t, p.CanPay(c, math.MaxInt64))
		// (2^31−1)(2^63−1)/(2^53·10^6) tokens after 2^63−1 ns.
		require.InEpsilon(t, 2199023.254528, p.Available(math.MaxInt64), 1e-12)

		// The widest gap an int64 clock allows.
		q := NewTimeBased(c, MaxDurationMs, 0, math.MinInt64)
		debitN(t, &q, 1, c, math.MinInt64)
		require.InEpsilon(t, 4398046.509056, q.Available(math.MaxInt64), 1e-12)
		require.True(t, q.CanPay(4398046, math.MaxInt64))
		require.False(t, q.CanPay(4398047, math.MaxInt64))
	})

	t.Run("OneMillisecondForYears", func(t *testing.T) {
		t.Parallel()
		p := NewTimeBased(MaxAllocation, 1, 0, 0)
		debitN(t, &p, 1, MaxAllocation, 0)
		// The whole pool comes back in exactly 1 ms.
		requireAffordableAt(t, &p, MaxAllocation, 0, ms)
		require.Equal(t, float64(MaxAllocation), p.Available(100*year))
		debitN(t, &p, 1, MaxAllocation, 100*year)
		requireAffordableAt(t, &p, MaxAllocation, 100*year, 100*year+ms)

		q := NewTimeBased(1, 1, 0, math.MinInt64)
		debitN(t, &q, 1, 1, math.MinInt64)
		require.Equal(t, 1.0, q.Available(math.MaxInt64))
		requireAffordableAt(t, &q, 1, math.MinInt64, math.MinInt64+ms)
		debitN(t, &q, 1, 1, math.MaxInt64)
		require.False(t, q.CanPay(1, math.MaxInt64))
	})

	t.Run("AffordableAtClamps", func(t *testing.T) {
		t.Parallel()
		p := NewTimeBased(1, 1, 0, math.MaxInt64-ms)
		debitN(t, &p, 1, 1, math.MaxInt64-ms)
		requireAffordableAt(t, &p, 1, math.MaxInt64-ms, math.MaxInt64)
		q := NewTimeBased(1, 1, 0, math.MaxInt64-10)
		debitN(t, &q, 1, 1, math.MaxInt64-10)
		requireAffordableAt(t, &q, 1, math.MaxInt64-10, math.MaxInt64)
		require.False(t, q.CanPay(1, math.MaxInt64))
	})

	t.Run("PaidAtHugeTotals", func(t *testing.T) {
		t.Parallel()
		// total·unit past 2^128 must not wrap round to a small need: with
		// D = 2^53 ms, ⌈2^128/unit⌉ tokens once wrapped to less than a token.
		p := NewTimeBased(MaxAllocation, MaxDurationMs, 0, 0)
		unit := new(big.Int).Mul(big.NewInt(MaxDurationMs), big.NewInt(1e6))
		wraps := new(big.Int).Lsh(big.NewInt(1), 128)
		wraps.Add(wraps, unit).Sub(wraps, big.NewInt(1)).Quo(wraps, unit)
		for _, total := range []int64{wraps.Int64(), wraps.Int64() + 1, 1 << 55, math.MaxInt64} {
			at, ok := p.PaidAt(total, 0)
			require.True(t, ok)
			require.Equal(t, int64(math.MaxInt64), at, "total %d", total)
		}
		// A fast pool pays huge totals within the int64 range, exactly:
		// 2^31−1 a ms pays 2^53 tokens after the burst in ⌈2^53·10^6/(2^31−1)⌉ ns.
		q := NewTimeBased(MaxAllocation, 1, 0, 0)
		at, ok := q.PaidAt(1<<53+MaxAllocation, 0)
		require.True(t, ok)
		require.Equal(t, int64(4194304001954), at)
	})

	t.Run("ReconfigureAcrossTheRange", func(t *testing.T) {
		t.Parallel()
		p := NewTimeBased(MaxAllocation, MaxDurationMs, 0, 0)
		o := newOracle(TimeBased, MaxAllocation, MaxDurationMs, 0, 0)
		p.Debit(MaxAllocation, 0)
		o.debit(MaxAllocation, 0)
		now := int64(0)
		for _, d := range []int64{1, MaxDurationMs, 3, MaxDurationMs - 1, 1, 86400000, MaxDurationMs} {
			now += 123456789123
			p.Reconfigure(MaxAllocation, d, 0, TimeBased, now)
			o.reconfigure(MaxAllocation, d, 0, TimeBased, now)
			checkAgainst(t, &p, o, 1, now)
			checkAgainst(t, &p, o, MaxAllocation, now+1)
			if o.canPay(1, now) {
				p.Debit(1, now)
				o.debit(1, now)
			}
			checkAgainst(t, &p, o, 1, now)
		}
	})

	t.Run("InputsClamped", func(t *testing.T) {
		t.Parallel()
		p := NewTimeBased(0, 0, -5, 0)
		require.Equal(t, int64(1), p.Capacity())
		require.Equal(t, int64(1), p.durationMs)
		p = NewTimeBased(1<<40, 1<<62, 1<<40, 0)
		require.Equal(t, int64(MaxAllocation), p.allocation)
		require.Equal(t, int64(MaxAllocation), p.Capacity())
		require.Equal(t, int64(MaxDurationMs), p.durationMs)
		p.Reconfigure(-1, -1, 0, TimeBased, 0)
		require.Equal(t, int64(1), p.Capacity())
		w := NewWhileInFlight(-3)
		require.Equal(t, int64(1), w.Capacity())
		w.Reconfigure(math.MaxInt64, 5, 5, Kind(9), 0)
		require.Equal(t, WhileInFlight, w.Kind())
		require.Equal(t, int64(MaxAllocation), w.Capacity())
	})

	t.Run("ZeroPoolPaysNothing", func(t *testing.T) {
		t.Parallel()
		var p Pool
		require.Equal(t, WhileInFlight, p.Kind())
		require.False(t, p.CanPay(1, 0))
		require.Equal(t, 0.0, p.Available(0))
	})
}

func TestPool_Misuse(t *testing.T) {
	t.Parallel()

	t.Run("DebugChecksPanic", func(t *testing.T) {
		t.Parallel()
		p := NewTimeBased(6, 60000, 0, 0)
		debitN(t, &p, 6, 1, 0)
		require.Panics(t, func() { p.Debit(1, 0) })
		w := NewWhileInFlight(1)
		require.Panics(t, func() { w.Release(1) })
		w.Debit(1, 0)
		require.Panics(t, func() { w.Debit(1, 0) })
	})

	t.Run("SaturatesWithoutDebugChecks", func(t *testing.T) {
		t.Parallel()
		p := NewTimeBased(6, 60000, 0, 0)
		debitN(t, &p, 5, 1, 0)
		require.False(t, p.debit(2, 0), "only 1 left")
		require.Equal(t, 0.0, p.Available(0), "emptied, not wrapped around")
		requireAffordableAt(t, &p, 1, 0, 10*second)
		require.False(t, p.debit(7, 0), "above the capacity")
		require.True(t, p.release(7))
		require.False(t, p.release(100))
		require.Zero(t, p.held)

		w := NewWhileInFlight(3)
		require.True(t, w.debit(3, 0))
		require.False(t, w.debit(1, 0))
		require.Equal(t, -1.0, w.Available(0))
		require.False(t, w.release(5))
		require.Zero(t, w.Held())
		require.False(t, w.debit(math.MaxInt64, 0))
		require.False(t, w.debit(math.MaxInt64, 0))
		require.Equal(t, int64(math.MaxInt64), w.held, "saturated")
	})
}

func TestPool_NoAllocations(t *testing.T) {
	// Not parallel: AllocsPerRun is disturbed by other goroutines' allocations.
	tb := NewTimeBased(6, 60000, 0, 0)
	wf := NewWhileInFlight(5)
	now := int64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		now += 10 * second
		if tb.CanPay(1, now) {
			tb.Debit(1, now)
		}
		tb.Release(1)
		_, _ = tb.AffordableAt(2, now)
		_ = tb.Available(now)
		if wf.CanPay(1, now) {
			wf.Debit(1, now)
		}
		wf.Release(1)
		tb.Reconfigure(6, 60000, 0, TimeBased, now)
	})
	require.Zero(t, allocs)

	// Settles, debt and calendar pools: the schedule is made an interface
	// once, outside (that conversion may allocate; the pool never does).
	var sched Schedule = every{origin: 0, period: minute, count: math.MaxInt64}
	cal := NewCalendar(5, 0, sched, 0)
	allocs = testing.AllocsPerRun(1000, func() {
		now += 10 * second
		tb.Debit(0, now)
		tb.Settle(1, 3, now, now)
		_, _ = tb.RepaidAt(now)
		_ = tb.Debt(now)
		_, _ = tb.PaidAt(7, now)
		tb.Settle(3, 0, now, now)
		if cal.CanPay(1, now) {
			cal.Debit(1, now)
			cal.Release(1)
		}
		cal.Settle(1, 2, now, now)
		_, _ = cal.AffordableAt(5, now)
		_, _ = cal.PaidAt(12, now)
		_, _ = cal.RepaidAt(now)
		_ = cal.Used(now) + cal.NextReset(now)
		_ = cal.Available(now) + cal.Debt(now)
		cal.ReconfigureCalendar(5, sched, now)
	})
	require.Zero(t, allocs)
}

func BenchmarkPool_CanPayDebit(b *testing.B) {
	b.Run("WhileInFlight", func(b *testing.B) {
		p := NewWhileInFlight(1000)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			now := int64(i)
			if p.CanPay(1, now) {
				p.Debit(1, now)
			}
			p.Release(1)
		}
	})
	b.Run("TimeBased", func(b *testing.B) {
		// 1000 per second, one call per ms: a token is always there, so
		// every iteration refills and debits.
		p := NewTimeBased(1000, 1000, 0, 0)
		paid := 0
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			now := int64(i) * ms
			if p.CanPay(1, now) {
				p.Debit(1, now)
				paid++
			}
		}
		if paid == 0 {
			b.Fatal("nothing was paid")
		}
	})
	b.Run("TimeBasedLargest", func(b *testing.B) {
		p := NewTimeBased(MaxAllocation, MaxDurationMs, 0, 0)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			now := int64(i) * second
			if p.CanPay(1, now) {
				p.Debit(1, now)
			}
		}
	})
}

func BenchmarkPool_AffordableAt(b *testing.B) {
	p := NewTimeBased(7, 3, 0, 0)
	p.Debit(7, 0)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := p.AffordableAt(5, 1); !ok {
			b.Fatal("not affordable")
		}
	}
}
