package client_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
)

func TestClient_Budgets(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, tb *testBundle) {
		ctx := ctxT(t)
		tbased := api.BudgetInput{Allocation: api.Ptr[int64](10), Strategy: &api.StrategyInput{
			Type: api.Ptr(api.StrategyTimeBased), DurationMs: api.Ptr[int64](3600000), Burst: api.Ptr[int64](4)}}
		b, err := tb.c.CreateBudget(ctx, "rate", tbased)
		require.NoError(t, err)
		require.Equal(t, "rate", b.Key)
		require.Equal(t, api.Strategy{Type: api.StrategyTimeBased, DurationMs: 3600000, Burst: 4}, b.Strategy)
		require.Nil(t, b.State)

		_, err = tb.c.CreateBudget(ctx, "rate", tbased)
		require.True(t, client.IsConflict(err), "%v", err)

		_, err = tb.c.PutBudget(ctx, "conc", wif(3))
		require.NoError(t, err)
		b, err = tb.c.PutBudget(ctx, "conc", wif(4))
		require.NoError(t, err)
		require.Equal(t, int64(4), b.Allocation)

		list, err := tb.c.ListBudgets(ctx, false)
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.Equal(t, "conc", list[0].Key)
		require.Nil(t, list[0].State)
		list, err = tb.c.ListBudgets(ctx, true)
		require.NoError(t, err)
		require.NotNil(t, list[1].State)
		require.Equal(t, int64(4), list[1].State.Capacity)
		require.InDelta(t, 4, list[1].State.Available, 0.01)

		got, err := tb.c.GetBudget(ctx, "rate", true)
		require.NoError(t, err)
		require.NotNil(t, got.State)
		got, err = tb.c.GetBudget(ctx, "rate", false)
		require.NoError(t, err)
		require.Nil(t, got.State)
		_, err = tb.c.GetBudget(ctx, "nope", false)
		require.True(t, client.IsNotFound(err), "%v", err)

		b, err = tb.c.PatchBudget(ctx, "rate", api.BudgetPatch{Allocation: api.Ptr[int64](20), Strategy: &api.StrategyPatch{Burst: api.Set[int64](8)}})
		require.NoError(t, err)
		require.Equal(t, int64(20), b.Allocation)
		require.Equal(t, int64(8), b.Strategy.Burst)
		b, err = tb.c.PatchBudget(ctx, "rate", api.BudgetPatch{Strategy: &api.StrategyPatch{Burst: api.Null[int64](), DurationMs: api.Ptr[int64](60000)}})
		require.NoError(t, err)
		require.Zero(t, b.Strategy.Burst)
		require.Equal(t, int64(60000), b.Strategy.DurationMs)
		b, err = tb.c.PatchBudget(ctx, "rate", api.BudgetPatch{Strategy: &api.StrategyPatch{Type: api.Ptr(api.StrategyWhileInFlight)}})
		require.NoError(t, err)
		require.Equal(t, api.Strategy{Type: api.StrategyWhileInFlight}, b.Strategy)
		b, err = tb.c.PatchBudget(ctx, "rate", api.BudgetPatch{})
		require.NoError(t, err)
		require.Equal(t, int64(20), b.Allocation)
		_, err = tb.c.PatchBudget(ctx, "nope", api.BudgetPatch{})
		require.True(t, client.IsNotFound(err), "%v", err)
		_, err = tb.c.PatchBudget(ctx, "rate", api.BudgetPatch{Allocation: api.Ptr[int64](0)})
		require.True(t, client.IsValidation(err), "%v", err)
		_, err = tb.c.PutBudget(ctx, "bad,key", wif(1))
		require.True(t, client.IsValidation(err), "%v", err)
		require.Equal(t, 422, client.StatusOf(err))

		// A budget in use cannot go.
		_, err = tb.c.Enqueue(ctx, job("q", "t", "", bind("conc", 1)))
		require.NoError(t, err)
		err = tb.c.DeleteBudget(ctx, "conc")
		require.True(t, client.IsConflict(err), "%v", err)
		require.NoError(t, tb.c.DeleteBudget(ctx, "rate"))
		err = tb.c.DeleteBudget(ctx, "rate")
		require.True(t, client.IsNotFound(err), "%v", err)
	})
}
