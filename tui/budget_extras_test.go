package tui

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
)

func TestModel_Update_PausesBudget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		keys []string // from the first row: legacy, reports, tenants, upstream
		want string
		done string
	}{
		{name: "Active", keys: []string{"j", "j"}, want: "pause budget tenants true", done: "paused budget tenants"},
		{name: "PausedUntil", keys: []string{"G"}, want: "pause budget upstream false", done: "resumed budget upstream"},
		{name: "PausedNoEnd", want: "pause budget legacy false", done: "resumed budget legacy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := newFamilySource()
			m := press(t, newTestModel(t, src, 100, 30), tt.keys...)
			next, cmd := m.Update(keyMsg("p"))
			require.NotNil(t, cmd, "p on a budget acts at once, as on a cron entry")
			m = update(t, next.(Model), cmd())
			require.Equal(t, []string{tt.want}, src.callsOf("pause"))
			require.Contains(t, screen(m), tt.done)
		})
	}
	t.Run("Fails", func(t *testing.T) {
		t.Parallel()
		src := newFamilySource()
		m := press(t, newTestModel(t, src, 100, 30), "j", "j")
		src.setErr(errors.New("409 conflict: budget 'tenants' is busy"))
		next, cmd := m.Update(keyMsg("p"))
		m = update(t, next.(Model), cmd())
		require.Contains(t, screen(m), "failed: 409 conflict: budget 'tenants' is busy")
	})
	t.Run("OtherTabsKeepTheirs", func(t *testing.T) {
		t.Parallel()
		src := newFamilySource()
		m := press(t, newTestModel(t, src, 100, 30), "tab") // Queues: nothing to pause
		_, cmd := m.Update(keyMsg("p"))
		require.Nil(t, cmd)
		require.Empty(t, src.callsOf("pause"))
	})
}

func TestModel_View_PausedBudget(t *testing.T) {
	t.Parallel()
	m := withExtras(t, newTestModel(t, newFamilySource(), 100, 30))
	s := screen(m)
	require.Regexp(t, `upstream .* paused until 12:00:30`, s)
	require.Regexp(t, `legacy .* 0 +- +- +paused\n`, s, "NEXT says paused, with no end to wait for; DRAINS IN has nothing parked to drain")
}

func TestModel_View_Family(t *testing.T) {
	t.Parallel()
	m := withExtras(t, newTestModel(t, newFamilySource(), 80, 24))
	lines := strings.Split(screen(m), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "  tenants ") {
			require.Equal(t, "  └ 120 keys; busiest (in flight/parked): acme 4/12, delta 2/3, beta 2/0, …", lines[i+1])
			return
		}
	}
	t.Fatalf("no family row:\n%s", screen(m))
}

func TestModel_View_FilterCountsBudgetsNotNotes(t *testing.T) {
	t.Parallel()
	m := press(t, newTestModel(t, newFamilySource(), 100, 30), "/", "t", "enter")
	require.Contains(t, screen(m), "/t: 3 of 4") // tenants, upstream, reports: the note is no budget
}

func TestModel_Update_CursorStepsOverNotes(t *testing.T) {
	t.Parallel()
	m := newTestModel(t, newFamilySource(), 100, 30)
	for _, step := range []struct{ key, want string }{
		{"G", "upstream"}, {"k", "tenants"}, {"j", "upstream"}, {"g", "legacy"},
	} {
		m = press(t, m, step.key)
		b, ok := m.selectedBudget()
		require.True(t, ok, "after %s", step.key)
		require.Equal(t, step.want, b.Key, "after %s", step.key)
	}
}

// manyBudgets is a server with n plain budgets and one family.
func manyBudgets(n int) *fakeSource {
	src := newFamilySource()
	st := src.stats
	fam := st.Budgets[0]
	st.Budgets = []api.Budget{fam}
	for i := range n {
		key := fmt.Sprintf("u%04d", i) // after the family, "tenants"
		st.Budgets = append(st.Budgets, timeBased(key, 10, 1000, 0, api.BudgetState{Available: 10, Capacity: 10}))
		src.forecasts[key] = api.Forecast{Key: key}
	}
	src.stats = st
	return src
}

func TestModel_Update_ForecastsOnScreenOnly(t *testing.T) {
	t.Parallel()
	src := manyBudgets(5000)
	m := newTestModel(t, src, 80, 24)
	visible := m.tables[tabBudgets].visible()

	m = withExtras(t, m)
	forecasts := src.callsOf("forecast ")
	require.NotEmpty(t, forecasts)
	require.LessOrEqual(t, len(forecasts), visible, "one forecast per row on screen, not per budget")
	require.Equal(t, []string{"sub-budgets tenants"}, src.callsOf("sub-budgets "), "the family on screen")
	require.Contains(t, screen(m), "└ 120 keys; busiest")

	// Scrolled past the family: its sub-keys are no longer read.
	src.calls = nil
	m = press(t, m, "pgdown", "pgdown")
	m = withExtras(t, m)
	require.LessOrEqual(t, len(src.callsOf("forecast ")), visible)
	require.NotContains(t, src.callsOf("forecast "), "forecast tenants")
	require.Empty(t, src.callsOf("sub-budgets "))

	// Another tab: nothing on screen, nothing read.
	src.calls = nil
	m = press(t, m, "tab")
	require.Nil(t, m.fetchExtras())
	next, cmd := m.Update(extrasTickMsg{})
	require.NotNil(t, cmd, "the rounds go on, to start again on the Budgets tab")
	_ = next
	require.Empty(t, src.callsOf("forecast "))
}

func TestModel_Update_ForecastRoundsWaitASecond(t *testing.T) {
	t.Parallel()
	src := newFamilySource()
	m := newTestModel(t, src, 100, 30)
	var waits []time.Duration
	m.after = func(d time.Duration, msg tea.Msg) tea.Cmd {
		waits = append(waits, d)
		return func() tea.Msg { return msg }
	}
	cmd := m.fetchExtras()
	require.NotNil(t, cmd)
	next, cmd := m.Update(cmd())
	require.Equal(t, []time.Duration{extrasEvery}, waits, "after a round, a wait of a second: not another round at once")
	calls := len(src.callsOf("forecast "))
	msg := cmd()
	require.IsType(t, extrasTickMsg{}, msg)
	require.Len(t, src.callsOf("forecast "), calls, "the wait itself reads nothing")

	// The tick starts the next round.
	_, cmd = next.(Model).Update(msg)
	require.IsType(t, extrasMsg{}, cmd())
	require.Greater(t, len(src.callsOf("forecast ")), calls)
}

func TestModel_Update_PollStartsForecastRoundsOnce(t *testing.T) {
	t.Parallel()
	m := newTestModel(t, newFamilySource(), 100, 30) // the first poll came
	require.True(t, m.extrasOn)
}

func TestModel_DrainsIn(t *testing.T) {
	t.Parallel()
	plain := timeBased("b", 10, 1000, 0, api.BudgetState{Parked: 5})
	idle := timeBased("b", 10, 1000, 0, api.BudgetState{})
	idlePaused := idle
	idlePaused.Paused = true
	paused := plain
	paused.Paused = true
	pausedUntil := plain
	pausedUntil.PausedUntil = uint64(nowMs() + 30_000)
	pauseOver := plain
	pauseOver.Paused, pauseOver.PausedUntil = true, uint64(nowMs()-1)
	tests := []struct {
		name string
		b    api.Budget
		fc   *forecast
		want string
	}{
		{name: "NotYetAsked", b: plain, want: "…"},
		{name: "Exact", b: plain, fc: &forecast{f: api.Forecast{Parked: 5, DrainsAt: ptr(nowMs() + 12_000)}}, want: "12s"},
		{name: "Estimated", b: plain, fc: &forecast{f: api.Forecast{Parked: 5, DrainsAt: ptr(nowMs() + 170_000), Estimated: true}}, want: "~3m"},
		{name: "EstimatedSeconds", b: plain, fc: &forecast{f: api.Forecast{Parked: 5, DrainsAt: ptr(nowMs() + 42_400), Estimated: true}}, want: "~42s"},
		{name: "Unknown", b: plain, fc: &forecast{f: api.Forecast{Parked: 5, Estimated: true}}, want: "—"},
		{name: "NoBacklog", b: plain, fc: &forecast{f: api.Forecast{DrainsAt: ptr(nowMs())}}, want: "-"},
		// One rule for a budget with nothing parked: "-", never "now".
		{name: "IdleStaleForecast", b: idle, fc: &forecast{f: api.Forecast{Parked: 5, DrainsAt: ptr(nowMs() - 1_000)}}, want: "-"},
		{name: "IdleNotYetAsked", b: idle, want: "-"},
		{name: "IdlePaused", b: idlePaused, fc: &forecast{f: api.Forecast{Parked: 5}}, want: "-"},
		{name: "Failed", b: plain, fc: &forecast{err: errors.New("404")}, want: "?"},
		{name: "PausedNoEnd", b: paused, fc: &forecast{f: api.Forecast{Parked: 5}}, want: "paused"},
		{name: "PausedUntil", b: pausedUntil, fc: &forecast{f: api.Forecast{Parked: 5, DrainsAt: ptr(nowMs() + 31_000)}}, want: "31s"},
		{name: "PauseOver", b: pauseOver, fc: &forecast{f: api.Forecast{Parked: 5, DrainsAt: ptr(nowMs() + 1_000)}}, want: "1.0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := New(newFakeSource(), testOptions())
			if tt.fc != nil {
				m.forecasts[tt.b.Key] = *tt.fc
			}
			require.Equal(t, tt.want, m.drainsIn(tt.b))
		})
	}
}

func TestBusiest(t *testing.T) {
	t.Parallel()
	got := busiest(tenantSubs(), 3)
	keys := make([]string, len(got))
	for i, b := range got {
		keys[i] = b.Key
	}
	require.Equal(t, []string{"tenants/acme", "tenants/delta", "tenants/beta"}, keys, "by in flight, then parked, then key")
	require.Len(t, busiest(tenantSubs()[:1], 3), 1)
}

// A backlog whose drain time the server cannot tell says why in the
// detail panel, in the server's words.
func TestModel_BudgetMore_UnknownDrainSaysWhy(t *testing.T) {
	t.Parallel()
	src := newFakeSource()
	src.forecasts["reports"] = api.Forecast{Key: "reports", Parked: 2, Estimated: true, Unknown: "jobs run longer than observed"}
	m := withExtras(t, newTestModel(t, src, 100, 30))
	var reports api.Budget
	for _, b := range fixtureStats().Budgets {
		if b.Key == "reports" {
			reports = b
		}
	}
	require.Contains(t, strings.Join(m.budgetMore(reports), "\n"), "backlog of 2: drain time unknown: jobs run longer than observed")
}
