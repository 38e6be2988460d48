package server_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
)

// Real-time dispatch over real take streams. Dispatch is asserted from what
// the workers observe (frames with their arrival time, the jobs they hold);
// the live figures (?state=true, /stats, /why) are checked against that
// observation, never trusted on their own. No assertion is about speed:
// deadlines for "arrives" are generous, and time bounds are lower bounds
// derived from the budgets' arithmetic.

// budArrives is the deadline for a frame that must arrive: long enough for a
// loaded 2-core machine under -race, and far below anything the budgets
// under test would impose if the job were (wrongly) held back.
const budArrives = 5 * time.Second

// budFrame is one job frame as a worker received it.
type budFrame struct {
	at     time.Time // arrival, read right after the frame came off the stream
	worker int
	job    api.Job
}

// dispatchedAt is the server's dispatch time that the frame reports.
func (f budFrame) dispatchedAt() int64 { return int64(f.job.DequeuedAt) }

// budFleet runs workers over real take streams. Each worker reads its
// stream in its own goroutine and calls its handler for every job frame;
// handlers may start goroutines with spawn (simulated work, acks). Errors in
// those goroutines are reported with t.Errorf; the fleet stops (streams
// closed, goroutines joined) before the server does.
type budFleet struct {
	t       *testing.T
	tb      *testBundle
	wg      sync.WaitGroup
	arrived chan budFrame
	streams []*takeStream
	stopped atomic.Bool
}

func budNewFleet(t *testing.T, tb *testBundle) *budFleet {
	f := &budFleet{t: t, tb: tb, arrived: make(chan budFrame, 4096)}
	t.Cleanup(f.stop)
	return f
}

// worker opens a take stream with the query and serves it with handle.
func (f *budFleet) worker(query string, handle func(budFrame)) int {
	ts := f.tb.take(f.t, query)
	// The stream's own cleanup (registered by take) closes it, which
	// requeues what it holds: the fleet must count as stopped before that,
	// or an ack still on its way at the end of a test reports a 404.
	// Cleanups run last first, so this one runs before the stream's.
	f.t.Cleanup(func() { f.stopped.Store(true) })
	n := len(f.streams)
	f.streams = append(f.streams, ts)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for raw := range ts.frames {
			at := time.Now()
			if len(raw) == 0 {
				continue // heartbeat
			}
			var j api.Job
			if err := api.Unmarshal(api.JSON, raw, &j); err != nil {
				f.errorf("worker %d: frame %q: %v", n, raw, err)
				continue
			}
			fr := budFrame{at: at, worker: n, job: j}
			if handle != nil {
				handle(fr)
			}
			f.arrived <- fr
		}
	}()
	return n
}

// spawn runs fn in a goroutine the fleet waits for.
func (f *budFleet) spawn(fn func()) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		fn()
	}()
}

func (f *budFleet) errorf(format string, args ...any) {
	if !f.stopped.Load() {
		f.t.Errorf(format, args...)
	}
}

// post sends a request from a worker goroutine (no require: it must not
// stop the test from another goroutine) and checks the status.
func (f *budFleet) post(path, body string, want int) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	resp, err := f.tb.h1.Post(f.tb.url+path, "application/json", rd)
	if err != nil {
		f.errorf("POST %s: %v", path, err)
		return
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		f.errorf("POST %s: status %d, want %d: %s", path, resp.StatusCode, want, data)
	}
}

// ack acknowledges a job with POST /jobs/{id}/success.
func (f *budFleet) ack(id string) { f.post("/jobs/"+id+"/success", "", http.StatusNoContent) }

// ackBulk acknowledges jobs with POST /jobs/success.
func (f *budFleet) ackBulk(ids ...string) {
	f.post("/jobs/success", `{"ids":["`+strings.Join(ids, `","`)+`"]}`, http.StatusNoContent)
}

// wait returns the next n frames (across workers), failing after d.
func (f *budFleet) wait(n int, d time.Duration) []budFrame {
	f.t.Helper()
	deadline := time.After(d)
	out := make([]budFrame, 0, n)
	for len(out) < n {
		select {
		case fr := <-f.arrived:
			out = append(out, fr)
		case <-deadline:
			f.t.Fatalf("%d of %d frames within %s", len(out), n, d)
		}
	}
	return out
}

// none asserts that no frame arrives within d.
func (f *budFleet) none(d time.Duration) {
	f.t.Helper()
	select {
	case fr := <-f.arrived:
		f.t.Fatalf("unexpected frame: job %s", fr.job.ID)
	case <-time.After(d):
	}
}

func (f *budFleet) stop() {
	f.stopped.Store(true)
	for _, ts := range f.streams {
		ts.close()
	}
	f.wg.Wait()
}

// budHeld tracks what the workers hold: the cost of the jobs received and
// not yet acknowledged, as the workers see it. A job counts from the moment
// its frame arrives until right before its ack is sent, so what the workers
// hold never exceeds what the server considers in flight: any excess seen
// here is an over-dispatch, with no tolerance needed.
type budHeld struct {
	mu   sync.Mutex
	cur  int64
	peak int64
}

func (h *budHeld) add(c int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cur += c
	h.peak = max(h.peak, h.cur)
}

func (h *budHeld) sub(c int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cur -= c
}

func (h *budHeld) get() (cur, peak int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur, h.peak
}

// costOf returns the job's cost on a budget (0 if unbound).
func costOf(j api.Job, key string) int64 {
	for _, b := range j.Budgets {
		if b.Key == key {
			return b.Cost
		}
	}
	return 0
}

// budRunWhileInFlight runs 4 workers (prefetch 2) over the jobs, each job
// "working" 50 ms in its own goroutine and then acked, and returns what the
// workers held at most.
func budRunWhileInFlight(t *testing.T, allocation int64, costs []int64, bulkAck bool) int64 {
	tb := setup(t)
	tb.budPut(t, "wif", fmt.Sprintf(`{"allocation":%d,"strategy":{"type":"while_in_flight"}}`, allocation))
	f := budNewFleet(t, tb)
	var held budHeld
	for range 4 {
		f.worker("prefetch=2", func(fr budFrame) {
			c := costOf(fr.job, "wif")
			held.add(c)
			f.spawn(func() {
				time.Sleep(50 * time.Millisecond)
				held.sub(c) // before the ack is sent: see budHeld
				if bulkAck {
					f.ackBulk(fr.job.ID)
				} else {
					f.ack(fr.job.ID)
				}
			})
		})
	}
	items := make([]string, len(costs))
	for i, c := range costs {
		items[i] = fmt.Sprintf(`{"type":"t","queue":"q","payload":{"i":%d},"budgets":[{"key":"wif","cost":%d}]}`, i, c)
	}
	r := tb.req(t, "POST", "/jobs/bulk", `{"jobs":[`+strings.Join(items, ",")+`]}`)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)

	frames := f.wait(len(costs), 20*time.Second)
	seen := map[string]bool{}
	for _, fr := range frames {
		require.False(t, seen[fr.job.ID], "job %s dispatched twice", fr.job.ID)
		seen[fr.job.ID] = true
	}
	// The peak is taken under the same lock as every change: it is the
	// most the workers held at any moment.
	_, peak := held.get()
	require.LessOrEqual(t, peak, allocation, "the workers held more than the allocation")
	// Every job acked: nothing left anywhere.
	// (The handlers ack after their frame was counted: wait for the acks.)
	for deadline := time.Now().Add(10 * time.Second); tb.budCount(t, "") > 0; time.Sleep(10 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "jobs left unacknowledged")
	}
	st := tb.budState(t, "wif")
	require.Equal(t, api.BudgetState{Available: float64(allocation), Capacity: allocation, Dispatched: int64(len(costs))}, st)
	return peak
}

// TestBudgetsRealtime_WhileInFlight: allocation 3, 4 workers with prefetch
// 2 (8 slots), 30 jobs of ~50 ms: never more than 3 held at any moment,
// and 3 reached.
func TestBudgetsRealtime_WhileInFlight(t *testing.T) {
	t.Parallel()
	costs := make([]int64, 30)
	for i := range costs {
		costs[i] = 1
	}
	peak := budRunWhileInFlight(t, 3, costs, false)
	require.Equal(t, int64(3), peak, "the workers never held the whole allocation at once")
}

// TestBudgetsRealtime_WhileInFlightCosts: allocation 5 with jobs of cost 2
// and 1 mixed: the cost held is never above 5. Acks use the bulk form.
func TestBudgetsRealtime_WhileInFlightCosts(t *testing.T) {
	t.Parallel()
	costs := make([]int64, 24)
	for i := range costs {
		costs[i] = int64(1 + i%2)
	}
	peak := budRunWhileInFlight(t, 5, costs, true)
	require.Greater(t, peak, int64(2), "jobs never ran side by side")
}

// budMaxOver returns the largest excess, over all windows [i, j] of the
// sorted times (ms), of the count j−i+1 above limit(W) = capacity +
// perSec·W/1000 + slack. ≤ 0 means the bound holds everywhere.
func budMaxOver(ms []float64, capacity, perSec, slack float64) (excess float64, where string) {
	excess = -1e9
	for i := range ms {
		for j := i; j < len(ms); j++ {
			w := ms[j] - ms[i]
			if e := float64(j-i+1) - (capacity + perSec*w/1000 + slack); e > excess {
				excess, where = e, fmt.Sprintf("frames %d..%d over %.1f ms", i, j, w)
			}
		}
	}
	return excess, where
}

// budPacedRun enqueues n jobs on a fresh time_based budget, then connects
// one worker that acks every job at once, and returns the frames in
// arrival order and the moment the worker started.
func budPacedRun(t *testing.T, budget string, n int) ([]budFrame, time.Time) {
	tb := setup(t)
	tb.budPut(t, "rate", budget)
	tb.budJobs(t, n, "q", `[{"key":"rate"}]`)
	f := budNewFleet(t, tb)
	start := time.Now()
	f.worker("prefetch=0", func(fr budFrame) { f.spawn(func() { f.ack(fr.job.ID) }) })
	frames := f.wait(n, 20*time.Second)
	f.none(50 * time.Millisecond)
	return frames, start
}

// budLagSpread returns how much the delivery lag (arrival − dispatch) varied
// across frames, in ms. Dispatch times are truncated to the millisecond, so
// each lag reads up to 1 ms long: the spread is overstated by at most 1 ms,
// which only widens the slack it is used for.
func budLagSpread(frames []budFrame) float64 {
	lo, hi := 1e18, -1e18
	for _, fr := range frames {
		lag := float64(fr.at.UnixNano())/1e6 - float64(fr.dispatchedAt())
		lo, hi = min(lo, lag), max(hi, lag)
	}
	return hi - lo
}

// TestBudgetsRealtime_TimeBasedPacing: allocation 10 per 1000 ms with the
// default burst (capacity 10), 40 jobs, one worker acking at once.
func TestBudgetsRealtime_TimeBasedPacing(t *testing.T) {
	t.Parallel()
	frames, start := budPacedRun(t, `{"allocation":10,"strategy":{"type":"time_based","duration_ms":1000}}`, 40)

	// Server dispatch times, as each frame reports them (dequeued_at).
	dispatched := make([]float64, len(frames))
	for i, fr := range frames {
		dispatched[i] = float64(fr.dispatchedAt())
	}
	sort.Float64s(dispatched)
	// Over every window W: count ≤ 10 + 10·W/1s + 1. The +1 absorbs
	// clock-read skew: dequeued_at is truncated to the millisecond, so a
	// window reads up to 1 ms short (0.01 token at this rate); the rest of
	// the +1 is margin for small wall-clock adjustments. No other
	// tolerance: the pool's arithmetic is exact.
	excess, where := budMaxOver(dispatched, 10, 10, 1)
	require.LessOrEqual(t, excess, 0.0, "dispatch times over the rate limit: %s", where)

	// The same bound over arrival times. A frame reaches the worker some
	// lag after its dispatch; if that lag varies (a scheduling stall of the
	// server or test process delays some frames more than others), a window
	// of arrivals can look shorter than the window of dispatches by up to
	// the lag spread. The spread is measured, not guessed, so the check
	// widens exactly by what delivery could have compressed, and is as
	// strict as the dispatch check when delivery is steady.
	arrived := make([]float64, len(frames))
	for i, fr := range frames {
		arrived[i] = float64(fr.at.UnixNano()) / 1e6
	}
	spread := budLagSpread(frames)
	excess, where = budMaxOver(arrived, 10, 10, 1+10*spread/1000)
	require.LessOrEqual(t, excess, 0.0, "arrivals over the rate limit: %s (lag spread %.1f ms)", where, spread)

	// The burst: the full pool (10) goes at once, in one dispatch, before any
	// refill could pay for an 11th…
	require.Less(t, dispatched[9]-dispatched[0], 100.0, "the first 10 were not dispatched at once: %v", dispatched[:10])
	// …and after it every further job needs 100 ms of refill: the (10+k)-th
	// dispatch is at least k·100 ms after the first (−1 ms of truncation).
	for k := 1; k <= 30; k++ {
		require.GreaterOrEqual(t, dispatched[9+k]-dispatched[0], float64(k*100-1), "dispatch %d came early: %v", 10+k, dispatched)
	}
	// 30 jobs beyond the burst need 3 s of refill, counted from the first
	// dispatch, which is not before the worker connected: a lower bound from
	// the setup, not a speed assertion (0.1 s absorbs clock adjustments).
	last := frames[len(frames)-1].at
	require.GreaterOrEqual(t, last.Sub(start), 2900*time.Millisecond)
}

// TestBudgetsRealtime_TimeBasedStrict: burst 1 enforces the pace always:
// no two dispatches closer than 100 ms.
func TestBudgetsRealtime_TimeBasedStrict(t *testing.T) {
	t.Parallel()
	const n = 12
	frames, start := budPacedRun(t, `{"allocation":10,"strategy":{"type":"time_based","duration_ms":1000,"burst":1}}`, n)

	dispatched := make([]float64, n)
	for i, fr := range frames {
		dispatched[i] = float64(fr.dispatchedAt())
	}
	sort.Float64s(dispatched)
	// Exactly 100 ms of refill between two dispatches; dequeued_at is
	// truncated to the millisecond, hence 99.
	for i := 1; i < n; i++ {
		require.GreaterOrEqual(t, dispatched[i]-dispatched[i-1], 99.0, "dispatches %d and %d too close: %v", i-1, i, dispatched)
	}
	// Arrivals: the same, less what varying delivery lag can take off a gap
	// (measured, see budLagSpread) and 1 ms of truncation.
	spread := budLagSpread(frames)
	for i := 1; i < n; i++ {
		gap := frames[i].at.Sub(frames[i-1].at)
		require.GreaterOrEqual(t, float64(gap)/1e6, 99.0-spread, "arrivals %d and %d too close (lag spread %.1f ms)", i-1, i, spread)
	}
	// 11 jobs after the first need 1.1 s of refill.
	require.GreaterOrEqual(t, frames[n-1].at.Sub(start), 1090*time.Millisecond)
}

// budMultiFixture: budgets "conc" (while_in_flight 2) and "rate" (time_based,
// generous) and three jobs bound to both; one worker holds the first two,
// the third is parked on "conc".
func budMultiFixture(t *testing.T) (*testBundle, *takeStream, []api.Job) {
	tb := setup(t)
	tb.budPut(t, "conc", `{"allocation":2,"strategy":{"type":"while_in_flight"}}`)
	tb.budPut(t, "rate", `{"allocation":1000,"strategy":{"type":"time_based","duration_ms":1000}}`)
	jobs := tb.budJobs(t, 3, "q", `[{"key":"conc"},{"key":"rate"}]`)
	ts := tb.take(t, "prefetch=0")
	require.Equal(t, jobs[0].ID, ts.next(t, budArrives).ID)
	require.Equal(t, jobs[1].ID, ts.next(t, budArrives).ID)
	ts.none(t, 200*time.Millisecond)

	st := tb.budState(t, "conc")
	require.Equal(t, int64(2), st.Held)
	require.Equal(t, int64(2), st.InFlight)
	require.Equal(t, int64(1), st.Parked)
	w := tb.budWhy(t, jobs[2].ID)
	require.Equal(t, "budget", w.WaitingFor)
	require.Len(t, w.Budgets, 1, "only the refusing budget is listed")
	require.Equal(t, "conc", w.Budgets[0].Key)
	return tb, ts, jobs
}

// TestBudgetsRealtime_Release: a job bound to a while_in_flight and a
// time_based budget releases its while_in_flight tokens whatever ends its
// in-flight state; the parked job then dispatches.
func TestBudgetsRealtime_Release(t *testing.T) {
	t.Parallel()

	t.Run("Ack", func(t *testing.T) {
		t.Parallel()
		tb, ts, jobs := budMultiFixture(t)
		require.Equal(t, http.StatusNoContent, tb.req(t, "POST", "/jobs/"+jobs[0].ID+"/success", nil).status)
		require.Equal(t, jobs[2].ID, ts.next(t, budArrives).ID)
		st := tb.budState(t, "conc")
		require.Equal(t, int64(2), st.Held)
		require.Zero(t, st.Parked)
		require.Equal(t, int64(3), st.Dispatched)
		require.Equal(t, int64(3), tb.budState(t, "rate").Dispatched)
	})

	t.Run("Failure", func(t *testing.T) {
		t.Parallel()
		tb, ts, jobs := budMultiFixture(t)
		r := tb.req(t, "POST", "/jobs/"+jobs[0].ID+"/failure", `{"message":"boom"}`)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		var j api.Job
		r.json(t, &j)
		require.Equal(t, "scheduled", j.Status)
		require.Equal(t, []api.Binding{{Key: "conc", Cost: 1}, {Key: "rate", Cost: 1}}, j.Budgets)
		require.Equal(t, jobs[2].ID, ts.next(t, budArrives).ID)
		require.Equal(t, int64(2), tb.budState(t, "conc").Held)

		// A job killed outright releases too.
		r = tb.req(t, "POST", "/jobs/"+jobs[1].ID+"/failure", `{"message":"boom","kill":true}`)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		require.Equal(t, int64(1), tb.budState(t, "conc").Held)
	})

	t.Run("Disconnect", func(t *testing.T) {
		t.Parallel()
		tb, a, jobs := budMultiFixture(t)
		b := tb.take(t, "prefetch=0")
		b.none(t, 200*time.Millisecond) // "conc" is exhausted
		a.close()
		// The next worker gets the jobs the first one held, in order; the
		// parked job stays parked behind them.
		got := []string{b.next(t, budArrives).ID, b.next(t, budArrives).ID}
		require.Equal(t, []string{jobs[0].ID, jobs[1].ID}, got)
		b.none(t, 200*time.Millisecond)
		st := tb.budState(t, "conc")
		require.Equal(t, int64(2), st.Held, "the held count returns to what worker b holds")
		require.Equal(t, int64(2), st.InFlight)
		require.Equal(t, int64(1), st.Parked)
		require.Equal(t, int64(4), st.Dispatched)
		// time_based debits are not refunded: redispatch debits again.
		require.Equal(t, int64(4), tb.budState(t, "rate").Dispatched)
		for _, id := range got {
			r := tb.req(t, "GET", "/jobs/"+id, nil)
			var j api.Job
			r.json(t, &j)
			require.Equal(t, "in_flight", j.Status)
			require.Zero(t, j.Attempts, "a requeue is no attempt")
		}
	})

	t.Run("Delete", func(t *testing.T) {
		t.Parallel()
		tb, ts, jobs := budMultiFixture(t)
		require.Equal(t, http.StatusNoContent, tb.req(t, "DELETE", "/jobs/"+jobs[0].ID, nil).status)
		require.Equal(t, jobs[2].ID, ts.next(t, budArrives).ID)
		require.Equal(t, int64(2), tb.budState(t, "conc").Held)
		// The late ack of the deleted job releases nothing more.
		r := tb.req(t, "POST", "/jobs/"+jobs[0].ID+"/success", nil)
		require.Equal(t, http.StatusNotFound, r.status)
		require.Equal(t, int64(2), tb.budState(t, "conc").Held)
	})

	t.Run("Reset", func(t *testing.T) {
		t.Parallel()
		tb, ts, _ := budMultiFixture(t)
		require.Equal(t, http.StatusNoContent, tb.req(t, "POST", "/reset", nil).status)
		budExact(t, tb.req(t, "GET", "/budgets", nil), http.StatusOK, `{"budgets":[]}`, 0)
		ts.none(t, 100*time.Millisecond)
		j := tb.budJob(t, "q", "")
		require.Equal(t, j.ID, ts.next(t, budArrives).ID, "the worker's slots were freed")
	})
}

// TestBudgetsRealtime_NoHeadOfLineBlocking: ten jobs parked on an exhausted
// budget (and at the highest priority) do not hold back an unbudgeted job
// or a job of another budget.
func TestBudgetsRealtime_NoHeadOfLineBlocking(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	// One token per hour: once spent, the parked jobs would hold a blocked
	// worker for an hour, so any deadline shorter than that tells the cases
	// apart; budArrives keeps it robust on a loaded machine.
	tb.budPut(t, "slow", `{"allocation":1,"strategy":{"type":"time_based","duration_ms":3600000}}`)
	tb.budPut(t, "other", `{"allocation":5,"strategy":{"type":"while_in_flight"}}`)
	ts := tb.take(t, "prefetch=0&queue=q")
	first := tb.budJob(t, "q", `[{"key":"slow"}]`)
	require.Equal(t, first.ID, ts.next(t, budArrives).ID)

	for range 10 {
		tb.enqueue(t, `{"type":"t","queue":"q","payload":{},"priority":0,"budgets":[{"key":"slow"}]}`)
	}
	require.Equal(t, int64(10), tb.budStats(t).Jobs.Parked)

	free := tb.budJob(t, "q", "")
	require.Equal(t, free.ID, ts.next(t, budArrives).ID)
	other := tb.budJob(t, "q", `[{"key":"other"}]`)
	require.Equal(t, other.ID, ts.next(t, budArrives).ID)
	// And a second worker on another queue is not held up either.
	ts2 := tb.take(t, "prefetch=1&queue=elsewhere")
	e := tb.budJob(t, "elsewhere", "")
	require.Equal(t, e.ID, ts2.next(t, budArrives).ID)
	ts.none(t, 100*time.Millisecond)
	require.Equal(t, int64(10), tb.budState(t, "slow").Parked)
}

// TestBudgetsRealtime_LiveState compares the live state with what the
// worker observes.
func TestBudgetsRealtime_LiveState(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budPut(t, "wif", `{"allocation":3,"strategy":{"type":"while_in_flight"}}`)
	jobs := tb.budJobs(t, 10, "q", `[{"key":"wif"}]`)

	// No worker: all ten wait for one, in no line, reserving nothing.
	s := tb.budStats(t)
	require.Equal(t, api.JobCounts{Ready: 10}, s.Jobs)
	st := tb.budState(t, "wif")
	require.Zero(t, st.Parked)
	require.Zero(t, st.Held)
	require.Zero(t, st.InFlight)
	w := tb.budWhy(t, jobs[9].ID)
	require.Equal(t, "worker", w.WaitingFor)
	require.Equal(t, "no worker serves queue q", w.Reason)

	// A worker that holds without acking.
	ts := tb.take(t, "prefetch=0")
	var held []api.Job
	for range 3 {
		held = append(held, ts.next(t, budArrives))
	}
	ts.none(t, 200*time.Millisecond)
	st = tb.budState(t, "wif")
	require.Equal(t, int64(len(held)), st.Held, "held equals what the worker holds")
	require.Equal(t, int64(len(held)), st.InFlight)
	require.Equal(t, int64(7), st.Parked)
	require.Zero(t, st.Available)
	require.Equal(t, api.JobCounts{Parked: 7, InFlight: 3}, tb.budStats(t).Jobs)
	require.Equal(t, []string{jobs[0].ID, jobs[1].ID, jobs[2].ID}, []string{held[0].ID, held[1].ID, held[2].ID})
	w = tb.budWhy(t, jobs[9].ID)
	require.Equal(t, "budget", w.WaitingFor)
	require.Equal(t, int64(6), w.Budgets[0].Ahead)
	require.Nil(t, w.Budgets[0].AffordableAt, "a while_in_flight line waits on releases")

	// Ack one: the worker gets one more, one fewer is parked.
	require.Equal(t, http.StatusNoContent, tb.req(t, "POST", "/jobs/"+held[0].ID+"/success", nil).status)
	held = append(held[1:], ts.next(t, budArrives))
	require.Equal(t, jobs[3].ID, held[2].ID)
	ts.none(t, 200*time.Millisecond)
	st = tb.budState(t, "wif")
	require.Equal(t, int64(len(held)), st.Held)
	require.Equal(t, int64(6), st.Parked)
	require.Equal(t, int64(4), st.Dispatched)
	require.Equal(t, api.JobCounts{Parked: 6, InFlight: 3}, tb.budStats(t).Jobs)
}

// TestBudgetsRealtime_Restart: budgets and bindings survive a restart; a
// time_based pool restarts full; in-flight jobs come back ready and a
// while_in_flight budget holds nothing, so exactly N run again at once.
func TestBudgetsRealtime_Restart(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budPut(t, "conc", `{"allocation":2,"strategy":{"type":"while_in_flight"}}`)
	tb.budPut(t, "rate", `{"allocation":3,"strategy":{"type":"time_based","duration_ms":3600000,"burst":2}}`)
	budgets := tb.req(t, "GET", "/budgets", nil).body

	concJobs := tb.budJobs(t, 5, "c", `[{"key":"conc","cost":1}]`)
	rateJobs := tb.budJobs(t, 4, "r", `[{"key":"rate"}]`)
	// The "c" worker holds two without acking; the "r" worker takes and
	// acks the burst (2), which empties the pool for the next hour.
	tc := tb.take(t, "prefetch=0&queue=c")
	held := []string{tc.next(t, budArrives).ID, tc.next(t, budArrives).ID}
	require.Equal(t, []string{concJobs[0].ID, concJobs[1].ID}, held)
	tr := tb.take(t, "prefetch=0&queue=r")
	for i := range 2 {
		j := tr.next(t, budArrives)
		require.Equal(t, rateJobs[i].ID, j.ID)
		require.Equal(t, http.StatusNoContent, tb.req(t, "POST", "/jobs/"+j.ID+"/success", nil).status)
	}
	tr.none(t, 200*time.Millisecond)
	require.InDelta(t, 0, tb.budState(t, "rate").Available, 0.01)
	require.Equal(t, int64(2), tb.budState(t, "rate").Parked)
	require.Equal(t, int64(2), tb.budState(t, "conc").Held)

	tb.stop()
	tb = setupIn(t, tb.dir)

	// Budgets survive byte for byte; bindings survive on every job.
	require.Equal(t, string(budgets), string(tb.req(t, "GET", "/budgets", nil).body))
	for _, j := range concJobs {
		var got api.Job
		tb.req(t, "GET", "/jobs/"+j.ID, nil).json(t, &got)
		require.Equal(t, "ready", got.Status, "in-flight jobs come back ready")
		require.Equal(t, []api.Binding{{Key: "conc", Cost: 1}}, got.Budgets)
	}
	for _, j := range rateJobs[2:] {
		var got api.Job
		tb.req(t, "GET", "/jobs/"+j.ID, nil).json(t, &got)
		require.Equal(t, []api.Binding{{Key: "rate", Cost: 1}}, got.Budgets)
	}
	st := tb.budState(t, "conc")
	require.Zero(t, st.Held, "while_in_flight holds nothing after a restart")
	require.Zero(t, st.InFlight)
	require.Equal(t, 2.0, tb.budState(t, "rate").Available, "a time_based pool restarts full")

	// Exactly N (2) of the while_in_flight jobs run again at once, the two
	// that were in flight first.
	tc = tb.take(t, "prefetch=0&queue=c")
	again := []string{tc.next(t, budArrives).ID, tc.next(t, budArrives).ID}
	require.Equal(t, held, again)
	tc.none(t, 300*time.Millisecond)
	require.Equal(t, int64(2), tb.budState(t, "conc").Held)
	require.Equal(t, int64(3), tb.budState(t, "conc").Parked)

	// The full pool pays the two parked time_based jobs at once.
	tr = tb.take(t, "prefetch=0&queue=r")
	require.Equal(t, rateJobs[2].ID, tr.next(t, budArrives).ID)
	require.Equal(t, rateJobs[3].ID, tr.next(t, budArrives).ID)
	// And the budgets work as before: an ack lets the next one go.
	require.Equal(t, http.StatusNoContent, tb.req(t, "POST", "/jobs/"+again[0]+"/success", nil).status)
	require.Equal(t, concJobs[2].ID, tc.next(t, budArrives).ID)
}

// TestBudgetsRealtime_Reconfigure: a budget changed under load keeps what
// its in-flight jobs hold, and its line is looked at again at once.
func TestBudgetsRealtime_Reconfigure(t *testing.T) {
	t.Parallel()

	t.Run("TypeChangeKeepsHeld", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.budPut(t, "k", `{"allocation":10,"strategy":{"type":"time_based","duration_ms":1000}}`)
		ts := tb.take(t, "prefetch=0")
		jobs := tb.budJobs(t, 2, "q", `[{"key":"k"}]`)
		held := []string{ts.next(t, budArrives).ID, ts.next(t, budArrives).ID}
		require.Equal(t, []string{jobs[0].ID, jobs[1].ID}, held)

		// To while_in_flight 2: the two in-flight jobs hold all of it.
		r := tb.req(t, "PATCH", "/budgets/k", `{"allocation":2,"strategy":{"type":"while_in_flight"}}`)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		st := tb.budState(t, "k")
		require.Equal(t, int64(2), st.Held)
		require.Zero(t, st.Available)
		third := tb.budJob(t, "q", `[{"key":"k"}]`)
		ts.none(t, 200*time.Millisecond)
		require.Equal(t, http.StatusNoContent, tb.req(t, "POST", "/jobs/"+held[0]+"/success", nil).status)
		require.Equal(t, third.ID, ts.next(t, budArrives).ID)
		require.Equal(t, int64(2), tb.budState(t, "k").Held)

		// Back to time_based (starts full), release everything there, then
		// to while_in_flight again: nothing is held any more.
		r = tb.req(t, "PATCH", "/budgets/k", `{"strategy":{"type":"time_based","duration_ms":1000}}`)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		require.Equal(t, 2.0, tb.budState(t, "k").Available)
		r = tb.req(t, "POST", "/jobs/success", `{"ids":["`+held[1]+`","`+third.ID+`"]}`)
		require.Equal(t, http.StatusNoContent, r.status, "body: %s", r.body)
		r = tb.req(t, "PATCH", "/budgets/k", `{"strategy":{"type":"while_in_flight"}}`)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		require.Equal(t, api.BudgetState{Available: 2, Capacity: 2, Dispatched: 3}, tb.budState(t, "k"))
		more := tb.budJobs(t, 3, "q", `[{"key":"k"}]`)
		require.Equal(t, more[0].ID, ts.next(t, budArrives).ID)
		require.Equal(t, more[1].ID, ts.next(t, budArrives).ID)
		ts.none(t, 200*time.Millisecond)
	})

	t.Run("AllocationBelowUsage", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.budPut(t, "k", `{"allocation":3,"strategy":{"type":"while_in_flight"}}`)
		ts := tb.take(t, "prefetch=0")
		jobs := tb.budJobs(t, 7, "q", `[{"key":"k"}]`)
		var held []string
		for range 3 {
			held = append(held, ts.next(t, budArrives).ID)
		}
		// Lowering the allocation below what is held is allowed: dispatch
		// pauses until usage drains below it.
		require.Equal(t, http.StatusOK, tb.req(t, "PATCH", "/budgets/k", `{"allocation":1}`).status)
		for _, id := range held[:2] {
			require.Equal(t, http.StatusNoContent, tb.req(t, "POST", "/jobs/"+id+"/success", nil).status)
		}
		ts.none(t, 200*time.Millisecond)
		require.Equal(t, int64(1), tb.budState(t, "k").Held)
		require.Equal(t, http.StatusNoContent, tb.req(t, "POST", "/jobs/"+held[2]+"/success", nil).status)
		require.Equal(t, jobs[3].ID, ts.next(t, budArrives).ID)
		ts.none(t, 200*time.Millisecond)
		// Raising it lets parked jobs go at once.
		require.Equal(t, http.StatusOK, tb.req(t, "PUT", "/budgets/k", `{"allocation":3,"strategy":{"type":"while_in_flight"}}`).status)
		require.Equal(t, jobs[4].ID, ts.next(t, budArrives).ID)
		require.Equal(t, jobs[5].ID, ts.next(t, budArrives).ID)
		ts.none(t, 200*time.Millisecond)
		require.Equal(t, int64(1), tb.budState(t, "k").Parked)
	})

	t.Run("TimeBasedKeepsLevel", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.budPut(t, "k", `{"allocation":2,"strategy":{"type":"time_based","duration_ms":3600000}}`)
		ts := tb.take(t, "prefetch=0")
		jobs := tb.budJobs(t, 3, "q", `[{"key":"k"}]`)
		ts.next(t, budArrives)
		ts.next(t, budArrives)
		// A larger capacity is not a refill: the level in tokens is kept.
		require.Equal(t, http.StatusOK, tb.req(t, "PATCH", "/budgets/k", `{"allocation":4}`).status)
		ts.none(t, 200*time.Millisecond)
		st := tb.budState(t, "k")
		require.InDelta(t, 0, st.Available, 0.01)
		require.Equal(t, int64(4), st.Capacity)
		require.Equal(t, int64(1), st.Parked)
		// The new rate applies from now: 4 tokens per ms pays at once.
		require.Equal(t, http.StatusOK, tb.req(t, "PATCH", "/budgets/k", `{"strategy":{"duration_ms":1}}`).status)
		require.Equal(t, jobs[2].ID, ts.next(t, budArrives).ID)
	})
}

// TestBudgetsRealtime_Reservation: the head of a budget's line reserves it
// against later jobs while a connected taker serves the head's queue (no
// starvation of expensive jobs), and reserves nothing otherwise.
func TestBudgetsRealtime_Reservation(t *testing.T) {
	t.Parallel()

	t.Run("ServedHeadReserves", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.budPut(t, "w", `{"allocation":3,"strategy":{"type":"while_in_flight"}}`)
		ts := tb.take(t, "prefetch=0")
		small := tb.budJob(t, "q", `[{"key":"w"}]`)
		require.Equal(t, small.ID, ts.next(t, budArrives).ID)
		head := tb.budJob(t, "q", `[{"key":"w","cost":3}]`)
		later := tb.budJob(t, "q", `[{"key":"w"}]`)
		// Two tokens are free, but the head (cost 3) reserves them.
		ts.none(t, 200*time.Millisecond)
		w := tb.budWhy(t, later.ID)
		require.Equal(t, "budget", w.WaitingFor)
		require.Equal(t, int64(1), w.Budgets[0].Ahead)
		require.Equal(t, 2.0, w.Budgets[0].Available)

		require.Equal(t, http.StatusNoContent, tb.req(t, "POST", "/jobs/"+small.ID+"/success", nil).status)
		require.Equal(t, head.ID, ts.next(t, budArrives).ID)
		ts.none(t, 200*time.Millisecond)
		require.Equal(t, http.StatusNoContent, tb.req(t, "POST", "/jobs/"+head.ID+"/success", nil).status)
		require.Equal(t, later.ID, ts.next(t, budArrives).ID)
	})

	t.Run("UnservedHeadReservesNothing", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.budPut(t, "u", `{"allocation":2,"strategy":{"type":"while_in_flight"}}`)
		tbq := tb.take(t, "prefetch=0&queue=b")
		hold := tb.budJob(t, "b", `[{"key":"u"}]`)
		require.Equal(t, hold.ID, tbq.next(t, budArrives).ID)
		head := tb.budJob(t, "a", `[{"key":"u","cost":2}]`) // nobody serves "a"
		other := tb.budJob(t, "b", `[{"key":"u"}]`)
		require.Equal(t, other.ID, tbq.next(t, budArrives).ID)
		w := tb.budWhy(t, head.ID)
		require.Equal(t, "worker", w.WaitingFor, "a job of an unserved queue waits for a worker, in no line")
		require.Equal(t, "no worker serves queue a", w.Reason)

		// Once "a" is served the head reserves: releases go to it. (A take
		// stream answers its headers just before its taker is registered:
		// a probe job that only this stream can receive proves it is.)
		ta := tb.take(t, "prefetch=0&queue=a")
		probe := tb.budJob(t, "a", "")
		require.Equal(t, probe.ID, ta.next(t, budArrives).ID)
		require.Equal(t, http.StatusNoContent, tb.req(t, "POST", "/jobs/"+probe.ID+"/success", nil).status)
		late := tb.budJob(t, "b", `[{"key":"u"}]`)
		require.Equal(t, http.StatusNoContent, tb.req(t, "POST", "/jobs/"+hold.ID+"/success", nil).status)
		tbq.none(t, 200*time.Millisecond)
		require.Equal(t, http.StatusNoContent, tb.req(t, "POST", "/jobs/"+other.ID+"/success", nil).status)
		require.Equal(t, head.ID, ta.next(t, budArrives).ID)
		tbq.none(t, 200*time.Millisecond)
		require.Equal(t, http.StatusNoContent, tb.req(t, "POST", "/jobs/"+head.ID+"/success", nil).status)
		require.Equal(t, late.ID, tbq.next(t, budArrives).ID)
	})

	t.Run("WaitingForWorkerReservesNothing", func(t *testing.T) {
		t.Parallel()
		tb := setup(t)
		tb.budPut(t, "c", `{"allocation":1,"strategy":{"type":"while_in_flight"}}`)
		ta := tb.take(t, "prefetch=1&queue=a")
		busy := tb.budJob(t, "a", "")
		require.Equal(t, busy.ID, ta.next(t, budArrives).ID)
		// Affordable, but its worker is full: it waits for a worker and
		// reserves nothing (it never waited in a line)…
		j1 := tb.budJob(t, "a", `[{"key":"c"}]`)
		require.Equal(t, "worker", tb.budWhy(t, j1.ID).WaitingFor)
		// …so a job of another queue, whose worker has room, takes the token.
		tbq := tb.take(t, "prefetch=0&queue=b")
		j2 := tb.budJob(t, "b", `[{"key":"c"}]`)
		require.Equal(t, j2.ID, tbq.next(t, budArrives).ID)
		require.Equal(t, api.JobCounts{Parked: 1, InFlight: 2}, tb.budStats(t).Jobs, "j1 now waits in c's line")

		require.Equal(t, http.StatusNoContent, tb.req(t, "POST", "/jobs/"+busy.ID+"/success", nil).status)
		ta.none(t, 200*time.Millisecond)
		require.Equal(t, http.StatusNoContent, tb.req(t, "POST", "/jobs/"+j2.ID+"/success", nil).status)
		require.Equal(t, j1.ID, ta.next(t, budArrives).ID)
	})
}

// budRandWorker is a worker of the random workload: it tracks what it holds
// and can disconnect cleanly (no ack in progress, so that an ack can never
// complete a job that was requeued and handed to another worker).
type budRandWorker struct {
	mu     sync.Mutex
	closed bool
	held   map[string]api.Job
	acking sync.WaitGroup
	stream int
}

// TestBudgetsRealtime_RandomWorkload runs a random mix of budgets, costs,
// queues, prefetches, work times and disconnects over real take streams,
// and checks from the workers' side that no while_in_flight budget is ever
// over-spent, that the time_based budget keeps to its rate, and that every
// job completes (no starvation, no deadlock, no leaked token).
func TestBudgetsRealtime_RandomWorkload(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	var rngMu sync.Mutex
	randN := func(n int) int {
		rngMu.Lock()
		defer rngMu.Unlock()
		return rng.IntN(n)
	}

	tb := setup(t)
	wif := map[string]int64{"w1": 3, "w2": 2}
	tb.budPut(t, "w1", `{"allocation":3,"strategy":{"type":"while_in_flight"}}`)
	tb.budPut(t, "w2", `{"allocation":2,"strategy":{"type":"while_in_flight"}}`)
	tb.budPut(t, "t1", `{"allocation":50,"strategy":{"type":"time_based","duration_ms":1000,"burst":5}}`)

	var (
		mu     sync.Mutex
		held   = map[string]int64{}
		peak   = map[string]int64{}
		over   []string
		frames []budFrame
	)
	change := func(j api.Job, sign int64) {
		for _, b := range j.Budgets {
			if _, ok := wif[b.Key]; !ok {
				continue
			}
			held[b.Key] += sign * b.Cost
			peak[b.Key] = max(peak[b.Key], held[b.Key])
			if held[b.Key] > wif[b.Key] {
				over = append(over, fmt.Sprintf("%s held %d", b.Key, held[b.Key]))
			}
		}
	}

	f := budNewFleet(t, tb)
	start := func(query string) *budRandWorker {
		w := &budRandWorker{held: map[string]api.Job{}}
		w.stream = f.worker(query, func(fr budFrame) {
			mu.Lock()
			frames = append(frames, fr) // every dispatch, kept or not
			mu.Unlock()
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.closed {
				return // requeued by the disconnect
			}
			w.held[fr.job.ID] = fr.job
			mu.Lock()
			change(fr.job, +1)
			mu.Unlock()
			work := time.Duration(randN(30)) * time.Millisecond
			f.spawn(func() {
				time.Sleep(work)
				w.mu.Lock()
				j, ok := w.held[fr.job.ID]
				if w.closed || !ok {
					w.mu.Unlock()
					return
				}
				delete(w.held, fr.job.ID)
				mu.Lock()
				change(j, -1) // before the ack is sent
				mu.Unlock()
				w.acking.Add(1)
				w.mu.Unlock()
				f.ack(fr.job.ID)
				w.acking.Done()
			})
		})
		return w
	}
	disconnect := func(w *budRandWorker) {
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
		w.acking.Wait()
		w.mu.Lock()
		mu.Lock()
		for _, j := range w.held {
			change(j, -1) // before the server takes them back
		}
		mu.Unlock()
		w.held = nil
		w.mu.Unlock()
		f.streams[w.stream].close()
	}

	workers := []*budRandWorker{
		start(fmt.Sprintf("prefetch=%d", 1+randN(3))),
		start(fmt.Sprintf("prefetch=%d&queue=a", 1+randN(3))),
		start(fmt.Sprintf("prefetch=%d&queue=b,c", 1+randN(3))),
	}
	const n = 80
	items := make([]string, n)
	for i := range items {
		var binds []string
		for _, b := range []struct {
			key     string
			maxCost int
		}{{"w1", 3}, {"w2", 2}, {"t1", 3}} {
			if randN(2) == 0 {
				binds = append(binds, fmt.Sprintf(`{"key":"%s","cost":%d}`, b.key, 1+randN(b.maxCost)))
			}
		}
		items[i] = fmt.Sprintf(`{"type":"t","queue":"%s","priority":%d,"payload":{},"budgets":[%s]}`,
			[]string{"a", "b", "c"}[randN(3)], randN(3), strings.Join(binds, ","))
	}
	// Enqueued in a few bulks while the workers run; one worker leaves
	// midway and another joins.
	for i := 0; i < n; i += 20 {
		r := tb.req(t, "POST", "/jobs/bulk", `{"jobs":[`+strings.Join(items[i:i+20], ",")+`]}`)
		require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
		time.Sleep(time.Duration(randN(100)) * time.Millisecond)
		if i == 40 {
			disconnect(workers[randN(len(workers))])
			workers = append(workers, start("prefetch=2"))
		}
	}

	for deadline := time.Now().Add(30 * time.Second); tb.budCount(t, "") > 0; time.Sleep(20 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "jobs left: %d (stats %+v)", tb.budCount(t, ""), tb.budStats(t).Jobs)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, over, "a while_in_flight budget was over-spent")
	t.Logf("peaks %v, %d dispatches", peak, len(frames))

	// t1: dispatched cost over every window ≤ 5 + 50·W/1s + 1 (the +1 is
	// the millisecond truncation of dequeued_at, see the pacing test).
	var dispatched []float64
	for _, fr := range frames {
		for range costOf(fr.job, "t1") {
			dispatched = append(dispatched, float64(fr.dispatchedAt()))
		}
	}
	sort.Float64s(dispatched)
	excess, where := budMaxOver(dispatched, 5, 50, 1)
	require.LessOrEqual(t, excess, 0.0, "t1 over its rate: %s", where)

	for _, key := range []string{"w1", "w2", "t1"} {
		st := tb.budState(t, key)
		require.Zero(t, st.Held, key)
		require.Zero(t, st.InFlight, key)
		require.Zero(t, st.Parked, key)
	}
}

// TestBudgetsRealtime_UnservedParkedJobBecomesReady: a job of a queue no taker
// serves is in no line (docs/ENGINE.md §Served queues only): it waits for a
// worker whether or not its budget could pay it.
func TestBudgetsRealtime_UnservedParkedJobBecomesReady(t *testing.T) {
	t.Parallel()

	tb := setup(t)
	tb.budPut(t, "k", `{"allocation":1,"strategy":{"type":"while_in_flight"}}`)
	tsb := tb.take(t, "prefetch=0&queue=b")
	holder := tb.budJob(t, "b", `[{"key":"k"}]`)
	require.Equal(t, holder.ID, tsb.next(t, budArrives).ID)
	j := tb.budJob(t, "a", `[{"key":"k"}]`) // nobody serves "a"
	require.Equal(t, "worker", tb.budWhy(t, j.ID).WaitingFor)
	require.Equal(t, api.JobCounts{Ready: 1, InFlight: 1}, tb.budStats(t).Jobs, "nothing is parked")
	require.Equal(t, http.StatusNoContent, tb.req(t, "POST", "/jobs/"+holder.ID+"/success", nil).status)
	require.Equal(t, "worker", tb.budWhy(t, j.ID).WaitingFor)
	require.Equal(t, api.JobCounts{Ready: 1}, tb.budStats(t).Jobs)
}
