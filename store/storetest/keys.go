package storetest

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/archive"
)

// testKeyOverrides checks a family's per-sub-key weights and allocations
// (issue 26): written whole by PutBudget, read back by Budgets and Load,
// cleared by a replacement without them, kept by SpendBudget, and carried
// by a copy.
func testKeyOverrides(t *testing.T, newB func(testing.TB) *bundle) {
	family := func() store.Budget {
		return store.Budget{Key: "tenants", Allocation: 100, Strategy: store.WhileInFlight, CreatedAt: 1, UpdatedAt: 2,
			PerKey: &store.BudgetTemplate{Allocation: 5, Strategy: store.WhileInFlight},
			Keys: map[string]store.KeyOverride{
				"acme":     {Weight: 3, Allocation: 20},
				"globex":   {Weight: 1},
				"initech":  {Allocation: math.MaxInt32},
				"é \"x\"{": {Weight: 1000},
			}}
	}

	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		fam, plain := family(), store.Budget{Key: "plain", Allocation: 1, Strategy: store.WhileInFlight, CreatedAt: 3, UpdatedAt: 3}
		b.apply(t, store.PutBudget(fam), store.PutBudget(plain))
		want := []store.Budget{plain, fam}
		require.Equal(t, want, b.budgets(t))
		require.Equal(t, want, load(t, b).Budgets)
		require.Nil(t, b.budgets(t)[0].Keys, "a plain budget has no overrides")

		// A replacement writes them whole: one gone, one changed, one new.
		fam.Keys = map[string]store.KeyOverride{"acme": {Weight: 2}, "hooli": {Allocation: 7}}
		fam.UpdatedAt = 4
		b.apply(t, store.PutBudget(fam))
		require.Equal(t, []store.Budget{plain, fam}, b.budgets(t))

		// And without any, none are left.
		fam.Keys, fam.UpdatedAt = nil, 5
		b.apply(t, store.PutBudget(fam))
		require.Equal(t, []store.Budget{plain, fam}, b.budgets(t))
	})

	t.Run("Many", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		fam := family()
		fam.Keys = make(map[string]store.KeyOverride, 10_000)
		for i := range 10_000 {
			fam.Keys[fmt.Sprintf("tenant-%05d", i)] = store.KeyOverride{Weight: int64(1 + i%1000), Allocation: int64(i)}
		}
		b.apply(t, store.PutBudget(fam))
		got := b.budgets(t)
		require.Len(t, got, 1)
		require.True(t, fam.Equal(got[0]), "10,000 overrides come back as written")
	})

	t.Run("KeptBySpend", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		fam := family()
		b.apply(t, store.PutBudget(fam), store.SpendBudget(fam.Key, store.Spent{EndsAt: 9, Used: 1}))
		got := b.budgets(t)
		require.Len(t, got, 1)
		require.Equal(t, fam.Keys, got[0].Keys)
	})

	t.Run("Copied", func(t *testing.T) {
		t.Parallel()
		src, dst := newB(t), newB(t)
		src.apply(t, store.PutBudget(family()))
		_, err := archive.Copy(src.ctx, archive.Reads(src.s), dst.s)
		require.NoError(t, err)
		require.Equal(t, []store.Budget{family()}, dst.budgets(t))
	})
}
