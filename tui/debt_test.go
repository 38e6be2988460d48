package tui

import (
	"image/color"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
)

// lineWith returns the first line of the screen that contains s.
func lineWith(t *testing.T, m Model, s string) string {
	t.Helper()
	for _, l := range strings.Split(screen(m), "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	t.Fatalf("no line with %q:\n%s", s, screen(m))
	return ""
}

// painted returns what s is drawn in within line: the escape sequence in
// force where s starts.
func painted(t *testing.T, line, s string) string {
	t.Helper()
	i := strings.Index(line, s)
	require.GreaterOrEqual(t, i, 0, "%q not in %q", s, line)
	j := strings.LastIndex(line[:i], "\x1b[")
	if j < 0 {
		return ""
	}
	return line[j : j+strings.IndexByte(line[j:], 'm')+1]
}

// TestModel_View_DebtColour: a budget in debt draws its AVAILABLE cell
// (gauge and level) in the bad colour, on the cursor's background when
// selected, and the rest of its row in the row's own colour (parked
// here); a budget not in debt has no such cell; the light background has
// its own colour.
func TestModel_View_DebtColour(t *testing.T) {
	t.Parallel()
	m := newTestModel(t, newSettleSource(), 120, 40)
	m.opts.NoColor = false
	const darkBad, lightBad, darkWarn, selBg = "38;2;255;95;95", "38;2;192;0;0", "38;2;255;175;0", "48;2;58;58;95"

	debt := lineWith(t, m, "openai-tpm")
	require.Contains(t, painted(t, debt, "▒░"), darkBad, "the gauge of a debt: %q", debt)
	require.Contains(t, painted(t, debt, "-1500.5/90000"), darkBad, "and its level")
	require.Contains(t, painted(t, debt, "openai-tpm"), darkWarn, "the row keeps its parked colour before the cell")
	require.Contains(t, painted(t, debt, "900ms"), darkWarn, "and after it")
	require.NotContains(t, painted(t, debt, "900ms"), darkBad)
	for _, key := range []string{"openai-tpd", "reports", "weekdays"} {
		require.NotContains(t, lineWith(t, m, key+" "), darkBad, "%s owes nothing", key)
	}

	m = press(t, m, "j")
	sel := lineWith(t, m, "> ")
	require.Contains(t, sel, "openai-tpm")
	require.Contains(t, painted(t, sel, "▒░"), darkBad)
	require.Contains(t, painted(t, sel, "▒░"), selBg, "the cursor's background runs under the debt")
	require.Contains(t, painted(t, sel, "900ms"), selBg)
	require.Contains(t, painted(t, lineWith(t, m, "in debt 1500.5"), "in debt"), darkBad, "the detail panel's debt line too")

	m = update(t, m, tea.BackgroundColorMsg{Color: color.White})
	require.Contains(t, painted(t, lineWith(t, m, "openai-tpm"), "▒░"), lightBad)

	m.opts.NoColor = true
	requireNoEscapes(t, screen(m))
}

// TestBudgetWords: the calendar, debt and settle words of a budget, and
// when each is left out.
func TestBudgetWords(t *testing.T) {
	t.Parallel()
	m := newTestModel(t, newSettleSource(), 80, 24)
	nowMs := m.now.UnixMilli()
	b := cal(100, "0 0 * * *")
	require.Empty(t, periodWords(b, nowMs), "no live figures")
	b.State = &api.BudgetState{Used: ptr[int64](40)}
	require.Equal(t, "used 40 of 100", periodWords(b, nowMs), "no reset known")
	b.State.NextResetAt = ptr(nowMs - 5)
	require.Equal(t, "used 40 of 100, resets now", periodWords(b, nowMs))
	tb := api.Budget{Strategy: api.Strategy{Type: api.StrategyTimeBased}, State: &api.BudgetState{Used: ptr[int64](1)}}
	require.Empty(t, periodWords(tb, nowMs), "only calendar budgets have periods")

	require.Empty(t, m.debtWords(tb))
	tb.State.Debt = ptr(0.0)
	require.Empty(t, m.debtWords(tb), "no debt left")
	tb.State.Debt = ptr(2.25)
	require.Equal(t, "in debt 2.25", m.debtWords(tb), "no repayment known")
	tb.State.RepaidAt = ptr(nowMs + 90_000)
	require.Equal(t, "in debt 2.25 · repaid in 1m30s (12:01:30)", m.debtWords(tb))

	require.Empty(t, settledWords(&api.BudgetState{}))
	require.Empty(t, settledWords(&api.BudgetState{Settled: &api.Settled{}}), "no settle yet")
	require.Equal(t, "cost ratio 0.50 (actual ÷ estimate)", settledWords(&api.BudgetState{CostRatio: ptr(0.5)}))
	require.Equal(t, "settled 1: credited 0, debited 7", settledWords(&api.BudgetState{Settled: &api.Settled{Count: 1, Debited: 7}}))

	require.Equal(t, "calendar: 100 a period, reset at 0 0 * * * (UTC)", strategyLong(cal(100, "0 0 * * *")))
}
