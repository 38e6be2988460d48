package client_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server"
)

func TestClient_Misc(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, tb *testBundle) {
		ctx := ctxT(t)
		h, err := tb.c.Health(ctx)
		require.NoError(t, err)
		require.Equal(t, "ok", h.Status)

		v, err := tb.c.Version(ctx)
		require.NoError(t, err)
		require.Equal(t, server.Version, v.Version)

		_, err = tb.c.PutBudget(ctx, "conc", wif(2))
		require.NoError(t, err)
		_, err = tb.c.Enqueue(ctx, job("emails", "send", `{"a":1}`, bind("conc", 1)))
		require.NoError(t, err)
		_, err = tb.c.Enqueue(ctx, job("images", "resize", ""))
		require.NoError(t, err)

		st, err := tb.c.Stats(ctx)
		require.NoError(t, err)
		require.Equal(t, server.Version, st.Version)
		require.Equal(t, int64(2), st.Jobs.Ready)
		require.Len(t, st.Queues, 2)
		require.Len(t, st.Budgets, 1)
		require.NotNil(t, st.Budgets[0].State, "stats budgets carry live state")

		qs, err := tb.c.Queues(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"emails", "images"}, qs)

		require.NoError(t, tb.c.Reset(ctx))
		n, err := tb.c.CountJobs(ctx, api.JobQuery{})
		require.NoError(t, err)
		require.Zero(t, n)
		bs, err := tb.c.ListBudgets(ctx, false)
		require.NoError(t, err)
		require.Empty(t, bs)
	})
}
