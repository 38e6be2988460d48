package tui

import (
	"cmp"
	"context"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/zizq/zizq/api"
)

// The Crons tab lists the groups (from /stats); enter opens a group to
// list its entries under it (GET /crons/{group}, read again at each poll
// while the tab shows), so that p pauses or resumes one entry as well as a
// whole group.

// entryKeySep joins a group and an entry into an entry row's key; a
// group's name never holds it, so no group row has that key.
const entryKeySep = "\n"

func entryKey(group, entry string) string { return group + entryKeySep + entry }

// cronGroupMsg is the answer of GET /crons/{group} for an opened group.
type cronGroupMsg struct {
	name  string
	group api.CronGroup
	err   error
}

// toggleGroup opens the selected group, or closes it; on an entry row, it
// closes the entry's group.
func (m *Model) toggleGroup() tea.Cmd {
	r, ok := m.tables[tabCrons].Selected()
	if !ok {
		return nil
	}
	name, _, _ := strings.Cut(r.key, entryKeySep)
	if _, open := m.opened[name]; open {
		delete(m.opened, name)
		m.rebuild()
		m.tables[tabCrons].SetCursor(m.rowIndex(tabCrons, name))
		return nil
	}
	m.opened[name] = nil // open; entries come with the answer
	return m.fetchGroups([]string{name})
}

func (m *Model) rowIndex(t tab, key string) int {
	for i, r := range m.tables[t].rows {
		if r.key == key {
			return i
		}
	}
	return 0
}

// openedNames lists the opened groups.
func (m *Model) openedNames() []string {
	names := make([]string, 0, len(m.opened))
	for n := range m.opened {
		names = append(names, n)
	}
	return names
}

// fetchGroups returns the command that reads the groups named.
func (m *Model) fetchGroups(names []string) tea.Cmd {
	if len(names) == 0 {
		return nil
	}
	src, ctx, timeout := m.src, m.ctx, m.timeout()
	cmds := make([]tea.Cmd, len(names))
	for i, name := range names {
		cmds[i] = func() tea.Msg {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			g, err := src.CronGroup(ctx, name)
			return cronGroupMsg{name: name, group: g, err: err}
		}
	}
	return tea.Batch(cmds...)
}

func (m *Model) applyCronGroup(msg cronGroupMsg) {
	if _, open := m.opened[msg.name]; !open {
		return // closed meanwhile
	}
	if msg.err != nil {
		m.notice = "cron group " + msg.name + ": " + oneLine(msg.err)
		return
	}
	g := msg.group
	m.opened[msg.name] = &g
	m.rebuild()
}

// entryRows are the rows of an opened group's entries.
func (m *Model) entryRows(name string) []row {
	g := m.opened[name]
	if g == nil {
		return nil
	}
	nowMs := m.now.UnixMilli()
	rows := make([]row, 0, len(g.Entries))
	for _, e := range g.Entries {
		next := "-"
		switch {
		case e.Paused || g.Paused:
			next = "paused"
		case e.NextEnqueueAt != 0:
			next = until(nowMs, int64(e.NextEnqueueAt))
		}
		last := "-"
		if e.LastEnqueueAt != 0 {
			last = since(nowMs, int64(e.LastEnqueueAt)) + " ago"
		}
		r := row{key: entryKey(name, e.Name), cells: []string{"└ " + e.Name, pausedWord(e.Paused), "", "", next, e.Expression, last}}
		if e.Paused || g.Paused {
			r.tone = tonePaused
		}
		rows = append(rows, r)
	}
	return rows
}

// selectedEntry returns the entry under the cursor of the Crons tab.
func (m *Model) selectedEntry() (group string, e api.CronEntry, ok bool) {
	r, ok := m.tables[tabCrons].Selected()
	if !ok {
		return "", api.CronEntry{}, false
	}
	group, entry, isEntry := strings.Cut(r.key, entryKeySep)
	g := m.opened[group]
	if !isEntry || g == nil {
		return "", api.CronEntry{}, false
	}
	for _, e := range g.Entries {
		if e.Name == entry {
			return group, e, true
		}
	}
	return "", api.CronEntry{}, false
}

// entryZone is the timezone an opened group's entry is evaluated in: its
// own, else its group's ("" when neither says).
func (m *Model) entryZone(group string, e api.CronEntry) string {
	if g := m.opened[group]; g != nil {
		return cmp.Or(e.Timezone, g.Timezone)
	}
	return e.Timezone
}

// cronClock renders a cron time with its zone, "03:00:00 CET" (an offset
// where the zone has no abbreviation): in zone, else in that of m.now.
func (m *Model) cronClock(ms int64, zone string) string {
	loc := m.now.Location()
	if zone != "" {
		if l, err := time.LoadLocation(zone); err == nil {
			loc = l
		}
	}
	return time.UnixMilli(ms).In(loc).Format("15:04:05 MST")
}
