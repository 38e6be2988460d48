package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
)

// sub is a sub-budget of family f as a read lists it.
func shareSub(key string, weight, dispatched, parked int64) api.Budget {
	return api.Budget{Key: "f/" + key, Weight: weight, State: &api.BudgetState{Dispatched: dispatched, Parked: parked}}
}

func TestShareWindow(t *testing.T) {
	t.Parallel()
	t0 := fixedNow
	var w *shareWindow
	require.Nil(t, w.shares(), "no window, no shares")
	w = w.observe(t0, []api.Budget{shareSub("a", 3, 100, 5), shareSub("b", 1, 40, 5)})
	require.Nil(t, w.shares(), "the first round is the baseline: nothing counted")

	// 30 of a's and 10 of b's since: 75% and 25%, their fair shares by
	// weight too.
	w = w.observe(t0.Add(time.Second), []api.Budget{shareSub("a", 3, 130, 5), shareSub("b", 1, 50, 5)})
	require.Equal(t, []tenantShare{{"f/a", 3, 0.75, 0.75}, {"f/b", 1, 0.25, 0.25}}, w.shares())

	// b's sub-budget was dropped and made again (its count starts over),
	// c is new and has sent 5, d waits with none sent: d counts in the
	// fair shares (it is owed its turns) with a share of none.
	w = w.observe(t0.Add(2*time.Second), []api.Budget{shareSub("a", 3, 145, 5), shareSub("b", 1, 5, 5), shareSub("c", 1, 5, 0), shareSub("d", 5, 0, 2)})
	got := w.shares()
	require.Equal(t, []string{"f/a", "f/b", "f/c", "f/d"}, shareKeys(got))
	require.InDelta(t, 45.0/65, got[0].share, 1e-9)
	require.InDelta(t, 15.0/65, got[1].share, 1e-9)
	require.InDelta(t, 5.0/65, got[2].share, 1e-9)
	require.Zero(t, got[3].share)
	require.InDelta(t, 3.0/10, got[0].fair, 1e-9)
	require.InDelta(t, 5.0/10, got[3].fair, 1e-9)

	// A minute on, the first rounds are forgotten: only the last's count.
	w = w.observe(t0.Add(62*time.Second+500*time.Millisecond), []api.Budget{shareSub("a", 3, 145, 0), shareSub("b", 1, 9, 0)})
	require.Equal(t, []tenantShare{{"f/b", 1, 1, 1}}, w.shares(), "a sent nothing in the last minute and waits for nothing")
	w = w.observe(t0.Add(3*time.Minute), []api.Budget{shareSub("a", 3, 145, 0)})
	require.Nil(t, w.shares(), "nothing dispatched in the last minute")
}

func shareKeys(ss []tenantShare) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.key)
	}
	return out
}

// TestModel_View_WeightedFamily: a family's note marks its weighted
// tenants, and its detail panel says what each had of the last minute's
// dispatches beside its fair share.
func TestModel_View_WeightedFamily(t *testing.T) {
	t.Parallel()
	src := newFamilySource()
	subs := src.subBudgets["tenants"]
	subs[0].Weight = 3 // acme
	src.subBudgets["tenants"] = subs
	m := withExtras(t, press(t, newTestModel(t, src, 120, 40), "j", "j"))
	b, ok := m.selectedBudget()
	require.True(t, ok)
	require.Equal(t, "tenants", b.Key)
	require.NotContains(t, screen(m), "last minute", "one round: nothing to count from yet")

	src.mu.Lock()
	subs = src.subBudgets["tenants"]
	subs[0].State.Dispatched += 30 // acme
	subs[2].State.Dispatched += 10 // delta
	src.mu.Unlock()
	m = withExtras(t, m)
	s := screen(m)
	require.Contains(t, s, "└ 120 keys; busiest (in flight/parked): acme×3 4/12, delta 2/3, beta 2/0, …")
	// acme, delta and gamma were served or wait: weights 3, 1 and 1.
	require.Contains(t, s, " last minute (fair share): acme×3 75% (60%), delta 25% (20%), gamma 0% (20%)\n")
	require.True(t, strings.Index(s, "last minute") > strings.Index(s, "── budget tenants"), "in the detail panel")
}
