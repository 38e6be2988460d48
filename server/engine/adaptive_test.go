package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/server/clock"
	"github.com/zizq/zizq/server/jobid"
	"github.com/zizq/zizq/store"
)

// shareOracle is an independent model of a budget's effective share: the
// refusals as reported, each counted unless it comes within the window of
// the last one counted, each multiplying the share on the linear climb by
// the decrease (never below the floor), the climb starting at the refusal
// or the end of its retry_after.
type shareOracle struct {
	ad     store.Adaptive
	events []shareEvent // the counted refusals, in time order
}

type shareEvent struct {
	at, since, quietUntil int64 // ns
	share                 float64
}

func (o *shareOracle) refuse(at, retryNs int64) {
	if n := len(o.events); n > 0 {
		last := o.events[n-1]
		window := last.at + max(last.quietUntil-last.at, int64(time.Second))
		if at < window {
			return
		}
	}
	quiet := at + retryNs
	if n := len(o.events); n > 0 {
		quiet = max(quiet, o.events[n-1].quietUntil)
	}
	share := math.Max(o.ad.Floor, o.shareAt(at)*o.ad.Decrease)
	o.events = append(o.events, shareEvent{at: at, since: max(at, quiet), quietUntil: quiet, share: share})
}

// shareAt is the share at t on the linear climb (1 before any refusal).
func (o *shareOracle) shareAt(t int64) float64 {
	var last *shareEvent
	for i := range o.events {
		if o.events[i].at <= t {
			last = &o.events[i]
		}
	}
	if last == nil {
		return 1
	}
	if t <= last.since {
		return last.share
	}
	gone := float64(t-last.since) / float64(o.ad.RecoverMs*1e6)
	return math.Min(1, last.share+(1-last.share)*gone)
}

// quiet reports whether t falls in a retry_after.
func (o *shareOracle) quiet(t int64) bool {
	for _, e := range o.events {
		if t >= e.at && t < e.quietUntil {
			return true
		}
	}
	return false
}

// integrals returns F with F[k] = ∫ share dt over the first k ms from
// start (ns), by the midpoint rule on 1 ms slices.
func (o *shareOracle) integrals(start int64, ms int) []float64 {
	f := make([]float64, ms+1)
	for k := range ms {
		f[k+1] = f[k] + o.shareAt(start+int64(k)*1e6+5e5)*1e6
	}
	return f
}

// between is ∫ share dt over [from, to], widened to whole ms (so never
// below the true value by more than the slicing's error, which the
// bound's token of slack covers).
func between(f []float64, start, from, to int64) float64 {
	lo, hi := (from-start)/1e6, (to-start+1e6-1)/1e6
	return f[min(int(hi), len(f)-1)] - f[lo]
}

// TestAdaptive_NeverAboveTheEffectiveLimit drives a time_based budget with
// random refusals on a fake clock and a backlog of jobs, and checks what
// was dispatched against the oracle: nothing during a retry_after, and
// over every window no more than the capacity plus the rate times the
// integral of the share (plus one token of slack for the oracle's
// slicing); and once the climb is over the budget pays its configured rate
// again.
func TestAdaptive_NeverAboveTheEffectiveLimit(t *testing.T) {
	for seed := range uint64(16) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { adaptiveRun(t, seed) })
	}
}

func adaptiveRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 26))
	clk := clock.NewFake(epoch)
	ad := store.Adaptive{Decrease: []float64{0.5, 0.25, 0.9}[rng.IntN(3)], RecoverMs: int64([]int{200, 1000, 3000}[rng.IntN(3)]), Floor: []float64{0.05, 0.3}[rng.IntN(2)]}
	alloc, durMs, burst := int64(1+rng.IntN(10)), int64(100), int64(1+rng.IntN(3))
	var dispatched []int64
	cfg := DefaultConfig()
	cfg.OnDispatch = func(_ store.Job, at time.Time, _ int64) { dispatched = append(dispatched, at.UnixNano()) }
	e := New(cfg, clk, nullJournal{}, jobid.New(clk.Now))
	_, _, err := e.PutBudget("r", store.Budget{Allocation: alloc, Strategy: store.TimeBased, DurationMs: durMs, Burst: burst, Adaptive: &ad}, CreateOnly)
	require.NoError(t, err)
	tk := e.NewTaker(nil, 0)
	o := &shareOracle{ad: ad}
	start := clk.Now().UnixNano()
	for range 4000 {
		jobs, _, err := e.Enqueue([]NewJob{{Type: "t", Queue: "q", Payload: []byte("{}"), Budgets: []BindingSpec{{Key: "r", Cost: 1}}}})
		require.NoError(t, err)
		e.Admit([]string{jobs[0].ID})
	}
	for step := 0; clk.Now().UnixNano()-start < 8e9; step++ {
		if rng.IntN(400) == 0 && clk.Now().UnixNano()-start < 4e9 {
			retry := int64(0)
			if rng.IntN(2) == 0 {
				retry = int64(rng.IntN(500)) * 1e6
			}
			_, err := e.Throttle("r", Refusal{RetryAfterMs: retry / 1e6})
			require.NoError(t, err)
			o.refuse(clk.Now().UnixNano(), retry)
		}
		clk.Advance(time.Duration(1+rng.IntN(3)) * time.Millisecond)
		tk.Drain(nil)
	}
	rate := float64(alloc) / float64(durMs*1e6) // tokens per ns at share 1
	for i, at := range dispatched {
		require.False(t, o.quiet(at), "seed %d: dispatch %d at +%d ms, in a retry_after", seed, i, (at-start)/1e6)
	}
	f := o.integrals(start, int((clk.Now().UnixNano()-start)/1e6)+1)
	for i := range dispatched {
		for j := i; j < len(dispatched); j++ {
			bound := float64(burst) + rate*between(f, start, dispatched[i], dispatched[j]) + 1
			require.LessOrEqual(t, float64(j-i+1), bound, "seed %d: dispatches %d..%d (+%d..+%d ms) over the effective limit", seed, i, j, (dispatched[i]-start)/1e6, (dispatched[j]-start)/1e6)
		}
	}
	// The last refusal was before 4 s; by 8 s the climb is over: the last
	// second of dispatches is at the configured rate, less a token.
	var last int
	for _, at := range dispatched {
		if at >= start+7e9 {
			last++
		}
	}
	require.GreaterOrEqual(t, float64(last), float64(alloc)*1000/float64(durMs)-float64(burst)-1, "seed %d: back at the configured rate", seed)
	v, err := e.Budget("r", true)
	require.NoError(t, err)
	require.InDelta(t, float64(alloc), v.State.EffectiveAllocation, 1e-9)
}

// TestAdaptive_RefusalsOfOneWindowCountOnce: a hundred refusals at once
// halve the rate once; a while_in_flight budget lowers its allocation,
// leaving jobs in flight alone.
func TestAdaptive_RefusalsOfOneWindowCountOnce(t *testing.T) {
	tb := setup(t)
	_, _, err := tb.e.PutBudget("w", store.Budget{Allocation: 8, Strategy: store.WhileInFlight,
		Adaptive: &store.Adaptive{Decrease: 0.5, RecoverMs: 1000, Floor: 0.2}}, CreateOnly)
	require.NoError(t, err)
	tk := tb.e.NewTaker(nil, 0)
	tb.enqueueN(t, 12, spec{binds: bindings("w", 1)})
	require.Len(t, drainIDs(tk), 8)
	for range 100 {
		_, err := tb.e.Throttle("w", Refusal{})
		require.NoError(t, err)
	}
	v, _ := tb.e.Budget("w", true)
	require.Equal(t, int64(1), v.State.Throttles)
	require.Equal(t, 4.0, v.State.EffectiveAllocation)
	require.Equal(t, int64(8), v.State.InFlight, "jobs in flight are not touched")
	require.Equal(t, -4.0, v.State.Available)
	tb.clk.Advance(1100 * time.Millisecond) // past the window and the climb
	v, _ = tb.e.Budget("w", true)
	require.Equal(t, 8.0, v.State.EffectiveAllocation)
	_, err = tb.e.Throttle("w", Refusal{})
	require.NoError(t, err)
	v, _ = tb.e.Budget("w", true)
	require.Equal(t, int64(2), v.State.Throttles)
}

// TestAdaptive_ThrottledFailureDoesNotCount: a failure that reports a
// refusal is retried past the retry limit unless it says count.
func TestAdaptive_ThrottledFailureDoesNotCount(t *testing.T) {
	tb := setup(t, func(c *Config) { c.DefaultRetryLimit = 1 })
	tb.budget(t, "r", 100, store.TimeBased, 1000, 0)
	tk := tb.e.NewTaker(nil, 0)
	id := tb.enqueue(t, spec{binds: bindings("r", 1)})
	for i := range 3 {
		require.Equal(t, []string{id}, drainIDs(tk), "attempt %d", i)
		j, _, err := tb.e.Fail(id, Failure{Message: "429", RetryAt: nil, Throttle: &FailThrottle{Budget: "r"}})
		require.NoError(t, err)
		require.NotEqual(t, store.Dead, j.Status, "a throttled failure does not count")
		tb.clk.Advance(time.Hour)
	}
	require.Equal(t, []string{id}, drainIDs(tk))
	j, _, err := tb.e.Fail(id, Failure{Message: "429", Throttle: &FailThrottle{Budget: "r", Count: true}})
	require.NoError(t, err)
	require.NotEqual(t, store.Dead, j.Status, "the first failure that counts: one retry is left")
	tb.clk.Advance(time.Hour)
	require.Equal(t, []string{id}, drainIDs(tk))
	_, _, err = tb.e.Fail(id, Failure{Message: "x", Throttle: &FailThrottle{Budget: "nope"}})
	require.Error(t, err, "a budget the job is not bound to")
	j, _, err = tb.e.Fail(id, Failure{Message: "boom"})
	require.NoError(t, err)
	require.Equal(t, store.Dead, j.Status, "two failures that count are past a limit of 1")
	require.Equal(t, uint32(5), j.Attempts)
}
