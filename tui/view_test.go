package tui

import (
	"errors"
	"flag"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
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
		src  func() *fakeSource
	}{
		{name: "budgets_family_80x24", w: 80, h: 24, src: newFamilySource},
		{name: "budgets_family_120x40", w: 120, h: 40, src: newFamilySource},
		{name: "budgets_family_50x12", w: 50, h: 12, src: newFamilySource},
		{name: "budgets_family_selected_80x24", w: 80, h: 24, keys: []string{"j"}, src: newFamilySource},
		{name: "budgets_settle_80x24", w: 80, h: 24, src: newSettleSource},
		{name: "budgets_settle_debt_80x24", w: 80, h: 24, keys: []string{"j"}, src: newSettleSource},
		{name: "budgets_settle_debt_120x40", w: 120, h: 40, keys: []string{"j"}, src: newSettleSource},
		{name: "budgets_settle_50x12", w: 50, h: 12, src: newSettleSource},
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
		{name: "scheduled_80x24", w: 80, h: 24, keys: []string{"shift+tab", "shift+tab"}},
		{name: "crons_80x24", w: 80, h: 24, keys: []string{"shift+tab"}},
		{name: "crons_120x40", w: 120, h: 40, keys: []string{"shift+tab"}},
		{name: "crons_selected_80x24", w: 80, h: 24, keys: []string{"shift+tab", "j"}},
		{name: "crons_50x12", w: 50, h: 12, keys: []string{"shift+tab"}},
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
			if tt.src != nil {
				src = tt.src()
			}
			m := newTestModel(t, src, tt.w, tt.h)
			m = withExtras(t, m)
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
		{120, "jobs  scheduled 3  ready 120  parked 338  in flight 15"},
		{54, "jobs  scheduled 3  ready 120  parked 338  in flight 15"},
		{53, "scheduled 3  ready 120  parked 338  in flight 15"},
		{50, "scheduled 3  ready 120  parked 338  in flight 15"},
		{47, "sched 3  ready 120  parked 338  flight 15"},
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

// TestModel_View_ReadyAndParkedAgree checks that the header and the Ready
// tab say the same: "ready N" and "parked M" in both, N the ready jobs
// without the parked ones, at every size and on every tab; the tab holds
// both kinds and says which row is which.
func TestModel_View_ReadyAndParkedAgree(t *testing.T) {
	t.Parallel()
	header := regexp.MustCompile(`\bready (\d+)  parked (\d+)\b`)
	label := regexp.MustCompile(`\bReady (\d+) · parked (\d+)\b`)
	for _, counts := range []api.JobCounts{{Scheduled: 3, Ready: 120, Parked: 16, InFlight: 15}, {Ready: 0, Parked: 178}, {Ready: 7}} {
		src := newFakeSource()
		stats := fixtureStats()
		stats.Jobs = counts
		src.setStats(stats)
		for _, tb := range []tab{tabBudgets, tabQueues, tabInFlight, tabReady, tabScheduled} {
			for _, size := range [][2]int{{50, 12}, {80, 24}, {120, 40}} {
				m := newTestModel(t, src, size[0], size[1])
				for range tb {
					m = press(t, m, "tab")
				}
				lines := strings.Split(screen(m), "\n")
				h := header.FindStringSubmatch(lines[1])
				require.NotNil(t, h, "header at %v: %q", size, lines[1])
				require.Equal(t, []string{fmt.Sprint(counts.Ready), fmt.Sprint(counts.Parked)}, h[1:], "header at %v", size)
				if l := label.FindStringSubmatch(lines[2]); l != nil {
					require.Equal(t, h[1:], l[1:], "tab %d at %v: %q", tb, size, lines[2])
				} else {
					require.NotRegexp(t, `Ready \d`, lines[2], "the Ready tab counts in the header's words: tab %d at %v", tb, size)
				}
				if tb == tabReady {
					require.Regexp(t, `\[Ready \d+ · parked \d+\]`, lines[2], "the visible tab has its counts at %v", size)
				}
			}
		}
	}

	// The rows say which jobs are parked, in words and in colour, and
	// "/parked" keeps those.
	m := newTestModel(t, newFakeSource(), 120, 40)
	m = press(t, m, "tab", "tab", "tab")
	states := map[string]string{}
	for _, l := range strings.Split(screen(m), "\n") {
		if f := strings.Fields(strings.TrimPrefix(l, ">")); len(f) > 6 && strings.HasPrefix(f[0], jobID(0)[:20]) {
			states[f[0]] = f[5]
		}
	}
	require.Equal(t, map[string]string{jobID(10): "parked", jobID(11): "parked", jobID(12): "ready", jobID(13): "ready"}, states)
	for _, r := range m.tables[tabReady].rows {
		require.Equal(t, r.key == jobID(10) || r.key == jobID(11), r.tone == toneParked, r.key)
	}
	m = press(t, m, "/", "p", "a", "r", "k", "e", "d", "enter")
	require.Len(t, m.tables[tabReady].rows, 2)
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
