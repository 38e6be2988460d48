package core_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/server/clock"
	"github.com/zizq/zizq/server/core"
	"github.com/zizq/zizq/server/engine"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/sqlite"
)

// TestService_SetLeader: a standby service fires nothing; once it leads,
// the occurrences that came meanwhile run once; once it no longer leads,
// nothing fires again.
func TestService_SetLeader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC)
	clk := clock.NewFake(start)
	s := core.Start(ctx, core.Options{
		Open: func(ctx context.Context) (core.Store, error) {
			return sqlite.Open(ctx, t.TempDir(), sqlite.Options{Logger: slog.New(slog.DiscardHandler)})
		},
		Engine: engine.DefaultConfig(), Clock: clk, Logger: slog.New(slog.DiscardHandler), Standby: true,
	})
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	require.NoError(t, s.Wait(ctx))
	_, err := s.PutCronGroup(ctx, "g", core.CronGroupSpec{Entries: []core.CronEntrySpec{{
		Name: "e", Expression: "* * * * *", Timezone: "UTC",
		Job: engine.NewJob{Type: "t", Queue: "q", Priority: 1, Payload: []byte("{}")},
	}}})
	require.NoError(t, err)
	require.Empty(t, s.Engine().Alarms(), "a standby sets no alarm")

	clk.Advance(3 * time.Minute)
	require.Zero(t, jobs(t, s), "a standby fires nothing")

	require.NoError(t, s.SetLeader(ctx, true))
	require.Eventually(t, func() bool { return jobs(t, s) == 1 }, 10*time.Second, 5*time.Millisecond, "one catch-up run")
	e, err := s.CronEntry("g", "e")
	require.NoError(t, err)
	require.Equal(t, clk.Now().UnixMilli(), e.LastEnqueueAt)

	require.NoError(t, s.SetLeader(ctx, false))
	require.Empty(t, s.Engine().Alarms())
	clk.Advance(3 * time.Minute)
	require.Equal(t, int64(1), jobs(t, s), "no longer the leader: nothing fires")
}

func jobs(t *testing.T, s *core.Service) int64 {
	t.Helper()
	n, err := s.Count(context.Background(), core.Filter{Filter: store.Filter{Queues: []string{"q"}}})
	require.NoError(t, err)
	return n
}
