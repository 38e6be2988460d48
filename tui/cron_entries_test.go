package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
)

// TestModel_CronTimesSayTheirZone: a cron time names its zone: an entry's
// is in the zone it is evaluated in (its own, else its group's), a
// group's in the dashboard's.
func TestModel_CronTimesSayTheirZone(t *testing.T) {
	t.Parallel()
	m := newTestModel(t, newFakeSource(), 80, 24)
	at := uint64(time.Date(2026, 3, 1, 20, 0, 0, 0, time.UTC).UnixMilli())
	m.opened["g"] = &api.CronGroup{Name: "g", Timezone: "Europe/Paris"}

	detail := strings.Join(m.entryDetail("g", api.CronEntry{Name: "e", NextEnqueueAt: at}), "\n")
	require.Contains(t, detail, "(21:00:00 CET)", "the group's zone")
	detail = strings.Join(m.entryDetail("g", api.CronEntry{Name: "e", Timezone: "America/New_York", NextEnqueueAt: at}), "\n")
	require.Contains(t, detail, "(15:00:00 EST)", "the entry's own zone")
	detail = strings.Join(m.cronDetail(api.CronStats{Name: "g", Entries: 1, NextEnqueueAt: at, NextEntry: "e", LastEnqueueAt: at - 3600_000}), "\n")
	require.Contains(t, detail, "(20:00:00 UTC)", "a group's next run, in the dashboard's zone")
	require.Contains(t, detail, "(19:00:00 UTC)", "and its last")
}
