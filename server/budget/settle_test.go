package budget

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func requireDebt(t *testing.T, p *Pool, now int64, want float64) {
	t.Helper()
	require.Equal(t, want, p.Debt(now), "debt at %d", now)
	if want > 0 {
		require.Equal(t, -want, p.Available(now), "available at %d", now)
		require.False(t, p.CanPay(1, now), "a pool in debt paid at %d", now)
		require.False(t, p.Full(now))
	}
}

func requireRepaidAt(t *testing.T, p *Pool, now, want int64) {
	t.Helper()
	at, ok := p.RepaidAt(now)
	require.True(t, ok)
	require.Equal(t, want, at)
	if want > now && want != math.MaxInt64 && p.Kind() == TimeBased {
		require.Positive(t, p.Debt(want-1), "repaid 1 ns before %d", want)
		require.Zero(t, p.Debt(want), "not repaid at %d", want)
	}
}

func TestPool_SettleTimeBased(t *testing.T) {
	t.Parallel()

	t.Run("CreditRaisesLevelUpToCapacity", func(t *testing.T) {
		t.Parallel()
		p := NewTimeBased(6, 60000, 0, 0)
		debitN(t, &p, 2, 3, 0)
		p.Settle(3, 1, 0, 0)
		require.Equal(t, 2.0, p.Available(0))
		p.Settle(3, 0, 0, 0) // actual 0 is a valid cost
		require.Equal(t, 5.0, p.Available(0))
		p.Settle(5, 0, 0, 0)
		require.Equal(t, 6.0, p.Available(0), "never above the capacity")
		require.Equal(t, int64(6), p.held, "settles leave what is held alone")
		p.Release(3)
		p.Release(3)
		require.True(t, p.Full(0))
		_, ok := p.RepaidAt(0)
		require.False(t, ok, "no debt")
	})

	t.Run("DebitIntoDebt", func(t *testing.T) {
		t.Parallel()
		// 6 a minute: a token every 10 s.
		p := NewTimeBased(6, 60000, 0, 0)
		debitN(t, &p, 1, 2, 0)
		p.Settle(2, 5, 0, 0) // 3 more: 1 left
		require.Equal(t, 1.0, p.Available(0))
		p.Settle(1, 4, 0, 0) // 3 more: the level lacks 2
		requireDebt(t, &p, 0, 2)
		requireDebt(t, &p, 5*second, 1.5)
		requireRepaidAt(t, &p, 0, 20*second)
		requireRepaidAt(t, &p, 5*second, 20*second)
		// The drip repays the debt first, then fills the level.
		requireAffordableAt(t, &p, 1, 0, 30*second)
		requireAffordableAt(t, &p, 6, 0, 80*second)
		at, ok := p.PaidAt(2, 5*second)
		require.True(t, ok)
		require.Equal(t, 40*second, at)
		at, _ = p.PaidAt(0, 5*second)
		require.Equal(t, 5*second, at, "nothing to pay")
		require.Zero(t, p.Debt(20*second))
		require.Equal(t, 0.0, p.Available(20*second))
		require.Equal(t, 1.0, p.Available(30*second))
		require.Equal(t, 6.0, p.Available(10*minute))
	})

	t.Run("CreditPaysDebtFirst", func(t *testing.T) {
		t.Parallel()
		p := NewTimeBased(6, 60000, 0, 0)
		debitN(t, &p, 1, 6, 0)
		p.Settle(6, 10, 0, 0)
		requireDebt(t, &p, 0, 4)
		p.Settle(3, 0, 0, 0)
		requireDebt(t, &p, 0, 1)
		p.Settle(5, 0, 0, 0)
		require.Equal(t, 4.0, p.Available(0))
		require.Zero(t, p.Debt(0))
	})

	t.Run("NegativeCostsCountAsZero", func(t *testing.T) {
		t.Parallel()
		p := NewTimeBased(6, 60000, 0, 0)
		debitN(t, &p, 1, 4, 0)
		p.Settle(-5, 3, 0, 0) // as estimate 0: 3 more
		require.Equal(t, -1.0, p.Available(0))
		p.Settle(2, -7, 0, 0) // as actual 0: 2 back
		require.Equal(t, 1.0, p.Available(0))
	})

	t.Run("DebtCapped", func(t *testing.T) {
		t.Parallel()
		p := NewTimeBased(1000, 1000, 0, 0)
		p.Settle(0, MaxAllocation, 0, 0)
		requireDebt(t, &p, 0, MaxAllocation-1000)
		p.Settle(0, math.MaxInt64, 0, 0)
		requireDebt(t, &p, 0, MaxAllocation)
		// 1000 a second repays it in (2^31−1)/1000 s.
		requireRepaidAt(t, &p, 0, (MaxAllocation*second)/1000)
		p.Settle(math.MaxInt64, 0, 0, 0)
		require.Equal(t, 1000.0, p.Available(0), "a huge credit repays and fills")
	})

	t.Run("SettleAtAnEarlierTime", func(t *testing.T) {
		t.Parallel()
		// The clock went back: the settle applies as of the last update.
		p := NewTimeBased(6, 60000, 0, 0)
		debitN(t, &p, 1, 6, 100*second)
		p.Settle(0, 1, 0, 50*second)
		requireDebt(t, &p, 100*second, 1)
		requireRepaidAt(t, &p, 50*second, 110*second)
	})

	t.Run("DispatchTimeIgnored", func(t *testing.T) {
		t.Parallel()
		p := NewTimeBased(6, 60000, 0, minute)
		debitN(t, &p, 1, 6, minute)
		p.Settle(6, 0, math.MinInt64, minute)
		require.Equal(t, 6.0, p.Available(minute))
	})

	t.Run("ReconfigureKeepsDebtRoundedUp", func(t *testing.T) {
		t.Parallel()
		// 1000 per 3 ms: one token is 3e6 units, 1000 of them drip each ns.
		p := NewTimeBased(1000, 3, 0, 0)
		debitN(t, &p, 1, 1000, 0)
		p.Settle(0, 1, 0, 0)
		// After 1 ns the debt is (3e6−1000)/3e6 token: 999,666.67 units of
		// 1e6, rounded up to 999,667 (down would forgive a part of a unit).
		p.Reconfigure(1000, 1, 0, TimeBased, 1)
		require.Equal(t, u128Of(999667), p.debt)
		require.Zero(t, p.level)
		requireRepaidAt(t, &p, 1, 1+1000) // ⌈999667/1000⌉
		requireAffordableAt(t, &p, 1, 1, 1+2000)

		// Whole tokens of debt are kept exactly, through any unit.
		q := NewTimeBased(6, 60000, 0, 0)
		debitN(t, &q, 1, 6, 0)
		q.Settle(0, 3, 0, 0)
		q.Reconfigure(100, 300000, 20, TimeBased, 0)
		requireDebt(t, &q, 0, 3)
		requireRepaidAt(t, &q, 0, 9*second)
		q.Reconfigure(7, 3, 0, TimeBased, 0)
		requireDebt(t, &q, 0, 3)
	})

	t.Run("KindChangeForgivesDebt", func(t *testing.T) {
		t.Parallel()
		// A pool that turns time_based starts full, whatever it owed before.
		p := NewTimeBased(6, 60000, 0, 0)
		debitN(t, &p, 1, 6, 0)
		p.Settle(6, 9, 0, 0)
		p.Reconfigure(6, 0, 0, WhileInFlight, 0)
		require.Zero(t, p.Debt(0))
		require.Equal(t, 0.0, p.Available(0), "6 held of 6")
		p.Reconfigure(6, 60000, 0, TimeBased, 0)
		require.Equal(t, 6.0, p.Available(0))
		require.Zero(t, p.Debt(0))
	})
}

func TestPool_SettleWhileInFlight(t *testing.T) {
	t.Parallel()

	p := NewWhileInFlight(5)
	debitN(t, &p, 1, 3, 0)
	before := p
	p.Settle(3, 0, 0, 0)
	p.Settle(3, 100, 0, second)
	p.Settle(0, math.MaxInt64, 0, second)
	require.Equal(t, before, p, "a no-op: its tokens come back on Release")
	require.Zero(t, p.Debt(0))
	_, ok := p.RepaidAt(0)
	require.False(t, ok)
	require.Zero(t, p.Used(0))
	require.Zero(t, p.NextReset(0))
	p.Release(3)
	require.True(t, p.Full(0))
}
