package tui

import (
	"errors"
	"flag"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
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
		{name: "budgets_50x12", w: 50, h: 12},
		{name: "queues_50x12", w: 50, h: 12, keys: []string{"tab"}},
		{name: "inflight_50x12", w: 50, h: 12, keys: []string{"tab", "tab"}},
		{name: "ready_parked_50x12", w: 50, h: 12, keys: []string{"tab", "tab", "tab"}},
		{name: "filter_applied_50x12", w: 50, h: 12, keys: []string{"/", "i", "m", "enter"}},
		{name: "reconnecting_50x12", w: 50, h: 12, fail: true},
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
			requireGolden(t, tt.name, screen(m))
		})
	}
}

func TestModel_View_Connecting(t *testing.T) {
	t.Parallel()
	src := newFakeSource()
	src.setErr(errors.New("dial tcp 127.0.0.1:7890: connect: connection refused"))
	m := newTestModel(t, src, 80, 24)
	requireGolden(t, "connecting_80x24", screen(m))
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
				lines := strings.Split(screen(m), "\n")
				require.Len(t, lines, s.h, "tab %d at %dx%d", tb, s.w, s.h)
				for _, l := range lines {
					require.LessOrEqual(t, ansi.StringWidth(l), s.w, "tab %d at %dx%d: %q", tb, s.w, s.h, l)
				}
			}
		}
	}
}

// TestModel_View_Colour checks that parked rows stand out by colour when
// colour is on, in the colours for the terminal's background, and that
// NoColor output is plain.
func TestModel_View_Colour(t *testing.T) {
	t.Parallel()
	m := newTestModel(t, newFakeSource(), 80, 24)
	requireNoEscapes(t, screen(m))

	lines := func(m Model) (parked, calm string) {
		for _, l := range strings.Split(screen(m), "\n") {
			switch {
			case strings.Contains(l, "smtp"):
				parked = l
			case strings.Contains(l, "reports"):
				calm = l
			}
		}
		return parked, calm
	}
	m.opts.NoColor = false
	parked, calm := lines(m)
	require.Contains(t, parked, "\x1b[38;2;255;175;0m", "a budget with parked jobs has the dark background's warning colour")
	require.NotContains(t, calm, "\x1b[", "a budget without parked jobs is plain")

	m = update(t, m, tea.BackgroundColorMsg{Color: color.White})
	parked, _ = lines(m)
	require.Contains(t, parked, "\x1b[38;2;179;89;0m", "on a light background, the light warning colour")
}

// TestModel_Init_AsksBackgroundOnce checks that the dashboard asks the
// terminal for its background colour once, at start, and only when it
// draws in colour.
func TestModel_Init_AsksBackgroundOnce(t *testing.T) {
	t.Parallel()
	for _, noColor := range []bool{false, true} {
		opts := testOptions()
		opts.NoColor = noColor
		m := New(newFakeSource(), opts)
		asks := 0
		for _, msg := range initMessages(m) {
			if msg == tea.RequestBackgroundColor() {
				asks++
			}
		}
		want := 1
		if noColor {
			want = 0
		}
		require.Equal(t, want, asks, "NoColor %v", noColor)
	}
}

// initMessages runs the commands of Init and returns their messages.
func initMessages(m Model) []tea.Msg {
	cmd := m.Init()
	if cmd == nil {
		return nil
	}
	msg := cmd()
	batch, ok := msg.(tea.BatchMsg)
	if !ok {
		return []tea.Msg{msg}
	}
	var msgs []tea.Msg
	for _, c := range batch {
		msgs = append(msgs, c())
	}
	return msgs
}

func TestModel_View_Loading(t *testing.T) {
	t.Parallel()
	m := newTestModel(t, newFakeSource(), 80, 24)
	m = update(t, m, keyMsg("tab"))
	m = update(t, m, keyMsg("tab")) // the fetch of the in-flight list is not answered yet
	require.Contains(t, screen(m), "  loading…")
}

// TestModel_View_CountsNeverCut checks the line of job counts: narrower
// screens shorten its labels, then keep only what waits, and a number is
// cut only as a last resort, with "…".
func TestModel_View_CountsNeverCut(t *testing.T) {
	t.Parallel()
	tests := []struct {
		width int
		want  string
	}{
		{120, "jobs  scheduled 3  ready 120  in flight 15  parked 338"},
		{54, "jobs  scheduled 3  ready 120  in flight 15  parked 338"},
		{53, "scheduled 3  ready 120  in flight 15  parked 338"},
		{50, "scheduled 3  ready 120  in flight 15  parked 338"},
		{47, "sched 3  ready 120  flight 15  parked 338"},
		{40, "ready 120  parked 338"},
		{20, "parked 338"},
		{8, "parked …"},
	}
	src := newFakeSource()
	stats := fixtureStats()
	stats.Jobs.Parked = 338
	src.setStats(stats)
	for _, tt := range tests {
		m := newTestModel(t, src, tt.width, 24)
		require.Equal(t, tt.want, strings.Split(screen(m), "\n")[1], "width %d", tt.width)
	}
}

// TestModel_View_StatusOutlastsURL checks that a long URL is shortened,
// with "…", rather than the connection status left out.
func TestModel_View_StatusOutlastsURL(t *testing.T) {
	t.Parallel()
	opts := testOptions()
	opts.URL = "https://zizq-queue.eu-west-1.internal.example.com:7890"
	m := New(newFakeSource(), opts)
	m = update(t, m, tea.WindowSizeMsg{Width: 50, Height: 12})
	m = run(t, m, m.Init())
	require.Equal(t, "zizq top  https://zizq-queue.eu-west…  ● connected", strings.Split(screen(m), "\n")[0])
}

// TestModel_View_HiddenColumnsShown checks, at every width, that the tabs
// line says how many columns the visible table leaves out.
func TestModel_View_HiddenColumnsShown(t *testing.T) {
	t.Parallel()
	for _, tb := range []tab{tabBudgets, tabQueues, tabInFlight, tabReady, tabScheduled} {
		m := newTestModel(t, newFakeSource(), 80, 24)
		for range tb {
			m = press(t, m, "tab")
		}
		for w := 30; w <= 160; w++ {
			m = update(t, m, tea.WindowSizeMsg{Width: w, Height: 24})
			tabs := strings.Split(screen(m), "\n")[2]
			switch n := m.tables[tb].hidden(); n {
			case 0:
				require.NotContains(t, tabs, " col", "tab %d at width %d", tb, w)
			case 1:
				require.True(t, strings.HasSuffix(tabs, "+1 col"), "tab %d at width %d: %q", tb, w, tabs)
			default:
				require.True(t, strings.HasSuffix(tabs, fmt.Sprintf("+%d cols", n)), "tab %d at width %d: %q", tb, w, tabs)
			}
		}
	}
}

func TestFrame(t *testing.T) {
	t.Parallel()
	require.Equal(t, "ab\nabcd…\n", frame("ab  \nabcdefgh", 5, 3), "a cut line ends in …; short lines are padded")
	require.Equal(t, "ab", frame("ab\ncd", 5, 1))
}
