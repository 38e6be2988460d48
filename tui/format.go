package tui

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/zizq/zizq/api"
)

// fmtAge renders a duration compactly: 850ms, 5.3s, 42s, 2m05s, 1h02m, 3d04h.
// Negative durations render as 0s.
func fmtAge(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", math.Floor(d.Seconds()*10)/10)
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
	}
}

func fmtMs(ms int64) string { return fmtAge(time.Duration(ms) * time.Millisecond) }

// fmtPeriod renders a refill period in the largest unit that divides it
// exactly: 1h, 1m, 30s, 1500ms.
func fmtPeriod(ms int64) string {
	units := []struct {
		ms   int64
		name string
	}{{86_400_000, "d"}, {3_600_000, "h"}, {60_000, "m"}, {1000, "s"}}
	for _, u := range units {
		if ms >= u.ms && ms%u.ms == 0 {
			return strconv.FormatInt(ms/u.ms, 10) + u.name
		}
	}
	return strconv.FormatInt(ms, 10) + "ms"
}

// strategyWord names a budget strategy in a table cell.
func strategyWord(b api.Budget) string {
	switch b.Strategy.Type {
	case api.StrategyWhileInFlight:
		return "in-flight"
	case api.StrategyTimeBased:
		return "time"
	default:
		return b.Strategy.Type
	}
}

// rateWords renders a budget's rate: "6/1m" for time_based, "10 max" for
// while_in_flight (at most ten tokens out at once), "1000/day" for a
// calendar budget that resets daily ("1000/0 9 * * 1-5" when its resets
// have no name).
func rateWords(b api.Budget) string {
	alloc := strconv.FormatInt(b.Allocation, 10)
	switch b.Strategy.Type {
	case api.StrategyTimeBased:
		return alloc + "/" + fmtPeriod(b.Strategy.DurationMs)
	case api.StrategyCalendar:
		return alloc + "/" + cmp.Or(resetNames[b.Strategy.Reset], b.Strategy.Reset)
	}
	return alloc + " max"
}

// resetNames are the periods of the usual calendar resets.
var resetNames = map[string]string{
	"0 * * * *": "hour", "@hourly": "hour",
	"0 0 * * *": "day", "@daily": "day", "@midnight": "day",
	"0 0 * * 0": "week", "0 0 * * 1": "week", "@weekly": "week",
	"0 0 1 * *": "month", "@monthly": "month",
	"0 0 1 1 *": "year", "@yearly": "year", "@annually": "year",
}

// strategyLong describes a budget's strategy in a sentence fragment.
func strategyLong(b api.Budget) string {
	switch b.Strategy.Type {
	case api.StrategyTimeBased:
		s := fmt.Sprintf("time_based: %d per %s", b.Allocation, fmtPeriod(b.Strategy.DurationMs))
		if b.Strategy.Burst > 0 {
			s += fmt.Sprintf(", burst %d", b.Strategy.Burst)
		}
		return s
	case api.StrategyWhileInFlight:
		return "while_in_flight: " + plural(b.Allocation, "token", "tokens")
	case api.StrategyCalendar:
		return fmt.Sprintf("calendar: %d a period, reset at %s (%s)", b.Allocation, b.Strategy.Reset, cmp.Or(b.Strategy.Timezone, "UTC"))
	default:
		return b.Strategy.Type
	}
}

// fmtTokens renders a token count: integers plainly, fractions with one
// decimal (floored, so a gauge never shows a token that is not there).
func fmtTokens(v float64) string {
	if v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(math.Floor(v*10)/10, 'f', 1, 64)
}

// gauge draws available against capacity in width cells. A level below
// zero (a debt) is drawn in its own glyph, as many cells as the debt is a
// share of the capacity, at least one.
func gauge(avail float64, capacity int64, width int) string {
	if width <= 0 {
		return ""
	}
	if avail < 0 {
		owed := width
		if capacity > 0 {
			owed = int(math.Round(-avail / float64(capacity) * float64(width)))
		}
		owed = max(1, min(width, owed))
		return strings.Repeat("▒", owed) + strings.Repeat("░", width-owed)
	}
	filled := 0
	if capacity > 0 {
		filled = int(math.Round(avail / float64(capacity) * float64(width)))
		if filled == 0 && avail >= 1 {
			filled = 1 // a spendable token is never drawn as empty
		}
	}
	filled = max(0, min(width, filled))
	return strings.Repeat("█", filled) + strings.Repeat("░", width-filled)
}

// fmtBytes renders a byte count in binary units.
func fmtBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f%ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// fmtBindings renders a job's budgets: "image(5), email".
func fmtBindings(bs []api.Binding) string {
	parts := make([]string, 0, len(bs))
	for _, b := range bs {
		if b.Cost == 1 {
			parts = append(parts, b.Key)
		} else {
			parts = append(parts, fmt.Sprintf("%s(%d)", b.Key, b.Cost))
		}
	}
	return strings.Join(parts, ", ")
}

// until renders the time from now to the ms timestamp at: "now" once passed.
func until(nowMs, at int64) string {
	if at <= nowMs {
		return "now"
	}
	return fmtMs(at - nowMs)
}

// inUntil says when the ms timestamp at comes: "in 2m05s", or "now" once
// passed (never "in now").
func inUntil(nowMs, at int64) string {
	if at <= nowMs {
		return "now"
	}
	return "in " + until(nowMs, at)
}

// plural renders n with the word for one or for many: "1 key", "120
// keys". Every count the dashboard writes in words goes through it.
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(n, 10) + " " + many
}

// naturalCompare orders names as people do, the digits in them by value:
// b1, b2, b10, b100 rather than b1, b10, b100, b2. Names equal but for
// leading zeros fall back to plain text order, so that the order is total.
func naturalCompare(a, b string) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if isDigit(a[i]) && isDigit(b[j]) {
			ei, ej := digitsEnd(a, i), digitsEnd(b, j)
			da, db := strings.TrimLeft(a[i:ei], "0"), strings.TrimLeft(b[j:ej], "0")
			if c := cmp.Or(cmp.Compare(len(da), len(db)), strings.Compare(da, db)); c != 0 {
				return c
			}
			i, j = ei, ej
			continue
		}
		if a[i] != b[j] {
			return cmp.Compare(a[i], b[j])
		}
		i, j = i+1, j+1
	}
	return cmp.Or(cmp.Compare(len(a)-i, len(b)-j), strings.Compare(a, b))
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// digitsEnd returns the end of the run of digits that starts at i.
func digitsEnd(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

// since renders the time from the ms timestamp at to now.
func since(nowMs, at int64) string {
	if at <= 0 {
		return "-"
	}
	return fmtMs(nowMs - at)
}

// fit truncates s to w cells and pads it to exactly w, aligned left or right.
func fit(s string, w int, right bool) string {
	if w <= 0 {
		return ""
	}
	if ansi.StringWidth(s) > w {
		s = ansi.Truncate(s, w, "…")
	}
	pad := strings.Repeat(" ", w-ansi.StringWidth(s))
	if right {
		return pad + s
	}
	return s + pad
}
