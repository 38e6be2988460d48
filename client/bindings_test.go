package client_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
)

func TestClient_Bindings(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, tb *testBundle) {
		ctx := ctxT(t)
		_, err := tb.c.PutBudget(ctx, "a", wif(5))
		require.NoError(t, err)
		j, err := tb.c.Enqueue(ctx, job("q", "t", ""))
		require.NoError(t, err)

		got, err := tb.c.BindJob(ctx, j.ID, "a", api.BindingRequest{Cost: api.Ptr[int64](2)})
		require.NoError(t, err)
		require.Equal(t, []api.Binding{{Key: "a", Cost: 2}}, got.Budgets)
		_, err = tb.c.BindJob(ctx, j.ID, "a", api.BindingRequest{})
		require.True(t, client.IsConflict(err), "%v", err)

		// create_with makes a missing budget.
		got, err = tb.c.BindJob(ctx, j.ID, "new/key", api.BindingRequest{CreateWith: &api.BudgetInput{
			Allocation: api.Ptr[int64](3), Strategy: &api.StrategyInput{Type: api.Ptr(api.StrategyWhileInFlight)}}})
		require.NoError(t, err)
		require.Equal(t, []api.Binding{{Key: "a", Cost: 2}, {Key: "new/key", Cost: 1}}, got.Budgets)
		_, err = tb.c.GetBudget(ctx, "new/key", false)
		require.NoError(t, err)

		got, err = tb.c.PutJobBinding(ctx, j.ID, "a", api.BindingRequest{})
		require.NoError(t, err)
		require.Equal(t, []api.Binding{{Key: "a", Cost: 1}, {Key: "new/key", Cost: 1}}, got.Budgets)
		got, err = tb.c.PatchJobBinding(ctx, j.ID, "a", 3)
		require.NoError(t, err)
		require.Equal(t, []api.Binding{{Key: "a", Cost: 3}, {Key: "new/key", Cost: 1}}, got.Budgets)
		_, err = tb.c.PatchJobBinding(ctx, j.ID, "a", 50)
		require.True(t, client.IsValidation(err), "%v", err)
		got, err = tb.c.UnbindJob(ctx, j.ID, "new/key")
		require.NoError(t, err)
		require.Equal(t, []api.Binding{{Key: "a", Cost: 3}}, got.Budgets)
		_, err = tb.c.UnbindJob(ctx, j.ID, "new/key")
		require.True(t, client.IsNotFound(err), "%v", err)
		got, err = tb.c.UnbindJobAll(ctx, j.ID)
		require.NoError(t, err)
		require.Empty(t, got.Budgets)
		got, err = tb.c.ReplaceJobBindings(ctx, j.ID, []api.BindingRequest{bind("a", 1), bind("new/key", 2)})
		require.NoError(t, err)
		require.Equal(t, []api.Binding{{Key: "a", Cost: 1}, {Key: "new/key", Cost: 2}}, got.Budgets)
		got, err = tb.c.ReplaceJobBindings(ctx, j.ID, nil)
		require.NoError(t, err)
		require.Empty(t, got.Budgets)
		_, err = tb.c.BindJob(ctx, "0000000000000000000000000", "a", api.BindingRequest{})
		require.True(t, client.IsNotFound(err), "%v", err)

		// The filter forms.
		k, err := tb.c.Enqueue(ctx, job("q", "t", ""))
		require.NoError(t, err)
		_, err = tb.c.Enqueue(ctx, job("other", "t", ""))
		require.NoError(t, err)
		q := api.JobQuery{Queues: []string{"q"}}
		ch, err := tb.c.BindJobs(ctx, q, "a", api.BindingRequest{})
		require.NoError(t, err)
		require.Equal(t, &api.BindingChange{Changed: 2, Blocked: []string{}}, ch)
		ch, err = tb.c.BindJobs(ctx, q, "a", api.BindingRequest{})
		require.NoError(t, err)
		require.Zero(t, ch.Changed)
		ch, err = tb.c.PutJobsBinding(ctx, q, "new/key", api.BindingRequest{Cost: api.Ptr[int64](2)})
		require.NoError(t, err)
		require.Equal(t, int64(2), ch.Changed)
		ch, err = tb.c.PatchJobsBinding(ctx, q, "a", 4)
		require.NoError(t, err)
		require.Equal(t, int64(2), ch.Changed)
		got, err = tb.c.GetJob(ctx, k.ID)
		require.NoError(t, err)
		require.Equal(t, []api.Binding{{Key: "a", Cost: 4}, {Key: "new/key", Cost: 2}}, got.Budgets)
		ch, err = tb.c.UnbindJobs(ctx, q, "a")
		require.NoError(t, err)
		require.Equal(t, int64(2), ch.Changed)
		ch, err = tb.c.UnbindJobsAll(ctx, api.JobQuery{})
		require.NoError(t, err)
		require.Equal(t, int64(2), ch.Changed)
		n, err := tb.c.CountJobs(ctx, api.JobQuery{BudgetKeys: []string{"a", "new/key"}})
		require.NoError(t, err)
		require.Zero(t, n)
	})
}
