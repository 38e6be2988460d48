package budget

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

const hour = 60 * minute

// hourly resets on the hour from 0, for ever.
var hourly = every{origin: 0, period: hour, count: math.MaxInt64}

func TestPool_Calendar(t *testing.T) {
	t.Parallel()

	t.Run("Basics", func(t *testing.T) {
		t.Parallel()
		p := NewCalendar(10, 0, hourly, hour/2)
		require.Equal(t, Calendar, p.Kind())
		require.Equal(t, "calendar", Calendar.String())
		require.Equal(t, int64(10), p.Capacity())
		require.Equal(t, hour, p.NextReset(hour/2))
		require.True(t, p.Full(hour/2))
		debitN(t, &p, 1, 4, hour/2)
		debitN(t, &p, 1, 6, hour/2)
		require.Zero(t, p.Held(), "calendar holds nothing")
		require.Equal(t, int64(10), p.Used(hour/2))
		require.Equal(t, 0.0, p.Available(hour/2))
		require.False(t, p.CanPay(1, hour-1), "no drip between resets")
		requireAffordableAt(t, &p, 1, hour/2, hour)
		requireAffordableAt(t, &p, 10, hour/2, hour)
		_, ok := p.AffordableAt(11, hour/2)
		require.False(t, ok, "above the allocation")
		_, ok = p.RepaidAt(hour / 2)
		require.False(t, ok, "spent, not owed")

		// At the reset the pool refills; reading does not apply it.
		require.Equal(t, int64(0), p.Used(hour))
		require.Equal(t, 10.0, p.Available(hour))
		require.Equal(t, 2*hour, p.NextReset(hour))
		require.Equal(t, int64(10), p.used)
		require.False(t, p.Full(hour), "still holds 10 for a later while_in_flight")
		p.Release(4)
		p.Release(6)
		require.True(t, p.Full(hour))
		debitN(t, &p, 1, 10, hour)
		require.Equal(t, hour, p.periodStart)
		require.Equal(t, 2*hour, p.nextReset)
	})

	t.Run("LazyResetCallsNextOnce", func(t *testing.T) {
		t.Parallel()
		calls := 0
		p := NewCalendar(10, 0, counting{hourly, &calls}, 0)
		require.Equal(t, 1, calls)
		debitN(t, &p, 1, 10, 0)
		// Reads that need only what was spent never ask the schedule.
		_ = p.CanPay(1, 1000*hour)
		_ = p.Available(1000 * hour)
		_ = p.Debt(1000 * hour)
		_ = p.Used(1000 * hour)
		_, _ = p.AffordableAt(1, 1000*hour)
		require.Equal(t, 1, calls)
		// A thousand periods later, one call, not a walk over the missed ones.
		p.Debit(1, 1000*hour+5)
		require.Equal(t, 2, calls)
		require.Equal(t, int64(1), p.Used(1000*hour+5))
		require.Equal(t, hour, p.periodStart, "the period counts from the reset that ended the last")
		require.Equal(t, 1001*hour, p.nextReset)
	})

	t.Run("NewInDebtUntilReset", func(t *testing.T) {
		t.Parallel()
		p := NewCalendar(10, 15, hourly, hour/2)
		requireDebt(t, &p, hour/2, 5)
		require.Equal(t, int64(15), p.Used(hour/2))
		requireRepaidAt(t, &p, hour/2, hour)
		at, _ := p.AffordableAt(1, hour/2)
		require.Equal(t, hour, at)
		// The reset forgives the debt: the pool is full again.
		require.Zero(t, p.Debt(hour))
		require.True(t, p.Full(hour))
		require.Equal(t, 10.0, p.Available(hour))
		debitN(t, &p, 1, 10, hour)
		_, ok := p.RepaidAt(hour)
		require.False(t, ok)

		q := NewCalendar(10, -3, hourly, 0)
		require.True(t, q.Full(0), "a negative used is none")
	})

	t.Run("Settle", func(t *testing.T) {
		t.Parallel()
		p := NewCalendar(10, 0, hourly, 0)
		debitN(t, &p, 1, 5, minute)
		p.Settle(5, 8, minute, 2*minute)
		require.Equal(t, int64(8), p.Used(2*minute))
		p.Settle(5, 2, minute, 2*minute)
		require.Equal(t, int64(5), p.Used(2*minute))
		p.Settle(4, 20, minute, 3*minute)
		requireDebt(t, &p, 3*minute, 11)
		requireRepaidAt(t, &p, 3*minute, hour)
		p.Settle(4, 0, minute, 3*minute)
		requireDebt(t, &p, 3*minute, 7)
		p.Settle(100, 0, minute, 3*minute)
		require.Zero(t, p.Used(3*minute), "a credit floors at nothing spent")
		p.Settle(0, 0, minute, 3*minute) // actual 0 of 0: nothing
		require.Zero(t, p.Used(3*minute))
		require.Equal(t, int64(5), p.held, "settles leave what is held alone")
	})

	t.Run("CreditDroppedForAnEarlierPeriod", func(t *testing.T) {
		t.Parallel()
		p := NewCalendar(10, 0, hourly, 0)
		debitN(t, &p, 1, 10, hour/2)
		debitN(t, &p, 1, 4, hour+hour/5)
		// The 10 were spent in the last period: crediting them to this one
		// would let it spend 14.
		p.Settle(10, 0, hour/2, hour+hour/4)
		require.Equal(t, int64(4), p.Used(hour+hour/4))
		p.Settle(4, 1, hour+hour/5, hour+hour/4)
		require.Equal(t, int64(1), p.Used(hour+hour/4))
		// Debits apply to the current period whenever the job was dispatched.
		p.Settle(10, 12, hour/2, hour+hour/4)
		require.Equal(t, int64(3), p.Used(hour+hour/4))

		// A settle that comes after the reset applies it first.
		q := NewCalendar(10, 0, hourly, 0)
		debitN(t, &q, 1, 10, hour/2)
		q.Settle(10, 3, hour/2, hour)
		require.Zero(t, q.Used(hour))
		debitN(t, &q, 1, 10, hour)
	})

	t.Run("PaidAt", func(t *testing.T) {
		t.Parallel()
		calls := 0
		p := NewCalendar(10, 0, counting{hourly, &calls}, 0)
		debitN(t, &p, 1, 4, hour/2)
		paidAt := func(total int64) int64 {
			t.Helper()
			at, ok := p.PaidAt(total, hour/2)
			require.True(t, ok)
			return at
		}
		require.Equal(t, hour/2, paidAt(0))
		require.Equal(t, hour/2, paidAt(6))
		require.Equal(t, hour, paidAt(7))
		require.Equal(t, hour, paidAt(16))
		require.Equal(t, 2*hour, paidAt(17))
		calls = 0
		require.Equal(t, MaxPaidAtResets*hour, paidAt(6+10*MaxPaidAtResets))
		require.Equal(t, MaxPaidAtResets-1, calls, "one call a reset after the first")
		calls = 0
		require.Equal(t, int64(math.MaxInt64), paidAt(6+10*MaxPaidAtResets+1))
		require.Equal(t, int64(math.MaxInt64), paidAt(math.MaxInt64))
		require.Zero(t, calls, "past the cap, no walk at all")

		// In debt nothing is left, and the reset forgives the debt.
		q := NewCalendar(10, 25, hourly, 0)
		at, _ := q.PaidAt(1, 0)
		require.Equal(t, hour, at)
		at, _ = q.PaidAt(11, 0)
		require.Equal(t, 2*hour, at)

		// A schedule that runs out: paid never.
		r := NewCalendar(10, 10, instants{hour, 3 * hour}, 0)
		at, _ = r.PaidAt(20, 0)
		require.Equal(t, 3*hour, at)
		at, _ = r.PaidAt(21, 0)
		require.Equal(t, int64(math.MaxInt64), at)
		// As if the reset at 1 h had been applied, by a read at 2 h.
		at, _ = r.PaidAt(10, 2*hour)
		require.Equal(t, 2*hour, at)
		at, _ = r.PaidAt(20, 2*hour)
		require.Equal(t, 3*hour, at)
		at, _ = r.PaidAt(21, 2*hour)
		require.Equal(t, int64(math.MaxInt64), at)
	})

	t.Run("ReconfigureCalendarKeepsUsed", func(t *testing.T) {
		t.Parallel()
		p := NewCalendar(10, 0, hourly, 0)
		debitN(t, &p, 1, 7, minute)
		// A new expression: resets every 2 h from 30 min.
		p.ReconfigureCalendar(10, every{origin: hour / 2, period: 2 * hour, count: math.MaxInt64}, 40*minute)
		require.Equal(t, int64(7), p.Used(40*minute))
		require.Equal(t, hour/2+2*hour, p.NextReset(40*minute))
		require.True(t, p.CanPay(3, hour+minute), "the old reset at 1 h is gone")
		require.False(t, p.CanPay(4, hour+minute))
		// A lower allocation than was spent is debt until the reset.
		p.ReconfigureCalendar(5, p.sched, hour)
		requireDebt(t, &p, hour, 2)
		require.Equal(t, int64(5), p.Capacity())
		p.ReconfigureCalendar(20, p.sched, hour)
		require.True(t, p.CanPay(13, hour))
		require.False(t, p.CanPay(14, hour))
		require.Equal(t, int64(0), p.periodStart, "the period goes on")

		// A reset due under the old schedule applies before the change.
		q := NewCalendar(10, 0, hourly, 0)
		debitN(t, &q, 1, 10, minute)
		q.ReconfigureCalendar(10, every{origin: 0, period: 3 * hour, count: math.MaxInt64}, hour+minute)
		require.Zero(t, q.Used(hour+minute))
		require.Equal(t, hour, q.periodStart)
		require.Equal(t, 3*hour, q.NextReset(hour+minute))

		// Reconfigure with kind Calendar keeps the schedule.
		q.Reconfigure(4, 60000, 9, Calendar, hour+minute)
		require.Equal(t, Calendar, q.Kind())
		require.Equal(t, int64(4), q.Capacity())
		require.Equal(t, 3*hour, q.NextReset(hour+minute))
	})

	t.Run("KindChanges", func(t *testing.T) {
		t.Parallel()
		// time_based → calendar: nothing spent, a period from now.
		p := NewTimeBased(6, 60000, 0, 0)
		debitN(t, &p, 1, 6, 0)
		p.Settle(6, 9, 0, 0)
		p.ReconfigureCalendar(10, hourly, hour/2)
		require.Equal(t, Calendar, p.Kind())
		require.Zero(t, p.Used(hour/2))
		require.Zero(t, p.Debt(hour/2))
		require.False(t, p.Full(hour/2), "the time_based debit is still held")
		require.Equal(t, hour, p.NextReset(hour/2))
		// The job dispatched before the change credits nothing back.
		debitN(t, &p, 1, 3, hour/2)
		p.Settle(6, 0, 0, hour/2)
		require.Equal(t, int64(3), p.Used(hour/2))
		p.Release(6) // of the time_based debit: still held, no panic
		require.Equal(t, int64(3), p.held)

		// calendar → while_in_flight keeps what is held.
		p.Reconfigure(5, 0, 0, WhileInFlight, hour/2)
		require.Equal(t, int64(3), p.Held())
		require.Equal(t, 2.0, p.Available(hour/2))
		require.Zero(t, p.Used(hour/2))
		require.Zero(t, p.NextReset(hour/2))

		// while_in_flight → calendar → time_based: starts full.
		p.ReconfigureCalendar(10, hourly, hour/2)
		require.Zero(t, p.Used(hour/2))
		require.Equal(t, int64(3), p.held)
		debitN(t, &p, 1, 10, hour/2)
		p.Reconfigure(6, 60000, 0, TimeBased, hour/2)
		require.Equal(t, 6.0, p.Available(hour/2))
		require.Zero(t, p.Held())

		// Reconfigure with kind Calendar has no schedule to give a pool
		// that is not calendar: it is made while_in_flight.
		p.Reconfigure(7, 60000, 0, Calendar, hour/2)
		require.Equal(t, WhileInFlight, p.Kind())
		require.Equal(t, int64(13), p.Held())
	})

	t.Run("NoResets", func(t *testing.T) {
		t.Parallel()
		for _, sched := range []Schedule{nil, instants{}, stuck{}, every{origin: 0, period: hour, count: 0}} {
			p := NewCalendar(10, 0, sched, 0)
			debitN(t, &p, 1, 10, 0)
			require.Equal(t, int64(math.MaxInt64), p.NextReset(0))
			requireAffordableAt(t, &p, 1, 0, math.MaxInt64)
			require.False(t, p.CanPay(1, math.MaxInt64), "no reset at MaxInt64 either")
			p.Settle(10, 12, 0, math.MaxInt64)
			requireRepaidAt(t, &p, 0, math.MaxInt64)
			at, _ := p.PaidAt(1, 0)
			require.Equal(t, int64(math.MaxInt64), at)
		}
	})

	t.Run("Saturates", func(t *testing.T) {
		t.Parallel()
		p := NewCalendar(10, math.MaxInt64-1, hourly, 0)
		p.Settle(0, math.MaxInt64, 0, 0)
		require.Equal(t, int64(math.MaxInt64), p.Used(0))
		require.Equal(t, float64(math.MaxInt64-10), p.Debt(0))
		require.False(t, p.debit(math.MaxInt64, 0))
		require.Equal(t, int64(math.MaxInt64), p.Used(0))
		require.Panics(t, func() { p.Debit(1, 0) }, "debug checks")
		require.Zero(t, p.Used(hour), "the reset forgives even that")
	})

	t.Run("IrregularSchedule", func(t *testing.T) {
		t.Parallel()
		resets := instants{-5 * hour, 2 * hour, 2*hour + 1, 7 * hour}
		p := NewCalendar(3, 0, resets, 0)
		require.Equal(t, 2*hour, p.NextReset(0))
		debitN(t, &p, 1, 3, 0)
		requireAffordableAt(t, &p, 3, 0, 2*hour)
		debitN(t, &p, 1, 3, 2*hour)
		requireAffordableAt(t, &p, 3, 2*hour, 2*hour+1)
		at, _ := p.PaidAt(6, 2*hour)
		require.Equal(t, 7*hour, at)
		at, _ = p.PaidAt(7, 2*hour)
		require.Equal(t, int64(math.MaxInt64), at, "the schedule ran out")
		debitN(t, &p, 1, 3, 2*hour+1)
		require.Equal(t, 7*hour, p.NextReset(2*hour+1))
		require.Equal(t, int64(math.MaxInt64), p.NextReset(7*hour))
	})
}
