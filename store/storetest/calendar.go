package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/archive"
)

// testCalendarBudgets checks a calendar budget's reset and timezone, and
// what it spent: written by SpendBudget only, kept by PutBudget, gone with
// the budget.
func testCalendarBudgets(t *testing.T, newB func(testing.TB) *bundle) {
	daily := store.Budget{Key: "daily", Allocation: 100, Strategy: store.Calendar, CreatedAt: 1, UpdatedAt: 2,
		Reset: "0 0 * * *", Timezone: "Europe/Paris"}
	utc := store.Budget{Key: "utc", Allocation: 5, Strategy: store.Calendar, CreatedAt: 3, UpdatedAt: 3, Reset: "0 * * * *"}

	t.Run("ResetAndTimezone", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.PutBudget(daily), store.PutBudget(utc))
		want := []store.Budget{daily, utc}
		require.Equal(t, want, b.budgets(t))
		require.Equal(t, want, load(t, b).Budgets)

		// A replacement writes them as every other field. (A copy: the
		// subtests run in parallel and share daily.)
		replaced := daily
		replaced.Reset, replaced.Timezone, replaced.Strategy = "", "", store.WhileInFlight
		b.apply(t, store.PutBudget(replaced))
		require.Equal(t, []store.Budget{replaced, utc}, b.budgets(t))
	})

	t.Run("Spend", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		given := daily
		given.Spent = &store.Spent{EndsAt: 5, Used: 5}
		b.apply(t, store.PutBudget(given), store.PutBudget(utc))
		require.Equal(t, []store.Budget{daily, utc}, b.budgets(t), "a new budget has spent nothing, whatever the put says")

		b.apply(t, store.SpendBudget("daily", store.Spent{EndsAt: 86_400_000, Used: 7}))
		spent := daily
		spent.Spent = &store.Spent{EndsAt: 86_400_000, Used: 7}
		require.Equal(t, []store.Budget{spent, utc}, b.budgets(t))
		require.Equal(t, []store.Budget{spent, utc}, load(t, b).Budgets)

		// Nothing used is still something written, not none.
		b.apply(t, store.SpendBudget("utc", store.Spent{EndsAt: 3_600_000}))
		utcSpent := utc
		utcSpent.Spent = &store.Spent{EndsAt: 3_600_000}
		require.Equal(t, []store.Budget{spent, utcSpent}, load(t, b).Budgets)
	})

	t.Run("PutKeepsSpent", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.PutBudget(daily), store.SpendBudget("daily", store.Spent{EndsAt: 10, Used: 3}))
		changed := daily
		changed.Allocation, changed.Timezone, changed.UpdatedAt = 50, "", 9
		changed.Spent = &store.Spent{EndsAt: 99, Used: 99} // ignored
		b.apply(t, store.PutBudget(changed))
		changed.Spent = &store.Spent{EndsAt: 10, Used: 3}
		require.Equal(t, []store.Budget{changed}, b.budgets(t))
		require.Equal(t, []store.Budget{changed}, load(t, b).Budgets)

		// In one group, in either order.
		b.apply(t, store.SpendBudget("daily", store.Spent{EndsAt: 20, Used: 4}), store.PutBudget(daily))
		daily := daily
		daily.Spent = &store.Spent{EndsAt: 20, Used: 4}
		require.Equal(t, []store.Budget{daily}, b.budgets(t))
		b.apply(t, store.PutBudget(changed), store.SpendBudget("daily", store.Spent{EndsAt: 30, Used: 1}))
		changed.Spent = &store.Spent{EndsAt: 30, Used: 1}
		require.Equal(t, []store.Budget{changed}, b.budgets(t))
	})

	t.Run("SpendMissing", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		// Appended together, so that a backend may commit them as one.
		first := b.s.Append(store.SpendBudget("absent", store.Spent{EndsAt: 1, Used: 1}), store.InsertJob(job(1)))
		second := b.s.Append(store.PutBudget(utc), store.DeleteBudget("utc"), store.SpendBudget("utc", store.Spent{EndsAt: 2, Used: 2}),
			store.InsertJob(job(2)))
		require.NoError(t, first.Wait(b.ctx), "a spend of no budget does not fail its group")
		require.NoError(t, second.Wait(b.ctx))
		require.Equal(t, ids(1, 2), b.ids(t))
		require.Empty(t, b.budgets(t), "nor makes one")
	})

	t.Run("DeleteForgetsSpent", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.PutBudget(daily), store.PutBudget(utc),
			store.SpendBudget("daily", store.Spent{EndsAt: 10, Used: 3}), store.SpendBudget("utc", store.Spent{EndsAt: 10, Used: 1}))
		b.apply(t, store.DeleteBudget("daily"))
		b.apply(t, store.PutBudget(daily))
		b.apply(t, store.DeleteBudget("utc"), store.PutBudget(utc)) // in one group
		require.Equal(t, []store.Budget{daily, utc}, b.budgets(t))

		b.apply(t, store.SpendBudget("daily", store.Spent{EndsAt: 10, Used: 3}))
		b.apply(t, store.DeleteEverything(), store.PutBudget(daily))
		require.Equal(t, []store.Budget{daily}, b.budgets(t))
	})

	t.Run("CopyCarriesSpent", func(t *testing.T) {
		t.Parallel()
		src, dst := newB(t), newB(t)
		src.apply(t, store.PutBudget(daily), store.PutBudget(utc), store.SpendBudget("daily", store.Spent{EndsAt: 10, Used: 3}))
		_, err := archive.Copy(src.ctx, archive.Reads(src.s), dst.s)
		require.NoError(t, err)
		spent := daily
		spent.Spent = &store.Spent{EndsAt: 10, Used: 3}
		require.Equal(t, []store.Budget{spent, utc}, dst.budgets(t))
	})
}
