package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// TestSettle_CalendarSpendBeforeDelivery: a frame paid by a calendar
// budget comes out of DrainWait with the journal's answer to its spend,
// and that spend is in the journal; a time_based frame has none.
func TestSettle_CalendarSpendBeforeDelivery(t *testing.T) {
	tb := setup(t, func(c *Config) { c.Resets = propResets })
	_, _, err := tb.e.PutBudget("cal", store.Budget{Allocation: 10, Strategy: store.Calendar, Reset: "every 3600000000000"}, CreateOnly)
	require.NoError(t, err)
	tb.budget(t, "tb", 10, store.TimeBased, 1000, 0)
	tk := tb.e.NewTaker(nil, 0)
	tb.enqueue(t, spec{binds: bindings("tb", 1)})
	frames, w := tk.DrainWait(nil)
	require.Len(t, frames, 1)
	require.Nil(t, w, "nothing to wait for without a calendar budget")

	before := len(tb.journal.ops)
	tb.enqueue(t, spec{binds: bindings("cal", 3)})
	frames, w = tk.DrainWait(nil)
	require.Len(t, frames, 1)
	require.NotNil(t, w, "a calendar spend to wait for")
	var spent []store.SpendBudgetOp
	for _, op := range tb.journal.ops[before:] {
		if s, ok := op.(store.SpendBudgetOp); ok {
			spent = append(spent, s)
		}
	}
	require.Len(t, spent, 1)
	require.Equal(t, "cal", spent[0].Key)
	require.Equal(t, int64(3), spent[0].Spent.Used)
	end := (tb.clk.Now().UnixNano()/3600e9 + 1) * 3600e9
	require.Equal(t, end/1e6, spent[0].Spent.EndsAt)
	_, w = tk.DrainWait(nil)
	require.Nil(t, w, "drained with its frame")
}

// TestSettle_FamilySubSettlesFamily: settling a sub-budget settles its
// family too, which the binding also paid.
func TestSettle_FamilySubSettlesFamily(t *testing.T) {
	tb := setup(t)
	_, _, err := tb.e.PutBudget("f", store.Budget{Allocation: 100, Strategy: store.TimeBased, DurationMs: 3600000,
		PerKey: &store.BudgetTemplate{Allocation: 50, Strategy: store.TimeBased, DurationMs: 3600000}}, CreateOnly)
	require.NoError(t, err)
	tk := tb.e.NewTaker(nil, 0)
	id := tb.enqueue(t, spec{binds: bindings("f/a", 40)})
	require.Equal(t, []string{id}, drainIDs(tk))
	_, _, err = tb.e.AckSettled([]string{id}, map[string][]Settle{id: {{Key: "f", Cost: 1}}})
	require.Error(t, err, "the family is not a binding of its own here")
	_, _, err = tb.e.AckSettled([]string{id}, map[string][]Settle{id: {{Key: "f/a", Cost: 10}}})
	require.NoError(t, err)
	fam, _ := tb.e.Budget("f", true)
	require.InDelta(t, 90, fam.State.Available, 0.01, "100 − 40 + 30")
	require.Equal(t, int64(1), fam.State.Settles)
	sub, _ := tb.e.Budget("f/a", true)
	require.InDelta(t, 40, sub.State.Available, 0.01, "50 − 40 + 30")
}

// TestSettle_RefusedChangesNothing: one bad settle in a bulk refuses it
// all: no job is acked, no budget settled.
func TestSettle_RefusedChangesNothing(t *testing.T) {
	tb := setup(t)
	tb.budget(t, "tb", 10, store.TimeBased, 3600000, 0)
	tb.budget(t, "w", 10, store.WhileInFlight, 0, 0)
	tk := tb.e.NewTaker(nil, 0)
	a := tb.enqueue(t, spec{binds: bindings("tb", 2)})
	b := tb.enqueue(t, spec{binds: bindings("tb", 2, "w", 1)})
	require.Len(t, drainIDs(tk), 2)
	_, _, err := tb.e.AckSettled([]string{a, b}, map[string][]Settle{a: {{Key: "tb", Cost: 0}}, b: {{Key: "w", Cost: 0}}})
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, Unprocessable, e.Kind)
	require.Equal(t, 2, tk.InFlight())
	v, _ := tb.e.Budget("tb", true)
	require.InDelta(t, 6, v.State.Available, 0.01)
	require.Zero(t, v.State.Settles)
}

// TestSettle_CalendarCreditOfAnEarlierPeriod: a job dispatched before a
// reset and settled below its estimate after it gives nothing to the new
// period; one settled above it is charged to the new period.
func TestSettle_CalendarCreditOfAnEarlierPeriod(t *testing.T) {
	tb := setup(t, func(c *Config) { c.Resets = propResets })
	_, _, err := tb.e.PutBudget("cal", store.Budget{Allocation: 10, Strategy: store.Calendar, Reset: "every 1000000000"}, CreateOnly)
	require.NoError(t, err)
	tk := tb.e.NewTaker(nil, 0)
	a := tb.enqueue(t, spec{binds: bindings("cal", 5)})
	b := tb.enqueue(t, spec{binds: bindings("cal", 5)})
	require.Len(t, drainIDs(tk), 2)
	tb.clk.Advance(time.Second) // the period ends
	c := tb.enqueue(t, spec{binds: bindings("cal", 4)})
	require.Equal(t, []string{c}, drainIDs(tk))
	_, _, err = tb.e.AckSettled([]string{a, b}, map[string][]Settle{a: {{Key: "cal", Cost: 0}}, b: {{Key: "cal", Cost: 8}}})
	require.NoError(t, err)
	v, _ := tb.e.Budget("cal", true)
	require.Equal(t, int64(4+3), v.State.Used, "a's credit dropped, b's 3 more charged now")
}

// TestSettle_CalendarCreditInTheMillisecondItsPeriodBegan: a job
// dispatched in the millisecond its budget was created (the period's
// start, kept to the nanosecond, where the dispatch is kept to the
// millisecond) is of that period: settled below its estimate, it gives
// the difference back.
func TestSettle_CalendarCreditInTheMillisecondItsPeriodBegan(t *testing.T) {
	tb := setup(t, func(c *Config) { c.Resets = propResets })
	tb.clk.Advance(500 * time.Microsecond)
	_, _, err := tb.e.PutBudget("cal", store.Budget{Allocation: 10, Strategy: store.Calendar, Reset: "every 3600000000000"}, CreateOnly)
	require.NoError(t, err)
	tk := tb.e.NewTaker(nil, 0)
	a := tb.enqueue(t, spec{binds: bindings("cal", 5)})
	require.Equal(t, []string{a}, drainIDs(tk))
	_, _, err = tb.e.AckSettled([]string{a}, map[string][]Settle{a: {{Key: "cal", Cost: 1}}})
	require.NoError(t, err)
	v, _ := tb.e.Budget("cal", true)
	require.Equal(t, int64(1), v.State.Used, "5 estimated, 1 spent")
}
