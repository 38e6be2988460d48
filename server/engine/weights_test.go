package engine

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// weightedFamily puts family "tenants": its own configuration own, every
// sub-key's template tmpl, and the overrides keys.
func (tb *testBundle) weightedFamily(t testing.TB, own, tmpl store.Budget, keys map[string]store.KeyOverride) {
	t.Helper()
	own.PerKey = &store.BudgetTemplate{Allocation: tmpl.Allocation, Strategy: tmpl.Strategy, DurationMs: tmpl.DurationMs, Burst: tmpl.Burst}
	own.Keys = keys
	_, _, err := tb.e.PutBudget("tenants", own, CreateOrReplace)
	require.NoError(t, err)
}

// backlog enqueues n jobs of cost 1 for each of the sub-keys, one sub-key
// after the other.
func (tb *testBundle) backlog(t testing.TB, n int, subs ...string) {
	t.Helper()
	for _, s := range subs {
		for range n {
			tb.enqueue(t, spec{binds: bindings("tenants/"+s, 1)})
		}
	}
}

// serve dispatches and acknowledges n jobs one at a time through tk,
// moving the fake clock to its next timer whenever nothing is payable, and
// returns their sub-keys in dispatch order.
func (tb *testBundle) serve(t testing.TB, tk *Taker, n int) []string {
	t.Helper()
	var subs []string
	for len(subs) < n {
		ids := drainIDs(tk)
		if len(ids) == 0 {
			at, ok := tb.clk.NextAt()
			require.True(t, ok, "the backlog waits for a timer (after %d of %d)", len(subs), n)
			tb.clk.AdvanceTo(at)
			continue
		}
		for _, d := range tb.dispatches[len(tb.dispatches)-len(ids):] {
			subs = append(subs, strings.TrimPrefix(subKeyOf(d), "tenants/"))
		}
		tb.ack(t, ids...)
	}
	return subs[:n]
}

// requireShares checks, over every window of 200 consecutive dispatches
// of seq, that sub-key a has weight/total of them within 5 points.
func requireShares(t testing.TB, seq []string, a string, want float64, what string) {
	t.Helper()
	const window = 200
	require.GreaterOrEqual(t, len(seq), window)
	n := 0
	for i, s := range seq {
		if s == a {
			n++
		}
		if i >= window && seq[i-window] == a {
			n--
		}
		if i >= window-1 {
			got := float64(n) / window
			require.InDelta(t, want, got, 0.05, "%s: %s has %.1f%% of dispatches %d..%d, want %.1f%% ± 5",
				what, a, 100*got, i-window+1, i, 100*want)
		}
	}
}

// familyShapes are saturated families the share tests run on: the
// family's own limit is the bottleneck, its quantum 1 ms (while_in_flight,
// or time_based at one token a ms) or longer.
var familyShapes = []struct {
	name string
	own  store.Budget
}{
	{"while_in_flight", wif(1)},
	{"time_based 1/ms", rate(1, 1)},
	{"time_based 1/7ms", rate(1, 7)},
	{"time_based 3/1000ms", rate(3, 1000)},
}

// TestWeights_SharesOfBackloggedKeys: two backlogged sub-keys of weights
// 3 and 1 on a saturated family share its dispatches 75%/25% within 5
// points over every 200 consecutive ones, and so for random weights.
func TestWeights_SharesOfBackloggedKeys(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(26, 1))
	for _, shape := range familyShapes {
		weights := [][2]int64{{3, 1}, {1, 3}, {1, 1}}
		for range 3 {
			weights = append(weights, [2]int64{1 + rng.Int64N(9), 1 + rng.Int64N(9)})
		}
		for _, w := range weights {
			t.Run(fmt.Sprintf("%s/%d:%d", shape.name, w[0], w[1]), func(t *testing.T) {
				t.Parallel()
				tb := setup(t)
				tb.weightedFamily(t, shape.own, wif(1_000_000), map[string]store.KeyOverride{"a": {Weight: w[0]}, "b": {Weight: w[1]}})
				tb.backlog(t, 1000, "a", "b")
				seq := tb.serve(t, tb.e.NewTaker(nil, 0), 1000)
				requireShares(t, seq, "a", float64(w[0])/float64(w[0]+w[1]), "both backlogged")
			})
		}
	}
}

// TestWeights_ReturningTenantBanksNoCredit: a sub-key that had nothing
// waiting while the other was served comes back at the family's virtual
// time: from its return the shares are its weight's again, neither a
// burst for it nor a starved other, whichever of the two went away.
func TestWeights_ReturningTenantBanksNoCredit(t *testing.T) {
	t.Parallel()
	for _, shape := range familyShapes {
		for _, away := range []string{"a", "b"} {
			t.Run(shape.name+"/"+away+" away", func(t *testing.T) {
				t.Parallel()
				tb := setup(t)
				// A template whose pools refill in months: the sub-key
				// away stays live, its next start where it left it.
				tb.weightedFamily(t, shape.own, rate(1_000_000, 10_000_000_000), map[string]store.KeyOverride{"a": {Weight: 3}, "b": {Weight: 1}})
				stays := map[string]string{"a": "b", "b": "a"}[away]
				tb.backlog(t, 200, away)
				tb.backlog(t, 3000, stays)
				tk := tb.e.NewTaker(nil, 0)
				seq := tb.serve(t, tk, 800) // away's 200 go, then only stays runs
				require.Equal(t, 200, strings.Count(strings.Join(seq, ""), away))
				require.Equal(t, stays, seq[len(seq)-1])
				v, err := tb.e.SubBudgets("tenants", false)
				require.NoError(t, err)
				require.Len(t, v, 2, "the sub-key away is live, with nothing waiting")

				tb.backlog(t, 1000, away)
				requireShares(t, tb.serve(t, tk, 1200), "a", 0.75, away+" back")
			})
		}
	}
}

// TestWeights_AllocationOverride: a sub-key's allocation replaces the
// template's in its pool and in its own GET, idle or live, with its
// weight; the others keep the template's and weight 1.
func TestWeights_AllocationOverride(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.weightedFamily(t, wif(100), wif(2), map[string]store.KeyOverride{"acme": {Weight: 3, Allocation: 5}})
	for _, k := range []string{"acme", "acme", "acme", "acme", "acme", "acme", "globex", "globex", "globex"} {
		tb.enqueue(t, spec{binds: bindings("tenants/"+k, 1)})
	}
	drainIDs(tb.e.NewTaker(nil, 0))
	perKey := map[string]int{}
	for _, d := range tb.dispatches {
		perKey[subKeyOf(d)]++
	}
	require.Equal(t, map[string]int{"tenants/acme": 5, "tenants/globex": 2}, perKey)

	v, err := tb.e.Budget("tenants/acme", true)
	require.NoError(t, err)
	require.Equal(t, int64(5), v.Budget.Allocation)
	require.Equal(t, int64(3), v.Weight)
	require.Equal(t, int64(5), v.State.InFlight)
	v, err = tb.e.Budget("tenants/globex", false)
	require.NoError(t, err)
	require.Equal(t, int64(2), v.Budget.Allocation)
	require.Equal(t, int64(1), v.Weight)
	v, err = tb.e.Budget("tenants/hooli", false) // idle: as it would be made
	require.NoError(t, err)
	require.Equal(t, int64(1), v.Weight)
	tb.weightedFamily(t, wif(100), wif(2), map[string]store.KeyOverride{"acme": {Weight: 3, Allocation: 5}, "hooli": {Weight: 9, Allocation: 4}})
	v, err = tb.e.Budget("tenants/hooli", false)
	require.NoError(t, err)
	require.Equal(t, int64(4), v.Budget.Allocation)
	require.Equal(t, int64(9), v.Weight)
	subs, err := tb.e.SubBudgets("tenants", true)
	require.NoError(t, err)
	require.Len(t, subs, 2)
	require.Equal(t, []int64{3, 1}, []int64{subs[0].Weight, subs[1].Weight})

	fam, err := tb.e.Budget("tenants", false)
	require.NoError(t, err)
	require.Zero(t, fam.Weight, "a family has no weight of its own")

	// A job costing more than the template pays may bind a key whose
	// allocation pays it.
	_, _, err = tb.e.Enqueue([]NewJob{{Type: "t", Queue: "q", Payload: []byte("{}"), Budgets: bindings("tenants/acme", 4)}})
	require.NoError(t, err)
	_, _, err = tb.e.Enqueue([]NewJob{{Type: "t", Queue: "q", Payload: []byte("{}"), Budgets: bindings("tenants/globex", 4)}})
	requireKind(t, err, Unprocessable)
}

// TestWeights_AllocationOverrideRefusedBelowBoundCost: like a template
// change, an override (or its removal) that a live sub-budget's unfinished
// job could never pay is refused and changes nothing; a template lowered
// below a key's job is taken while the key's own allocation pays it.
func TestWeights_AllocationOverrideRefusedBelowBoundCost(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	keys := map[string]store.KeyOverride{"acme": {Allocation: 8}}
	tb.weightedFamily(t, wif(100), wif(10), keys)
	tb.enqueue(t, spec{binds: bindings("tenants/acme", 6)})

	for _, bad := range []map[string]store.KeyOverride{{"acme": {Allocation: 5}}, {"acme": {Weight: 2}}} {
		_, _, err := tb.e.PatchBudget("tenants", func(cfg *store.Budget) error {
			cfg.PerKey = &store.BudgetTemplate{Allocation: 4, Strategy: store.WhileInFlight}
			cfg.Keys = bad
			return nil
		})
		requireKind(t, err, Unprocessable)
		v, err := tb.e.Budget("tenants", false)
		require.NoError(t, err)
		require.Equal(t, keys, v.Budget.Keys, "nothing changed")
		require.Equal(t, int64(10), v.Budget.PerKey.Allocation)
	}
	_, _, err := tb.e.PatchBudget("tenants", func(cfg *store.Budget) error {
		cfg.PerKey = &store.BudgetTemplate{Allocation: 4, Strategy: store.WhileInFlight}
		return nil
	})
	require.NoError(t, err, "acme's own allocation pays its job")
	v, err := tb.e.Budget("tenants/acme", false)
	require.NoError(t, err)
	require.Equal(t, int64(8), v.Budget.Allocation)
}

// TestWeights_ChangeAppliesToNewJobs: a job keeps the tag it was given;
// after a change of weight, new jobs are tagged at the new weight.
func TestWeights_ChangeAppliesToNewJobs(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.weightedFamily(t, wif(1), wif(1_000_000), nil)
	tb.backlog(t, 10, "a", "b")
	tb.weightedFamily(t, wif(1), wif(1_000_000), map[string]store.KeyOverride{"a": {Weight: 4}})
	tb.backlog(t, 400, "a", "b")
	seq := tb.serve(t, tb.e.NewTaker(nil, 0), 20+500)
	require.Equal(t, strings.Repeat("ab", 10), strings.Join(seq[:20], ""), "the first twenty kept their turns")
	requireShares(t, seq[20:], "a", 0.8, "after the change")
}

// TestWeights_RestoredTagsKeepShares: after a restart the waiting jobs
// keep their tags and the sub-keys' next starts follow them at their
// weights, so the shares go on.
func TestWeights_RestoredTagsKeepShares(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	keys := map[string]store.KeyOverride{"a": {Weight: 3}}
	tb.weightedFamily(t, wif(1), wif(1_000_000), keys)
	tb.backlog(t, 30, "a", "b")

	re := setup(t)
	re.clk.AdvanceTo(tb.clk.Now())
	r := re.e.Restore()
	fam, err := tb.e.Budget("tenants", false)
	require.NoError(t, err)
	r.Budget(fam.Budget)
	var last string
	for _, op := range tb.journal.ops {
		if ins, ok := op.(store.InsertJobOp); ok {
			j := ins.Job
			require.NotZero(t, j.FairTag)
			require.NoError(t, r.Job(store.LiveJob{ID: j.ID, Queue: j.Queue, Type: j.Type, Priority: j.Priority,
				Status: store.Ready, ReadyAt: j.ReadyAt, Budgets: j.Budgets, FairTag: j.FairTag}))
			last = j.ID
		}
	}
	r.MaxID(last)
	r.Finish()
	re.backlog(t, 600, "a", "b")
	seq := re.serve(t, re.e.NewTaker(nil, 0), 660)
	requireShares(t, seq, "a", 0.75, "after the restore")
}

// TestWeights_RestoredNextStart: a restored sub-key's next start follows
// its latest waiting job by quantum ÷ weight, the remainder kept: after a
// job of tag T, a key of weight 3 starts new jobs at T+⅓, T+⅔, T+1.
func TestWeights_RestoredNextStart(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.weightedFamily(t, wif(1), wif(1_000_000), map[string]store.KeyOverride{"a": {Weight: 3}})
	id := tb.enqueue(t, spec{binds: bindings("tenants/a", 1)})
	tag := tb.tagOfJob(t, id)

	re := setup(t)
	r := re.e.Restore()
	fam, err := tb.e.Budget("tenants", false)
	require.NoError(t, err)
	r.Budget(fam.Budget)
	require.NoError(t, r.Job(store.LiveJob{ID: id, Queue: "q", Type: "t", Priority: 32768, Status: store.Ready,
		Budgets: []store.Binding{{Key: "tenants/a", Cost: 1}}, FairTag: tag}))
	r.MaxID(id)
	r.Finish()
	var got []int64
	for range 3 {
		got = append(got, re.tagOfJob(t, re.enqueue(t, spec{binds: bindings("tenants/a", 1)}))-tag)
	}
	require.Equal(t, []int64{0, 0, 1}, got)
}

// tagOfJob is a live job's tag.
func (tb *testBundle) tagOfJob(t testing.TB, id string) int64 {
	t.Helper()
	tb.e.mu.Lock()
	defer tb.e.mu.Unlock()
	j, ok := tb.e.lookup(id)
	require.True(t, ok)
	return tb.e.tagOf(j)
}
