package storetest

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// testCron checks the cron ops and CronGroups.
func testCron(t *testing.T, newB func(testing.TB) *bundle) {
	t.Run("GroupRoundTrip", func(t *testing.T) {
		t.Parallel()
		for name, g := range map[string]store.CronGroup{
			"Minimal": {Name: "g"},
			"Full":    {Name: "é \"g\"", Paused: true, PausedAt: 1, ResumedAt: math.MaxInt64, Timezone: "Australia/Melbourne"},
		} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				b := newB(t)
				b.apply(t, store.PutCronGroup(g))
				require.Equal(t, []store.CronGroup{g}, b.crons(t))
			})
		}
	})

	t.Run("EntryRoundTrip", func(t *testing.T) {
		t.Parallel()
		full := store.CronEntry{
			Group: "g", Name: "é", Expression: "*/5 * * * * *", Timezone: "America/New_York",
			Paused: true, PausedAt: 1, ResumedAt: 2, NextEnqueueAt: math.MaxInt64, LastEnqueueAt: 3,
			Job: []byte{0, 0xff, '{', '}'}, // verbatim: the store never looks inside
		}
		for name, e := range map[string]store.CronEntry{
			"Minimal": cronEntry("g", "e"),
			"Full":    full,
		} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				b := newB(t)
				b.apply(t, store.PutCronGroup(store.CronGroup{Name: "g"}), store.PutCronEntry(e))
				require.Equal(t, []store.CronGroup{{Name: "g", Entries: []store.CronEntry{e}}}, b.crons(t))
			})
		}
	})

	t.Run("SortedByName", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		// Names sharing prefixes, and bytes that sort differently by
		// collation, come back in byte order.
		for _, g := range []string{"billing-payments", "billing", "Billing", "billing-events"} {
			b.apply(t, store.PutCronGroup(store.CronGroup{Name: g}),
				store.PutCronEntry(cronEntry(g, "z")), store.PutCronEntry(cronEntry(g, "a")), store.PutCronEntry(cronEntry(g, "B")))
		}
		got := b.crons(t)
		var names []string
		for _, g := range got {
			names = append(names, g.Name)
			require.Equal(t, []string{"B", "a", "z"}, entryNames(g), g.Name)
		}
		require.Equal(t, []string{"Billing", "billing", "billing-events", "billing-payments"}, names)
	})

	t.Run("PutGroupKeepsEntries", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.PutCronGroup(store.CronGroup{Name: "g"}), store.PutCronEntry(cronEntry("g", "e")))
		changed := store.CronGroup{Name: "g", Paused: true, PausedAt: 9, Entries: []store.CronEntry{cronEntry("g", "ignored")}}
		b.apply(t, store.PutCronGroup(changed))
		require.Equal(t, []store.CronGroup{{Name: "g", Paused: true, PausedAt: 9, Entries: []store.CronEntry{cronEntry("g", "e")}}}, b.crons(t))
		// And clears what it no longer sets.
		b.apply(t, store.PutCronGroup(store.CronGroup{Name: "g"}))
		require.Equal(t, []store.CronGroup{{Name: "g", Entries: []store.CronEntry{cronEntry("g", "e")}}}, b.crons(t))
	})

	t.Run("PutEntryReplaces", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		e := cronEntry("g", "e")
		e.Timezone, e.PausedAt, e.LastEnqueueAt = "UTC", 5, 6
		b.apply(t, store.PutCronGroup(store.CronGroup{Name: "g"}), store.PutCronEntry(e))
		repl := cronEntry("g", "e")
		repl.Expression, repl.Job = "0 0 * * *", []byte(`{"type":"other"}`)
		b.apply(t, store.PutCronEntry(repl))
		require.Equal(t, []store.CronEntry{repl}, b.crons(t)[0].Entries)
	})

	t.Run("CronFiredWritesTheScheduleOnly", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		e := cronEntry("g", "e")
		e.Paused, e.PausedAt = true, 4
		b.apply(t, store.PutCronGroup(store.CronGroup{Name: "g"}), store.PutCronEntry(e))
		b.apply(t, store.CronFired("g", "e", 2_000, 1_500))
		e.NextEnqueueAt, e.LastEnqueueAt = 2_000, 1_500
		require.Equal(t, []store.CronEntry{e}, b.crons(t)[0].Entries)
		// No future occurrence: next is unset.
		b.apply(t, store.CronFired("g", "e", 0, 3_000))
		e.NextEnqueueAt, e.LastEnqueueAt = 0, 3_000
		require.Equal(t, []store.CronEntry{e}, b.crons(t)[0].Entries)
		// An entry deleted meanwhile stays deleted.
		b.apply(t, store.DeleteCronEntry("g", "e"), store.CronFired("g", "e", 1, 1))
		require.Equal(t, []store.CronGroup{{Name: "g"}}, b.crons(t))
	})

	t.Run("Deletes", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		for _, g := range []string{"keep", "drop"} {
			b.apply(t, store.PutCronGroup(store.CronGroup{Name: g}),
				store.PutCronEntry(cronEntry(g, "e1")), store.PutCronEntry(cronEntry(g, "e2")))
		}
		b.apply(t, store.DeleteCronEntry("keep", "e1"), store.DeleteCronEntry("keep", "missing"))
		b.apply(t, store.DeleteCronGroup("drop"), store.DeleteCronGroup("missing"))
		require.Equal(t, []store.CronGroup{{Name: "keep", Entries: []store.CronEntry{cronEntry("keep", "e2")}}}, b.crons(t))
		// A group deleted and made again has none of its old entries.
		b.apply(t, store.PutCronGroup(store.CronGroup{Name: "drop"}))
		require.Equal(t, []store.CronGroup{{Name: "drop"}, {Name: "keep", Entries: []store.CronEntry{cronEntry("keep", "e2")}}}, b.crons(t))
		b.apply(t, store.DeleteCronGroups())
		require.Empty(t, b.crons(t))
	})

	t.Run("FireCommitsWithItsJob", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.PutCronGroup(store.CronGroup{Name: "g"}), store.PutCronEntry(cronEntry("g", "e")), store.InsertJob(job(1)))
		// A fire whose insert fails (the ID exists) leaves the schedule as
		// it was: the group fails whole. The next one, appended without
		// waiting, commits whole.
		failed := b.s.Append(store.InsertJob(job(1)), store.CronFired("g", "e", 9, 8))
		ok := b.s.Append(store.InsertJob(job(2)), store.CronFired("g", "e", 7, 6))
		require.Error(t, failed.Wait(b.ctx))
		require.NoError(t, ok.Wait(b.ctx))
		e := cronEntry("g", "e")
		e.NextEnqueueAt, e.LastEnqueueAt = 7, 6
		require.Equal(t, []store.CronEntry{e}, b.crons(t)[0].Entries)
		require.Equal(t, ids(1, 2), b.ids(t))
	})

	t.Run("ResetLeavesJobsToDeleteEverything", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.PutCronGroup(store.CronGroup{Name: "g"}), store.InsertJob(job(1)))
		b.apply(t, store.DeleteCronGroups())
		require.Empty(t, b.crons(t))
		require.Equal(t, ids(1), b.ids(t), "DeleteCronGroups touches no job")
		b.apply(t, store.PutCronGroup(store.CronGroup{Name: "g"}), store.DeleteEverything())
		require.Equal(t, []store.CronGroup{{Name: "g"}}, b.crons(t), "DeleteEverything touches no cron group")
		require.Empty(t, b.ids(t))
	})
}

// crons returns every cron group with its entries.
func (b *bundle) crons(t testing.TB) []store.CronGroup {
	t.Helper()
	gs, err := b.s.CronGroups(b.ctx)
	require.NoError(t, err)
	return gs
}

// cronEntry returns an entry with only the required fields.
func cronEntry(group, name string) store.CronEntry {
	return store.CronEntry{
		Group: group, Name: name, Expression: "* * * * *", NextEnqueueAt: 1_700_000_040_000,
		Job: []byte(`{"type":"t","queue":"q","payload":null}`),
	}
}

func entryNames(g store.CronGroup) []string {
	var out []string
	for _, e := range g.Entries {
		out = append(out, e.Name)
	}
	return out
}
