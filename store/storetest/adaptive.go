package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// testAdaptiveBudgets checks that a budget's back-off configuration is
// written and read as every other field: set, changed, removed.
func testAdaptiveBudgets(t *testing.T, newB func(testing.TB) *bundle) {
	b := newB(t)
	tpm := store.Budget{Key: "tpm", Allocation: 100, Strategy: store.TimeBased, DurationMs: 1000, CreatedAt: 1, UpdatedAt: 2,
		Adaptive: &store.Adaptive{Decrease: 0.5, RecoverMs: 60_000, Floor: 0.05}}
	plain := store.Budget{Key: "plain", Allocation: 3, Strategy: store.WhileInFlight, CreatedAt: 1, UpdatedAt: 1}
	b.apply(t, store.PutBudget(tpm), store.PutBudget(plain))
	require.Equal(t, []store.Budget{plain, tpm}, b.budgets(t))
	require.Equal(t, []store.Budget{plain, tpm}, load(t, b).Budgets)

	tpm.Adaptive = &store.Adaptive{Decrease: 0.125, RecoverMs: 1, Floor: 1}
	b.apply(t, store.PutBudget(tpm))
	require.Equal(t, []store.Budget{plain, tpm}, b.budgets(t))

	tpm.Adaptive, tpm.UpdatedAt = nil, 3
	b.apply(t, store.PutBudget(tpm))
	require.Equal(t, []store.Budget{plain, tpm}, b.budgets(t), "a replacement without it removes it")
}
