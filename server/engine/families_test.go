package engine

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// family creates budget key as a family: its own limit and a template for
// every sub-key.
func (tb *testBundle) family(t testing.TB, key string, own, tmpl store.Budget) {
	t.Helper()
	own.PerKey = &store.BudgetTemplate{Allocation: tmpl.Allocation, Strategy: tmpl.Strategy, DurationMs: tmpl.DurationMs, Burst: tmpl.Burst}
	_, _, err := tb.e.PutBudget(key, own, CreateOnly)
	require.NoError(t, err)
}

func wif(n int64) store.Budget { return store.Budget{Allocation: n, Strategy: store.WhileInFlight} }

func rate(n, perMs int64) store.Budget {
	return store.Budget{Allocation: n, Strategy: store.TimeBased, DurationMs: perMs}
}

func requireKind(t *testing.T, err error, kind ErrorKind) {
	t.Helper()
	var e *Error
	require.True(t, errors.As(err, &e), "an engine error, got %v", err)
	require.Equal(t, kind, e.Kind, e.Msg)
}

// subKeyOf reads which sub-key a dispatched job was bound to.
func subKeyOf(d dispatch) string {
	for k := range d.cost {
		return k
	}
	return ""
}

// TestFamilies_PerKeyAndFamilyLimits: each sub-key holds its own limit and
// the family its total, whatever the number of sub-keys; a sub-budget
// exists while a job is bound to it and goes once idle.
func TestFamilies_PerKeyAndFamilyLimits(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.family(t, "tenants", wif(3), wif(1))
	for _, k := range []string{"a", "a", "a", "b", "b", "c", "d", "d"} {
		tb.enqueue(t, spec{binds: bindings("tenants/"+k, 1)})
	}
	subs, err := tb.e.SubBudgets("tenants", true)
	require.NoError(t, err)
	require.Len(t, subs, 4, "one sub-budget per sub-key with a job")

	tk := tb.e.NewTaker(nil, 0)
	inFlight := map[string]string{} // job → sub-key
	for done := 0; done < 8; {
		drainIDs(tk)
		for _, d := range tb.dispatches[done+len(inFlight):] {
			inFlight[d.id] = subKeyOf(d)
		}
		perKey := map[string]int{}
		for _, k := range inFlight {
			perKey[k]++
			require.LessOrEqual(t, perKey[k], 1, "sub-key %s over its limit", k)
		}
		require.LessOrEqual(t, len(inFlight), 3, "the family over its limit")
		require.NotEmpty(t, inFlight, "something is in flight while jobs remain")
		for id := range inFlight { // finish the earliest one
			tb.ack(t, id)
			delete(inFlight, id)
			done++
			break
		}
	}
	subs, err = tb.e.SubBudgets("tenants", true)
	require.NoError(t, err)
	require.Empty(t, subs, "idle sub-budgets are released")
	v, err := tb.e.Budget("tenants", true)
	require.NoError(t, err)
	require.Equal(t, int64(0), v.State.SubBudgets)
	require.Equal(t, int64(8), v.State.Dispatched)
}

// TestFamilies_Refusals: a sub-budget is the family's to configure; a job
// may not be charged twice by one family; a template no bound job could
// ever pay is refused.
func TestFamilies_Refusals(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.family(t, "tenants", wif(10), wif(2))
	tb.enqueue(t, spec{binds: bindings("tenants/a", 2)})

	_, _, err := tb.e.PutBudget("tenants/a", wif(5), CreateOrReplace)
	requireKind(t, err, Conflict)
	_, _, err = tb.e.PatchBudget("tenants/a", func(cfg *store.Budget) error { cfg.Allocation = 5; return nil })
	requireKind(t, err, Conflict)

	_, _, err = tb.e.Enqueue([]NewJob{{Type: "t", Queue: "q", Priority: 1, Payload: []byte("{}"), Budgets: bindings("tenants", 1, "tenants/b", 1)}})
	requireKind(t, err, Invalid)
	_, _, err = tb.e.Enqueue([]NewJob{{Type: "t", Queue: "q", Priority: 1, Payload: []byte("{}"), Budgets: bindings("tenants/b", 1, "tenants/c", 1)}})
	requireKind(t, err, Invalid)

	fam := wif(10)
	fam.PerKey = &store.BudgetTemplate{Allocation: 1, Strategy: store.WhileInFlight}
	_, _, err = tb.e.PutBudget("tenants", fam, CreateOrReplace)
	requireKind(t, err, Unprocessable) // tenants/a's job costs 2
	fam.PerKey = nil
	_, _, err = tb.e.PutBudget("tenants", fam, CreateOrReplace)
	requireKind(t, err, Conflict) // a family with bound jobs stays one
}

// TestFamilies_FairShare: a sub-key that enqueues after another's long
// backlog gets its turn within a few of the family's tokens, and the
// backlog keeps its own order.
func TestFamilies_FairShare(t *testing.T) {
	t.Parallel()
	for _, own := range []store.Budget{wif(1), rate(10, 1000)} {
		t.Run(own.Strategy, func(t *testing.T) {
			t.Parallel()
			tb := setup(t)
			tb.family(t, "tenants", own, wif(100))
			big := tb.enqueueN(t, 200, spec{binds: bindings("tenants/big", 1)})
			tb.clk.Advance(time.Second)
			small := tb.enqueueN(t, 5, spec{binds: bindings("tenants/small", 1)})
			tk := tb.e.NewTaker(nil, 1)
			var order []string
			for len(order) < 40 {
				ids := drainIDs(tk)
				if len(ids) == 0 {
					tb.clk.Advance(100 * time.Millisecond)
					continue
				}
				order = append(order, ids...)
				tb.ack(t, ids...)
			}
			pos := map[string]int{}
			for i, id := range order {
				pos[id] = i
			}
			for k, id := range small {
				p, ok := pos[id]
				require.True(t, ok, "small's job %d ran in the first 40", k)
				require.LessOrEqual(t, p, 2*k+2, "small's job %d waits at most about one of big's per turn", k)
			}
			last := -1
			for _, id := range big {
				if p, ok := pos[id]; ok {
					require.Greater(t, p, last, "big's jobs keep their order")
					last = p
				}
			}
		})
	}
}

// TestPause_UntilToTheMillisecond: a paused budget pays nothing, its jobs
// say why, and at paused_until it pays again on its own.
func TestPause_UntilToTheMillisecond(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	until := epoch.Add(1500 * time.Millisecond).UnixMilli()
	_, _, err := tb.e.PutBudget("api", store.Budget{Allocation: 5, Strategy: store.WhileInFlight, PausedUntil: until}, CreateOnly)
	require.NoError(t, err)
	ids := tb.enqueueN(t, 3, spec{binds: bindings("api", 1)})
	free := tb.enqueue(t, spec{})
	tk := tb.e.NewTaker(nil, 0)
	require.Equal(t, []string{free}, drainIDs(tk), "everything else keeps flowing")

	w, ok := tb.e.Why(ids[0])
	require.True(t, ok)
	require.Equal(t, "budget", w.WaitingFor)
	require.Len(t, w.Budgets, 1)
	require.True(t, w.Budgets[0].Paused)
	require.NotNil(t, w.Budgets[0].PausedUntil)
	require.Equal(t, until, *w.Budgets[0].PausedUntil)

	tb.clk.Advance(1499 * time.Millisecond)
	require.Empty(t, drainIDs(tk), "1 ms before the end")
	tb.clk.Advance(time.Millisecond)
	require.Equal(t, ids, drainIDs(tk), "at the end, in order")
	v, err := tb.e.Budget("api", false)
	require.NoError(t, err)
	require.False(t, v.Budget.Paused)
	require.Zero(t, v.Budget.PausedUntil, "an ended pause is cleared")
}

// TestPause_HoldsNothing: a job parked on a paused budget is no budget's
// head, so a later job on its other budget goes; resuming lets it go.
func TestPause_HoldsNothing(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budget(t, "shared", 1, store.WhileInFlight, 0, 0)
	tb.budget(t, "upstream", 5, store.WhileInFlight, 0, 0)
	_, _, err := tb.e.PatchBudget("upstream", func(cfg *store.Budget) error { cfg.Paused = true; return nil })
	require.NoError(t, err)
	held := tb.enqueue(t, spec{priority: 1, binds: bindings("shared", 1, "upstream", 1)})
	next := tb.enqueue(t, spec{priority: 2, binds: bindings("shared", 1)})
	tk := tb.e.NewTaker(nil, 0)
	require.Equal(t, []string{next}, drainIDs(tk), "the paused job reserves nothing on shared")
	tb.ack(t, next)
	require.Empty(t, drainIDs(tk))
	_, _, err = tb.e.PatchBudget("upstream", func(cfg *store.Budget) error { cfg.Paused = false; return nil })
	require.NoError(t, err)
	require.Equal(t, []string{held}, drainIDs(tk))
}

// TestPause_FamilyStopsEverySubKey: pausing a family pauses all its
// sub-keys' jobs (the 429 of a shared upstream).
func TestPause_FamilyStopsEverySubKey(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.family(t, "tenants", wif(10), wif(10))
	until := epoch.Add(time.Second).UnixMilli()
	_, _, err := tb.e.PatchBudget("tenants", func(cfg *store.Budget) error { cfg.PausedUntil = until; return nil })
	require.NoError(t, err)
	a := tb.enqueue(t, spec{binds: bindings("tenants/a", 1)})
	b := tb.enqueue(t, spec{binds: bindings("tenants/b", 1)})
	tk := tb.e.NewTaker(nil, 0)
	require.Empty(t, drainIDs(tk))
	tb.clk.Advance(time.Second)
	require.Equal(t, []string{a, b}, drainIDs(tk))
}

// TestForecast_TimeBasedIsExact: the forecast of a standing time_based
// backlog is when its last job then goes, to the millisecond; a what-if
// answers for another rate and changes nothing.
func TestForecast_TimeBasedIsExact(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budget(t, "r", 10, store.TimeBased, 1000, 0) // 10 a second, capacity 10
	tb.enqueueN(t, 100, spec{binds: bindings("r", 1)})
	tk := tb.e.NewTaker(nil, 0)
	tb.ack(t, drainIDs(tk)...)

	f, err := tb.e.Forecast("r", nil)
	require.NoError(t, err)
	require.False(t, f.Estimated)
	// The oracle: the taker took the 10 tokens there were at once; one
	// every 100 ms pays the other 90.
	want := epoch.UnixMilli() + 90*100
	require.NotNil(t, f.DrainsAt)
	require.Equal(t, int64(90), f.Parked)
	require.Equal(t, want, *f.DrainsAt)

	twice := int64(20)
	g, err := tb.e.Forecast("r", &WhatIf{Allocation: &twice})
	require.NoError(t, err)
	// At 20 a second: the pool is empty now (a change keeps the level in
	// tokens), so the 90 go one every 50 ms.
	require.Equal(t, epoch.UnixMilli()+90*50, *g.DrainsAt)

	var last time.Time
	for n := 10; n < 100; {
		ids := drainIDs(tk)
		if len(ids) > 0 {
			last = tb.clk.Now()
			n += len(ids)
			tb.ack(t, ids...)
			continue
		}
		tb.clk.Advance(time.Millisecond)
	}
	require.Equal(t, want, last.UnixMilli(), "the last job goes when forecast")
	v, err := tb.e.Budget("r", false)
	require.NoError(t, err)
	require.Equal(t, int64(10), v.Budget.Allocation, "the what-if changed nothing")
}

// TestForecast_WhileInFlightEstimated: from the observed time in flight,
// marked estimated; none before any job came back.
func TestForecast_WhileInFlightEstimated(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budget(t, "w", 2, store.WhileInFlight, 0, 0)
	tb.enqueueN(t, 12, spec{binds: bindings("w", 1)})
	f, err := tb.e.Forecast("w", nil)
	require.NoError(t, err)
	require.Nil(t, f.DrainsAt, "nothing observed yet")

	tk := tb.e.NewTaker(nil, 0)
	for range 2 { // two rounds of two jobs, 100 ms each
		ids := drainIDs(tk)
		require.Len(t, ids, 2)
		tb.clk.Advance(100 * time.Millisecond)
		tb.ack(t, ids...)
	}
	ids := drainIDs(tk) // 2 in flight, 6 waiting
	require.Len(t, ids, 2)
	f, err = tb.e.Forecast("w", nil)
	require.NoError(t, err)
	require.True(t, f.Estimated)
	require.NotNil(t, f.DrainsAt)
	// The oracle: 6 waiting, 2 at a time, 100 ms each: three rounds after
	// the two in flight come back, about 300-400 ms from now.
	now := tb.clk.Now().UnixMilli()
	require.GreaterOrEqual(t, *f.DrainsAt, now+200, fmt.Sprint(*f.DrainsAt-now))
	require.LessOrEqual(t, *f.DrainsAt, now+400, fmt.Sprint(*f.DrainsAt-now))
}
