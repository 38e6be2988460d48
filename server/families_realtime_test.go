package server_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
)

// Families, pauses and forecasts in real time, over real take streams: the
// behaviour issue 16 names. Limits are checked from what the workers hold,
// as in budgets_realtime_test.go; times from the injected clock.

// famHeld counts, at every delivery and before every ack, the jobs the
// workers hold per sub-key and for the family, and records any excess.
type famHeld struct {
	mu             sync.Mutex
	perKey         map[string]int64
	family         int64
	perKeyCap, cap int64
	excess         []string
}

func (h *famHeld) deliver(sub string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.perKey[sub]++
	h.family++
	if h.perKey[sub] > h.perKeyCap {
		h.excess = append(h.excess, fmt.Sprintf("%s holds %d", sub, h.perKey[sub]))
	}
	if h.family > h.cap {
		h.excess = append(h.excess, fmt.Sprintf("the family holds %d", h.family))
	}
}

func (h *famHeld) ack(sub string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.perKey[sub]--
	h.family--
}

// TestFamiliesRealtime_PerKeyLimitsHold: 20 tenants of 2 in flight each
// under a family of 6, 4 workers that hold each job a moment: neither
// limit is ever exceeded, and every job is delivered once.
func TestFamiliesRealtime_PerKeyLimitsHold(t *testing.T) {
	t.Parallel()
	const tenants, perTenant = 20, 8
	tb := setup(t)
	tb.budPut(t, "tenants", `{"allocation":6,"strategy":{"type":"while_in_flight"},"per_key":{"allocation":2,"strategy":{"type":"while_in_flight"}}}`)
	for i := range tenants {
		tb.budJobs(t, perTenant, "q", fmt.Sprintf(`[{"key":"tenants/t%02d"}]`, i))
	}
	held := &famHeld{perKey: map[string]int64{}, perKeyCap: 2, cap: 6}
	f := budNewFleet(t, tb)
	for range 4 {
		f.worker("queue=q&prefetch=5", func(fr budFrame) {
			sub := fr.job.Budgets[0].Key
			held.deliver(sub)
			f.spawn(func() {
				time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
				held.ack(sub)
				f.ack(fr.job.ID)
			})
		})
	}
	frames := f.wait(tenants*perTenant, 60*time.Second)
	f.none(50 * time.Millisecond)
	seen := map[string]bool{}
	for _, fr := range frames {
		require.False(t, seen[fr.job.ID], "job %s delivered twice", fr.job.ID)
		seen[fr.job.ID] = true
	}
	held.mu.Lock()
	defer held.mu.Unlock()
	require.Empty(t, held.excess, "limits exceeded")
}

// famSequence advances the fake clock by step until n frames arrived, one
// wait per step, and returns the sub-keys in delivery order.
func famSequence(t *testing.T, b *famBundle, f *budFleet, n int, step time.Duration) []string {
	t.Helper()
	var subs []string
	for len(subs) < n {
		select {
		case fr := <-f.arrived:
			subs = append(subs, fr.job.Budgets[0].Key)
		case <-time.After(200 * time.Millisecond):
			b.clk.Advance(step)
		}
	}
	return subs
}

// TestFamiliesRealtime_FairShare: a tenant that enqueues 5 jobs after
// another enqueued 10,000 gets each within the next few of the family's
// tokens (one a second, on the injected clock).
func TestFamiliesRealtime_FairShare(t *testing.T) {
	t.Parallel()
	b := famSetup(t, api.JSON)
	b.call(t, "PUT", "/budgets/tenants", `{"allocation":1,"strategy":{"type":"time_based","duration_ms":1000},"per_key":{"allocation":100000,"strategy":{"type":"while_in_flight"}}}`, http.StatusOK, nil)
	f := budNewFleet(t, b.testBundle)
	f.worker("queue=q&prefetch=0", func(fr budFrame) { f.spawn(func() { f.ack(fr.job.ID) }) })
	for range 10 {
		b.famJobs(t, 1000, "q", `[{"key":"tenants/big"}]`)
	}
	f.wait(1, budArrives) // the family's one token pays for big's first
	b.clk.Advance(10 * time.Millisecond)
	late := b.famJobs(t, 5, "q", `[{"key":"tenants/late"}]`)
	require.Len(t, late, 5)

	subs := famSequence(t, b, f, 12, time.Second)
	bigBefore, lateSeen := 0, 0
	for _, s := range subs {
		if s == "tenants/late" {
			require.LessOrEqual(t, bigBefore, lateSeen+2, "late's job %d came after %d of big's: %v", lateSeen, bigBefore, subs)
			lateSeen++
		} else {
			bigBefore++
		}
	}
	require.Equal(t, 5, lateSeen, "late's five jobs within 12 tokens: %v", subs)
}

// TestFamiliesRealtime_FairShareBeforeWorkers: two tenants enqueue ten
// jobs each, one after the other, before any worker: the family (one in
// flight) then serves them in turns, the first tenant first.
func TestFamiliesRealtime_FairShareBeforeWorkers(t *testing.T) {
	t.Parallel()
	b := famSetup(t, api.JSON)
	b.call(t, "PUT", "/budgets/tenants", `{"allocation":1,"strategy":{"type":"while_in_flight"},"per_key":{"allocation":100,"strategy":{"type":"while_in_flight"}}}`, http.StatusOK, nil)
	b.famJobs(t, 10, "q", `[{"key":"tenants/a"}]`)
	b.famJobs(t, 10, "q", `[{"key":"tenants/b"}]`)
	f := budNewFleet(t, b.testBundle)
	f.worker("queue=q&prefetch=0", func(fr budFrame) { f.spawn(func() { f.ack(fr.job.ID) }) })
	var subs []string
	for _, fr := range f.wait(20, 20*time.Second) {
		subs = append(subs, strings.TrimPrefix(fr.job.Budgets[0].Key, "tenants/"))
	}
	require.Equal(t, strings.Repeat("ab", 10), strings.Join(subs, ""), "turns")
}

// TestFamiliesRealtime_PauseToTheMillisecond: a budget paused until T pays
// for nothing before T and for its jobs at T; one paused without an end
// waits for its resume.
func TestFamiliesRealtime_PauseToTheMillisecond(t *testing.T) {
	t.Parallel()
	b := famSetup(t, api.JSON)
	until := famT0 + 5000
	b.call(t, "PUT", "/budgets/api", fmt.Sprintf(`{"allocation":3,"strategy":{"type":"while_in_flight"},"paused_until":%d}`, until), http.StatusOK, nil)
	b.call(t, "PUT", "/budgets/held", `{"allocation":3,"strategy":{"type":"while_in_flight"},"paused":true}`, http.StatusOK, nil)
	jobs := b.famJobs(t, 2, "q", `[{"key":"api"}]`)
	heldJob := b.famJob(t, "q", `[{"key":"held"}]`)
	f := budNewFleet(t, b.testBundle)
	f.worker("queue=q&prefetch=0", nil)
	f.none(200 * time.Millisecond)

	var w api.Why
	b.call(t, "GET", "/jobs/"+jobs[0].ID+"/why", "", http.StatusOK, &w)
	require.Equal(t, api.WaitingBudget, w.WaitingFor)
	require.Contains(t, w.Reason, "paused")

	b.clk.AdvanceTo(time.UnixMilli(until - 1))
	f.none(200 * time.Millisecond)
	b.clk.Advance(time.Millisecond)
	got := f.wait(2, budArrives)
	require.ElementsMatch(t, []string{jobs[0].ID, jobs[1].ID}, []string{got[0].job.ID, got[1].job.ID})
	for _, fr := range got {
		require.Equal(t, uint64(until), fr.job.DequeuedAt, "dispatched at the pause's end")
	}
	// The pause ended by itself: the budget shows none.
	_, answer := b.send(t, "GET", "/budgets/api", "")
	require.NotContains(t, answer, "paused")

	b.clk.Advance(time.Hour)
	f.none(200 * time.Millisecond)
	b.call(t, "PATCH", "/budgets/held", `{"paused":false}`, http.StatusOK, nil)
	require.Equal(t, heldJob.ID, f.wait(1, budArrives)[0].job.ID)
}

// TestFamiliesRealtime_ForecastHolds: the forecast of a standing
// time_based backlog is within 10% of when it then drains.
func TestFamiliesRealtime_ForecastHolds(t *testing.T) {
	t.Parallel()
	b := famSetup(t, api.JSON)
	const n = 60
	b.call(t, "PUT", "/budgets/rate", `{"allocation":10,"strategy":{"type":"time_based","duration_ms":1000,"burst":5}}`, http.StatusOK, nil)
	b.famJobs(t, n, "q", `[{"key":"rate"}]`)
	var fc api.Forecast
	b.call(t, "GET", "/budgets/rate/forecast", "", http.StatusOK, &fc)
	require.Equal(t, int64(n), fc.Parked)
	require.False(t, fc.Estimated)
	require.NotNil(t, fc.DrainsAt)
	predicted := *fc.DrainsAt - famT0

	f := budNewFleet(t, b.testBundle)
	f.worker("queue=q&prefetch=0", func(fr budFrame) { f.spawn(func() { f.ack(fr.job.ID) }) })
	var last uint64
	deadline := time.Now().Add(30 * time.Second)
	for got := 0; got < n; {
		select {
		case fr := <-f.arrived:
			got++
			last = max(last, fr.job.DequeuedAt)
		case <-time.After(50 * time.Millisecond):
			require.True(t, time.Now().Before(deadline), "%d of %d jobs arrived", got, n)
			famNextTimer(b)
		}
	}
	actual := int64(last) - famT0
	require.InDelta(t, float64(predicted), float64(actual), 0.1*float64(actual), "forecast %d ms, drained in %d ms", predicted, actual)
}

// famNextTimer moves the fake clock to its next timer: the budget's next
// token, when nothing else is waiting. With none, the last jobs are
// dispatched and their frames on their way (a loaded machine may take
// more than the caller's 50 ms to deliver them): nothing to move.
func famNextTimer(b *famBundle) {
	if next, ok := b.clk.NextAt(); ok {
		b.clk.AdvanceTo(next)
	}
}
