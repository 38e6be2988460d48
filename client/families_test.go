package client_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
)

// TestClient_BudgetFamilies: per_key on create, put and patch; a
// sub-budget by its key (percent-encoded in the path); SubBudgets.
func TestClient_BudgetFamilies(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, tb *testBundle) {
		ctx := ctxT(t)
		in := wif(10)
		in.PerKey = &api.BudgetTemplateInput{Allocation: api.Ptr[int64](2), Strategy: &api.StrategyInput{Type: api.Ptr(api.StrategyWhileInFlight)}}
		b, err := tb.c.CreateBudget(ctx, "tenants", in)
		require.NoError(t, err)
		require.Equal(t, &api.BudgetTemplate{Allocation: 2, Strategy: api.Strategy{Type: api.StrategyWhileInFlight}}, b.PerKey)
		b, err = tb.c.PutBudget(ctx, "tenants", in)
		require.NoError(t, err)
		require.NotNil(t, b.PerKey)

		_, err = tb.c.Enqueue(ctx, job("q", "t", "", bind("tenants/acme", 1)))
		require.NoError(t, err)
		sub, err := tb.c.GetBudget(ctx, "tenants/acme", true)
		require.NoError(t, err)
		require.Equal(t, "tenants/acme", sub.Key)
		require.Equal(t, int64(2), sub.State.Capacity)
		fam, err := tb.c.GetBudget(ctx, "tenants", true)
		require.NoError(t, err)
		require.Equal(t, api.Ptr[int64](1), fam.State.SubBudgets)

		subs, err := tb.c.SubBudgets(ctx, "tenants", false)
		require.NoError(t, err)
		require.Len(t, subs, 1)
		require.Equal(t, "tenants/acme", subs[0].Key)
		require.Nil(t, subs[0].State)
		subs, err = tb.c.SubBudgets(ctx, "tenants", true)
		require.NoError(t, err)
		require.NotNil(t, subs[0].State)
		list, err := tb.c.ListBudgets(ctx, false)
		require.NoError(t, err)
		require.Len(t, list, 1, "no sub-budget in the list")
		_, err = tb.c.SubBudgets(ctx, "nope", false)
		require.True(t, client.IsNotFound(err), "%v", err)

		b, err = tb.c.PatchBudget(ctx, "tenants", api.BudgetPatch{PerKey: api.Set(api.TemplatePatch{Allocation: api.Ptr[int64](3)})})
		require.NoError(t, err)
		require.Equal(t, int64(3), b.PerKey.Allocation)
		_, err = tb.c.PatchBudget(ctx, "tenants", api.BudgetPatch{PerKey: api.Set(api.TemplatePatch{Allocation: api.Ptr[int64](0)})})
		require.True(t, client.IsValidation(err), "%v", err)
		_, err = tb.c.PutBudget(ctx, "tenants/acme", wif(1))
		require.True(t, client.IsConflict(err), "managed by the family: %v", err)
		err = tb.c.DeleteBudget(ctx, "tenants")
		require.True(t, client.IsConflict(err), "a family with bound jobs stays: %v", err)
	})
}

// TestClient_PauseBudget: a pause with and without an end, and a resume.
func TestClient_PauseBudget(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, tb *testBundle) {
		ctx := ctxT(t)
		_, err := tb.c.PutBudget(ctx, "api", wif(3))
		require.NoError(t, err)

		b, err := tb.c.PauseBudget(ctx, "api", time.Time{})
		require.NoError(t, err)
		require.True(t, b.Paused)
		require.Zero(t, b.PausedUntil)

		until := time.Now().Add(time.Hour).Truncate(time.Millisecond)
		b, err = tb.c.PauseBudget(ctx, "api", until)
		require.NoError(t, err)
		require.True(t, b.Paused)
		require.Equal(t, uint64(until.UnixMilli()), b.PausedUntil)
		b, err = tb.c.PauseBudget(ctx, "api", time.Time{})
		require.NoError(t, err)
		require.Zero(t, b.PausedUntil, "a later pause replaces the end")

		b, err = tb.c.ResumeBudget(ctx, "api")
		require.NoError(t, err)
		require.False(t, b.Paused)
		require.Zero(t, b.PausedUntil)
		got, err := tb.c.GetBudget(ctx, "api", false)
		require.NoError(t, err)
		require.Equal(t, *b, *got)

		_, err = tb.c.PauseBudget(ctx, "nope", time.Time{})
		require.True(t, client.IsNotFound(err), "%v", err)
		_, err = tb.c.PauseBudget(ctx, "api", time.UnixMilli(0).Add(-time.Hour))
		require.True(t, client.IsValidation(err), "a time before 1970: %v", err)
	})
}

// TestClient_BudgetForecast: the forecast of a paced backlog, and a
// what-if that changes nothing.
func TestClient_BudgetForecast(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, tb *testBundle) {
		ctx := ctxT(t)
		_, err := tb.c.PutBudget(ctx, "paced", api.BudgetInput{Allocation: api.Ptr[int64](1), Strategy: &api.StrategyInput{
			Type: api.Ptr(api.StrategyTimeBased), DurationMs: api.Ptr[int64](3_600_000)}})
		require.NoError(t, err)
		for range 3 {
			_, err = tb.c.Enqueue(ctx, job("nobody", "t", "", bind("paced", 1)))
			require.NoError(t, err)
		}
		f, err := tb.c.BudgetForecast(ctx, "paced", api.WhatIf{})
		require.NoError(t, err)
		require.Equal(t, "paced", f.Key)
		require.Equal(t, int64(3), f.Parked)
		require.False(t, f.Estimated)
		require.NotNil(t, f.DrainsAt)
		w, err := tb.c.BudgetForecast(ctx, "paced", api.WhatIf{Allocation: api.Ptr[int64](2)})
		require.NoError(t, err)
		require.NotNil(t, w.DrainsAt)
		require.Less(t, *w.DrainsAt, *f.DrainsAt, "twice the pace drains sooner")
		again, err := tb.c.GetBudget(ctx, "paced", false)
		require.NoError(t, err)
		require.Equal(t, int64(1), again.Allocation, "a what-if changes nothing")

		_, err = tb.c.BudgetForecast(ctx, "paced", api.WhatIf{Allocation: api.Ptr[int64](0)})
		require.True(t, client.IsValidation(err), "%v", err)
		_, err = tb.c.BudgetForecast(ctx, "nope", api.WhatIf{})
		require.True(t, client.IsNotFound(err), "%v", err)
	})
}
