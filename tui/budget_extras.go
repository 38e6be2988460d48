package tui

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/zizq/zizq/api"
)

// Beside the budgets that the stream or the poll brings, the Budgets tab
// shows what only a request per budget says: when its backlog drains
// (GET /budgets/{key}/forecast) and, for a family, its busiest sub-keys
// (GET /budgets?parent=KEY). A server may hold thousands of budgets, so
// these are read only for the rows on screen, one request at a time, and
// the next round starts extrasEvery after the last one ended: never more
// than one round a second, and none while another tab shows.

// extrasEvery is the least time between two rounds of forecasts.
const extrasEvery = time.Second

// busiestShown is how many sub-keys of a family its note names.
const busiestShown = 3

// extrasTickMsg asks for the next round.
type extrasTickMsg struct{}

// extrasMsg is the answer of one round.
type extrasMsg struct {
	forecasts map[string]forecast
	families  map[string]family
}

// forecast is the last answer of a budget's forecast.
type forecast struct {
	f   api.Forecast
	err error
}

// family is what the last read of a family's sub-budgets said.
type family struct {
	busiest []api.Budget // the busiest sub-budgets, busiest first
	count   int          // how many the read listed
	err     error
	// subs is every sub-budget the read listed, until applyExtras has
	// added them to window, the last minute's dispatches (shares.go).
	subs   []api.Budget
	window *shareWindow
}

// tickExtras waits extrasEvery, then asks for the next round.
func (m *Model) tickExtras() tea.Cmd { return m.after(extrasEvery, extrasTickMsg{}) }

// afterTick is Model.after outside tests: msg once d has passed.
func afterTick(d time.Duration, msg tea.Msg) tea.Cmd {
	return tea.Tick(d, func(time.Time) tea.Msg { return msg })
}

// budgetsOnScreen returns the budgets whose rows the Budgets tab shows now;
// none while another tab shows.
func (m *Model) budgetsOnScreen() []api.Budget {
	if m.tab != tabBudgets {
		return nil
	}
	byKey := make(map[string]api.Budget, len(m.stats.Budgets))
	for _, b := range m.stats.Budgets {
		byKey[b.Key] = b
	}
	var out []api.Budget
	for _, r := range m.tables[tabBudgets].onScreen() {
		if b, ok := byKey[r.key]; ok && !r.note {
			out = append(out, b)
		}
	}
	return out
}

// fetchExtras returns the command of one round for the budgets on screen,
// or nil when there are none.
func (m *Model) fetchExtras() tea.Cmd {
	bs := m.budgetsOnScreen()
	if len(bs) == 0 {
		return nil
	}
	src, ctx, timeout := m.src, m.ctx, m.timeout()
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		msg := extrasMsg{forecasts: map[string]forecast{}, families: map[string]family{}}
		for _, b := range bs {
			f, err := src.Forecast(ctx, b.Key)
			msg.forecasts[b.Key] = forecast{f: f, err: err}
			if b.PerKey != nil {
				subs, err := src.SubBudgets(ctx, b.Key)
				msg.families[b.Key] = family{busiest: busiest(subs, busiestShown), count: len(subs), err: err, subs: subs}
			}
		}
		return msg
	}
}

// applyExtras keeps a round's answers, forgets those of budgets gone, and
// schedules the next round.
func (m *Model) applyExtras(msg extrasMsg) tea.Cmd {
	m.now = m.opts.Now()
	for k, f := range msg.forecasts {
		m.forecasts[k] = f
	}
	for k, f := range msg.families {
		f.window = m.families[k].window
		if f.err == nil {
			f.window = f.window.observe(m.now, f.subs)
		}
		f.subs = nil
		m.families[k] = f
	}
	live := make(map[string]bool, len(m.stats.Budgets))
	for _, b := range m.stats.Budgets {
		live[b.Key] = true
	}
	maps.DeleteFunc(m.forecasts, func(k string, _ forecast) bool { return !live[k] })
	maps.DeleteFunc(m.families, func(k string, _ family) bool { return !live[k] })
	m.rebuild()
	return m.tickExtras()
}

// busiest returns the n sub-budgets with the most jobs in flight, then
// the most parked, then by key.
func busiest(subs []api.Budget, n int) []api.Budget {
	figures := func(b api.Budget) (inFlight, parked int64) {
		if b.State == nil {
			return 0, 0
		}
		return b.State.InFlight, b.State.Parked
	}
	out := slices.Clone(subs)
	slices.SortFunc(out, func(a, b api.Budget) int {
		af, ap := figures(a)
		bf, bp := figures(b)
		return cmp.Or(cmp.Compare(bf, af), cmp.Compare(bp, ap), cmp.Compare(a.Key, b.Key))
	})
	return out[:min(n, len(out))]
}

// subKeyCount is the number of a family's live sub-keys: the live figure
// when the budget has one, else the last read's.
func (m *Model) subKeyCount(b api.Budget) int64 {
	if b.State != nil && b.State.SubBudgets != nil {
		return *b.State.SubBudgets
	}
	return int64(m.families[b.Key].count)
}

// familyNote says, under a family's row, its sub-key count and its
// busiest sub-keys with their jobs in flight/parked, as in "120 keys;
// busiest (in flight/parked): acme 4/12, beta 2/0, …".
func (m *Model) familyNote(b api.Budget) string {
	n := m.subKeyCount(b)
	note := plural(n, "key", "keys")
	fam, ok := m.families[b.Key]
	switch {
	case !ok:
	case fam.err != nil:
		note += "; sub-keys: " + oneLine(fam.err)
	case len(fam.busiest) > 0:
		parts := make([]string, 0, len(fam.busiest)+1)
		for _, s := range fam.busiest {
			inFlight, parked := int64(0), int64(0)
			if s.State != nil {
				inFlight, parked = s.State.InFlight, s.State.Parked
			}
			parts = append(parts, strings.TrimPrefix(s.Key, b.Key+"/")+weightMark(s.Weight)+" "+itoa(inFlight)+"/"+itoa(parked))
		}
		if n > int64(len(fam.busiest)) {
			parts = append(parts, "…")
		}
		note += "; busiest (in flight/parked): " + strings.Join(parts, ", ")
	}
	return note
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// budgetPaused reports whether a budget is paused at nowMs: until resumed,
// or until its paused_until (which alone pauses too).
func budgetPaused(b api.Budget, nowMs int64) bool {
	if b.PausedUntil > 0 {
		return int64(b.PausedUntil) > nowMs
	}
	return b.Paused
}

// pauseWords says how a paused budget is paused: "paused", or "paused
// until 15:04:05"; "" when it is not paused.
func (m *Model) pauseWords(b api.Budget) string {
	switch {
	case !budgetPaused(b, m.now.UnixMilli()):
		return ""
	case b.PausedUntil > 0:
		return "paused until " + m.clock(int64(b.PausedUntil))
	default:
		return "paused"
	}
}

// drainsIn is the DRAINS IN cell of a budget: "12s", "~3m" when
// estimated, "—" while the server cannot say, "paused" while paused with no
// end, "…" before the first answer, "?" when it failed. A budget with
// nothing parked has no backlog to drain: "-", whatever a forecast read
// before says and whether or not it is paused, in the row and in the
// detail panel alike (which take this cell).
func (m *Model) drainsIn(b api.Budget) string {
	nowMs := m.now.UnixMilli()
	if s := b.State; s != nil && s.Parked == 0 {
		return "-"
	}
	if budgetPaused(b, nowMs) && b.PausedUntil == 0 {
		return "paused"
	}
	fc, ok := m.forecasts[b.Key]
	switch {
	case !ok:
		return "…"
	case fc.err != nil:
		return "?"
	case fc.f.Parked == 0:
		return "-"
	case fc.f.DrainsAt == nil:
		return "—"
	case fc.f.Estimated:
		return "~" + roughly(time.Duration(max(0, *fc.f.DrainsAt-nowMs))*time.Millisecond)
	default:
		return until(nowMs, *fc.f.DrainsAt)
	}
}

// roughly renders an estimated duration in its largest unit only: 42s,
// 3m, 2h, 4d.
func roughly(d time.Duration) string {
	switch {
	case d < time.Minute:
		return itoa(int64(d.Round(time.Second)/time.Second)) + "s"
	case d < time.Hour:
		return itoa(int64(d.Round(time.Minute)/time.Minute)) + "m"
	case d < 24*time.Hour:
		return itoa(int64(d.Round(time.Hour)/time.Hour)) + "h"
	default:
		return itoa(int64(d.Round(24*time.Hour)/(24*time.Hour))) + "d"
	}
}
