package tui

import (
	"image/color"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
)

// backoffStats is a server whose upstreams refused: an adaptive rate
// budget at half its rate and paying nothing for 25 more seconds, with
// jobs parked behind it; an adaptive concurrency budget back at its
// configured limit after one refusal; a plain rate budget stopped for 3
// more seconds by a retry-after; and a plain one.
func backoffStats() api.Stats {
	s := fixtureStats()
	defaults := &api.Adaptive{Decrease: 0.5, RecoverMs: 60_000, Floor: 0.05}
	openai := timeBased("openai", 100, 1000, 0, api.BudgetState{Available: 0.5, Capacity: 100, InFlight: 3, Parked: 8,
		OldestParkedMs: ptr[int64](2_000), NextTokenAt: ptr(nowMs() + 25_020), Dispatched: 900,
		EffectiveAllocation: ptr(50.0), Throttles: ptr[int64](2), ThrottledUntil: ptr(nowMs() + 25_000)})
	openai.Adaptive = defaults
	conc := whileInFlight("conc", 8, api.BudgetState{Available: 6, Capacity: 8, InFlight: 2, Held: 2, Dispatched: 40,
		EffectiveAllocation: ptr(8.0), Throttles: ptr[int64](1)})
	conc.Adaptive = &api.Adaptive{Decrease: 0.25, RecoverMs: 90_000, Floor: 0.125}
	geo := timeBased("geo", 10, 60_000, 0, api.BudgetState{Available: 10, Capacity: 10, Dispatched: 3,
		EffectiveAllocation: ptr(10.0), Throttles: ptr[int64](1), ThrottledUntil: ptr(nowMs() + 3_000)})
	s.Budgets = []api.Budget{openai, conc, geo, s.Budgets[0]}
	return s
}

func newBackoffSource() *fakeSource {
	src := newFakeSource()
	src.stats = backoffStats()
	src.forecasts["openai"] = api.Forecast{Key: "openai", Parked: 8, DrainsAt: ptr(nowMs() + 25_160), BackingOff: true}
	src.forecasts["conc"] = api.Forecast{Key: "conc"}
	src.forecasts["geo"] = api.Forecast{Key: "geo"}
	return src
}

// TestModel_View_BackoffGolden: a budget that backs off carries ▼ after
// its key, one back at its configured rate does not; the detail panel
// says how an adaptive budget backs off, its effective rate, its
// throttles and when its retry-after ends, or, once it is over, that it
// is back at its configured rate.
func TestModel_View_BackoffGolden(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		w, h int
		keys []string
	}{
		{name: "budgets_backoff_80x24", w: 80, h: 24, keys: []string{"j", "j"}},
		{name: "budgets_backoff_120x40", w: 120, h: 40, keys: []string{"j", "j"}},
		{name: "budgets_backoff_50x12", w: 50, h: 12},
		{name: "budgets_backoff_recovered_80x24", w: 80, h: 24},
		{name: "budgets_backoff_plain_120x40", w: 120, h: 40, keys: []string{"j"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := newTestModel(t, newBackoffSource(), tt.w, tt.h)
			m = withExtras(t, m)
			m = press(t, m, tt.keys...)
			requireGolden(t, tt.name, screen(m))
		})
	}
}

// TestModel_View_BackoffColour: the key of a budget that backs off is
// drawn in the warning colour, the rest of its row in the row's own
// (plain here: nothing parked); on the cursor's row it keeps the
// warning colour on the cursor's background; the detail panel's back-off
// line is in the warning colour; a budget back at its rate has no such
// cell.
func TestModel_View_BackoffColour(t *testing.T) {
	t.Parallel()
	m := newTestModel(t, newBackoffSource(), 120, 40)
	m.opts.NoColor = false
	const darkWarn, lightWarn, selBg = "38;2;255;175;0", "38;2;179;89;0", "48;2;58;58;95"

	geo := lineWith(t, m, "geo ▼")
	require.Contains(t, painted(t, geo, "geo ▼"), darkWarn, "the mark: %q", geo)
	require.NotContains(t, painted(t, geo, "10/1m"), darkWarn, "the rest of the row is plain")
	require.NotContains(t, lineWith(t, m, "conc "), darkWarn, "conc is back at its rate")
	require.NotContains(t, lineWith(t, m, "conc "), "▼")

	m = press(t, m, "j") // geo
	sel := lineWith(t, m, "> ")
	require.Contains(t, sel, "geo ▼")
	require.Contains(t, painted(t, sel, "geo ▼"), darkWarn)
	require.Contains(t, painted(t, sel, "geo ▼"), selBg, "the cursor's background runs under the mark")
	require.Contains(t, painted(t, sel, "10/1m"), selBg)
	require.Contains(t, painted(t, lineWith(t, m, "pays nothing for"), "throttled 1 time"), darkWarn, "the detail panel's back-off line")

	m = update(t, m, tea.BackgroundColorMsg{Color: color.White})
	require.Contains(t, painted(t, lineWith(t, m, "> "), "geo ▼"), lightWarn)

	m.opts.NoColor = true
	requireNoEscapes(t, screen(m))
}

// TestBackoffWords: when a budget backs off, and the words of its
// back-off, each part left out when it does not apply.
func TestBackoffWords(t *testing.T) {
	t.Parallel()
	m := newTestModel(t, newFakeSource(), 80, 24)
	now := m.now.UnixMilli()
	b := timeBased("api", 100, 1000, 0, api.BudgetState{})
	require.False(t, backingOff(b, now), "no back-off figures: a budget never throttled")
	require.Empty(t, m.backoffWords(b))
	require.Empty(t, adaptiveWords(b))
	require.False(t, backingOff(api.Budget{Allocation: 1}, now), "no live figures")

	b.State.EffectiveAllocation = ptr(100.0)
	b.State.Throttles = ptr[int64](0)
	require.False(t, backingOff(b, now), "adaptive, at its configured rate")
	require.Empty(t, m.backoffWords(b), "adaptive, never throttled")

	b.State.EffectiveAllocation = ptr(99.9)
	require.True(t, backingOff(b, now), "below its rate by a little")
	require.Equal(t, "effective 99.9/1s of 100/1s", m.backoffWords(b))

	b.State.EffectiveAllocation, b.State.Throttles = ptr(100.0), ptr[int64](3)
	b.State.ThrottledUntil = ptr(now)
	require.False(t, backingOff(b, now), "a retry-after that ends now is over")
	require.Equal(t, "throttled 3 times", m.backoffWords(b))
	b.State.ThrottledUntil = ptr(now + 90_000)
	require.True(t, backingOff(b, now))
	require.Equal(t, "throttled 3 times · pays nothing for 1m30s (12:01:30)", m.backoffWords(b))

	w := whileInFlight("conc", 8, api.BudgetState{EffectiveAllocation: ptr(2.0), Throttles: ptr[int64](1)})
	require.Equal(t, "effective 2 of 8 · throttled 1 time", m.backoffWords(w), "a concurrency budget's limit in tokens")
	w.Adaptive = &api.Adaptive{Decrease: 0.75, RecoverMs: 1500, Floor: 0.333}
	require.Equal(t, "backs off ×0.75, floor 33.3%, recovers in 1500ms", adaptiveWords(w))
	w.Adaptive.RecoverMs = 60_000
	require.Equal(t, "backs off ×0.75, floor 33.3%, recovers in 1m", adaptiveWords(w))
	require.Equal(t, "3.5/1h", rateOf(timeBased("h", 7, 3_600_000, 0, api.BudgetState{}), 3.5))
}
