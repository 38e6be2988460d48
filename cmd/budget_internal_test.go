package cmd

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
)

// TestBudgetTable_CalendarAndDebt: a calendar budget's RATE names its
// resets and PERIOD what it used and when it resets; a budget in debt
// shows what it owes and when it is repaid; the other rows say "-" in
// those columns, and a table without either keeps its columns.
func TestBudgetTable_CalendarAndDebt(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 8, 31, 21, 0, 0, 0, time.Local)
	at := func(d time.Duration) *int64 { return api.Ptr(now.Add(d).UnixMilli()) }
	local := func(d time.Duration) string { return now.Add(d).Format("2006-01-02 15:04:05") }
	calendar := api.Budget{Key: "tpd", Allocation: 100000,
		Strategy: api.Strategy{Type: api.StrategyCalendar, Reset: "0 0 * * *", Timezone: "Europe/Paris"},
		State:    &api.BudgetState{Available: 98166, Capacity: 100000, Used: api.Ptr[int64](1834), NextResetAt: at(3 * time.Hour)}}
	owing := api.Budget{Key: "tpm", Allocation: 100, Strategy: api.Strategy{Type: api.StrategyTimeBased, DurationMs: 3_600_000},
		State: &api.BudgetState{Available: -50.5, Capacity: 100, Debt: api.Ptr(50.5), RepaidAt: at(30*time.Minute + 18*time.Second)}}
	utc := api.Budget{Key: "utc", Allocation: 7, Strategy: api.Strategy{Type: api.StrategyCalendar, Reset: "0 * * * *"}}
	plain := api.Budget{Key: "workers", Allocation: 2, Strategy: api.Strategy{Type: api.StrategyWhileInFlight},
		State: &api.BudgetState{Capacity: 2, Available: 2}}

	var out strings.Builder
	require.NoError(t, budgetTableAt(&out, []api.Budget{calendar, owing, utc, plain}, now))
	require.Equal(t, [][]string{
		{"KEY", "STRATEGY", "ALLOCATION", "RATE", "BURST", "AVAILABLE", "IN FLIGHT", "PARKED", "NEXT TOKEN", "PERIOD", "DEBT"},
		{"tpd", "calendar", "100000", "100000 at 0 0 * * * (Europe/Paris)", "-", "98166", "0", "0", "-",
			"used 1834 of 100000 this period, resets at " + local(3*time.Hour) + " (in 3h)", "-"},
		{"tpm", "time_based", "100", "100/1h", "-", "-50.5", "0", "0", "-", "-",
			"50.5, repaid at " + local(30*time.Minute+18*time.Second) + " (in 30m18s)"},
		{"utc", "calendar", "7", "7 at 0 * * * * (UTC)", "-", "-", "-", "-", "-", "-", "-"},
		{"workers", "while_in_flight", "2", "-", "-", "2", "0", "0", "-", "-", "-"},
	}, tableCells(out.String()))

	// Settled but not in debt: no DEBT column; no calendar: no PERIOD.
	owing.State.Debt, owing.State.Available = api.Ptr(0.0), 3
	out.Reset()
	require.NoError(t, budgetTableAt(&out, []api.Budget{owing, plain}, now))
	require.Equal(t, []string{"KEY", "STRATEGY", "ALLOCATION", "RATE", "BURST", "AVAILABLE", "IN FLIGHT", "PARKED", "NEXT TOKEN"}, tableCells(out.String())[0])

	// A family of calendar sub-budgets says so in PER KEY.
	require.Equal(t, "5 at 0 0 * * 1 (Asia/Tokyo)", formatPerKey(&api.BudgetTemplate{Allocation: 5,
		Strategy: api.Strategy{Type: api.StrategyCalendar, Reset: "0 0 * * 1", Timezone: "Asia/Tokyo"}}))
}

// tableCells splits a table into its cells: they are apart by two spaces
// or more, and hold no two spaces in a row.
func tableCells(out string) [][]string {
	var rows [][]string
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		rows = append(rows, cellGap.Split(strings.TrimSpace(l), -1))
	}
	return rows
}

var cellGap = regexp.MustCompile(` {2,}`)

// TestBudgetTable_Backoff: an adaptive budget's BACK-OFF says how it
// backs off and, while it pays below its configured rate or nothing at
// all, its effective rate and when its retry-after ends; a plain budget
// throttled says only the latter; a table without either has no
// BACK-OFF column.
func TestBudgetTable_Backoff(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 8, 31, 21, 0, 0, 0, time.Local)
	at := func(d time.Duration) *int64 { return api.Ptr(now.Add(d).UnixMilli()) }
	local := func(d time.Duration) string { return now.Add(d).Format("2006-01-02 15:04:05") }
	back := &api.Adaptive{Decrease: 0.5, RecoverMs: 60000, Floor: 0.05}
	perSecond := api.Strategy{Type: api.StrategyTimeBased, DurationMs: 1000}
	halved := api.Budget{Key: "api", Allocation: 100, Strategy: perSecond, Adaptive: back,
		State: &api.BudgetState{Capacity: 100, EffectiveAllocation: api.Ptr(50.0), ThrottledUntil: at(25 * time.Second), Throttles: api.Ptr[int64](2)}}
	recovered := api.Budget{Key: "full", Allocation: 10, Strategy: api.Strategy{Type: api.StrategyTimeBased, DurationMs: 90_000},
		Adaptive: &api.Adaptive{Decrease: 0.25, RecoverMs: 90_000, Floor: 0.125},
		State:    &api.BudgetState{Capacity: 10, EffectiveAllocation: api.Ptr(10.0), Throttles: api.Ptr[int64](1)}}
	climbing := api.Budget{Key: "conc", Allocation: 8, Strategy: api.Strategy{Type: api.StrategyWhileInFlight}, Adaptive: back,
		State: &api.BudgetState{Capacity: 4, EffectiveAllocation: api.Ptr(4.0), ThrottledUntil: at(-time.Second)}}
	throttled := api.Budget{Key: "plain", Allocation: 5, Strategy: api.Strategy{Type: api.StrategyWhileInFlight},
		State: &api.BudgetState{Capacity: 5, EffectiveAllocation: api.Ptr(5.0), ThrottledUntil: at(3 * time.Second)}}
	noState := api.Budget{Key: "written", Allocation: 100, Strategy: perSecond, Adaptive: back}
	plain := api.Budget{Key: "workers", Allocation: 2, Strategy: api.Strategy{Type: api.StrategyWhileInFlight},
		State: &api.BudgetState{Capacity: 2, Available: 2}}

	var out strings.Builder
	require.NoError(t, budgetTableAt(&out, []api.Budget{halved, recovered, climbing, throttled, noState, plain}, now))
	rows := tableCells(out.String())
	require.Equal(t, []string{"KEY", "STRATEGY", "ALLOCATION", "RATE", "BURST", "AVAILABLE", "IN FLIGHT", "PARKED", "NEXT TOKEN", "BACK-OFF"}, rows[0])
	backoff := func(row []string) string { return row[len(row)-1] }
	require.Equal(t, "backs off ×0.5, floor 5%, recovers in 1m; effective 50/s of 100/s; throttled until "+local(25*time.Second)+" (in 25s)", backoff(rows[1]))
	require.Equal(t, "backs off ×0.25, floor 12.5%, recovers in 1m30s", backoff(rows[2]), "back at its configured rate")
	require.Equal(t, "backs off ×0.5, floor 5%, recovers in 1m; effective 4 of 8", backoff(rows[3]), "a retry-after that has passed is not said")
	require.Equal(t, "throttled until "+local(3*time.Second)+" (in 3s)", backoff(rows[4]))
	require.Equal(t, "backs off ×0.5, floor 5%, recovers in 1m", backoff(rows[5]), "a write's answer, without live figures")
	require.Equal(t, "-", backoff(rows[6]))

	require.Equal(t, "2.5/h", rateOf(2.5, api.Strategy{Type: api.StrategyTimeBased, DurationMs: 3_600_000}))
	require.Equal(t, "7/1m30s", rateOf(7, recovered.Strategy))
	require.Equal(t, "30/min", rateOf(30, api.Strategy{Type: api.StrategyTimeBased, DurationMs: 60_000}))
	require.Equal(t, "1.333/day", rateOf(4.0/3, api.Strategy{Type: api.StrategyTimeBased, DurationMs: 86_400_000}))

	// A throttle that has ended, on a budget that is not adaptive: no
	// column.
	throttled.State.ThrottledUntil = at(-time.Second)
	out.Reset()
	require.NoError(t, budgetTableAt(&out, []api.Budget{throttled, plain}, now))
	require.Equal(t, []string{"KEY", "STRATEGY", "ALLOCATION", "RATE", "BURST", "AVAILABLE", "IN FLIGHT", "PARKED", "NEXT TOKEN"}, tableCells(out.String())[0])
}
