package tui

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
)

func TestFmtAge(t *testing.T) {
	t.Parallel()
	tests := []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0s"},
		{0, "0s"},
		{850 * time.Millisecond, "850ms"},
		{5350 * time.Millisecond, "5.3s"},
		{9999 * time.Millisecond, "9.9s"},
		{42 * time.Second, "42s"},
		{125 * time.Second, "2m05s"},
		{time.Hour + 2*time.Minute + 3*time.Second, "1h02m"},
		{76 * time.Hour, "3d04h"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, fmtAge(tt.d), "%v", tt.d)
	}
}

func TestRateWords(t *testing.T) {
	t.Parallel()
	tb := func(alloc, ms int64) api.Budget {
		return api.Budget{Allocation: alloc, Strategy: api.Strategy{Type: api.StrategyTimeBased, DurationMs: ms}}
	}
	tests := []struct {
		b        api.Budget
		rate     string
		strategy string
	}{
		{tb(10000, 3_600_000), "10000/1h", "time"},
		{tb(6, 60_000), "6/1m", "time"},
		{tb(5, 30_000), "5/30s", "time"},
		{tb(1, 90_000), "1/90s", "time"},
		{tb(3, 1500), "3/1500ms", "time"},
		{tb(7, 86_400_000), "7/1d", "time"},
		{api.Budget{Allocation: 10, Strategy: api.Strategy{Type: api.StrategyWhileInFlight}}, "10 max", "in-flight"},
		{cal(100000, "0 0 * * *"), "100000/day", "calendar"},
		{cal(5, "0 * * * *"), "5/hour", "calendar"},
		{cal(5, "0 0 * * 1"), "5/week", "calendar"},
		{cal(5, "0 0 1 * *"), "5/month", "calendar"},
		{cal(5, "@yearly"), "5/year", "calendar"},
		{cal(5, "0 9 * * 1-5"), "5/0 9 * * 1-5", "calendar"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.rate, rateWords(tt.b))
		require.Equal(t, tt.strategy, strategyWord(tt.b))
	}
}

func cal(alloc int64, reset string) api.Budget {
	return api.Budget{Allocation: alloc, Strategy: api.Strategy{Type: api.StrategyCalendar, Reset: reset}}
}

func TestGauge(t *testing.T) {
	t.Parallel()
	tests := []struct {
		avail    float64
		capacity int64
		width    int
		want     string
	}{
		{0, 10, 5, "░░░░░"},
		{10, 10, 5, "█████"},
		{5, 10, 4, "██░░"},
		{1, 100, 5, "█░░░░"}, // a whole token is never drawn as none
		{0.4, 100, 5, "░░░░░"},
		{3, 0, 5, "░░░░░"},
		{20, 10, 5, "█████"},
		{1, 1, 0, ""},
		// Below zero, the debt's share of the capacity, in its own glyph.
		{-5, 10, 4, "▒▒░░"},
		{-0.1, 100, 5, "▒░░░░"}, // a debt is never drawn as none
		{-30, 10, 5, "▒▒▒▒▒"},
		{-1, 0, 3, "▒▒▒"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, gauge(tt.avail, tt.capacity, tt.width), "%v/%d", tt.avail, tt.capacity)
	}
}

func TestFmtTokensAndBytes(t *testing.T) {
	t.Parallel()
	require.Equal(t, "3", fmtTokens(3))
	require.Equal(t, "3.2", fmtTokens(3.25))
	require.Equal(t, "0.9", fmtTokens(0.999))
	require.Equal(t, "512B", fmtBytes(512))
	require.Equal(t, "50.0MiB", fmtBytes(52_428_800))
	require.Equal(t, "1.5GiB", fmtBytes(3<<29))
}

func TestFit(t *testing.T) {
	t.Parallel()
	require.Equal(t, "ab   ", fit("ab", 5, false))
	require.Equal(t, "   ab", fit("ab", 5, true))
	require.Equal(t, "abcd…", fit("abcdefgh", 5, false))
	require.Equal(t, "", fit("abc", 0, false))
}

func TestNaturalCompare(t *testing.T) {
	t.Parallel()
	names := []string{"b100", "b10", "b2", "b1", "a", "b01", "b1x", "b", "image-2", "image-10"}
	slices.SortFunc(names, naturalCompare)
	require.Equal(t, []string{"a", "b", "b01", "b1", "b1x", "b2", "b10", "b100", "image-2", "image-10"}, names)
	require.Zero(t, naturalCompare("x7", "x7"))
}

func TestPluralAndInUntil(t *testing.T) {
	t.Parallel()
	require.Equal(t, "1 entry", plural(1, "entry", "entries"))
	require.Equal(t, "0 entries", plural(0, "entry", "entries"))
	require.Equal(t, "while_in_flight: 1 token", strategyLong(api.Budget{Allocation: 1, Strategy: api.Strategy{Type: api.StrategyWhileInFlight}}))
	require.Equal(t, "now", inUntil(1000, 1000), "never \"in now\"")
	require.Equal(t, "now", inUntil(1000, 10))
	require.Equal(t, "in 1.5s", inUntil(1000, 2500))
}
