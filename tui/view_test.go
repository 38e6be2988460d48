package tui

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
	"github.com/stretchr/testify/require"
)

// updateGolden rewrites the golden files; run `go test ./tui/ -update` by
// hand after a deliberate change of the screen, never in CI.
var updateGolden = flag.Bool("update", false, "rewrite tui/testdata/*.golden")

func TestModel_View_Golden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		w, h int
		keys []string
		fail bool // the source fails after the first fetch
	}{
		{name: "budgets_80x24", w: 80, h: 24},
		{name: "budgets_120x40", w: 120, h: 40},
		{name: "budgets_selected_80x24", w: 80, h: 24, keys: []string{"j"}},
		{name: "queues_80x24", w: 80, h: 24, keys: []string{"tab"}},
		{name: "queues_120x40", w: 120, h: 40, keys: []string{"tab"}},
		{name: "inflight_80x24", w: 80, h: 24, keys: []string{"tab", "tab"}},
		{name: "inflight_120x40", w: 120, h: 40, keys: []string{"tab", "tab"}},
		{name: "ready_parked_80x24", w: 80, h: 24, keys: []string{"tab", "tab", "tab"}},
		{name: "ready_two_budgets_120x40", w: 120, h: 40, keys: []string{"tab", "tab", "tab", "j"}},
		{name: "ready_worker_80x24", w: 80, h: 24, keys: []string{"tab", "tab", "tab", "j", "j"}},
		{name: "scheduled_80x24", w: 80, h: 24, keys: []string{"shift+tab"}},
		{name: "help_80x24", w: 80, h: 24, keys: []string{"?"}},
		{name: "filter_typing_80x24", w: 80, h: 24, keys: []string{"/", "s", "e"}},
		{name: "filter_applied_120x40", w: 120, h: 40, keys: []string{"/", "i", "m", "enter", "tab"}},
		{name: "filter_nomatch_80x24", w: 80, h: 24, keys: []string{"tab", "tab", "tab", "/", "z", "z", "z", "enter"}},
		{name: "reconnecting_80x24", w: 80, h: 24, fail: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := newFakeSource()
			m := newTestModel(t, src, tt.w, tt.h)
			m = press(t, m, tt.keys...)
			if tt.fail {
				src.setErr(errors.New("cannot reach zizq server at http://127.0.0.1:7890: dial tcp 127.0.0.1:7890: connect: connection refused"))
				m = run(t, update(t, m, tickMsg{}), m.fetch(true))
				m = run(t, m, m.fetch(true))
			}
			requireGolden(t, tt.name, m.View())
		})
	}
}

func TestModel_View_Connecting(t *testing.T) {
	t.Parallel()
	src := newFakeSource()
	src.setErr(errors.New("dial tcp 127.0.0.1:7890: connect: connection refused"))
	m := newTestModel(t, src, 80, 24)
	requireGolden(t, "connecting_80x24", m.View())
}

func requireGolden(t *testing.T, name, got string) {
	t.Helper()
	requireNoEscapes(t, got)
	path := filepath.Join("testdata", name+".golden")
	if *updateGolden {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file; run go test ./tui/ -update")
	if string(want) != got {
		t.Errorf("%s differs from the view (run go test ./tui/ -update after a deliberate change)\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}

// TestModel_View_Sizes checks that every size, tiny ones included, draws
// exactly one screen: height lines, none wider than the width.
func TestModel_View_Sizes(t *testing.T) {
	t.Parallel()
	sizes := []struct{ w, h int }{{1, 1}, {20, 5}, {40, 10}, {60, 15}, {80, 24}, {100, 30}, {120, 40}, {250, 70}}
	for _, tb := range []tab{tabBudgets, tabQueues, tabInFlight, tabReady, tabScheduled} {
		m := newTestModel(t, newFakeSource(), 80, 24)
		for range tb {
			m = press(t, m, "tab")
		}
		for _, help := range []bool{false, true} {
			if help {
				m = press(t, m, "?")
			}
			for _, s := range sizes {
				m = update(t, m, tea.WindowSizeMsg{Width: s.w, Height: s.h})
				lines := strings.Split(m.View(), "\n")
				require.Len(t, lines, s.h, "tab %d at %dx%d", tb, s.w, s.h)
				for _, l := range lines {
					require.LessOrEqual(t, ansi.StringWidth(l), s.w, "tab %d at %dx%d: %q", tb, s.w, s.h, l)
				}
			}
		}
	}
}

// TestModel_View_Colour checks that parked rows stand out by colour when
// colour is on, and that NoColor output is plain.
func TestModel_View_Colour(t *testing.T) {
	t.Parallel()
	m := newTestModel(t, newFakeSource(), 80, 24)
	requireNoEscapes(t, m.View())

	r := lipgloss.NewRenderer(os.Stdout)
	r.SetColorProfile(termenv.TrueColor)
	r.SetHasDarkBackground(true)
	*m.st = newStyles(r)
	var parkedLine, calmLine string
	for _, l := range strings.Split(m.View(), "\n") {
		switch {
		case strings.Contains(l, "smtp"):
			parkedLine = l
		case strings.Contains(l, "reports"):
			calmLine = l
		}
	}
	require.Contains(t, parkedLine, "\x1b[38;2;", "a budget with parked jobs has a foreground colour")
	require.NotContains(t, calmLine, "\x1b[", "a budget without parked jobs is plain")
}

func TestModel_View_Loading(t *testing.T) {
	t.Parallel()
	m := newTestModel(t, newFakeSource(), 80, 24)
	m = update(t, m, keyMsg("tab"))
	m = update(t, m, keyMsg("tab")) // the fetch of the in-flight list is not answered yet
	require.Contains(t, m.View(), "  loading…")
}
