package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
)

// state is what a key press can change, as the tests see it.
type state struct {
	Tab       tab
	Selected  string // key of the row under the cursor
	Filter    string
	Filtering bool
	Help      bool
	Quit      bool
}

func stateOf(m Model) state {
	r, _ := m.tables[m.tab].Selected()
	return state{
		Tab:       m.tab,
		Selected:  r.key,
		Filter:    m.filter,
		Filtering: m.filtering,
		Help:      m.help.ShowAll,
		Quit:      m.quitting,
	}
}

func TestModel_Update_Keys(t *testing.T) {
	t.Parallel()
	// Budgets sort by key, whatever their figures: geo-api, image-service,
	// partner-webhooks-…, reports, smtp.
	const longKey = "partner-webhooks-eu-west-1-production"
	tests := []struct {
		name string
		size [2]int // default 80×24
		keys []string
		want state
	}{
		{name: "Start", want: state{Tab: tabBudgets, Selected: "geo-api"}},
		{name: "DownJ", keys: []string{"j"}, want: state{Selected: "image-service"}},
		{name: "DownArrow", keys: []string{"down", "down"}, want: state{Selected: longKey}},
		{name: "UpStopsAtTop", keys: []string{"k", "up"}, want: state{Selected: "geo-api"}},
		{name: "DownStopsAtBottom", keys: []string{"j", "j", "j", "j", "j", "j", "j"}, want: state{Selected: "smtp"}},
		{name: "UpAfterDown", keys: []string{"j", "j", "k"}, want: state{Selected: "image-service"}},
		{name: "Bottom", keys: []string{"G"}, want: state{Selected: "smtp"}},
		{name: "BottomThenTop", keys: []string{"G", "g"}, want: state{Selected: "geo-api"}},
		{name: "EndHome", keys: []string{"end", "home"}, want: state{Selected: "geo-api"}},
		{name: "PageDown", keys: []string{"pgdown"}, want: state{Selected: "smtp"}},
		{name: "PageDownSmallScreen", size: [2]int{80, 8}, keys: []string{"pgdown"}, want: state{Selected: "reports"}},
		{name: "PageUp", keys: []string{"G", "pgup"}, want: state{Selected: "geo-api"}},
		{name: "TabToQueues", keys: []string{"tab"}, want: state{Tab: tabQueues, Selected: "emails"}},
		{name: "TabToInFlight", keys: []string{"tab", "tab"}, want: state{Tab: tabInFlight, Selected: jobID(1)}},
		{name: "TabToReady", keys: []string{"tab", "tab", "tab"}, want: state{Tab: tabReady, Selected: jobID(10)}},
		{name: "ShiftTabWraps", keys: []string{"shift+tab"}, want: state{Tab: tabCrons, Selected: "billing"}},
		{name: "TabToScheduled", keys: []string{"tab", "tab", "tab", "tab"}, want: state{Tab: tabScheduled, Selected: jobID(20)}},
		{name: "TabWrapsAround", keys: []string{"tab", "tab", "tab", "tab", "tab", "tab"}, want: state{Tab: tabBudgets, Selected: "geo-api"}},
		{name: "MoveInCronTab", keys: []string{"shift+tab", "j"}, want: state{Tab: tabCrons, Selected: "maintenance"}},
		{name: "FilterCrons", keys: []string{"shift+tab", "/", "n", "i", "g", "h", "enter"}, want: state{Tab: tabCrons, Selected: "reports", Filter: "nigh"}},
		{name: "TabThenBack", keys: []string{"tab", "shift+tab"}, want: state{Tab: tabBudgets, Selected: "geo-api"}},
		{name: "CursorPerTab", keys: []string{"j", "tab", "G", "shift+tab"}, want: state{Tab: tabBudgets, Selected: "image-service"}},
		{name: "MoveInJobTab", keys: []string{"tab", "tab", "tab", "j", "j"}, want: state{Tab: tabReady, Selected: jobID(12)}},
		{name: "FilterStarts", keys: []string{"/"}, want: state{Selected: "geo-api", Filtering: true}},
		{name: "FilterTyping", keys: []string{"/", "g", "e", "o"}, want: state{Selected: "geo-api", Filter: "geo", Filtering: true}},
		{name: "FilterIgnoresCase", keys: []string{"/", "S", "M"}, want: state{Selected: "smtp", Filter: "SM", Filtering: true}},
		{name: "FilterBackspace", keys: []string{"/", "g", "e", "o", "x", "backspace"}, want: state{Selected: "geo-api", Filter: "geo", Filtering: true}},
		{name: "FilterAccept", keys: []string{"/", "r", "e", "p", "enter"}, want: state{Selected: "reports", Filter: "rep"}},
		{name: "FilterCancel", keys: []string{"/", "r", "e", "p", "esc"}, want: state{Selected: "reports"}},
		{name: "FilterNoMatch", keys: []string{"/", "z", "z", "enter"}, want: state{Filter: "zz"}},
		{name: "FilterTypesQ", keys: []string{"/", "q"}, want: state{Filter: "q", Filtering: true}},
		{name: "FilterTypesKeys", keys: []string{"/", "j", "?", "G"}, want: state{Filter: "j?G", Filtering: true}},
		{name: "FilterAppliesToJobs", keys: []string{"/", "s", "m", "t", "p", "enter", "tab", "tab"}, want: state{Tab: tabInFlight, Selected: jobID(1), Filter: "smtp"}},
		{name: "FilterAppliesToQueues", keys: []string{"tab", "/", "i", "m", "enter"}, want: state{Tab: tabQueues, Selected: "images", Filter: "im"}},
		{name: "EscClearsFilter", keys: []string{"/", "g", "e", "o", "enter", "esc"}, want: state{Selected: "geo-api"}},
		{name: "SlashAgainEditsFilter", keys: []string{"/", "g", "enter", "/", "e", "o"}, want: state{Selected: "geo-api", Filter: "geo", Filtering: true}},
		{name: "KeysAfterQuitIgnored", keys: []string{"j", "q", "j"}, want: state{Selected: "image-service", Quit: true}},
		{name: "HelpOpens", keys: []string{"?"}, want: state{Selected: "geo-api", Help: true}},
		{name: "HelpCloses", keys: []string{"?", "?"}, want: state{Selected: "geo-api"}},
		{name: "EscClosesHelp", keys: []string{"?", "esc"}, want: state{Selected: "geo-api"}},
		{name: "HelpKeepsNavigation", keys: []string{"?", "j"}, want: state{Selected: "image-service", Help: true}},
		{name: "Quit", keys: []string{"q"}, want: state{Selected: "geo-api", Quit: true}},
		{name: "CtrlCQuits", keys: []string{"ctrl+c"}, want: state{Selected: "geo-api", Quit: true}},
		{name: "CtrlCQuitsWhileFiltering", keys: []string{"/", "ctrl+c"}, want: state{Selected: "geo-api", Filtering: true, Quit: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w, h := 80, 24
			if tt.size != [2]int{} {
				w, h = tt.size[0], tt.size[1]
			}
			m := newTestModel(t, newFakeSource(), w, h)
			m = press(t, m, tt.keys...)
			require.Equal(t, tt.want, stateOf(m))
		})
	}
}

func TestModel_Update_QuitCommand(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"q", "ctrl+c"} {
		m := newTestModel(t, newFakeSource(), 80, 24)
		next, cmd := m.Update(keyMsg(k))
		require.NotNil(t, cmd, k)
		require.IsType(t, tea.QuitMsg{}, cmd(), k)
		require.Empty(t, screen(next.(Model)), "a quitting dashboard leaves the screen empty")
	}
}

func TestModel_Update_FetchesVisibleTab(t *testing.T) {
	t.Parallel()
	src := newFakeSource()
	m := newTestModel(t, src, 80, 24)
	require.Equal(t, []string{"stats"}, src.calls, "the budgets tab needs /stats only")

	src.calls = nil
	m = press(t, m, "tab", "tab", "tab")
	require.Equal(t, []string{
		"stats", "jobs in_flight",
		"stats", "jobs ready", "parked", "why " + jobID(10), // the cursor lands on a job: explain it
	}, src.calls)

	src.calls = nil
	m = press(t, m, "j")
	require.Equal(t, []string{"why " + jobID(11)}, src.calls, "moving the cursor explains the new job")
	require.Equal(t, jobID(11), m.whyID)
	require.Equal(t, api.WaitingBudget, m.why.WaitingFor)

	src.calls = nil
	next, cmd := m.Update(tickMsg{})
	m = run(t, next.(Model), cmd)
	require.Equal(t, []string{"stats", "jobs ready", "parked", "why " + jobID(11)}, src.calls,
		"each poll reads stats, the visible list (with the parked jobs among the ready ones) and the selected job's why")
}

func TestModel_Update_StaleAnswersLose(t *testing.T) {
	t.Parallel()
	src := newFakeSource()
	m := newTestModel(t, src, 80, 24)
	m = press(t, m, "tab", "tab", "tab")

	old := m.fetch(false)
	newer := m.fetch(false)
	src.jobs[api.StatusReady] = api.JobList{Jobs: src.jobs[api.StatusReady].Jobs[:1]}
	m = run(t, m, newer)
	require.Len(t, m.tables[tabReady].rows, 1)

	src.jobs = fixtureJobs()
	m = update(t, m, old())
	require.Len(t, m.tables[tabReady].rows, 1, "an answer older than the one shown is dropped")

	// A why about a job that is no longer selected is dropped too.
	m = update(t, m, whyMsg{seq: 1_000, id: jobID(12), why: api.Why{ID: jobID(12), WaitingFor: api.WaitingWorker}})
	require.Equal(t, jobID(10), m.whyID)
}

func TestModel_Update_SourceFailsAndRecovers(t *testing.T) {
	t.Parallel()
	src := newFakeSource()
	now := fixedNow
	opts := testOptions()
	opts.Now = func() time.Time { return now } // Update runs on this goroutine only
	m := New(src, opts)
	m = run(t, m, m.Init())
	require.Equal(t, connConnected, m.conn)
	require.Contains(t, screen(m), "● connected")

	poll := func(m Model) (Model, tea.Cmd) {
		next, cmd := m.Update(tickMsg{})
		require.NotNil(t, cmd, "a tick fetches")
		next, cmd = next.(Model).Update(cmd())
		require.NotNil(t, cmd, "every answer, good or bad, schedules the next poll")
		return next.(Model), cmd
	}

	src.setErr(errors.New("dial tcp 127.0.0.1:7890: connect: connection refused"))
	for i, wantRetry := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second} {
		now = now.Add(time.Second)
		m, _ = poll(m)
		require.Equal(t, connReconnecting, m.conn)
		require.Equal(t, i+1, m.failures)
		require.Equal(t, wantRetry, m.retryIn, "failure %d", i+1)
	}
	view := screen(m)
	require.Contains(t, view, "○ reconnecting (retry in 5.0s)")
	require.Contains(t, view, "failed 5× (data 5.0s old): dial tcp 127.0.0.1:7890: connect: connection refused")
	require.Contains(t, view, "smtp", "the last data stays on screen")
	require.Equal(t, "4", parkedCell(t, m, "smtp"))

	// The server comes back with other figures.
	stats := fixtureStats()
	stats.Budgets[2].State.Parked = 1
	src.setStats(stats)
	src.setErr(nil)
	m, _ = poll(m)
	require.Equal(t, connConnected, m.conn)
	require.Zero(t, m.failures)
	require.Equal(t, 500*time.Millisecond, m.retryIn)
	require.NoError(t, m.lastErr)
	view = screen(m)
	require.Contains(t, view, "● connected")
	require.NotContains(t, view, "reconnecting")
	require.NotContains(t, view, "connection refused")
	require.Equal(t, "1", parkedCell(t, m, "smtp"))
}

// rowKeys are the keys of a tab's rows, in order.
func rowKeys(m Model, t tab) []string {
	var keys []string
	for _, r := range m.tables[t].rows {
		keys = append(keys, r.key)
	}
	return keys
}

// TestModel_Update_RowsStayPutOnRefresh: the figures of a refresh move no
// row, so nothing jumps under the cursor, and the cursor stays on its
// budget.
func TestModel_Update_RowsStayPutOnRefresh(t *testing.T) {
	t.Parallel()
	src := newFakeSource()
	m := newTestModel(t, src, 80, 24)
	m = press(t, m, "j", "j")
	require.Equal(t, "partner-webhooks-eu-west-1-production", stateOf(m).Selected)
	before := rowKeys(m, tabBudgets)

	stats := fixtureStats()
	stats.Budgets[1].State.Parked = 50 // geo-api now parks the most
	stats.Budgets[3].State.Parked = 0  // image-service none
	stats.Budgets[4].State.Parked = 9  // the selected budget some
	src.setStats(stats)
	m = run(t, m, m.fetch(false))
	require.Equal(t, before, rowKeys(m, tabBudgets), "no row moved")
	require.Equal(t, "partner-webhooks-eu-west-1-production", stateOf(m).Selected)
	require.Equal(t, 2, m.tables[tabBudgets].cursor)

	stats.Budgets = stats.Budgets[:4] // the selected budget is deleted
	src.setStats(stats)
	m = run(t, m, m.fetch(false))
	require.Equal(t, "reports", stateOf(m).Selected, "the cursor stays in place when its row goes")
}

// TestModel_Update_NaturalOrder: names sort with their numbers by value,
// in every tab of names.
func TestModel_Update_NaturalOrder(t *testing.T) {
	t.Parallel()
	src := newFakeSource()
	stats := fixtureStats()
	stats.Budgets, stats.Queues, stats.Crons = nil, nil, nil
	for _, n := range []string{"b100", "b10", "b2", "b1", "a"} {
		stats.Budgets = append(stats.Budgets, whileInFlight(n, 1, api.BudgetState{Capacity: 1, Available: 1}))
		stats.Queues = append(stats.Queues, api.QueueStats{Name: n, Ready: 1})
		stats.Crons = append(stats.Crons, api.CronStats{Name: n, Entries: 1})
	}
	src.setStats(stats)
	m := newTestModel(t, src, 120, 40)
	want := []string{"a", "b1", "b2", "b10", "b100"}
	for _, tb := range []tab{tabBudgets, tabQueues, tabCrons} {
		require.Equal(t, want, rowKeys(m, tb), tabNames[tb])
	}
}

func TestModel_Update_Resize(t *testing.T) {
	t.Parallel()
	m := newTestModel(t, newFakeSource(), 80, 24)
	m = press(t, m, "G")
	m = update(t, m, tea.WindowSizeMsg{Width: 40, Height: 8})
	tb := m.tables[tabBudgets]
	require.Equal(t, "smtp", stateOf(m).Selected)
	require.GreaterOrEqual(t, tb.cursor, tb.offset)
	require.Less(t, tb.cursor, tb.offset+tb.visible(), "the cursor stays on screen after a shrink")
	m = update(t, m, tea.WindowSizeMsg{Width: 120, Height: 40})
	require.Zero(t, m.tables[tabBudgets].offset, "everything fits again")
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		refresh  time.Duration
		failures int
		want     time.Duration
	}{
		{500 * time.Millisecond, 1, 500 * time.Millisecond},
		{500 * time.Millisecond, 2, time.Second},
		{500 * time.Millisecond, 4, 4 * time.Second},
		{500 * time.Millisecond, 5, 5 * time.Second},
		{500 * time.Millisecond, 100, 5 * time.Second},
		{10 * time.Second, 1, 10 * time.Second},
		{10 * time.Second, 3, 10 * time.Second},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, backoff(tt.refresh, tt.failures), "%v after %d", tt.refresh, tt.failures)
	}
}

// parkedCell is what the PARKED column shows for a budget.
func parkedCell(t *testing.T, m Model, key string) string {
	t.Helper()
	for _, r := range m.tables[tabBudgets].rows {
		if r.key == key {
			return r.cells[5]
		}
	}
	t.Fatalf("no row for budget %q", key)
	return ""
}

func TestModel_Update_PasteIntoFilter(t *testing.T) {
	t.Parallel()
	m := newTestModel(t, newFakeSource(), 80, 24)
	m = press(t, m, "/")
	m = update(t, m, tea.PasteMsg{Content: "geo-a"})
	require.Equal(t, state{Selected: "geo-api", Filter: "geo-a", Filtering: true}, stateOf(m))

	m = press(t, m, "esc")
	m = update(t, m, tea.PasteMsg{Content: "q"})
	require.Equal(t, state{Selected: "geo-api"}, stateOf(m), "a paste outside the filter is no key press")
}

func TestOneLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{errors.New("boom"), "boom"},
		{errors.New("line one\n\tline two"), "line one line two"},
		{fmt.Errorf("stats: %w", &url.Error{Op: "Get", URL: "http://x/stats", Err: errors.New("connection refused")}), "connection refused"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, oneLine(tt.err))
	}
}

// TestModel_Program_KeysTypedFast runs the dashboard in a real Bubble Tea
// program fed a burst of bytes, as a terminal delivers keys typed faster
// than they are read: each key is handled on its own, and nothing after
// the key that quits.
func TestModel_Program_KeysTypedFast(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		typed string
		want  state // Tab, Filter, Filtering and Quit; the rows may not be in yet
	}{
		{name: "FilterTyping", typed: "/sm\x03", want: state{Filter: "sm", Filtering: true, Quit: true}},
		{name: "QuitMidBurst", typed: "\tq\t", want: state{Tab: tabQueues, Quit: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			p := tea.NewProgram(New(newFakeSource(), testOptions()),
				tea.WithContext(ctx), tea.WithInput(strings.NewReader(tt.typed)), tea.WithOutput(io.Discard),
				tea.WithWindowSize(80, 24), tea.WithoutSignals())
			final, err := p.Run()
			require.NoError(t, err)
			got := stateOf(final.(Model))
			got.Selected = ""
			require.Equal(t, tt.want, got)
		})
	}
}
