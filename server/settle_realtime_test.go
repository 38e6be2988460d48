package server_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
)

// Settling real costs and calendar budgets over real take streams (issue
// 25). As in budgets_realtime_test.go, dispatch is asserted from what the
// workers observe and from the server's dispatch times (dequeued_at); no
// assertion is about speed.

// settleBody is a success or failure body settling one budget.
func settleBody(key string, cost int64) string {
	return fmt.Sprintf(`{"budgets":[{"key":%q,"cost":%d}]}`, key, cost)
}

// TestSettleRealtime_CreditFreesAtOnce: a job of estimate 100 settled at 20
// gives 80 back at once: a parked job of cost 80 is dispatched by the ack
// itself, before its answer, where the drip (100 an hour) would take 48
// minutes.
func TestSettleRealtime_CreditFreesAtOnce(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budPut(t, "llm", `{"allocation":100,"strategy":{"type":"time_based","duration_ms":3600000}}`)
	first := tb.budJob(t, "q", `[{"key":"llm","cost":100}]`)
	second := tb.budJob(t, "q", `[{"key":"llm","cost":80}]`)
	ts := tb.take(t, "prefetch=0")
	require.Equal(t, first.ID, ts.next(t, budArrives).ID)
	ts.none(t, 200*time.Millisecond)
	require.Equal(t, int64(1), tb.budState(t, "llm").Parked)

	r := tb.req(t, "POST", "/jobs/"+first.ID+"/success", settleBody("llm", 20))
	answered := time.Now().UnixMilli()
	require.Equal(t, http.StatusNoContent, r.status, "body: %s", r.body)
	got := ts.next(t, budArrives)
	require.Equal(t, second.ID, got.ID)
	// Dispatched by the settle, not by the drip: no later than the ack's
	// answer (+1 ms of truncation).
	require.LessOrEqual(t, int64(got.DequeuedAt), answered+1)

	st := tb.budState(t, "llm")
	require.InDelta(t, 0, st.Available, 0.1, "100 − 100 + 80 − 80 (plus a little drip)")
	require.Equal(t, &api.Settled{Count: 1, Credited: 80}, st.Settled)
	require.NotNil(t, st.CostRatio)
	require.InDelta(t, 0.2, *st.CostRatio, 0.001)
	require.Nil(t, st.Debt)
}

// TestSettleRealtime_DebtBlocks: on a 100/s budget, a job of estimate 100
// settled at 300 leaves a debt of 200: the next job (cost 1) waits until
// the drip has repaid it, 2 s after the first dispatch, and why says so.
func TestSettleRealtime_DebtBlocks(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budPut(t, "tpm", `{"allocation":100,"strategy":{"type":"time_based","duration_ms":1000}}`)
	first := tb.budJob(t, "q", `[{"key":"tpm","cost":100}]`)
	second := tb.budJob(t, "q", `[{"key":"tpm","cost":1}]`)
	ts := tb.take(t, "prefetch=1")
	got := ts.next(t, budArrives)
	require.Equal(t, first.ID, got.ID)
	t0 := int64(got.DequeuedAt)

	r := tb.req(t, "POST", "/jobs/"+first.ID+"/success", settleBody("tpm", 300))
	require.Equal(t, http.StatusNoContent, r.status, "body: %s", r.body)
	st := tb.budState(t, "tpm")
	require.Less(t, st.Available, 0.0, "in debt")
	require.NotNil(t, st.Debt)
	require.NotNil(t, st.RepaidAt)
	// The pool was empty at t0 and owes 200 more: repaid 2 s after t0
	// (ms rounding either way).
	require.InDelta(t, t0+2000, *st.RepaidAt, 2)
	require.InDelta(t, -st.Available, *st.Debt, 0.01)
	w := tb.budWhy(t, second.ID)
	require.Equal(t, "budget", w.WaitingFor)
	require.Contains(t, w.Reason, "budget 'tpm' is in debt by")
	require.Len(t, w.Budgets, 1)
	require.NotNil(t, w.Budgets[0].Debt)

	// 200 of debt and 1 of cost at 100 a second: 2,010 ms after t0, and
	// not before (−1 ms of truncation).
	got = ts.next(t, budArrives+3*time.Second)
	require.Equal(t, second.ID, got.ID)
	require.GreaterOrEqual(t, int64(got.DequeuedAt), t0+2010-1)
	require.Equal(t, &api.Settled{Count: 1, Debited: 200}, tb.budState(t, "tpm").Settled)
}

// settled is one job as its worker saw it: when it was dispatched (ms) and
// the cost it settled.
type settled struct {
	at   float64
	cost int64
}

// TestSettleRealtime_WindowBound: jobs of estimate 10 settled at random
// costs 0..40 on a budget of 200/s with burst 20. Over every window of
// dispatch times, the settled costs of the jobs dispatched in it stay
// within burst + rate × window + the debt that can be outstanding at its
// end, which with one job in flight at a time is at most one job's excess
// (30): a budget in debt dispatches nothing. Charging the estimates
// instead of the settled costs would break it within a few jobs.
func TestSettleRealtime_WindowBound(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budPut(t, "tpm", `{"allocation":200,"strategy":{"type":"time_based","duration_ms":1000,"burst":20}}`)
	const n = 30
	tb.budJobs(t, n, "q", `[{"key":"tpm","cost":10}]`)
	rng := rand.New(rand.NewPCG(25, 25))
	costs := make([]int64, n)
	for i := range costs {
		costs[i] = 10 + int64(rng.IntN(31)) // mostly above the estimate
		if i%5 == 0 {
			costs[i] = int64(rng.IntN(10)) // and sometimes below
		}
	}
	var mu sync.Mutex
	var runs []settled
	f := budNewFleet(t, tb)
	f.worker("prefetch=1", func(fr budFrame) {
		mu.Lock()
		c := costs[len(runs)]
		runs = append(runs, settled{at: float64(fr.dispatchedAt()), cost: c})
		mu.Unlock()
		f.spawn(func() { f.post("/jobs/"+fr.job.ID+"/success", settleBody("tpm", c), http.StatusNoContent) })
	})
	f.wait(n, 30*time.Second)

	mu.Lock()
	defer mu.Unlock()
	sort.Slice(runs, func(i, j int) bool { return runs[i].at < runs[j].at })
	for i := range runs {
		var sum int64
		for j := i; j < len(runs); j++ {
			sum += runs[j].cost
			w := runs[j].at - runs[i].at
			// +1 ms of truncation on the window (0.2 token) and +1 token
			// of margin; no other tolerance: the arithmetic is exact.
			bound := 20 + 200*(w+1)/1000 + 30 + 1
			require.LessOrEqual(t, float64(sum), bound, "jobs %d..%d settled %d over %.0f ms", i, j, sum, w)
		}
	}
}

// TestSettleRealtime_CalendarResets: a calendar budget of 3 with a reset
// every 5 s dispatches 3 jobs, parks the rest, and releases the next 3 at
// the reset, within 50 ms of it (server dispatch times); never more than 3
// in a period.
func TestSettleRealtime_CalendarResets(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b := tb.budPut(t, "quota", `{"allocation":3,"strategy":{"type":"calendar","reset":"*/5 * * * * *"}}`)
	require.Equal(t, api.Strategy{Type: "calendar", Reset: "*/5 * * * * *", Timezone: "UTC"}, b.Strategy)
	const n = 8
	tb.budJobs(t, n, "q", `[{"key":"quota"}]`)
	f := budNewFleet(t, tb)
	f.worker("prefetch=0", func(fr budFrame) { f.spawn(func() { f.ack(fr.job.ID) }) })
	// 3 now, 3 at the next reset, 2 at the one after: at most 15 s.
	frames := f.wait(n, 20*time.Second)

	periods := map[int64][]int64{}
	for _, fr := range frames {
		at := fr.dispatchedAt()
		periods[at/5000] = append(periods[at/5000], at)
	}
	var keys []int64
	for k, ats := range periods {
		require.LessOrEqual(t, len(ats), 3, "period %d dispatched %v", k, ats)
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	require.GreaterOrEqual(t, len(keys), 3, "8 jobs of a quota of 3 need three periods")
	// Every period after the first began with parked jobs: its first
	// dispatch is the reset's, within 50 ms of the period's start.
	for _, k := range keys[1:] {
		first := periods[k][0]
		for _, at := range periods[k] {
			first = min(first, at)
		}
		require.Less(t, first-k*5000, int64(50), "period %d's first dispatch %d ms after the reset", k, first-k*5000)
	}
	st := tb.budState(t, "quota")
	require.NotNil(t, st.Used)
	require.NotNil(t, st.NextResetAt)
	require.Equal(t, int64(0), *st.NextResetAt%5000, "resets on the 5 s")
}

// TestSettleRealtime_CalendarSettle: a calendar budget's settles change
// what it spent this period; a debt lasts until the reset.
func TestSettleRealtime_CalendarSettle(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budPut(t, "daily", `{"allocation":100,"strategy":{"type":"calendar","reset":"0 0 * * *","timezone":"Europe/Paris"}}`)
	a := tb.budJob(t, "q", `[{"key":"daily","cost":50}]`)
	b := tb.budJob(t, "q", `[{"key":"daily","cost":50}]`)
	ts := tb.take(t, "prefetch=0")
	require.Equal(t, a.ID, ts.next(t, budArrives).ID)
	require.Equal(t, b.ID, ts.next(t, budArrives).ID)
	require.Equal(t, http.StatusNoContent, tb.req(t, "POST", "/jobs/"+a.ID+"/success", settleBody("daily", 10)).status)
	st := tb.budState(t, "daily")
	require.Equal(t, int64(60), *st.Used)
	require.Equal(t, 40.0, st.Available)
	// A failure settles too, here above the estimate: 60 − 50 + 120.
	r := tb.req(t, "POST", "/jobs/"+b.ID+"/failure", `{"message":"boom","kill":true,"budgets":[{"key":"daily","cost":120}]}`)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	st = tb.budState(t, "daily")
	require.Equal(t, int64(130), *st.Used)
	require.Equal(t, -30.0, st.Available)
	require.Equal(t, 30.0, *st.Debt)
	require.Equal(t, *st.NextResetAt, *st.RepaidAt, "a calendar debt lasts until the reset")
	loc, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	reset := time.UnixMilli(*st.NextResetAt).In(loc)
	require.Equal(t, [3]int{0, 0, 0}, [3]int{reset.Hour(), reset.Minute(), reset.Second()}, "midnight in Paris: %v", reset)
	require.True(t, reset.After(time.Now()))
	require.Less(t, time.Until(reset), 25*time.Hour)
}
