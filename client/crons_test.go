package client_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
)

func cronJob() *api.EnqueueRequest {
	return &api.EnqueueRequest{Type: api.Ptr("t"), Queue: api.Ptr("q"), Payload: api.Payload(`{"n":1}`)}
}

func TestClient_Crons(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, tb *testBundle) {
		ctx := ctxT(t)
		names, err := tb.c.ListCronGroups(ctx)
		require.NoError(t, err)
		require.Empty(t, names)

		g, err := tb.c.PutCronGroup(ctx, "ops/eu", api.CronGroupRequest{Timezone: api.Ptr("Europe/Paris"), Entries: []api.CronEntryRequest{
			{Name: api.Ptr("nightly report"), Expression: api.Ptr("0 3 * * *"), Job: cronJob()},
		}})
		require.NoError(t, err)
		require.Equal(t, "ops/eu", g.Name, "names travel escaped")
		require.Equal(t, "Europe/Paris", g.Timezone)
		require.Len(t, g.Entries, 1)
		require.NotZero(t, g.Entries[0].NextEnqueueAt)
		require.Equal(t, `{"n":1}`, string(g.Entries[0].Job.Payload))

		e, err := tb.c.AddCronEntry(ctx, "ops/eu", api.CronEntryRequest{Name: api.Ptr("tick"), Expression: api.Ptr("*/10 * * * * *"), Job: cronJob()})
		require.NoError(t, err)
		require.Equal(t, "tick", e.Name)
		_, err = tb.c.AddCronEntry(ctx, "ops/eu", api.CronEntryRequest{Name: api.Ptr("tick"), Expression: api.Ptr("* * * * *"), Job: cronJob()})
		require.True(t, client.IsConflict(err), "%v", err)

		e, err = tb.c.PutCronEntry(ctx, "ops/eu", "tick", api.CronEntryRequest{Expression: api.Ptr("* * * * *"), Paused: api.Ptr(true), Job: cronJob()})
		require.NoError(t, err)
		require.True(t, e.Paused)
		e, err = tb.c.PauseCronEntry(ctx, "ops/eu", "tick", false)
		require.NoError(t, err)
		require.False(t, e.Paused)
		require.NotZero(t, e.ResumedAt)
		got, err := tb.c.GetCronEntry(ctx, "ops/eu", "tick")
		require.NoError(t, err)
		require.Equal(t, e, got)

		g, err = tb.c.PauseCronGroup(ctx, "ops/eu", true)
		require.NoError(t, err)
		require.True(t, g.Paused)
		g, err = tb.c.GetCronGroup(ctx, "ops/eu")
		require.NoError(t, err)
		require.True(t, g.Paused)
		require.Len(t, g.Entries, 2)

		require.NoError(t, tb.c.DeleteCronEntry(ctx, "ops/eu", "tick"))
		_, err = tb.c.GetCronEntry(ctx, "ops/eu", "tick")
		require.True(t, client.IsNotFound(err), "%v", err)

		_, err = tb.c.PutCronGroup(ctx, "empty", api.CronGroupRequest{})
		require.NoError(t, err, "no entries is an empty list, not a missing field")
		names, err = tb.c.ListCronGroups(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"empty", "ops/eu"}, names)
		require.NoError(t, tb.c.DeleteCronGroup(ctx, "empty"))
		require.True(t, client.IsNotFound(tb.c.DeleteCronGroup(ctx, "empty")))
		n, err := tb.c.DeleteCronGroups(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(1), n)

		_, err = tb.c.PutCronGroup(ctx, "bad", api.CronGroupRequest{Entries: []api.CronEntryRequest{{Name: api.Ptr("e"), Expression: api.Ptr("nope"), Job: cronJob()}}})
		require.Equal(t, 400, client.StatusOf(err), "%v", err)
	})
}
