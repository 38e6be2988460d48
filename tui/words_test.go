package tui

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
)

// TestModel_View_NamesGetRoom: at 80 columns a long budget key keeps a
// quarter of the width; figures are hidden before it is cut to 8.
func TestModel_View_NamesGetRoom(t *testing.T) {
	t.Parallel()
	src := newFakeSource()
	stats := fixtureStats()
	const key = "tenant-billing-eu-west-1" // 24 characters
	stats.Budgets = append(stats.Budgets, timeBased(key, 100000, 3_600_000, 0, api.BudgetState{
		Available: 99999.5, Capacity: 100000, Held: 12345, Parked: 67890, OldestParkedMs: ptr[int64](3_600_000)}))
	stats.Budgets[0].PausedUntil = uint64(nowMs() + 30_000) // a wide NEXT: "paused until 12:00:30"
	src.setStats(stats)
	m := newTestModel(t, src, 80, 24)
	require.Contains(t, screen(m), "  "+key+" ", "the key whole:\n%s", screen(m))
}

// TestModel_View_CronDetailWords: one entry is "1 entry", and a run due
// now is "now", not "in now".
func TestModel_View_CronDetailWords(t *testing.T) {
	t.Parallel()
	m := New(newFakeSource(), testOptions())
	lines := m.cronDetail(api.CronStats{Name: "g", Entries: 1, NextEntry: "e", NextEnqueueAt: uint64(nowMs())})
	require.Equal(t, "active · 1 entry, 0 paused", lines[0])
	require.Contains(t, lines[1], "next run: entry e now (")
}
