package engine

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// TestForecast_WhileInFlightConverges: with one job in flight for longer
// and longer, the estimate stays put while the job is younger than the
// mean (it names a time, not a delay), never names a time already past,
// and once the job outlives the mean it says the jobs run longer than
// observed, where it kept saying "in 2s".
func TestForecast_WhileInFlightConverges(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budget(t, "w", 1, store.WhileInFlight, 0, 0)
	tb.enqueueN(t, 6, spec{binds: bindings("w", 1)})
	tk := tb.e.NewTaker(nil, 0)
	for range 2 { // two jobs of 2 s each: the mean is 2 s
		ids := drainIDs(tk)
		require.Len(t, ids, 1)
		tb.clk.Advance(2 * time.Second)
		tb.ack(t, ids...)
	}
	require.Len(t, drainIDs(tk), 1) // in flight from now; 3 wait
	since := tb.clk.Now().UnixMilli()
	forecast := func() Forecast {
		t.Helper()
		f, err := tb.e.Forecast("w", nil)
		require.NoError(t, err)
		return f
	}
	// Back at +2 s, then the three waiting one after the other.
	for _, age := range []time.Duration{0, time.Second, 1999 * time.Millisecond} {
		tb.clk.AdvanceTo(time.UnixMilli(since).Add(age))
		f := forecast()
		require.True(t, f.Estimated)
		require.NotNil(t, f.DrainsAt, "at age %v", age)
		require.Equal(t, since+6000, *f.DrainsAt, "at age %v", age)
		require.GreaterOrEqual(t, *f.DrainsAt, tb.clk.Now().UnixMilli())
	}
	for _, age := range []time.Duration{2 * time.Second, time.Minute, time.Hour} {
		tb.clk.AdvanceTo(time.UnixMilli(since).Add(age))
		f := forecast()
		require.Nil(t, f.DrainsAt, "at age %v", age)
		require.Equal(t, UnknownOverdue, f.Unknown)
		require.Equal(t, int64(3), f.Parked)
	}
}

// TestForecast_OverdueJobPushesOut: a job in flight longer than the mean
// gives its tokens back at no known time, so the estimate counts on the
// others alone: later than while it was young, and never past.
func TestForecast_OverdueJobPushesOut(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budget(t, "w", 2, store.WhileInFlight, 0, 0)
	tb.enqueueN(t, 10, spec{binds: bindings("w", 1)})
	tk := tb.e.NewTaker(nil, 0)
	ids := drainIDs(tk)
	require.Len(t, ids, 2)
	tb.clk.Advance(time.Second)
	tb.ack(t, ids...) // the mean is 1 s
	old := drainIDs(tk)
	require.Len(t, old, 2)
	tb.clk.Advance(500 * time.Millisecond)
	tb.ack(t, old[1]) // the mean moves a little towards 0.5 s
	young := drainIDs(tk)
	require.Len(t, young, 1)

	f, err := tb.e.Forecast("w", nil)
	require.NoError(t, err)
	require.NotNil(t, f.DrainsAt)
	both := *f.DrainsAt
	tb.clk.Advance(600 * time.Millisecond) // old[0] is 1.1 s in flight: overdue
	f, err = tb.e.Forecast("w", nil)
	require.NoError(t, err)
	require.NotNil(t, f.DrainsAt, "the young job's token still turns over")
	require.Greater(t, *f.DrainsAt, both, "one token fewer: later")
	require.Greater(t, *f.DrainsAt, tb.clk.Now().UnixMilli())
}

// TestForecast_FamilyCountsSubBudgets: a family's backlog drains no sooner
// than its sub-budgets let it: a slow tenant, or a paused one, holds it
// back however fast the family's own pool is.
func TestForecast_FamilyCountsSubBudgets(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.family(t, "tenants", rate(1000, 1000), rate(1, 1000))
	tb.enqueueN(t, 3, spec{binds: bindings("tenants/a", 1)})
	now := tb.clk.Now().UnixMilli()
	forecast := func() Forecast {
		t.Helper()
		f, err := tb.e.Forecast("tenants", nil)
		require.NoError(t, err)
		require.Equal(t, int64(3), f.Parked)
		return f
	}
	f := forecast()
	require.NotNil(t, f.DrainsAt)
	require.Equal(t, now+2000, *f.DrainsAt, "tenants/a pays one now, then one a second")
	require.False(t, f.Estimated)

	_, _, err := tb.e.PatchBudget("tenants/a", func(cfg *store.Budget) error { cfg.Paused = true; return nil })
	require.NoError(t, err)
	f = forecast()
	require.Nil(t, f.DrainsAt, "tenants/a is paused without an end")
	require.Equal(t, UnknownPaused, f.Unknown)

	until := now + 3_600_000
	_, _, err = tb.e.PatchBudget("tenants/a", func(cfg *store.Budget) error { cfg.Paused, cfg.PausedUntil = false, until; return nil })
	require.NoError(t, err)
	f = forecast()
	require.NotNil(t, f.DrainsAt)
	require.Equal(t, until+2000, *f.DrainsAt)
}

// slotHeap is the oracle's free times of tokens.
type slotHeap []int64

func (h slotHeap) Len() int           { return len(h) }
func (h slotHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h slotHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *slotHeap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *slotHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// TestWifDrainsAt_MatchesSimulation checks the estimate against a
// simulation, token by token, of the model it states: every token is a
// slot that takes the next token of the backlog when free, each job holds
// it for the mean; tokens over the allocation are lost as they come back,
// earliest dispatched first; a job older than the mean never gives its
// tokens back.
func TestWifDrainsAt_MatchesSimulation(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 21))
	for i := range 5000 {
		now := int64(1_000_000 + rng.IntN(1000))
		from := now
		if rng.IntN(4) == 0 {
			from += int64(rng.IntN(5000)) // the end of a pause
		}
		mean := int64(1 + rng.IntN(2000))
		allocation := int64(1 + rng.IntN(6))
		need := int64(1 + rng.IntN(40))
		var flights []inFlight
		for range rng.IntN(6) {
			flights = append(flights, inFlight{cost: int64(1 + rng.IntN(3)), since: now - int64(rng.IntN(3000))})
		}
		got, ok := wifDrainsAt(from, now, mean, allocation, need, append([]inFlight(nil), flights...))

		// The oracle.
		sorted := append([]inFlight(nil), flights...)
		sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].since < sorted[j].since })
		var held int64
		for _, f := range sorted {
			held += f.cost
		}
		h := &slotHeap{}
		for range max(allocation-held, 0) {
			heap.Push(h, from)
		}
		lost := max(held-allocation, 0)
		for _, f := range sorted {
			for range f.cost {
				if lost > 0 {
					lost--
					continue
				}
				if f.since+mean > now {
					heap.Push(h, max(f.since+mean, from))
				}
			}
		}
		if h.Len() == 0 {
			require.False(t, ok, "case %d: no token ever free", i)
			continue
		}
		var last int64
		for range need {
			last = heap.Pop(h).(int64)
			heap.Push(h, last+mean)
		}
		require.True(t, ok, "case %d", i)
		require.Equal(t, last, got, "case %d: from %d now %d mean %d alloc %d need %d flights %v", i, from, now, mean, allocation, need, flights)
		require.GreaterOrEqual(t, got, from, "never before from")
	}
	// Saturation: an absurd backlog answers, without overflow.
	got, ok := wifDrainsAt(0, 0, math.MaxInt64/4, 1, math.MaxInt64, nil)
	require.True(t, ok)
	require.Equal(t, int64(math.MaxInt64), got)
}
